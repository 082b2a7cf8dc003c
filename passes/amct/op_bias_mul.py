"""OpBiasAddMulFusionPass: Conv2D / MatMul / DepthwiseConv2dNative / Conv2DBackpropInput [+ BiasAdd] + Mul(scalar)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from fuselens.core.graph import Graph, GraphEditor
from fuselens.core.graph.provenance import Rewrite
from fuselens.passes.amct.explain import after_weights, amct_saved, channel_fold
from fuselens.passes.amct.folding import (
    Affine,
    AmctPass,
    Chain,
    constant_value,
    find_chain,
    fold_details,
    fold_into_chain,
    fold_refusal,
    non_constant,
    preview,
    replace_node,
)
from fuselens.passes.amct.sources import AMCT_DOC, FE_CLOSABLE, FE_CONV_MUL
from fuselens.passes.base import Culprit, Match, NearMiss, Reason
from fuselens.passes.explain import display_number
from fuselens.passes.registry import register
from fuselens.passes.switch import AMCT, ToolchainSwitch

OP_TYPES = ("Conv2D", "MatMul", "DepthwiseConv2dNative", "Conv2DBackpropInput")
MUL_FORMULA = ("s = the Mul's scalar", "w′ = w · s", "b′ = b · s    (no bias: no BiasAdd is added)")


@register
class OpBiasAddMulFusionPass(AmctPass):
    id = "OpBiasAddMulFusionPass"
    title = "OP [+ BiasAdd] + Mul(scalar) -> OP with scaled weights"
    description = ("A Conv2D, MatMul, DepthwiseConv2dNative or Conv2DBackpropInput, optionally followed by a "
                   "BiasAdd, then a Mul whose other input is a Const with an empty shape (a scalar s): "
                   "W' = W * s and b' = b * s, and the Mul is deleted. A Mul by a vector is refused: AMCT "
                   "folds only a scalar, which scales every channel alike.")
    order = 50
    switch = ToolchainSwitch(
        AMCT, ("OP+(BiasAdd)+Mul fusion",), ge_passes=("AConv2dMulFusion",),
        note="FE's AConv2dMulFusion covers Conv2D/Conv3D directly followed by Mul, not MatMul, depthwise or a "
             "BiasAdd in between", sources=(AMCT_DOC, FE_CONV_MUL, FE_CLOSABLE))

    def candidates(self, graph: Graph) -> Iterable[Match | NearMiss]:
        for mul in graph.with_op(("Mul",)):
            found = self._chain_and_factor(graph, mul)
            if found is None:
                continue
            chain, factor = found
            nodes = (*chain.nodes, mul)
            value = constant_value(graph, factor)
            reason = non_constant(graph, chain.weight_roles(), chain.nodes)
            if reason is None and value is None:
                reason = Reason(f"{mul} multiplies by {factor} ({graph.op(factor)}), which is not a constant",
                                factor, edge=(factor, mul))
            elif reason is None and value.shape != ():
                reason = Reason(f"{mul} multiplies by {factor} of shape {list(value.shape)}, not a scalar (empty "
                                "shape): AMCT folds only a scalar Mul", factor, edge=(factor, mul))
            if reason:
                yield NearMiss(self.id, mul, nodes, reason)
                continue
            affine = Affine(np.asarray(value))  # in its own dtype: an integer factor stays exact
            if not affine.finite():
                yield NearMiss(self.id, mul, nodes, f"{factor} is NaN or Inf", Culprit((factor,)))
                continue
            reason = fold_refusal(graph, chain, affine, mul)
            if reason:
                yield NearMiss(self.id, mul, nodes, reason)
                continue
            yield Match(self.id, mul, nodes, (mul,), f"fold {mul} (x {preview(value)}) into {chain.op}",
                        bindings={"op": chain.op, "mul": mul, "factor": factor, "filter": chain.filter,
                                  **({"bias_add": chain.bias_add, "bias": chain.bias} if chain.bias_add else {})},
                        details={"factor": preview(value), **fold_details(graph, chain, affine)},
                        weights=chain.weights)

    @staticmethod
    def _chain_and_factor(graph: Graph, mul: str) -> tuple[Chain, str] | None:
        """The OP [+ BiasAdd] chain on either side of the Mul, and the Mul's other input."""
        inputs = graph.inputs(mul)
        for slot in (0, 1):
            chain, _ = find_chain(graph, inputs[slot].node, OP_TYPES)
            if chain is not None and inputs[slot].port == 0:
                return chain, inputs[1 - slot].node
        return None

    def rewrite(self, graph: Graph, editor: GraphEditor, found: Match) -> Rewrite:
        b = found.bindings
        chain = Chain(b["op"], b["filter"], b.get("bias_add"), b.get("bias"))
        done = fold_into_chain(graph, editor, chain, Affine(np.asarray(constant_value(graph, b["factor"]))))
        removed, kept = replace_node(graph, editor, b["mul"], done.output)
        return Rewrite(self.id, found.index, removed=removed, modified=(*done.modified, *kept),
                       created=tuple(done.created))

    @classmethod
    def explain(cls, before: Graph, after: Graph, match: Match, rewrite: Rewrite | None,
                channel: int = 0) -> dict[str, Any]:
        """w′ = w·s, b′ = b·s, worked out for one output channel."""
        b = match.bindings
        scale = float(np.asarray(constant_value(before, b["factor"])).reshape(()))
        chain = {"op": b["op"], "filter": b["filter"], "bias_add": b.get("bias_add"), "bias": b.get("bias")}
        shown = channel_fold(before, after, chain, channel, None, scale)
        shown["b_formula"] = display_number(shown["b"] * scale)
        read_before, read_after = [*match.weights, b["factor"]], after_weights(after, [b["op"]], rewrite)
        return {"family": "amct", "kind": "mul_fold", "title": f"Mul by {display_number(scale)} folded into {b['op']}",
                "formula": list(MUL_FORMULA), "example": shown,
                "saved": amct_saved(before, after, match, rewrite, read_before, read_after)}
