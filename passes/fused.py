"""The fused node of DESIGN.md: one node whose op is a library function holding the original subgraph.

Scope fusion and AutoFuse have no native TF op for their result, so the fused node calls a
FunctionDef whose body is exactly the nodes it replaced: TensorFlow can still run the fused
graph, and with `_XlaMustCompile=true` on the call node XLA compiles the body into one kernel.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from core import proto
from core.fused import FUSED_NODES_ATTR, FUSED_OP_TYPE_ATTR, FUSION_PASS_ATTR, XLA_MUST_COMPILE_ATTR
from core.graph import Graph, GraphEditor, TensorRef
from core.nodes import make_node
from core.tfimport import import_tensorflow


def function_name(node_name: str) -> str:
    """A FunctionDef name from a node name (function names allow [A-Za-z0-9_.-] only)."""
    return "fused_" + re.sub(r"[^A-Za-z0-9_.-]", "_", node_name)


def build_function(graph: Graph, nodes: Sequence[str], inputs: Sequence[TensorRef],
                   outputs: Sequence[TensorRef], name: str) -> proto.FunctionDef:
    """A FunctionDef whose body is `nodes`; argument i is `inputs[i]`, result k is `outputs[k]`."""
    tf = import_tensorflow()
    from tensorflow.python.framework import graph_to_function_def

    body = proto.GraphDef()
    placeholder_of = {}
    for i, ref in enumerate(inputs):
        arg = f"input_{i}"
        placeholder_of[str(ref)] = arg
        dtype = proto.AttrValue(type=graph.output_dtype(ref.node, ref.port))
        node = make_node("Placeholder", arg, attrs={"dtype": dtype})
        shape = graph.output_shape(ref.node, ref.port)
        node.attr["shape"].shape.CopyFrom(proto.shape_proto(shape))
        body.node.append(node)
    inside = set(nodes)
    for name_ in nodes:
        copy = proto.NodeDef()
        copy.CopyFrom(graph.node(name_))
        del copy.input[:]
        for text in graph.node(name_).input:
            ref = TensorRef.parse(text)
            if ref.control:
                if ref.node in inside:
                    copy.input.append(text)
                continue
            copy.input.append(placeholder_of.get(str(ref), str(ref)) if ref.node not in inside else str(ref))
        copy.ClearField("device")
        body.node.append(copy)
    body.versions.CopyFrom(graph.graph_def.versions)
    body.library.CopyFrom(graph.graph_def.library)

    tf_graph = tf.Graph()
    with tf_graph.as_default():
        tf.graph_util.import_graph_def(proto.to_tf(body), name="")
    ops = [tf_graph.get_operation_by_name(n) for n in nodes]
    fdef = graph_to_function_def.graph_to_function_def(
        tf_graph, ops,
        [tf_graph.get_tensor_by_name(f"input_{i}:0") for i in range(len(inputs))],
        [tf_graph.get_tensor_by_name(f"{o.node}:{o.port}") for o in outputs],
        out_names=[f"output_{k}" for k in range(len(outputs))],
    )
    fdef.signature.name = name
    return proto.FunctionDef.FromString(fdef.SerializeToString())


def fuse_subgraph(
    graph: Graph,
    editor: GraphEditor,
    *,
    name: str,
    nodes: Sequence[str],
    inputs: Sequence[TensorRef],
    outputs: Sequence[TensorRef],
    pass_id: str,
    op_type: str,
    xla: bool = False,
    attrs: Mapping[str, Any] | None = None,
) -> str:
    """Replace `nodes` by one call node; consumers of `outputs[k]` read the call node's output k.

    Returns the call node's name (`name`, made unique). Control inputs that reach the subgraph
    from outside move to the call node.
    """
    ordered = graph.in_graph_order(nodes)
    call_name = editor.unique_name(name)
    fn_name = function_name(call_name)
    suffix = 1
    while editor.has_function(fn_name):
        fn_name = f"{function_name(call_name)}_{suffix}"
        suffix += 1
    editor.add_function(build_function(graph, ordered, inputs, outputs, fn_name))

    inside = set(ordered)
    controls = sorted({c for n in ordered for c in graph.control_inputs(n) if c not in inside})
    call = make_node(fn_name, call_name, [str(r) for r in inputs] + [f"^{c}" for c in controls], attrs)
    call.attr[FUSION_PASS_ATTR].s = pass_id.encode()
    call.attr[FUSED_OP_TYPE_ATTR].s = op_type.encode()
    call.attr[FUSED_NODES_ATTR].list.s.extend(n.encode() for n in ordered)
    if xla:
        call.attr[XLA_MUST_COMPILE_ATTR].b = True
    shapes = [graph.output_shape(o.node, o.port) for o in outputs]
    call.attr["_output_shapes"].list.shape.extend(proto.shape_proto(s) for s in shapes)

    editor.remove(*ordered)
    editor.add(call, after=ordered[-1])
    for k, out in enumerate(outputs):
        editor.redirect(out, TensorRef(call_name, k), exclude=[call_name])
    for node in ordered:  # control edges on any fused node now wait for the call
        editor.redirect_control(node, call_name)
    return call_name
