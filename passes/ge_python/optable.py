"""GE op types as FuseLens knows them: the IR of each op a pattern or a replacement may use, the op type
GE's TensorFlow parser gives a TensorFlow op, and what a GE-only op computes in TensorFlow terms.

A FuseLens graph is a TensorFlow GraphDef; a GE pass sees the graph GE's TF parser made of it. The
parser keeps TensorFlow's op type for most ops; `TF_TO_GE` holds the ones it renames: MatMul,
DepthwiseConv2dNative and Mean as read in the parser plugin that registers each
(`REGISTER_CUSTOM_OP("MatMulV2").OriginOpType("MatMul")` maps transpose_a/transpose_b to
transpose_x1/transpose_x2), the others as GE's IR-to-TensorFlow table of its CPU engine pairs them
(compiler/engines/cpu_engine/tf_engine/config/ir2tf: ReduceSum is TensorFlow's Sum). An op not in
`TF_TO_GE` keeps its name (AddV2 is an op of GE's IR too); a Placeholder is a Data node, as GE names
graph inputs.

`OPS` is the op functions `ge.es.math`, `ge.es.nn` and `ge.es.all` offer: the IR inputs (optional ones
may be None), the IR attributes with their defaults, and how the op is written back into a TensorFlow
graph: the TF op and attribute names when TensorFlow has the op, else `tf_op=None` and, for the numeric
proof, an expansion into TensorFlow ops (`EXPANSIONS`, e.g. GEMM(a, b, c, alpha, beta) =
alpha * MatMul(a, b) + beta * c).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fuselens.core.graph import Graph

# TensorFlow op -> GE op type, where GE's TF parser renames (see the module docstring).
TF_TO_GE: Mapping[str, str] = MappingProxyType({
    # the parser plugins
    "MatMul": "MatMulV2",
    "DepthwiseConv2dNative": "DepthwiseConv2D",
    "Mean": "ReduceMean",
    # GE's IR-to-TensorFlow table
    "Sum": "ReduceSum", "Max": "ReduceMax", "Min": "ReduceMin", "Prod": "ReduceProd", "All": "ReduceAll",
    "Any": "ReduceAny", "Softmax": "SoftmaxV2", "LogSoftmax": "LogSoftmaxV2", "ArgMax": "ArgMaxV2",
    "ResizeBilinear": "ResizeBilinearV2", "ResizeNearestNeighbor": "ResizeNearestNeighborV2", "TopKV2": "TopK",
    # graph inputs
    "Placeholder": "Data",
    "PlaceholderWithDefault": "Data",
})
CONST_TYPES = frozenset({"Const", "Constant"})


@dataclass(frozen=True)
class OpSpec:
    """One op's IR: inputs in order (`optional` may be left out), attributes with defaults, outputs."""

    ge_type: str
    inputs: tuple[str, ...]
    optional: frozenset[str] = frozenset()
    attrs: Mapping[str, Any] = field(default_factory=dict)
    outputs: int = 1
    tf_op: str | None = ""  # "" = the same name as GE's; None = TensorFlow has no such op
    tf_attrs: Mapping[str, str] = field(default_factory=dict)  # GE attribute -> TensorFlow attribute

    @property
    def tf_name(self) -> str | None:
        return self.ge_type if self.tf_op == "" else self.tf_op

    def tf_attr(self, ge_attr: str) -> str:
        return self.tf_attrs.get(ge_attr, ge_attr)


def _binary(ge_type: str, tf_op: str | None = "") -> OpSpec:
    return OpSpec(ge_type, ("x1", "x2"), tf_op=tf_op)


def _unary(ge_type: str) -> OpSpec:
    return OpSpec(ge_type, ("x",))


_CONV_ATTRS = {"strides": [1, 1, 1, 1], "pads": [0, 0, 0, 0], "dilations": [1, 1, 1, 1], "groups": 1,
               "data_format": "NHWC", "offset_x": 0}

OPS: Mapping[str, OpSpec] = MappingProxyType({spec.ge_type: spec for spec in [
    *(_binary(t) for t in ("Add", "AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Pow",
                           "SquaredDifference", "FloorDiv")),
    _binary("Div", "RealDiv"),
    *(_unary(t) for t in ("Relu", "Relu6", "Sigmoid", "Tanh", "Abs", "Exp", "Log", "Sqrt", "Rsqrt",
                          "Square", "Neg", "Reciprocal", "Erf", "Softplus", "Identity", "Gelu")),
    OpSpec("TensorMove", ("x",), tf_op="Identity"),
    OpSpec("BiasAdd", ("x", "bias"), attrs={"data_format": "NHWC"}),
    OpSpec("MatMulV2", ("x1", "x2", "bias", "offset_w"), frozenset({"bias", "offset_w"}),
           {"transpose_x1": False, "transpose_x2": False, "offset_x": 0}, tf_op="MatMul",
           tf_attrs={"transpose_x1": "transpose_a", "transpose_x2": "transpose_b"}),
    OpSpec("MatMul", ("x1", "x2", "bias"), frozenset({"bias"}), {"transpose_x1": False, "transpose_x2": False},
           tf_attrs={"transpose_x1": "transpose_a", "transpose_x2": "transpose_b"}),
    OpSpec("BatchMatMulV2", ("x1", "x2", "bias", "offset_w"), frozenset({"bias", "offset_w"}),
           {"adj_x1": False, "adj_x2": False, "offset_x": 0}, tf_attrs={"adj_x1": "adj_x", "adj_x2": "adj_y"}),
    OpSpec("BatchMatMul", ("x1", "x2"), attrs={"adj_x1": False, "adj_x2": False},
           tf_attrs={"adj_x1": "adj_x", "adj_x2": "adj_y"}),
    OpSpec("Conv2D", ("x", "filter", "bias", "offset_w"), frozenset({"bias", "offset_w"}), _CONV_ATTRS),
    OpSpec("DepthwiseConv2D", ("x", "filter", "bias", "offset_w"), frozenset({"bias", "offset_w"}),
           _CONV_ATTRS, tf_op="DepthwiseConv2dNative"),
    OpSpec("Reshape", ("x", "shape")),
    OpSpec("Transpose", ("x", "perm")),
    OpSpec("Cast", ("x",), attrs={"dst_type": 0}),
    OpSpec("ReduceMean", ("x", "axes"), attrs={"keep_dims": False}, tf_op="Mean"),
    OpSpec("ReduceSum", ("x", "axes"), attrs={"keep_dims": False}, tf_op="Sum"),
    OpSpec("GEMM", ("a", "b", "c", "alpha", "beta"), attrs={"transpose_a": False, "transpose_b": False},
           tf_op=None),
]})


def ge_type(tf_op: str) -> str:
    """The op type GE's TF parser gives a TensorFlow op."""
    return TF_TO_GE.get(tf_op, tf_op)


def tf_attr_name(ge_type_name: str, ge_attr: str) -> str:
    """Where a GE attribute of this op lives in a TensorFlow NodeDef (transpose_x1 -> transpose_a)."""
    spec = OPS.get(ge_type_name)
    return spec.tf_attr(ge_attr) if spec is not None else ge_attr


_GE_GRAPHS: weakref.WeakKeyDictionary[Graph, bool] = weakref.WeakKeyDictionary()


def is_ge_graph(graph: Graph) -> bool:
    """Whether `graph` is a GE graph dump (core/ascend/ge/convert.py: it has a NetOutput), whose op types
    and attribute names are GE's already; asked once per graph."""
    found = _GE_GRAPHS.get(graph)
    if found is None:
        found = _GE_GRAPHS[graph] = any(graph.op(name) == "NetOutput" for name in graph.nodes)
    return found


def node_type(graph: Graph, name: str) -> str:
    """A node's op type as a GE pass sees it: a dump's as it is, a TensorFlow graph's as GE's parser names it
    (a fused call node's `_fused_op_type`)."""
    op = graph.op_type(name)
    return op if is_ge_graph(graph) else ge_type(op)


def node_attr_name(graph: Graph, ge_type_name: str, ge_attr: str) -> str:
    """Where a GE attribute lives in this graph's NodeDef."""
    return ge_attr if is_ge_graph(graph) else tf_attr_name(ge_type_name, ge_attr)


# What a GE-only op computes, in TensorFlow ops, for the numeric proof: op -> one line for the docs.
EXPANSIONS: Mapping[str, str] = MappingProxyType({
    "GEMM": "alpha * MatMul(a, b, transpose_a, transpose_b) + beta * c",
})
