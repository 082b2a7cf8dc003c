"""AutoFuse's reading of the op table (core/graph/opclass.py): fusion class per node, Ascend spelling per op.

Fusion rules (grouping.py) are stated over classes, never over op names (TVM's op patterns do
the same). The classes come from the one table in core: elementwise, broadcast and reduce ops
fuse as such, and of the injective ops AutoFuse takes only concat. A broadcast op with two
operands of one known shape is elementwise at that node, decided from the graph's static shapes;
every other op is `opaque` and never fuses.
"""

from __future__ import annotations

from fuselens.core.graph import Graph
from fuselens.core.graph.opclass import OpClass, op_class
from fuselens.passes.autofuse import flags

ELEMENTWISE = "elementwise"
BROADCAST = "broadcast"
REDUCE = "reduce"
CONCAT = "concat"
OPAQUE = "opaque"
# The AUTOFUSE_FLAGS category that switches each class on and off.
FLAG_CATEGORY = {ELEMENTWISE: flags.POINTWISE, BROADCAST: flags.BROADCAST, REDUCE: flags.REDUCE,
                 CONCAT: flags.CONCAT}
FUSED_PATTERNS = frozenset({"elementwise", "broadcast", "reduce"})
CONCAT_OPS = frozenset({"ConcatV2"})  # the injective ops of AutoFuse's concat category
# The op types the Ascend graph engine uses where they differ from TensorFlow's: fused kernel
# names spell these.
ASCEND_SPELLING = {"AddV2": "Add", "ConcatV2": "ConcatD",
                   **{op: f"Reduce{op}D" for op in ("Sum", "Mean", "Max", "Min", "Prod", "All", "Any")}}


def fusion_class(op: str) -> OpClass | None:
    """The op's class in the table when AutoFuse fuses ops of it, else None."""
    entry = op_class(op)
    if entry is None or (entry.pattern not in FUSED_PATTERNS and op not in CONCAT_OPS):
        return None
    return entry


def ascend_op_type(op: str) -> str:
    """The graph-engine spelling of a TF op type (the TF name where the two agree)."""
    return ASCEND_SPELLING.get(op, op)


def classify(graph: Graph, name: str) -> str:
    """The fusion class of one node: its op's, with a broadcast op whose two operands have one shape
    as `elementwise`, and ops whose axis operand is not a constant as `opaque` (the kernel needs
    it at compile time)."""
    op = graph.op(name)
    entry = fusion_class(op)
    if entry is None:
        return OPAQUE
    inputs = graph.inputs(name)
    for slot in entry.axis_operands:
        if not inputs or not graph.is_const(inputs[slot].node):
            return OPAQUE
    if op in CONCAT_OPS:
        return CONCAT
    if entry.pattern == "broadcast":
        operands = [inputs[slot] for slot in operand_slots(graph, name)]
        shapes = [graph.output_shape(ref.node, ref.port) for ref in operands]
        same = len(shapes) == 2 and shapes[0] is not None and shapes[0] == shapes[1]  # unknown shapes may differ
        return ELEMENTWISE if same else BROADCAST
    return REDUCE if entry.pattern == "reduce" else ELEMENTWISE


def operand_slots(graph: Graph, name: str) -> list[int]:
    """The input slots that carry data (not the axis operands the table marks constant)."""
    entry = op_class(graph.op(name))
    count = len(graph.input_nodes(name))
    constant = {slot % count for slot in entry.axis_operands} if entry and count else set()
    return [slot for slot in range(count) if slot not in constant]
