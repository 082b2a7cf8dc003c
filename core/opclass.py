"""Op classes: one op-type -> category table and one palette, shared by the graph view, charts and legend.

Categories follow what a fusion cares about (TVM states its fusion rules over op classes the
same way): compute-bound conv/matmul, memory-bound elementwise, reductions, normalisations,
data movement, nodes a pass fused, and everything else.
"""

from __future__ import annotations

from typing import Literal

Category = Literal["conv", "elementwise", "reduce", "norm", "data", "fused", "other"]

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
_OPS: dict[Category, frozenset[str]] = {
    "conv": frozenset({
        "Conv2D", "Conv3D", "DepthwiseConv2dNative", "Conv2DBackpropInput", "Conv3DBackpropInputV2",
        "MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum", "_FusedConv2D", "_FusedMatMul",
        "_FusedDepthwiseConv2dNative",
    }),
    "elementwise": frozenset({
        "Abs", "Add", "AddV2", "AddN", "BiasAdd", "Sub", "Mul", "RealDiv", "Div", "DivNoNan", "FloorDiv",
        "FloorMod", "Maximum", "Minimum", "Pow", "SquaredDifference", "Square", "Sqrt", "Rsqrt", "Exp", "Log",
        "Log1p", "Neg", "Reciprocal", "Relu", "Relu6", "Elu", "Selu", "LeakyRelu", "Sigmoid", "Tanh", "Softplus",
        "Softsign", "Erf", "Gelu", "Sin", "Cos", "Floor", "Ceil", "Round", "Sign", "Cast", "Greater",
        "GreaterEqual", "Less", "LessEqual", "Equal", "NotEqual", "LogicalAnd", "LogicalOr", "LogicalNot",
        "Select", "SelectV2", "ClipByValue", "Swish", "HardSwish", "_UnaryOpsComposition",
    }),
    "reduce": frozenset({
        "Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "ArgMax", "ArgMin", "MaxPool", "AvgPool", "MaxPool3D",
        "AvgPool3D", "Softmax", "LogSoftmax", "TopKV2", "Cumsum",
    }),
    "norm": frozenset({
        "FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", "LayerNorm", "InstanceNorm", "LRN",
        "L2Loss", "BatchNormWithGlobalNormalization",
    }),
    "data": frozenset({
        "Reshape", "Transpose", "ConcatV2", "Concat", "Split", "SplitV", "Slice", "StridedSlice", "Pack",
        "Unpack", "Squeeze", "ExpandDims", "Pad", "PadV2", "MirrorPad", "Tile", "Gather", "GatherV2",
        "GatherNd", "ReverseV2", "Shape", "Fill", "Identity", "IdentityN", "BroadcastTo", "ResizeBilinear",
        "ResizeNearestNeighbor", "CropAndResize", "DepthToSpace", "SpaceToDepth", "OneHot", "Range",
        "ZerosLike", "OnesLike", "Snapshot", "StopGradient",
    }),
}
_CATEGORY_OF: dict[str, Category] = {op: cat for cat, ops in _OPS.items() for op in ops}


def op_category(op: str, *, fused: bool = False) -> Category:
    """The category of an op type; `fused` for a node a pass created (its op is a library function)."""
    if fused:
        return "fused"
    return _CATEGORY_OF.get(op, "other")


def ops_in(category: Category) -> frozenset[str]:
    """The op types listed under a category (empty for fused/other, which are decided otherwise)."""
    return _OPS.get(category, frozenset())
