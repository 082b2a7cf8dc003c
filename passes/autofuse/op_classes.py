"""The one table AutoFuse reasons over: TF op -> fusion class and Ascend graph-engine spelling.

Fusion rules (grouping.py) are stated over classes, never over op names (TVM's op patterns do
the same). A binary elementwise op whose input shapes differ is `broadcast`, decided per node
from the graph's static shapes; every op not in the table is `opaque` and never fuses.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.graph import Graph
from passes.autofuse import flags

ELEMENTWISE = "elementwise"
BROADCAST = "broadcast"
REDUCE = "reduce"
CONCAT = "concat"
OPAQUE = "opaque"
# The AUTOFUSE_FLAGS category that switches each class on and off.
FLAG_CATEGORY = {ELEMENTWISE: flags.POINTWISE, BROADCAST: flags.BROADCAST, REDUCE: flags.REDUCE,
                 CONCAT: flags.CONCAT}


@dataclass(frozen=True)
class OpClass:
    kind: str  # elementwise | broadcast | reduce | concat (opaque ops are not in the table)
    ascend: str  # the op type the Ascend graph engine uses, which fused kernel names spell
    binary: bool = False  # elementwise with two tensor operands: broadcast when their shapes differ
    const_operands: tuple[int, ...] = ()  # input slots that must be compile-time constants (axes)


def _unary(*names: str) -> dict[str, OpClass]:
    return {name: OpClass(ELEMENTWISE, name) for name in names}


def _binary(**spellings: str) -> dict[str, OpClass]:
    return {name: OpClass(ELEMENTWISE, ascend, binary=True) for name, ascend in spellings.items()}


def _reduce(**spellings: str) -> dict[str, OpClass]:
    return {name: OpClass(REDUCE, ascend, const_operands=(1,)) for name, ascend in spellings.items()}


OP_TABLE: dict[str, OpClass] = {
    **_unary("Abs", "Relu", "Relu6", "Elu", "Selu", "LeakyRelu", "Exp", "Expm1", "Log", "Log1p", "Neg",
             "Sqrt", "Rsqrt", "Square", "Reciprocal", "Sigmoid", "Tanh", "Softplus", "Softsign", "Erf",
             "Sin", "Cos", "Floor", "Ceil", "Round", "Sign", "Cast", "LogicalNot", "IsNan", "IsInf",
             "IsFinite"),
    **_binary(Add="Add", AddV2="Add", Sub="Sub", Mul="Mul", RealDiv="RealDiv", Div="Div",
              DivNoNan="DivNoNan", FloorDiv="FloorDiv", FloorMod="FloorMod", Maximum="Maximum",
              Minimum="Minimum", Pow="Pow", SquaredDifference="SquaredDifference", BiasAdd="BiasAdd",
              Greater="Greater", GreaterEqual="GreaterEqual", Less="Less", LessEqual="LessEqual",
              Equal="Equal", NotEqual="NotEqual", LogicalAnd="LogicalAnd", LogicalOr="LogicalOr"),
    "SelectV2": OpClass(ELEMENTWISE, "SelectV2"),
    "ClipByValue": OpClass(ELEMENTWISE, "ClipByValue"),
    "BroadcastTo": OpClass(BROADCAST, "BroadcastTo", const_operands=(1,)),
    **_reduce(Sum="ReduceSumD", Mean="ReduceMeanD", Max="ReduceMaxD", Min="ReduceMinD", Prod="ReduceProdD",
              All="ReduceAllD", Any="ReduceAnyD"),
    "ConcatV2": OpClass(CONCAT, "ConcatD", const_operands=(-1,)),
}


def op_class(op: str) -> OpClass | None:
    return OP_TABLE.get(op)


def ascend_op_type(op: str) -> str:
    """The graph-engine spelling of a TF op type (the TF name for ops outside the table)."""
    entry = OP_TABLE.get(op)
    return entry.ascend if entry else op


def classify(graph: Graph, name: str) -> str:
    """The fusion class of one node: the table's, with binary elementwise ops that broadcast as
    `broadcast`, and ops whose axis operand is not a constant as `opaque` (the kernel needs it
    at compile time)."""
    entry = OP_TABLE.get(graph.op(name))
    if entry is None:
        return OPAQUE
    inputs = graph.inputs(name)
    for slot in entry.const_operands:
        if not inputs or not graph.is_const(inputs[slot].node):
            return OPAQUE
    if entry.binary and len(inputs) == 2:
        shapes = [graph.output_shape(ref.node, ref.port) for ref in inputs]
        if shapes[0] != shapes[1]:
            return BROADCAST
    return entry.kind


def operand_slots(graph: Graph, name: str) -> list[int]:
    """The input slots that carry data (not the axis operands the table marks constant)."""
    entry = OP_TABLE.get(graph.op(name))
    count = len(graph.inputs(name))
    constant = {slot % count for slot in entry.const_operands} if entry and count else set()
    return [slot for slot in range(count) if slot not in constant]
