"""What the AMCT passes share: the "op [+BiasAdd]" chain, BatchNorm checks and the fold arithmetic.

Per output channel c a BatchNorm at inference is y = x * s + shift with
s = gamma / sqrt(var + eps) and shift = beta - mean * s. Folding it into the op before it:
W'[..., c] = W[..., c] * s and b' = b * s + shift = (b - mean) * s + beta (b = 0 without BiasAdd).
A Mul by a scalar is the same fold with s scalar and no shift.

The fold keeps the op's name (a modified node), gives it a new filter Const, and gives the chain a
BiasAdd with a new bias Const (the existing BiasAdd, modified, or a new one). The old weights are
pruned by the engine once nothing reads them.

The folded values are computed wide (wide_dtype) and cast once into the weights' dtype; a fold
whose values that dtype cannot hold is refused (fit_problem), so a float16 filter never becomes inf.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from fuselens.core.graph import FORWARDING_OPS, Graph, GraphEditor, TensorRef, proto
from fuselens.core.graph.nodes import make_const, make_node
from fuselens.core.graph.provenance import Rewrite
from fuselens.passes.base import Culprit, FusionPass, Match, NearMiss, Reason, reading_edge
from fuselens.passes.pattern import Op, match

BN_TYPES = "FusedBatchNorm|FusedBatchNormV2|FusedBatchNormV3"
BN_PARAMS = ("gamma", "beta", "mean", "variance")  # FusedBatchNorm inputs 1..4
CONV_TYPES = ("Conv2D", "DepthwiseConv2dNative")
FILTER_SLOT = 1  # the weight input of Conv2D, DepthwiseConv2dNative, MatMul and Conv2DBackpropInput
PREVIEW = 4  # values shown per array in Match.details


# Ops that only reshape a constant: Keras 3 writes BatchNorm parameters as Reshape(ReadVariableOp)
# and a conv bias as Squeeze(Reshape(ReadVariableOp)); their values still fold, so for AMCT a
# constant is seen through them as well as through forwarding ops (Graph.const_chain).
SHAPE_OPS = frozenset({"Reshape", "Squeeze", "ExpandDims"})
FOLD_THROUGH = FORWARDING_OPS | SHAPE_OPS


def constant_value(graph: Graph, name: str) -> np.ndarray | None:
    """The value of a constant seen through FOLD_THROUGH (reshapes applied); else None."""
    chain = graph.const_chain(name, through=FOLD_THROUGH)
    if chain is None:
        return None
    value = graph.const_value(chain[-1])
    for node in reversed(chain[:-1]):
        op = graph.op(node)
        if op == "Squeeze":
            dims = graph.attr(node, "squeeze_dims", [])
            value = np.squeeze(value, axis=tuple(dims) if dims else None)
        elif op in ("Reshape", "ExpandDims"):
            argument = graph.const_value(graph.input_node(node, 1))
            value = value.reshape(argument) if op == "Reshape" else np.expand_dims(value, int(argument))
    return value


def constant_shape(graph: Graph, name: str) -> tuple[int, ...]:
    """The shape of a constant, read from its TensorProto header when no reshape is in the way."""
    source = graph.const_source(name)
    if source is not None:
        return tuple(d or 0 for d in proto.shape_tuple(graph.node(source).attr["value"].tensor.tensor_shape) or ())
    return constant_value(graph, name).shape


class AmctPass(FusionPass):
    """Base of the AMCT passes: a reshaped constant counts as a weight (and is pruned once unread)."""

    family = "amct"
    constant_through = FOLD_THROUGH


def chain_pattern(op_types: Iterable[str]) -> Op:
    """OP [+ BiasAdd], matched from its last node."""
    return Op("BiasAdd", "bias_add", [Op("|".join(op_types), "op")], optional=True)


@dataclass(frozen=True)
class Chain:
    """An op with a constant weight at input 1 and an optional BiasAdd after it."""

    op: str
    filter: str
    bias_add: str | None = None
    bias: str | None = None

    @property
    def output(self) -> str:
        return self.bias_add or self.op

    @property
    def nodes(self) -> tuple[str, ...]:
        return (self.op, self.bias_add) if self.bias_add else (self.op,)

    @property
    def weights(self) -> tuple[str, ...]:
        return (self.filter, self.bias) if self.bias else (self.filter,)

    def weight_roles(self) -> dict[str, str]:
        """Role -> node of every weight the fold rewrites, for a worded refusal."""
        roles = {f"filter of {self.op}": self.filter}
        if self.bias_add and self.bias:
            roles[f"bias of {self.bias_add}"] = self.bias
        return roles


def find_chain(graph: Graph, node: str, op_types: Iterable[str]) -> tuple[Chain | None, str]:
    """The chain ending at `node`, or None and why not (a structural mismatch says so in words)."""
    result = match(graph, chain_pattern(op_types), node)
    if not result.ok:
        return None, result.reason
    op, bias_add = result.bindings["op"], result.bindings.get("bias_add")
    chain = Chain(op, graph.input_node(op, FILTER_SLOT), bias_add,
                  graph.input_node(bias_add, 1) if bias_add else None)
    if bias_add and graph.attr(bias_add, "data_format", "NHWC") != graph.attr(op, "data_format", "NHWC"):
        return None, f"{bias_add} and {op} disagree on data_format"
    return chain, ""


def non_constant(graph: Graph, named_inputs: Mapping[str, str], readers: Iterable[str] = ()) -> Reason | None:
    """A reason when one of the role -> node inputs is not a constant (seen through FOLD_THROUGH);
    its culprit is the edge into the structure (`readers`)."""
    for role, node in named_inputs.items():
        if not graph.is_const(node, through=FOLD_THROUGH):
            return Reason(f"the {role} ({node}, {graph.op(node)}) is not a constant, so it cannot be folded",
                          node, edge=reading_edge(graph, node, readers))
    return None


def bn_checks(graph: Graph, bn: str) -> Reason | None:
    """Why a FusedBatchNorm* cannot be folded at all, or None."""
    if graph.attr(bn, "is_training", True):
        return Reason(f"{bn} ({graph.op(bn)}) is in training mode (is_training=true): it normalises with batch "
                      "statistics, so there are no fixed mean and variance to fold", bn)
    params = {role: graph.input_node(bn, i + 1) for i, role in enumerate(BN_PARAMS)}
    reason = non_constant(graph, {f"BatchNorm {role}": node for role, node in params.items()}, (bn,))
    if reason:
        return reason
    side = [c for c in graph.consumers(bn) if c.port != 0]
    if side:
        return Reason(f"{side[0].node} reads output {side[0].port} of {bn} (its batch statistics), which a fold "
                      "removes", bn, edge=(bn, side[0].node))
    return None


@dataclass(frozen=True)
class Affine:
    """y = x * scale + shift per output channel (scale may be a scalar, shift may be absent)."""

    scale: np.ndarray
    shift: np.ndarray | None = None
    epsilon: float | None = None

    def channels(self) -> int:
        return int(self.scale.size)

    def part(self, start: int, stop: int) -> Affine:
        """The channels [start, stop): one branch of a group conv."""
        return Affine(self.scale[start:stop], None if self.shift is None else self.shift[start:stop], self.epsilon)

    def finite(self) -> bool:
        return bool(np.isfinite(self.scale).all() and (self.shift is None or np.isfinite(self.shift).all()))


def batchnorm_affine(gamma: np.ndarray, beta: np.ndarray, mean: np.ndarray, variance: np.ndarray,
                     epsilon: float) -> Affine:
    """s = gamma / sqrt(var + eps), shift = beta - mean * s (in float64, cast when written)."""
    with np.errstate(all="ignore"):
        scale = np.asarray(gamma, np.float64) / np.sqrt(np.asarray(variance, np.float64) + epsilon)
        shift = np.asarray(beta, np.float64) - np.asarray(mean, np.float64) * scale
    return Affine(scale, shift, float(epsilon))


def bn_affine(graph: Graph, bn: str) -> Affine:
    """The affine map of an inference FusedBatchNorm* with constant parameters."""
    values = [constant_value(graph, graph.input_node(bn, i + 1)) for i in range(len(BN_PARAMS))]
    return batchnorm_affine(*values, epsilon=graph.attr(bn, "epsilon", 1e-4))


def out_channels(graph: Graph, chain: Chain) -> int:
    """Output channels of the chain's op from its filter: [kh, kw, in, mult] for depthwise, last axis else."""
    shape = constant_shape(graph, chain.filter)
    return int(shape[2] * shape[3]) if graph.op(chain.op) == "DepthwiseConv2dNative" else int(shape[-1])


def channel_scale(op_type: str, filter_shape: tuple[int, ...], scale: np.ndarray) -> np.ndarray:
    """s shaped to multiply W along its output channel; a depthwise filter [kh, kw, in, mult] has channel
    in*mult+m."""
    if scale.ndim and op_type == "DepthwiseConv2dNative":
        return scale.reshape(filter_shape[2], filter_shape[3])
    return scale


def wide_dtype(dtype: np.dtype) -> np.dtype:
    """Where a fold into `dtype` weights is computed, so that nothing overflows or underflows before the
    one cast at the end: float64 for float16, bfloat16 and float32 (their products and quotients stay
    far inside its range), extended precision (np.longdouble) for float64 and complex128, and Python
    integers for integer weights (exact at any size)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return np.dtype(object)
    if dtype in (np.float64, np.complex128):
        return np.result_type(dtype, np.longdouble)
    return np.result_type(dtype, np.float64)


def dtype_info(dtype: np.dtype) -> Any:
    """numpy's finfo / iinfo of a weight dtype; ml_dtypes' for bfloat16, float8 and int4, which numpy lacks
    (imported here: a model holding such weights has loaded it already)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return np.iinfo(dtype)
    if dtype.kind in "fc":
        return np.finfo(dtype)
    import ml_dtypes

    try:
        return ml_dtypes.finfo(dtype)
    except ValueError:
        return ml_dtypes.iinfo(dtype)


def short(value: float, digits: int = 2) -> str:
    """A magnitude in `digits` significant digits, its exponent unpadded: 7.1e5, 3.2e-9, 0.25, 65504."""
    return re.sub(r"e([+-])0*(\d)", lambda m: f"e{'-' if m[1] == '-' else ''}{m[2]}", f"{value:.{digits}g}")


def fit_problem(exact: np.ndarray, dtype: np.dtype, what: str, finite_inputs: np.ndarray | bool = True) -> str | None:
    """Why `dtype` cannot hold `exact` (computed in wide_dtype(dtype)), in words; None when it can.

    Refused: an integer beyond the dtype's range; a float that becomes inf where the inputs were
    finite; a meaningful value that the dtype flushes to 0 or keeps only as a subnormal with a
    relative error above its epsilon. Meaningful means |v| > eps * max|tensor|: casting the
    tensor's largest value already costs up to eps/2 * max, so losing a smaller value leaves the
    tensor no less accurate (in max-norm) than the cast itself does; losing a larger one does not.
    A normal value is always cast within eps/2, so only values below the smallest normal can fail.
    """
    info, name = dtype_info(dtype), np.dtype(dtype).name
    if not hasattr(info, "eps"):  # integers: exact Python ints, checked against the range
        low, high = (exact.min(), exact.max()) if exact.size else (0, 0)
        if low < info.min or high > info.max:
            return f"{what} reaches {low if low < info.min else high}, beyond {name}'s range [{info.min}, {info.max}]"
        return None
    with np.errstate(all="ignore"):
        cast = exact.astype(dtype)
        error = np.abs(cast.astype(exact.dtype) - exact)
    magnitude = np.abs(exact)
    finite = np.isfinite(magnitude) & finite_inputs
    overflow = finite & ~np.isfinite(error)
    if overflow.any():
        return f"{what} reaches {short(magnitude[overflow].max())}, beyond {name}'s {short(float(info.max), 6)}"
    largest = magnitude[finite].max(initial=0)
    lost = finite & (magnitude > info.eps * largest) & (error > info.eps * magnitude)
    if lost.any():
        fate = "flushes to 0" if (cast[lost] == 0).any() else "keeps only as subnormals"
        return (f"{what} has values down to {short(magnitude[lost].min())} (its largest is {short(largest)}) that "
                f"{name} {fate} (its smallest normal is {short(float(info.smallest_normal))})")
    return None


def folded_bias(graph: Graph, chain: Chain, affine: Affine) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(bias before, bias after in wide_dtype) of the chain; None when the chain has no bias and gets none."""
    before = constant_value(graph, chain.bias) if chain.bias else None
    if before is None and affine.shift is None:
        return None, None
    wide = wide_dtype(bias_dtype(graph, chain))
    with np.errstate(all="ignore"):
        after = (before.astype(wide) if before is not None else 0) * affine.scale.astype(wide)
        if affine.shift is not None:
            after = after + affine.shift.astype(wide)
    return before, np.asarray(after)


def bias_dtype(graph: Graph, chain: Chain) -> np.dtype:
    """The dtype of the chain's bias, old or new: the op's T (TensorFlow makes filter, bias and BiasAdd share it)."""
    return proto.np_dtype(graph.node(chain.op).attr["T"].type)


def folded_filter(graph: Graph, chain: Chain, affine: Affine, weights: np.ndarray) -> np.ndarray:
    """W' = W * s in wide_dtype(W) (multiplied in place: a large filter is copied once)."""
    wide = wide_dtype(weights.dtype)
    scaled = weights.astype(wide)
    with np.errstate(all="ignore"):
        np.multiply(scaled, channel_scale(graph.op(chain.op), weights.shape, affine.scale.astype(wide)), out=scaled)
    return scaled


def surely_fits(weights: np.ndarray, scale: np.ndarray) -> bool:
    """A cheap sufficient condition for fit_problem() to accept W * s, from each output channel's largest and
    smallest nonzero |W| (no folded copy of W is made): every folded value lies well inside the normal
    range of W's dtype (a factor 2 from either end, so no rounding of the bound matters)."""
    info, channels = dtype_info(weights.dtype), max(int(scale.size), 1)
    columns = np.abs(weights.reshape(-1, channels))  # column c is output channel c (depthwise: in * mult + m)
    if columns.dtype.kind != "f":  # bfloat16, integers: numpy's reductions want a numpy float
        columns = columns.astype(np.float64)
    factor = np.abs(np.asarray(scale, np.float64)).reshape(-1)
    with np.errstate(all="ignore"):
        largest = columns.max(axis=0, initial=0).astype(np.float64) * factor
        smallest = np.min(columns, axis=0, where=columns > 0, initial=np.inf).astype(np.float64) * factor
    if not hasattr(info, "eps"):
        return bool((largest < float(info.max) / 2).all())
    return bool((largest < float(info.max) / 2).all() and (smallest >= 2 * float(info.smallest_normal)).all())


def fold_refusal(graph: Graph, chain: Chain, affine: Affine, folded: str) -> Reason | None:
    """Why folding `folded` (a BatchNorm, a Mul) into the chain gives weights their dtype cannot hold, or None."""
    weights = constant_value(graph, chain.filter)
    problem = None
    if not surely_fits(weights, affine.scale):
        finite = True if weights.dtype.kind in "iu" else np.isfinite(weights.astype(wide_dtype(weights.dtype)))
        problem = fit_problem(folded_filter(graph, chain, affine, weights), weights.dtype, "the folded filter", finite)
    before, bias = folded_bias(graph, chain, affine)
    if problem is None and bias is not None:
        finite = True if before is None or bias.dtype.kind == "O" else np.isfinite(before.astype(bias.dtype))
        problem = fit_problem(bias, bias_dtype(graph, chain), "the folded bias", finite)
    return None if problem is None else Reason(f"folding {folded} into {chain.op}: {problem}", chain.filter, folded)


def preview(values: np.ndarray | float | None) -> list[float] | float | None:
    """The first few values, rounded: enough to see in a details panel, small in a JSON report."""
    if values is None:
        return None
    array = np.asarray(values, np.float64)
    if array.ndim == 0:
        return float(f"{float(array):.6g}")
    return [float(f"{v:.6g}") for v in array.reshape(-1)[:PREVIEW]]


def fold_details(graph: Graph, chain: Chain, affine: Affine) -> dict[str, Any]:
    """Match.details of a fold: what a user checks before trusting it."""
    before, after = folded_bias(graph, chain, affine)
    if after is None:
        bias_add = None
    else:
        bias_add = chain.bias_add or "(new BiasAdd)"
    details: dict[str, Any] = {"op": chain.op, "op_type": graph.op(chain.op), "filter": chain.filter,
                               "filter_shape": list(constant_shape(graph, chain.filter)), "bias_add": bias_add,
                               "scale": preview(affine.scale), "bias_before": preview(before),
                               "bias_after": preview(after)}
    if affine.epsilon is not None:
        details = {"epsilon": preview(affine.epsilon), "channels": affine.channels(), **details}
    return details


@dataclass
class Folded:
    """What one fold did: the tensor that now carries the result, and the nodes it touched."""

    output: str
    modified: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)


def fold_into_chain(graph: Graph, editor: GraphEditor, chain: Chain, affine: Affine) -> Folded:
    """Write W' and b' as new Consts; the op keeps its name, the chain ends in a BiasAdd if b' exists."""
    weights = constant_value(graph, chain.filter)
    _, bias = folded_bias(graph, chain, affine)
    with np.errstate(all="ignore"):  # inf and NaN only where the weights had them: fold_refusal() checked
        scaled = folded_filter(graph, chain, affine, weights).astype(weights.dtype)
        bias = None if bias is None else bias.astype(bias_dtype(graph, chain))
    new_filter = _add_const(editor, f"{chain.op}/folded_filter", scaled, after=chain.op)
    editor.set_input(chain.op, FILTER_SLOT, new_filter)
    done = Folded(chain.op, [chain.op], [new_filter])
    if bias is None:
        return done
    new_bias = _add_const(editor, f"{chain.op}/folded_bias", bias, after=chain.output)
    done.created.append(new_bias)
    if chain.bias_add:
        editor.set_input(chain.bias_add, 1, new_bias)
        done.modified.append(chain.bias_add)
        done.output = chain.bias_add
        return done
    bias_add = make_node("BiasAdd", editor.unique_name(f"{chain.op}/BiasAdd"), [chain.op, new_bias],
                         {"T": editor.node(chain.op).attr["T"],
                          "data_format": graph.attr(chain.op, "data_format", "NHWC")})
    editor.add(bias_add, after=chain.op, shapes=graph.recorded_shapes(chain.op))
    done.created.append(bias_add.name)
    done.output = bias_add.name
    return done


def _add_const(editor: GraphEditor, base: str, value: np.ndarray, *, after: str) -> str:
    return editor.add(make_const(editor.unique_name(base), value), after=after)


def replace_node(graph: Graph, editor: GraphEditor, old: str, new: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Readers of `old` read `new` and `old` goes: (removed, modified) for the Rewrite.

    A model output (nothing reads it) keeps its name as an Identity of `new`, so whoever fetches
    the model's outputs by name still finds them in the fused graph.
    """
    editor.redirect(TensorRef(old), TensorRef(new))
    editor.remove(old)
    if graph.consumers(old):
        return (old,), ()
    shapes = graph.recorded_shapes(old)
    editor.add(make_node("Identity", old, [new], {"T": graph.node(old).attr["T"]}), after=new,
               shapes=shapes[:1] if shapes else None)
    return (), (old,)


class BatchnormFoldPass(AmctPass):
    """OP [+ BiasAdd] + FusedBatchNorm* (inference) -> OP with folded weights + BiasAdd.

    Subclasses name the op type; they report near misses only for BNs that read that op type,
    so two such passes never explain the same BN twice.
    """

    op_type: ClassVar[str]

    def candidates(self, graph: Graph) -> Iterable[Match | NearMiss]:
        self._affines: dict[str, Affine] = {}  # each match's, checked here and folded by rewrite() on the same graph
        for bn in graph.with_op(BN_TYPES.split("|")):
            chain, _ = find_chain(graph, graph.input_node(bn, 0), (self.op_type,))
            if chain is None:
                continue  # not this pass's structure: another pass (or none) owns this BN
            nodes = (*chain.nodes, bn)
            reason = self._refusal(graph, chain, bn)
            if reason:
                yield NearMiss(self.id, bn, nodes, reason)
                continue
            affine = bn_affine(graph, bn)
            if not affine.finite():
                yield NearMiss(self.id, bn, nodes, f"folding {bn} gives NaN or Inf (variance + epsilon <= 0)",
                               Culprit((graph.input_node(bn, 4),)))
                continue
            reason = fold_refusal(graph, chain, affine, bn)
            if reason:
                yield NearMiss(self.id, bn, nodes, reason)
                continue
            self._affines[bn] = affine
            yield Match(self.id, bn, nodes, (bn,), f"fold {bn} into {chain.op}",
                        bindings={"op": chain.op, "bn": bn, "filter": chain.filter,
                                  **({"bias_add": chain.bias_add, "bias": chain.bias} if chain.bias_add else {})},
                        details=fold_details(graph, chain, affine), weights=chain.weights)

    def _refusal(self, graph: Graph, chain: Chain, bn: str) -> Reason | None:
        reason = bn_checks(graph, bn) or non_constant(graph, chain.weight_roles(), chain.nodes)
        if reason:
            return reason
        if graph.attr(bn, "data_format", "NHWC") != graph.attr(chain.op, "data_format", "NHWC"):
            return Reason(f"{bn} and {chain.op} use different data formats", bn, chain.op)
        channels, params = out_channels(graph, chain), int(np.prod(constant_shape(graph, graph.input_node(bn, 1))))
        if channels != params:
            return Reason(f"{chain.op} has {channels} output channels but {bn} normalises {params}", chain.op, bn)
        return None

    def rewrite(self, graph: Graph, editor: GraphEditor, found: Match) -> Rewrite:
        bn = found.anchor
        chain = Chain(found.bindings["op"], found.bindings["filter"], found.bindings.get("bias_add"),
                      found.bindings.get("bias"))
        done = fold_into_chain(graph, editor, chain, self._affines[bn])
        removed, kept = replace_node(graph, editor, bn, done.output)
        return Rewrite(self.id, found.index, removed=removed, modified=(*done.modified, *kept),
                       created=tuple(done.created))
