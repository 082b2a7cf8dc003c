"""Why a match is what it is, with its own numbers: one JSON-able explanation per match.

A teacher points at a match and wants the arithmetic, not a summary line. The explanation is
computed once, where both graphs a pass saw and produced exist (`run_pipeline`, in whatever
process fuses), and travels in the Match record, so a front end without TensorFlow (the window,
the lesson export) only renders it (passes/explain_render.py).

Per family:
* AMCT folds: the formula, the same formula evaluated for one real output channel (values read
  from the graph the pass saw, the folded weight read back from the Const the pass wrote), and
  what the rewrite saved (nodes, kernels, bytes of weights read per inference).
* Scope fusion: the scope's op census against the rule's features, what the fused op computes,
  and which inner node each fused input and output is wired from.
* AutoFuse: the kernel's ops in order, its category and why, the intermediate tensors it no longer
  writes, bytes moved before and after, launches saved, and how the kernel name was formed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from core.graph import FORWARDING_OPS, Graph, TensorRef, proto
from core.graph.provenance import Rewrite
from passes.base import Match, PassResult, describe_error

if TYPE_CHECKING:
    from passes.scope.scope_tree import ScopeTree

# Ops that are not kernels: weights, reads of weights and shape arguments.
NOT_KERNELS = FORWARDING_OPS | {"Const", "NoOp", "Placeholder"}
GLYPHS = {"gamma": "γ", "beta": "β", "mean": "μ", "variance": "σ²", "epsilon": "ε"}


# ---- small readers ------------------------------------------------------------------------
def _num(value: Any) -> float:
    """A value as a float rounded for display (7 significant digits keep float32 exact enough)."""
    return float(f"{float(value):.7g}")


def dtype_size(graph: Graph, name: str) -> int:
    """Bytes per element of a node's output, from its T / dtype attr (4 when the graph does not say)."""
    node = graph.node(name)
    for key in ("T", "dtype", "out_type"):
        if key in node.attr and node.attr[key].type:
            try:
                return proto.np_dtype(node.attr[key].type).itemsize
            except (KeyError, TypeError, ValueError):
                break
    return 4


def tensor_bytes(graph: Graph, ref: TensorRef) -> int | None:
    """Size of one tensor from its static shape; None when a dimension is unknown."""
    shape = graph.output_shape(ref.node, ref.port)
    if shape is None or any(d is None or d < 0 for d in shape):
        return None
    return int(np.prod(shape, dtype=np.int64)) * dtype_size(graph, ref.node)


def _kernels(graph: Graph, names: Iterable[str]) -> list[str]:
    return [n for n in names if n in graph and graph.op(n) not in NOT_KERNELS]


def _saved_nodes(before: Graph, after: Graph, match: Match, rewrite: Rewrite | None) -> dict[str, Any]:
    """Ops (constants aside) and kernel launches the match stood for, before and after the rewrite.

    A BiasAdd that reads a conv or MatMul is no launch of its own: on Ascend the cube op takes the
    bias as an input (and AutoFuse or oneDNN take it on CPU), so Conv2D + BiasAdd is one kernel.
    """
    before_nodes = list(rewrite.before) if rewrite else list(match.nodes)
    after_nodes = [n for n in (rewrite.after if rewrite else ()) if n in after]
    ops_before, ops_after = _kernels(before, before_nodes), _kernels(after, after_nodes)
    launches_before = [n for n in ops_before if not _bias_of_cube(before, n)]
    launches_after = [n for n in ops_after if not _bias_of_cube(after, n)]
    return {"ops_before": ops_before, "ops_after": ops_after, "launches_before": len(launches_before),
            "launches_after": len(launches_after), "launches_saved": len(launches_before) - len(launches_after)}


CUBE_OPS = frozenset({"Conv2D", "DepthwiseConv2dNative", "MatMul", "Conv2DBackpropInput"})


def _bias_of_cube(graph: Graph, name: str) -> bool:
    return graph.op(name) == "BiasAdd" and graph.op(graph.input_node(name, 0)) in CUBE_OPS


# ---- AMCT ---------------------------------------------------------------------------------
BN_FORMULA = ["s = γ / √(σ² + ε)", "w′ = w · s", "b′ = β + (b − μ) · s    (b = 0 without a BiasAdd)"]
MUL_FORMULA = ["s = the Mul's scalar", "w′ = w · s", "b′ = b · s    (no bias: no BiasAdd is added)"]


def _weight_index(op_type: str, shape: tuple[int, ...], channel: int) -> tuple[int, ...]:
    """The first filter element feeding output channel `channel`."""
    if op_type == "DepthwiseConv2dNative":  # [kh, kw, in, mult]: channel = in * mult + m
        return (0, 0, channel // shape[3], channel % shape[3])
    return (*([0] * (len(shape) - 1)), channel)


def _channel_fold(before: Graph, after: Graph, chain: dict[str, Any], channel: int,
                  affine_values: dict[str, float] | None, scale: float) -> dict[str, Any]:
    """One output channel of a fold: every input of the formula and what the pass wrote for it."""
    from passes.amct.folding import constant_value

    op, filter_node = chain["op"], chain["filter"]
    op_type = before.op(op)
    weights = constant_value(before, filter_node)
    index = _weight_index(op_type, weights.shape, channel)
    new_filter = after.input_node(op, 1) if op in after else None
    new_weights = constant_value(after, new_filter) if new_filter else None
    out: dict[str, Any] = {"channel": channel, **(affine_values or {}), "s": _num(scale),
                           "weight_index": list(index), "w": _num(weights[index]),
                           "w_formula": _num(float(weights[index]) * scale),
                           "w_folded": None if new_weights is None else _num(new_weights[index]),
                           "folded_filter": new_filter}
    bias_node = chain.get("bias")
    out["b"] = _num(constant_value(before, bias_node).reshape(-1)[channel]) if bias_node else 0.0
    bias_add = next((c.node for c in after.consumers(op) if after.op(c.node) == "BiasAdd"), None) \
        if op in after else None
    if bias_add:
        new_bias = after.input_node(bias_add, 1)
        value = constant_value(after, new_bias)
        if value is not None:
            out["b_folded"], out["folded_bias"] = _num(value.reshape(-1)[channel]), new_bias
    return out


def _weight_bytes(graph: Graph, names: Iterable[str]) -> int:
    from passes.amct.folding import constant_value

    total = 0
    for name in names:
        value = constant_value(graph, name)
        total += 0 if value is None else int(value.nbytes)
    return total


def _amct_saved(before: Graph, after: Graph, match: Match, rewrite: Rewrite | None,
                read_before: list[str], read_after: list[str]) -> dict[str, Any]:
    saved = _saved_nodes(before, after, match, rewrite)
    bytes_before, bytes_after = _weight_bytes(before, read_before), _weight_bytes(after, read_after)
    return {**saved, "weights_before": len(read_before), "weights_after": len(read_after),
            "weight_bytes_before": bytes_before, "weight_bytes_after": bytes_after,
            "weight_bytes_saved": bytes_before - bytes_after}


def _after_weights(after: Graph, ops: Iterable[str], rewrite: Rewrite | None) -> list[str]:
    """The constants the rewritten chain reads: each op's filter and the bias of every BiasAdd it created
    or modified."""
    names = [after.input_node(op, 1) for op in ops if op in after]
    for node in rewrite.after if rewrite else ():
        if node in after and after.op(node) == "BiasAdd":
            names.append(after.input_node(node, 1))
    return names


def explain_bn_fold(before: Graph, after: Graph, match: Match, rewrite: Rewrite | None,
                    channel: int = 0) -> dict[str, Any]:
    """Conv / depthwise conv / group conv + FusedBatchNorm*: formula, one channel, savings."""
    from passes.amct.folding import BN_PARAMS, batchnorm_affine, constant_value

    bn = match.bindings["bn"]
    params = {role: constant_value(before, before.input_node(bn, i + 1)) for i, role in enumerate(BN_PARAMS)}
    epsilon = float(before.attr(bn, "epsilon", 1e-4))
    affine = batchnorm_affine(params["gamma"], params["beta"], params["mean"], params["variance"], epsilon)
    channel = min(channel, affine.channels() - 1)
    values = {role: _num(params[role].reshape(-1)[channel]) for role in BN_PARAMS}
    values["epsilon"] = _num(epsilon)
    if "branches" in match.details:  # a group conv: find the branch that produces this channel
        kind, branches = "group_conv_bn", match.details["branches"]
        branch = next(b for b in branches if b["channel_range"][0] <= channel < b["channel_range"][1])
        start = branch["channel_range"][0]
        chain = {"op": branch["op"], "filter": branch["filter"],
                 "bias_add": None if branch["bias_add"] == "(new BiasAdd)" else branch["bias_add"]}
        chain["bias"] = before.input_node(chain["bias_add"], 1) if chain["bias_add"] else None
        ops = [b["op"] for b in branches]
        formula = [*BN_FORMULA, f"branch k owns channels [c_k, c_k + n_k) of the concat: s, μ, β are sliced "
                                f"per branch ({len(branches)} branches)"]
        local = channel - start
    else:
        kind = "depthwise_bn" if before.op(match.bindings["op"]) == "DepthwiseConv2dNative" else "conv_bn"
        chain = {"op": match.bindings["op"], "filter": match.bindings["filter"],
                 "bias_add": match.bindings.get("bias_add"), "bias": match.bindings.get("bias")}
        ops, formula, local = [chain["op"]], list(BN_FORMULA), channel
        if kind == "depthwise_bn":
            formula.append("depthwise filter [kh, kw, in, mult]: output channel c = in · mult + m")
    shown = _channel_fold(before, after, chain, local, {GLYPHS[k]: v for k, v in values.items()},
                          float(affine.scale[channel]))
    shown["channel"] = channel
    shown["b_formula"] = _num(values["beta"] + (shown["b"] - values["mean"]) * float(affine.scale[channel]))
    if kind == "group_conv_bn":
        shown.update({"branch_op": chain["op"], "branch_channel": local})
    read_before = [*(before.input_node(bn, i + 1) for i in range(len(BN_PARAMS))), *match.weights]
    return {"family": "amct", "kind": kind, "title": f"{before.op(bn)} folded into {', '.join(ops[:2])}"
            + (" ..." if len(ops) > 2 else ""), "formula": formula, "example": shown,
            "saved": _amct_saved(before, after, match, rewrite, read_before, _after_weights(after, ops, rewrite))}


def explain_mul_fold(before: Graph, after: Graph, match: Match, rewrite: Rewrite | None,
                     channel: int = 0) -> dict[str, Any]:
    """OP [+ BiasAdd] + Mul(scalar): w′ = w·s, b′ = b·s."""
    from passes.amct.folding import constant_value

    b = match.bindings
    scale = float(np.asarray(constant_value(before, b["factor"])).reshape(()))
    chain = {"op": b["op"], "filter": b["filter"], "bias_add": b.get("bias_add"), "bias": b.get("bias")}
    shown = _channel_fold(before, after, chain, channel, None, scale)
    shown["b_formula"] = _num(shown["b"] * scale)
    read_before = [*match.weights, b["factor"]]
    return {"family": "amct", "kind": "mul_fold", "title": f"Mul by {_num(scale)} folded into {b['op']}",
            "formula": MUL_FORMULA, "example": shown,
            "saved": _amct_saved(before, after, match, rewrite, read_before, _after_weights(after, [b["op"]], rewrite))}


SMALL_OP_TERMS = {  # binding role -> (term it computes, in words)
    "add_eps": ("σ² + ε", "variance plus epsilon"),
    "rsqrt": ("1 / √(σ² + ε)", "the reciprocal standard deviation"),
    "inv": ("s = γ / √(σ² + ε)", "the per-channel scale"),
    "mul_x": ("x · s", "the scaled input"),
    "neg": ("−μ", "the negated mean (center=False)"),
    "mul_mean": ("μ · s", "the mean, scaled"),
    "sub": ("β − μ · s", "the shift"),
    "add": ("y = x · s + (β − μ · s)", "the output"),
}


def explain_small_op_bn(before: Graph, after: Graph, match: Match, rewrite: Rewrite | None,
                        channel: int = 0) -> dict[str, Any]:
    """Keras small-op BatchNorm -> FusedBatchNormV3: which small op is which term, one channel's values."""
    from passes.amct.folding import constant_value

    b = match.bindings
    channels = int(match.details["channels"])
    channel = min(channel, channels - 1)
    values: dict[str, float] = {}
    for role in ("gamma", "beta", "mean", "variance"):
        value = constant_value(before, b[role]) if role in b else np.full(channels, 1.0 if role == "gamma" else 0.0)
        values[GLYPHS[role]] = _num(np.asarray(value).reshape(-1)[channel % np.asarray(value).size])
    values["ε"] = _num(match.details["epsilon"])
    scale = values["γ"] / np.sqrt(values["σ²"] + values["ε"])
    terms = [{"node": b[role], "op": before.op(b[role]), "term": term, "meaning": meaning}
             for role, (term, meaning) in SMALL_OP_TERMS.items() if role in b]
    fused = next((n for n in (rewrite.after if rewrite else ()) if n in after and after.op(n) == "FusedBatchNormV3"),
                 None)
    shown: dict[str, Any] = {"channel": channel, **values, "s": _num(scale),
                             "shift": _num(values["β"] - values["μ"] * scale), "fused_node": fused}
    if fused:
        fused_values = {GLYPHS[role]: _num(constant_value(after, after.input_node(fused, i + 1)).reshape(-1)[channel])
                        for i, role in enumerate(("gamma", "beta", "mean", "variance"))}
        shown["fused_inputs"] = fused_values
        shown["fused_epsilon"] = _num(after.attr(fused, "epsilon"))
    x = TensorRef.parse(match.details["input"])
    size = tensor_bytes(before, x)
    intermediates = [{"tensor": b[r], "bytes": size} for r in ("mul_x",) if r in b]
    return {"family": "amct", "kind": "small_op_bn", "title": f"{len(terms)} small ops -> one FusedBatchNormV3 "
            f"({match.details['variant']})",
            "formula": ["y = x · s + (β − μ · s),  s = γ / √(σ² + ε)", "FusedBatchNormV3(x, γ, β, μ, σ², ε) "
                        "computes the same y in one op (is_training = false), which the conv fold then removes"],
            "terms": terms, "example": shown,
            "saved": {**_saved_nodes(before, after, match, rewrite), "intermediates": intermediates}}


# ---- scope fusion -------------------------------------------------------------------------
FUSED_OP_FORMULAS = {
    "LayerNorm": ["μ = mean(x, axes),  σ² = mean((x − μ)², axes)", "y = γ · (x − μ) / √(σ² + ε) + β"],
    "InstanceNorm": ["μ = mean(x, spatial axes) per sample and channel,  σ² = mean((x − μ)², same axes)",
                     "y = γ · (x − μ) / √(σ² + ε) + β"],
    "DecodeBboxV2": ["anchors (y_a, x_a, h_a, w_a); deltas (t_y, t_x, t_h, t_w), each divided by its scale factor",
                     "y = t_y · h_a + y_a,  x = t_x · w_a + x_a,  h = exp(t_h) · h_a,  w = exp(t_w) · w_a",
                     "boxes = [y − h/2, x − w/2, y + h/2, x + w/2]"],
    "ClipBoxes": ["boxes = min(max(boxes, 0), [height, width, height, width] of the image)"],
}


def explain_scope(before: Graph, after: Graph, match: Match, rewrite: Rewrite | None, pass_cls: type,
                  tree: ScopeTree | None = None) -> dict[str, Any]:
    """The census of each fused scope against the rule's features, the fused op's formula and wiring.

    `tree` is `before`'s scope tree when the caller has it (one per graph, not one per match)."""
    from passes.scope.features import NodeOpTypeFeature, ScopeContext
    from passes.scope.scope_tree import ScopeTree

    rule = pass_cls.rule
    tree = tree if tree is not None else ScopeTree(before)
    context = ScopeContext(before, {})
    census = []
    for sub_type, scope_name in match.bindings.items():
        if scope_name not in tree:
            continue
        scope = tree[scope_name]
        variants = [p for p in rule.patterns if p.sub_type == sub_type]
        pattern = next((p for p in variants if not p.failures(scope, context)), variants[0] if variants else None)
        rows = []
        for feature in pattern.features if pattern else ():
            if isinstance(feature, NodeOpTypeFeature):
                found = scope.op_count(feature.op_type)
                rows.append({"op": feature.op_type, "found": found, "needs": feature.wanted(),
                             "rule": f"NodeOpTypeFeature({feature.op_type!r}, {feature.num}"
                                     + (f", step={feature.step})" if feature.step else ")"),
                             "ok": feature.check(scope, context) is None})
            else:
                what, found, needs = feature.census_row(scope, context)
                rows.append({"op": "", "found": found, "needs": needs, "rule": what,
                             "ok": feature.check(scope, context) is None})
        census.append({"scope": scope_name, "sub_type": sub_type, "features": rows,
                       "all_ops": dict(sorted(scope.census.items()))})
    wiring = {"inputs": [], "outputs": []}
    inside = set(match.nodes)
    for i, text in enumerate(match.details["inputs"]):
        ref = TensorRef.parse(text)
        readers = [c.node for c in before.consumers(ref.node, ref.port) if c.node in inside]
        wiring["inputs"].append({"index": i, "tensor": text, "inner": readers[:3],
                                 "rule": _wire_name(rule.inputs, i)})
    for k, text in enumerate(match.details["outputs"]):
        wiring["outputs"].append({"index": k, "tensor": text, "rule": _wire_name(rule.outputs, k)})
    attrs = match.details.get("attrs", {})
    formula = list(FUSED_OP_FORMULAS.get(rule.op_type, [f"{rule.op_type}: the scope's ops as one op"]))
    epsilon = _scope_epsilon(before, match.nodes)
    if "begin_norm_axis" in attrs:
        formula.append(f"axes = [begin_norm_axis = {attrs['begin_norm_axis']} ..]: the statistics run over the "
                       f"last axes; γ, β cover axes from begin_params_axis = {attrs.get('begin_params_axis')}")
    saved = _saved_nodes(before, after, match, rewrite)
    outputs = {TensorRef.parse(t) for t in match.details["outputs"]}
    intermediates = _intermediates(before, [n for n in match.nodes if before.op(n) not in NOT_KERNELS], outputs)
    scopes = ", ".join(match.bindings.values())
    return {"family": "scope", "kind": "scope", "title": f"{len(match.nodes)} nodes of {scopes} -> one {rule.op_type}",
            "op_type": rule.op_type, "formula": formula, "attrs": attrs,
            "epsilon": epsilon, "census": census, "wiring": wiring,
            "saved": {**saved, "intermediates": intermediates,
                      "intermediate_bytes": _sum_known(i["bytes"] for i in intermediates)}}


def _wire_name(wires: tuple, index: int) -> str:
    if index >= len(wires):
        return ""
    wire = wires[index]
    port = getattr(wire, "input", None)
    return f"{wire.node}" + (f" input {port}" if port is not None else "") + \
        (f" output {wire.port}" if getattr(wire, "port", 0) else "")


def _scope_epsilon(graph: Graph, nodes: Iterable[str]) -> float | None:
    """The ε a norm scope adds to the variance: the scalar constant of its `add` before the Rsqrt."""
    for name in nodes:
        if graph.op(name) == "Rsqrt":
            add = graph.input_node(name, 0)
            for ref in graph.inputs(add):
                value = graph.const_value(ref.node)
                if value is not None and value.size == 1:
                    return _num(value.reshape(()))
    return None


def _intermediates(graph: Graph, ops: list[str], outputs: set[TensorRef]) -> list[dict[str, Any]]:
    """Tensors the ops write and only the ops read: with the group fused, they never reach memory."""
    inside = set(ops)
    found = []
    for op in ops:
        ports = sorted({c.port for c in graph.consumers(op)})
        for port in ports:
            ref = TensorRef(op, port)
            readers = [c.node for c in graph.consumers(op, port)]
            if ref in outputs or not readers or any(r not in inside for r in readers):
                continue
            found.append({"tensor": str(ref), "op": graph.op(op), "shape": _shape_list(graph, ref),
                          "bytes": tensor_bytes(graph, ref), "readers": len(readers)})
    return found


def _shape_list(graph: Graph, ref: TensorRef) -> list[int | None] | None:
    shape = graph.output_shape(ref.node, ref.port)
    return None if shape is None else list(shape)


def _sum_known(values: Iterable[int | None]) -> int | None:
    total = 0
    for value in values:
        if value is None:
            return None
        total += value
    return total


# ---- AutoFuse -----------------------------------------------------------------------------
CATEGORY_WHY = {
    "pointwise": "every op is elementwise (or a broadcast of one shape onto another): the kernel is one loop "
                 "over the output, each element computed from the same element of its inputs",
    "reduce": "the kernel ends in a reduce (a reduce is always the tail of its kernel; at most 3 elementwise "
              "producers fuse into it); switched on by --autofuse_enable_pass=reduce",
    "concat": "the kernel holds a concat, which writes each input into its slice of the output; switched on "
              "by --autofuse_enable_pass=concat",
}


def explain_autofuse(before: Graph, after: Graph, match: Match, rewrite: Rewrite | None) -> dict[str, Any]:
    """The kernel's ops, category, the tensors it keeps out of memory, bytes moved and its name."""
    from passes.autofuse.op_classes import classify

    d = match.details
    ops = [{"node": op, "op": before.op(op), "ascend_op": t, "class": classify(before, op)}
           for op, t in zip(d["ops"], d["op_types"])]
    outputs = {TensorRef.parse(t) for t in d["outputs"]}
    intermediates = _intermediates(before, list(d["ops"]), outputs)
    moved_before = _sum_known(_op_traffic(before, op) for op in d["ops"])
    external = [TensorRef.parse(t) for t in d["inputs"]]
    moved_after = _sum_known(tensor_bytes(before, r) for r in [*external, *outputs])
    saved = {"ops_before": list(d["ops"]), "ops_after": [n for n in (rewrite.after if rewrite else ()) if n in after],
             "launches_before": len(ops), "launches_after": 1, "launches_saved": len(ops) - 1}
    _, _, rest = d["kernel"].partition(f"autofuse_{d['category']}_")
    counter = rest.split("_", 1)[0]
    return {"family": "autofuse", "kind": "autofuse", "title": f"{len(ops)} ops -> one kernel {d['kernel']}",
            "ops": ops, "category": d["category"], "why": CATEGORY_WHY.get(d["category"], ""),
            "intermediates": intermediates,
            "intermediate_bytes": _sum_known(i["bytes"] for i in intermediates),
            "bytes_moved_before": moved_before, "bytes_moved_after": moved_after,
            "name": {"kernel": d["kernel"], "parts": ["autofuse", d["category"], counter, *d["op_types"]],
                     "rule": "\"autofuse_\" + category + \"_\" + n + (\"_\" + OpType)* in kernel order, "
                             "Ascend op spelling (AddV2 -> Add, Sum -> ReduceSumD), cut to 140 characters; "
                             f"n = {counter}: this is kernel #{counter} of its category in the graph"},
            "saved": saved}


def _op_traffic(graph: Graph, op: str) -> int | None:
    """Bytes one op moves when it runs alone: every data input read, every output read by someone written."""
    refs = [r for r in graph.inputs(op) if not r.control]
    reads = [tensor_bytes(graph, r) for r in refs if not graph.is_const(r.node) or _is_tensor_input(graph, r)]
    ports = sorted({c.port for c in graph.consumers(op)}) or [0]
    writes = [tensor_bytes(graph, TensorRef(op, p)) for p in ports]
    return _sum_known([*reads, *writes])


def _is_tensor_input(graph: Graph, ref: TensorRef) -> bool:
    """A constant operand larger than a scalar is still read from memory."""
    value = graph.const_value(ref.node)
    return value is not None and value.size > 1


# ---- dispatch -----------------------------------------------------------------------------
def explain_match(before: Graph, after: Graph, rewrite: Rewrite | None, match: Match,
                  pass_cls: type, scope_tree: Callable[[], ScopeTree] | None = None) -> dict[str, Any]:
    """The explanation of one match, from the graph the pass saw (`before`), the one it produced and
    the match's rewrite (None when it was not rewritten). `scope_tree()` gives `before`'s scope tree
    to a scope match (built once by the caller for all of a pass's matches)."""
    family = getattr(pass_cls, "family", "")
    if family == "amct":
        if "factor" in match.bindings:
            return explain_mul_fold(before, after, match, rewrite)
        if "variant" in match.details:
            return explain_small_op_bn(before, after, match, rewrite)
        return explain_bn_fold(before, after, match, rewrite)
    if family == "scope" and hasattr(pass_cls, "rule"):
        return explain_scope(before, after, match, rewrite, pass_cls, scope_tree() if scope_tree else None)
    if family == "autofuse":
        return explain_autofuse(before, after, match, rewrite)
    return {"family": family, "kind": "other", "title": match.summary}


def attach_explanations(before: Graph, after: Graph, result: PassResult, pass_cls: type) -> None:
    """Set `match.explanation` on every match of the result; one that cannot be explained says why
    (an explanation never fails the fusion)."""
    from passes.scope.scope_tree import ScopeTree

    rewrites = {r.match_index: r for r in reversed(result.rewrites)}  # the first per match, in one pass
    trees: list[ScopeTree] = []  # `before`'s scope tree, built for the first scope match only

    def scope_tree() -> ScopeTree:
        if not trees:
            trees.append(ScopeTree(before))
        return trees[0]

    for match in result.matches:
        try:
            match.explanation = explain_match(before, after, rewrites.get(match.index), match, pass_cls, scope_tree)
        except Exception as e:  # an odd graph must not stop the pipeline
            match.explanation = {"family": getattr(pass_cls, "family", ""), "kind": "unavailable",
                                 "title": match.summary, "error": f"no explanation: {describe_error(e)}"}
