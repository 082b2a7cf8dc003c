"""Static output shapes without TensorFlow: a small table of shape functions for the ops the passes look at
(and the ops a CNN, a transformer block or a Keras model puts before them), propagated in topological order
from Placeholder shapes, Const values and whatever `_output_shapes` a node records.

A shape is a tuple of dimensions (None: a dimension not known statically) or None (not even the rank is
known). An op without an entry, a shape function that cannot tell (an operand of unknown rank, an axis that
is no constant) and a node on a TF1 while loop give None: the passes then say "shape unknown" rather than
guess. Where the table answers, it answers what TensorFlow's own shape inference does
(tests/core/test_static_shapes.py checks this on every sample and on Keras models).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from fuselens.core.graph import opdefs, proto

if TYPE_CHECKING:
    from fuselens.core.graph.queries import Graph

Shape = tuple[int | None, ...] | None
ShapeFunction = Callable[["Known", proto.NodeDef, list[Shape]], list[Shape]]

SAME_AS_INPUT = frozenset({
    "Identity", "Snapshot", "StopGradient", "PreventGradient", "CheckNumerics", "Relu", "Relu6", "Elu", "Selu",
    "LeakyRelu", "Sigmoid", "Tanh", "Softplus", "Softsign", "Exp", "Expm1", "Log", "Log1p", "Sqrt", "Rsqrt",
    "Square", "Neg", "Abs", "Reciprocal", "Inv", "Erf", "Floor", "Ceil", "Round", "Rint", "Sign", "Cast", "Softmax",
    "LogSoftmax", "ZerosLike", "OnesLike", "BiasAdd", "FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxArgs",
    "Sin", "Cos", "IsNan", "IsFinite", "LogicalNot", "Gelu", "ReverseV2",
})
BROADCASTING = frozenset({
    "Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "DivNoNan", "Maximum", "Minimum", "Pow", "SquaredDifference",
    "FloorDiv", "FloorMod", "Mod", "TruncateDiv", "Less", "LessEqual", "Greater", "GreaterEqual", "Equal",
    "NotEqual", "LogicalAnd", "LogicalOr", "Atan2", "MulNoNan", "Xdivy", "Xlogy", "SelectV2",
})
REDUCTIONS = frozenset({"Mean", "Sum", "Max", "Min", "Prod", "All", "Any", "EuclideanNorm"})
BATCH_NORMS = frozenset({"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"})
TRACKED_VALUES = frozenset({"Shape", "Identity", "Pack", "StridedSlice"})  # the ops Known.track_value follows


# Outputs whose shape TensorFlow's own inference leaves unknown too (FusedBatchNormV3's reserve_space_3: its
# shape function says nothing of it; every frozen graph records it without a shape).
UNKNOWN_TO_TENSORFLOW = frozenset({("FusedBatchNormV3", 5)})


def tensorflow_adds_nothing(graph: Graph, shapes: dict[tuple[str, int], Shape]) -> bool:
    """Whether TensorFlow's shape inference could add nothing to `shapes`: every output of every node is known in
    it, but those TensorFlow leaves unknown as well (where the table answers, it answers as TensorFlow does).

    A node's outputs are counted from its op's definition, and the node decoded only where their number is
    an attribute's (decoding each node was 0.5 s of the 100k-node graph's fusion)."""
    counts: dict[str, int | None] = {}  # op -> its number of outputs; None where a node's attributes say
    for name in graph.nodes:
        op = graph.op(name)
        if op not in counts:
            outputs = opdefs.op_info(op, graph.functions).outputs
            counts[op] = None if any(a.number_attr or a.type_list_attr for a in outputs) else len(outputs)
        count = counts[op]
        if count is None:
            count = len(opdefs.op_info(op, graph.functions).node_outputs(graph.node(name)))
        for port in range(count):
            if shapes.get((name, port)) is None and (op, port) not in UNKNOWN_TO_TENSORFLOW:
                return False
    return True


@dataclass(frozen=True)
class Derived:
    """What the table derived for one graph: (node, port) -> shape for every port a shape function or
    `_output_shapes` gave (None where it could not tell), and the int vectors tracked (see Known); `fresh`:
    how many nodes were derived rather than carried over (see infer_static_shapes)."""

    shapes: dict[tuple[str, int], Shape]
    values: dict[tuple[str, int], tuple[int | None, ...] | int | None]
    fresh: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Carried:
    """A graph an edit built, against what was derived for a graph it comes from: `same[i]` is True where node
    id i is that graph's NodeDef of the same name, unchanged (see Graph._index's `origin`)."""

    derived: Derived
    same: np.ndarray


def infer_static_shapes(graph: Graph, carried: Carried | None = None) -> Derived:
    """Every output's shape the table can tell, recorded `_output_shapes` first, in topological order.

    With `carried`, a node the edit left as it was, none of whose producers the edit changed or gave other
    shapes or values, keeps what was derived before (each pass's graph on a bare 100k-node .pb took 0.7-1 s
    to derive afresh, and a pass changes a few nodes per match): the outcome is what a fresh derivation gives.
    A node that forwards a constant makes its readers derive again, as a Const's value is read through it."""
    known = Known(graph)
    shapes, values = known.shapes, known.values
    old_shapes, old_values = (carried.derived.shapes, carried.derived.values) if carried is not None else ({}, {})
    same = carried.same.tolist() if carried is not None else None
    stale: set[str] = set()  # nodes to derive again: they read one whose outputs may be other than before
    fresh = 0
    order = graph.topological_ids()
    for i, name in zip(order, graph.node_names(order)):
        if same is not None and same[i] and name not in stale:
            port = 0
            while (key := (name, port)) in old_shapes:
                shapes[key] = old_shapes[key]
                port += 1
            if (name, 0) in old_values:
                values[(name, 0)] = old_values[(name, 0)]
            continue
        node = graph.node(name)  # decoded once here (Graph.recorded_shapes would decode it again)
        fresh += 1
        if "_output_shapes" in node.attr:
            outputs = [proto.shape_tuple(shape) for shape in node.attr["_output_shapes"].list.shape]
        else:
            inputs = [shapes.get(key) for key in graph.input_keys(name)]
            function = _FUNCTIONS.get(node.op)
            outputs = function(known, node, inputs) if function is not None else []
        for port, shape in enumerate(outputs):
            shapes[(name, port)] = shape
        if node.op in TRACKED_VALUES:
            known.track_value(node)
        if same is not None and (not same[i] or graph.const_source(name) is not None
                                 or _derived_otherwise(name, outputs, known, old_shapes, old_values)):
            stale.update(graph.consumer_nodes(name))
    return Derived(shapes, values, fresh)


def _derived_otherwise(name: str, outputs: list[Shape], known: Known, old_shapes: dict[tuple[str, int], Shape],
                       old_values: dict[tuple[str, int], object]) -> bool:
    """Whether a node derived again has other outputs or another tracked value than it had before."""
    return ((name, len(outputs)) in old_shapes
            or any(old_shapes.get((name, port), _UNKNOWN) != shape for port, shape in enumerate(outputs))
            or old_values.get((name, 0), _UNKNOWN) != known.values.get((name, 0), _UNKNOWN))


class Known:
    """What is known so far: output shapes, and the values of the small int vectors a shape is computed from
    (`Shape` -> `StridedSlice` -> `Pack` -> `Reshape`, as Keras writes a reshape of a batch of any size),
    with None for an element not known statically (the batch size)."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.shapes: dict[tuple[str, int], Shape] = {}
        self.values: dict[tuple[str, int], tuple[int | None, ...] | int | None] = {}

    def ints(self, node: proto.NodeDef, slot: int) -> list[int] | None:
        """Input `slot` as ints when every element is known, else None."""
        value = self.partial(node, slot)
        return None if value is None or None in value else value  # type: ignore[return-value]

    def partial(self, node: proto.NodeDef, slot: int) -> list[int | None] | None:
        """Input `slot` as a flat list of ints, None for an element not known; None when nothing is."""
        inputs = self.graph.inputs(node.name)
        if slot >= len(inputs):
            return None
        value = self.graph.const_value(inputs[slot].node) if inputs[slot].port == 0 else None
        if value is not None:
            return [int(v) for v in np.asarray(value).reshape(-1)] if value.dtype.kind in "iu" else None
        tracked = self.values.get((inputs[slot].node, inputs[slot].port), _UNKNOWN)
        if tracked is _UNKNOWN:
            return None
        return [tracked] if not isinstance(tracked, tuple) else list(tracked)  # type: ignore[list-item]

    def track_value(self, node: proto.NodeDef) -> None:
        """The value of a Shape, Pack, StridedSlice of one or Identity of one, when it is an int vector or scalar."""
        key = (node.name, 0)
        if node.op == "Shape" and (shape := self.shapes.get((self.graph.inputs(node.name)[0].node,
                                                                self.graph.inputs(node.name)[0].port))) is not None:
            self.values[key] = shape
        elif node.op == "Identity" and (value := self.partial(node, 0)) is not None:
            self.values[key] = tuple(value) if self.shapes.get(key) != () else value[0]
        elif node.op == "Pack" and self.shapes.get(key) is not None and len(self.shapes[key]) == 1:  # type: ignore[arg-type]
            parts = [self.partial(node, slot) for slot in range(len(self.graph.inputs(node.name)))]
            self.values[key] = tuple(part[0] if part is not None and len(part) == 1 else None for part in parts)
        elif node.op == "StridedSlice":
            value = self._sliced(node)
            if value is not _UNKNOWN:
                self.values[key] = value  # type: ignore[assignment]

    def _sliced(self, node: proto.NodeDef) -> object:
        """A 1-D slice of a tracked vector with constant bounds (one axis), or _UNKNOWN."""
        vector = self.partial(node, 0)
        begin, end, strides = (self.ints(node, slot) for slot in (1, 2, 3))
        if vector is None or begin is None or end is None or strides is None or len(begin) != 1:
            return _UNKNOWN
        if any(node.attr[mask].i for mask in ("ellipsis_mask", "new_axis_mask")):
            return _UNKNOWN
        if node.attr["shrink_axis_mask"].i & 1:
            return vector[begin[0]] if -len(vector) <= begin[0] < len(vector) else _UNKNOWN
        start = None if node.attr["begin_mask"].i & 1 else begin[0]
        stop = None if node.attr["end_mask"].i & 1 else end[0]
        return tuple(vector[start:stop:strides[0]])


_UNKNOWN = object()


def broadcast(a: Shape, b: Shape) -> Shape:
    """numpy's broadcast of two shapes; a dimension None where it depends on an unknown one."""
    if a is None or b is None:
        return None
    rank = max(len(a), len(b))
    a, b = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    out: list[int | None] = []
    for x, y in zip(a, b):
        if x == 1:
            out.append(y)
        elif y == 1 or x == y:
            out.append(x)
        elif x is None or y is None:
            out.append(x if y is None else y)
        else:
            return None  # not broadcastable: TensorFlow would refuse the graph
    return tuple(out)


def _attr_ints(node: proto.NodeDef, key: str) -> list[int]:
    return list(node.attr[key].list.i) if key in node.attr else []


def _string(node: proto.NodeDef, key: str, default: str) -> str:
    return node.attr[key].s.decode() if key in node.attr and node.attr[key].s else default


def _placeholder(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    if "shape" not in node.attr:
        return [inputs[0] if inputs else None]
    return [proto.shape_tuple(node.attr["shape"].shape)]


def _const(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    return [proto.shape_tuple(node.attr["value"].tensor.tensor_shape)]


def _same(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    return [inputs[0] if inputs else None]


def _identity_n(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    return list(inputs)


def _broadcasting(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    data = inputs[1:] if node.op == "SelectV2" else inputs[:2]
    shape = data[0] if data else None
    for other in data[1:]:
        shape = broadcast(shape, other)
    if node.op == "SelectV2":
        shape = broadcast(inputs[0], shape)
    return [shape]


def _add_n(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    known = [shape for shape in inputs if shape is not None]
    return [known[0] if known and all(shape == known[0] for shape in known) else None]


def _window(size: int | None, kernel: int | None, stride: int, dilation: int, padding: str,
            pad: tuple[int, int] = (0, 0)) -> int | None:
    """One spatial dimension of a convolution or pooling window's output."""
    if size is None:
        return None
    if padding == "SAME":
        return math.ceil(size / stride)
    if kernel is None:
        return None
    effective = (kernel - 1) * dilation + 1
    return (size + pad[0] + pad[1] - effective) // stride + 1


def _spatial(node: proto.NodeDef, x: tuple[int | None, ...], kernel: Sequence[int | None],
             channels: int | None) -> tuple[int | None, ...]:
    """The output of a 2-D window op over NHWC or NCHW input `x` (kernel: height, width)."""
    nchw = _string(node, "data_format", "NHWC") == "NCHW"
    h, w = (2, 3) if nchw else (1, 2)
    strides = _attr_ints(node, "strides") or [1, 1, 1, 1]
    dilations = _attr_ints(node, "dilations") or [1, 1, 1, 1]
    padding = _string(node, "padding", "VALID")
    explicit = _attr_ints(node, "explicit_paddings") or [0] * 8
    dims = [_window(x[axis], kernel[i], strides[axis], dilations[axis], padding,
                    (explicit[2 * axis], explicit[2 * axis + 1]))
            for i, axis in enumerate((h, w))]
    return (x[0], channels, *dims) if nchw else (x[0], *dims, channels)


def _conv2d(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    x, kernel = inputs[0], inputs[1]
    if x is None or len(x) != 4 or kernel is None or len(kernel) != 4:
        return [None]
    if node.op == "DepthwiseConv2dNative":
        channels = None if kernel[2] is None or kernel[3] is None else kernel[2] * kernel[3]
    else:
        channels = kernel[3]
    return [_spatial(node, x, kernel[:2], channels)]


def _pool(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    x = inputs[0]
    if x is None or len(x) != 4:
        return [None]
    ksize = _attr_ints(node, "ksize")
    nchw = _string(node, "data_format", "NHWC") == "NCHW"
    kernel = (ksize[2], ksize[3]) if nchw else (ksize[1], ksize[2])
    return [_spatial(node, x, kernel, x[1] if nchw else x[3])]


def _batch_norm(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    x = inputs[0]
    channel: Shape = None
    if x is not None and len(x) == 4:
        channel = (x[1] if _string(node, "data_format", "NHWC") == "NCHW" else x[3],)
    statistics = [channel] * 4
    return [x, *statistics, None] if node.op == "FusedBatchNormV3" else [x, *statistics]


def _reduction(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    x = inputs[0]
    axes = known.ints(node, 1)
    keep = node.attr["keep_dims"].b if "keep_dims" in node.attr else False
    if x is None or axes is None:
        return [tuple([None] * len(x)) if keep and x is not None else None]
    reduced = {a % len(x) for a in axes} if x else set()
    if keep:
        return [tuple(1 if i in reduced else d for i, d in enumerate(x))]
    return [tuple(d for i, d in enumerate(x) if i not in reduced)]


def _reshape(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    target = known.partial(node, 1)
    if target is None:
        size = inputs[1]
        return [tuple([None] * size[0]) if size is not None and len(size) == 1 and size[0] is not None else None]
    x = inputs[0]
    if -1 in target:
        rest = [d for d in target if d != -1]
        total = math.prod(x) if x is not None and None not in x else None  # type: ignore[arg-type]
        fill = total // math.prod(rest) if total is not None and None not in rest and math.prod(rest) else None  # type: ignore[arg-type]
        return [tuple(fill if d == -1 else d for d in target)]
    return [tuple(target)]


def _strided_slice(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    """Constant bounds without ellipsis or new axes: each sliced axis as Python slices it, shrunk ones gone."""
    x = inputs[0]
    begin, end, strides = (known.ints(node, slot) for slot in (1, 2, 3))
    if x is None or begin is None or end is None or strides is None or len(begin) > len(x):
        return [None]
    if any(node.attr[mask].i for mask in ("ellipsis_mask", "new_axis_mask")):
        return [None]
    masks = {mask: node.attr[mask].i for mask in ("begin_mask", "end_mask", "shrink_axis_mask")}
    out: list[int | None] = []
    for axis, dim in enumerate(x):
        if axis >= len(begin):
            out.append(dim)
        elif not masks["shrink_axis_mask"] >> axis & 1:
            start = None if masks["begin_mask"] >> axis & 1 else begin[axis]
            stop = None if masks["end_mask"] >> axis & 1 else end[axis]
            out.append(None if dim is None else len(range(*slice(start, stop, strides[axis]).indices(dim))))
    return [tuple(out)]


def _squeeze(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    x = inputs[0]
    if x is None:
        return [None]
    axes = {a % len(x) for a in _attr_ints(node, "squeeze_dims")}
    if not axes:
        if None in x:
            return [None]
        return [tuple(d for d in x if d != 1)]
    return [tuple(d for i, d in enumerate(x) if i not in axes)]


def _expand_dims(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    x, axis = inputs[0], known.ints(node, 1)
    if x is None or not axis:
        return [None]
    at = axis[0] % (len(x) + 1)
    return [(*x[:at], 1, *x[at:])]


def _matmul(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    a, b = inputs[0], inputs[1]
    if a is None or b is None or len(a) < 2 or len(b) < 2:
        return [None]
    if node.op == "MatMul":
        flip_a, flip_b = node.attr["transpose_a"].b, node.attr["transpose_b"].b
    else:
        flip_a, flip_b = node.attr["adj_x"].b, node.attr["adj_y"].b
    rows = a[-1] if flip_a else a[-2]
    cols = b[-2] if flip_b else b[-1]
    if node.op == "MatMul":
        return [(rows, cols)]
    batch = broadcast(a[:-2], b[:-2])
    return [None if batch is None else (*batch, rows, cols)]


def _pad(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    x, paddings = inputs[0], known.ints(node, 1)
    if x is None or paddings is None or len(paddings) != 2 * len(x):
        return [None if x is None else tuple([None] * len(x))]
    return [tuple(None if d is None else d + paddings[2 * i] + paddings[2 * i + 1] for i, d in enumerate(x))]


def _concat(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    count = node.attr["N"].i
    axis, parts = known.ints(node, count), inputs[:count]
    if axis is None or any(part is None for part in parts) or len({len(p) for p in parts}) != 1:  # type: ignore[arg-type]
        return [None]
    at = axis[0] % len(parts[0])  # type: ignore[arg-type]
    along = [p[at] for p in parts]  # type: ignore[index]
    out = list(parts[0])  # type: ignore[arg-type]
    for i in range(len(out)):
        if i != at and out[i] is None:
            out[i] = next((p[i] for p in parts if p[i] is not None), None)  # type: ignore[index]
    out[at] = None if None in along else sum(along)  # type: ignore[arg-type]
    return [tuple(out)]


def _transpose(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    x, perm = inputs[0], known.ints(node, 1)
    if x is None or perm is None or len(perm) != len(x):
        return [None if x is None else tuple([None] * len(x))]
    return [tuple(x[p] for p in perm)]


def _shape_of(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    return [None if inputs[0] is None else (len(inputs[0]),)]


def _scalar(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    return [()]


def _pack(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    first = inputs[0] if inputs else None
    if first is None:
        return [None]
    at = node.attr["axis"].i % (len(first) + 1)
    return [(*first[:at], len(inputs), *first[at:])]


def _split(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    """Split (axis, value) into num_split equal parts; SplitV (value, sizes, axis) into the given sizes."""
    count = node.attr["num_split"].i
    x, axis = (inputs[1], known.ints(node, 0)) if node.op == "Split" else (inputs[0], known.ints(node, 2))
    sizes = [None] * count if node.op == "Split" else known.ints(node, 1)
    if x is None or axis is None or sizes is None or len(sizes) != count:
        return [None] * count
    at = axis[0] % len(x)
    if node.op == "Split":
        sizes = [None if x[at] is None else x[at] // count] * count
    elif -1 in sizes:
        rest = None if x[at] is None else x[at] - sum(s for s in sizes if s != -1)
        sizes = [rest if s == -1 else s for s in sizes]
    return [(*x[:at], size, *x[at + 1:]) for size in sizes]


def _unpack(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    x, count = inputs[0], node.attr["num"].i
    if x is None:
        return [None] * count
    at = node.attr["axis"].i % len(x)
    return [(*x[:at], *x[at + 1:])] * count


def _tile(known: Known, node: proto.NodeDef, inputs: list[Shape]) -> list[Shape]:
    x, multiples = inputs[0], known.ints(node, 1)
    if x is None or multiples is None or len(multiples) != len(x):
        return [None if x is None else tuple([None] * len(x))]
    return [tuple(None if d is None else d * m for d, m in zip(x, multiples))]


_FUNCTIONS: dict[str, ShapeFunction] = {
    **dict.fromkeys(("Placeholder", "PlaceholderWithDefault"), _placeholder),
    "Const": _const,
    **dict.fromkeys(SAME_AS_INPUT, _same),
    "IdentityN": _identity_n,
    **dict.fromkeys(BROADCASTING, _broadcasting),
    "AddN": _add_n,
    **dict.fromkeys(("Conv2D", "DepthwiseConv2dNative"), _conv2d),
    **dict.fromkeys(("MaxPool", "AvgPool"), _pool),
    **dict.fromkeys(BATCH_NORMS, _batch_norm),
    **dict.fromkeys(REDUCTIONS, _reduction),
    "Reshape": _reshape,
    "Squeeze": _squeeze,
    "ExpandDims": _expand_dims,
    **dict.fromkeys(("MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3"), _matmul),
    **dict.fromkeys(("Pad", "PadV2", "MirrorPad"), _pad),
    "ConcatV2": _concat,
    "Transpose": _transpose,
    "Shape": _shape_of,
    **dict.fromkeys(("Rank", "Size"), _scalar),
    "Pack": _pack,
    "StridedSlice": _strided_slice,
    "Unpack": _unpack,
    **dict.fromkeys(("Split", "SplitV"), _split),
    "Tile": _tile,
}
