"""Op classes: the one op-type table of FuseLens, and one palette for the graph view, charts and legend.

Each op has a drawing category (compute-bound conv/matmul, memory-bound elementwise,
reductions, normalisations, data movement; nodes a pass fused and everything else are decided
otherwise) and a fusion pattern in TVM's terms (elementwise, broadcast, injective, reduce,
opaque). Fusion rules are stated over patterns, never over op names: AutoFuse
(passes/autofuse/op_classes.py) takes its classes from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Category = Literal["conv", "elementwise", "reduce", "norm", "data", "fused", "other"]
# TVM's op patterns: elementwise (one output element from the same input element), broadcast
# (elementwise over operands that may broadcast), injective (data movement), reduce, opaque.
Pattern = Literal["elementwise", "broadcast", "injective", "reduce", "opaque"]

CATEGORY_TITLES: dict[Category, str] = {
    "conv": "conv / matmul",
    "elementwise": "elementwise",
    "reduce": "reduce",
    "norm": "norm",
    "data": "data movement",
    "fused": "fused",
    "other": "other",
}

# Fill colours (light enough for dark text) and one darker border per category. The hues keep
# clear of the diff colours (removed red, new green, modified amber), which the views also use.
PALETTE: dict[Category, str] = {
    "conv": "#8fb8e8",
    "elementwise": "#a8e0e8",
    "reduce": "#c6a7e0",
    "norm": "#d9c2a7",
    "data": "#d9d9d9",
    "fused": "#e3a6e8",
    "other": "#f3efe6",
}
BORDER: dict[Category, str] = {
    "conv": "#3c6ea8",
    "elementwise": "#2f8a96",
    "reduce": "#6f4a94",
    "norm": "#8a6a45",
    "data": "#7a7a7a",
    "fused": "#9a3ea3",
    "other": "#9a9384",
}

# What fusion did to a node, as (fill, border): removed red, new fused green, modified weights amber. The
# window's panes and the lesson page's pictures (core/layout/svg.py) both draw with these.
DIFF_COLOURS: dict[str, tuple[str, str]] = {
    "removed": ("#f6aea9", "#c5221f"),
    "new": ("#a8dab5", "#188038"),
    "modified": ("#fdd663", "#e37400"),
}


@dataclass(frozen=True)
class OpClass:
    category: Category  # how the views draw it
    pattern: Pattern  # what a fusion may do with it
    # Input slots a fusion needs as compile-time constants (reduce axes, concat axis, broadcast shape).
    axis_operands: tuple[int, ...] = ()


def _ops(category: Category, pattern: Pattern, names: str, axis_operands: tuple[int, ...] = ()) -> dict[str, OpClass]:
    return dict.fromkeys(names.split(), OpClass(category, pattern, axis_operands))


OP_CLASSES: dict[str, OpClass] = {
    **_ops("conv", "opaque", """Conv2D Conv3D DepthwiseConv2dNative Conv2DBackpropInput Conv3DBackpropInputV2 MatMul
           BatchMatMul BatchMatMulV2 BatchMatMulV3 Einsum _FusedConv2D _FusedMatMul _FusedDepthwiseConv2dNative"""),
    **_ops("elementwise", "elementwise", """Abs Relu Relu6 Elu Selu LeakyRelu Exp Expm1 Log Log1p Neg Sqrt Rsqrt
           Square Reciprocal Sigmoid Tanh Softplus Softsign Erf Gelu Swish HardSwish Sin Cos Floor Ceil Round
           Sign Cast LogicalNot IsNan IsInf IsFinite AddN SelectV2 ClipByValue"""),
    **_ops("elementwise", "broadcast", """Add AddV2 Sub Mul RealDiv Div DivNoNan FloorDiv FloorMod Maximum Minimum
           Pow SquaredDifference BiasAdd Greater GreaterEqual Less LessEqual Equal NotEqual LogicalAnd LogicalOr"""),
    # Drawn as elementwise, never fused: Select's condition may pick whole rows, and Grappler's
    # _UnaryOpsComposition is already one kernel of several ops.
    **_ops("elementwise", "opaque", "Select _UnaryOpsComposition"),
    **_ops("reduce", "reduce", "Sum Mean Max Min Prod All Any", axis_operands=(1,)),
    # Drawn as reductions; no fusion rule takes them.
    **_ops("reduce", "opaque", "ArgMax ArgMin MaxPool AvgPool MaxPool3D AvgPool3D Softmax LogSoftmax TopKV2 Cumsum"),
    **_ops("norm", "opaque", """FusedBatchNorm FusedBatchNormV2 FusedBatchNormV3 LayerNorm InstanceNorm LRN L2Loss
           BatchNormWithGlobalNormalization"""),
    **_ops("data", "injective", """Reshape Transpose Concat Split SplitV Slice StridedSlice Pack Unpack Squeeze
           ExpandDims Pad PadV2 MirrorPad Tile Gather GatherV2 GatherNd ReverseV2 Shape Fill Identity IdentityN
           ResizeBilinear ResizeNearestNeighbor CropAndResize DepthToSpace SpaceToDepth OneHot Range ZerosLike
           OnesLike Snapshot StopGradient"""),
    **_ops("data", "injective", "ConcatV2", axis_operands=(-1,)),
    **_ops("data", "broadcast", "BroadcastTo", axis_operands=(1,)),
}
_OPS: dict[Category, frozenset[str]] = {
    category: frozenset(op for op, entry in OP_CLASSES.items() if entry.category == category)
    for category in CATEGORY_TITLES
}


def op_class(op: str) -> OpClass | None:
    """The class of an op type, None for an op outside the table (drawn as other, never fused)."""
    return OP_CLASSES.get(op)


def op_category(op: str, *, fused: bool = False) -> Category:
    """The category of an op type; `fused` for a node a pass created (its op is a library function)."""
    if fused:
        return "fused"
    entry = OP_CLASSES.get(op)
    return entry.category if entry else "other"


def ops_in(category: Category) -> frozenset[str]:
    """The op types listed under a category (empty for fused/other, which are decided otherwise)."""
    return _OPS[category]
