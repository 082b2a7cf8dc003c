"""The graph IR: a TF GraphDef with producer/consumer indexes (queries), its copy-on-write editor, the wire
format read without decoding every node, node tables, topological order and reachability; plus the
protobuf messages and op facts it is built on (proto, opdefs, fused, nodes, opclass, provenance, inspect).

A pass never edits a NodeDef it received. It asks `graph.editor()` for a copy-on-write
`GraphEditor`, changes that, and `build()`s a new `Graph`; the original stays untouched
(`tests/core/test_graph.py` checks this by serialising before and after). The IR never imports
TensorFlow: shapes are data the loaders and the TensorFlow helper supply.
"""

from fuselens.core.graph.edges import Consumer, TensorRef
from fuselens.core.graph.editor import GraphEditor
from fuselens.core.graph.order import topological_sort
from fuselens.core.graph.queries import FORWARDING_OPS, LOOP_BACK_EDGE_OPS, NON_OUTPUT_OPS, Graph, attr_value
from fuselens.core.graph.wire import WRITTEN_NODE_BYTES, SerializedGraphDef

__all__ = [
    "FORWARDING_OPS",
    "LOOP_BACK_EDGE_OPS",
    "NON_OUTPUT_OPS",
    "WRITTEN_NODE_BYTES",
    "Consumer",
    "Graph",
    "GraphEditor",
    "SerializedGraphDef",
    "TensorRef",
    "attr_value",
    "topological_sort",
]
