"""What the AMCT passes' explanations share: one output channel of a fold, worked with the model's own
numbers, and the weights the fold reads before and after (passes/explain.py attaches them)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fuselens.core.graph import Graph
from fuselens.core.graph.provenance import Rewrite
from fuselens.passes.amct.folding import BN_PARAMS, Affine, batchnorm_affine, constant_value
from fuselens.passes.base import Match
from fuselens.passes.explain import display_number, saved_nodes

GLYPHS = {"gamma": "γ", "beta": "β", "mean": "μ", "variance": "σ²", "epsilon": "ε"}
BN_FORMULA = ("s = γ / √(σ² + ε)", "w′ = w · s", "b′ = β + (b − μ) · s    (b = 0 without a BiasAdd)")


def _weight_index(op_type: str, shape: tuple[int, ...], channel: int) -> tuple[int, ...]:
    """The first filter element feeding output channel `channel`."""
    if op_type == "DepthwiseConv2dNative":  # [kh, kw, in, mult]: channel = in * mult + m
        return (0, 0, channel // shape[3], channel % shape[3])
    return (*([0] * (len(shape) - 1)), channel)


def channel_fold(before: Graph, after: Graph, chain: dict[str, Any], channel: int,
                 affine_values: dict[str, float] | None, scale: float) -> dict[str, Any]:
    """One output channel of a fold: every input of the formula and what the pass wrote for it."""
    op, filter_node = chain["op"], chain["filter"]
    op_type = before.op(op)
    weights = constant_value(before, filter_node)
    index = _weight_index(op_type, weights.shape, channel)
    new_filter = after.input_node(op, 1) if op in after else None
    new_weights = constant_value(after, new_filter) if new_filter else None
    out: dict[str, Any] = {"channel": channel, **(affine_values or {}), "s": display_number(scale),
                           "weight_index": list(index), "w": display_number(weights[index]),
                           "w_formula": display_number(float(weights[index]) * scale),
                           "w_folded": None if new_weights is None else display_number(new_weights[index]),
                           "folded_filter": new_filter}
    bias_node = chain.get("bias")
    out["b"] = display_number(constant_value(before, bias_node).reshape(-1)[channel]) if bias_node else 0.0
    bias_add = next((c.node for c in after.consumers(op) if after.op(c.node) == "BiasAdd"), None) \
        if op in after else None
    if bias_add:
        new_bias = after.input_node(bias_add, 1)
        value = constant_value(after, new_bias)
        if value is not None:
            out["b_folded"], out["folded_bias"] = display_number(value.reshape(-1)[channel]), new_bias
    return out


def _weight_bytes(graph: Graph, names: Iterable[str]) -> int:
    total = 0
    for name in names:
        value = constant_value(graph, name)
        total += 0 if value is None else int(value.nbytes)
    return total


def amct_saved(before: Graph, after: Graph, match: Match, rewrite: Rewrite | None,
               read_before: list[str], read_after: list[str]) -> dict[str, Any]:
    saved = saved_nodes(before, after, match, rewrite)
    bytes_before, bytes_after = _weight_bytes(before, read_before), _weight_bytes(after, read_after)
    return {**saved, "weights_before": len(read_before), "weights_after": len(read_after),
            "weight_bytes_before": bytes_before, "weight_bytes_after": bytes_after,
            "weight_bytes_saved": bytes_before - bytes_after}


def after_weights(after: Graph, ops: Iterable[str], rewrite: Rewrite | None) -> list[str]:
    """The constants the rewritten chain reads: each op's filter and the bias of every BiasAdd it created
    or modified."""
    names = [after.input_node(op, 1) for op in ops if op in after]
    for node in rewrite.after if rewrite else ():
        if node in after and after.op(node) == "BiasAdd":
            names.append(after.input_node(node, 1))
    return names


def bn_statistics(before: Graph, bn: str, channel: int) -> tuple[Affine, dict[str, float], int]:
    """The BatchNorm's fold, its γ, β, μ, σ², ε at `channel` (the last channel when past it) and that channel."""
    params = {role: constant_value(before, before.input_node(bn, i + 1)) for i, role in enumerate(BN_PARAMS)}
    epsilon = float(before.attr(bn, "epsilon", 1e-4))
    affine = batchnorm_affine(params["gamma"], params["beta"], params["mean"], params["variance"], epsilon)
    channel = min(channel, affine.channels() - 1)
    values = {role: display_number(params[role].reshape(-1)[channel]) for role in BN_PARAMS}
    values["epsilon"] = display_number(epsilon)
    return affine, values, channel


def explain_bn_fold(before: Graph, after: Graph, match: Match, rewrite: Rewrite | None, *, kind: str,
                    formula: Iterable[str], chain: dict[str, Any], ops: list[str], channel: int, local: int,
                    affine: Affine, values: dict[str, float]) -> dict[str, Any]:
    """A BatchNorm folded into `ops`: the formula, `channel` worked out (`local` in `chain`, the op that
    produces it), and what the fold saved."""
    bn = match.bindings["bn"]
    shown = channel_fold(before, after, chain, local, {GLYPHS[k]: v for k, v in values.items()},
                         float(affine.scale[channel]))
    shown["channel"] = channel
    shown["b_formula"] = display_number(values["beta"] + (shown["b"] - values["mean"]) * float(affine.scale[channel]))
    read_before = [*(before.input_node(bn, i + 1) for i in range(len(BN_PARAMS))), *match.weights]
    return {"family": "amct", "kind": kind, "title": f"{before.op(bn)} folded into {', '.join(ops[:2])}"
            + (" ..." if len(ops) > 2 else ""), "formula": list(formula), "example": shown,
            "saved": amct_saved(before, after, match, rewrite, read_before, after_weights(after, ops, rewrite))}


def explain_chain_bn_fold(before: Graph, after: Graph, match: Match, rewrite: Rewrite | None, *, kind: str,
                          formula: Iterable[str], channel: int = 0) -> dict[str, Any]:
    """OP [+ BiasAdd] + FusedBatchNorm* (the chain a BatchnormFoldPass binds): formula, one channel, savings."""
    affine, values, channel = bn_statistics(before, match.bindings["bn"], channel)
    b = match.bindings
    chain = {"op": b["op"], "filter": b["filter"], "bias_add": b.get("bias_add"), "bias": b.get("bias")}
    return explain_bn_fold(before, after, match, rewrite, kind=kind, formula=formula, chain=chain, ops=[b["op"]],
                           channel=channel, local=channel, affine=affine, values=values)
