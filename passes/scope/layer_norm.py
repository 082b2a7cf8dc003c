"""ScopeLayerNormPass: TF1 / BERT `X/moments` + `X/batchnorm` -> one LayerNorm (general: always on)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.graph import Graph, TensorRef
from passes.registry import register
from passes.scope.features import NodeOpTypeFeature
from passes.scope.scope_pass import ScopeRulePass, moments_pair_rule
from passes.scope.scope_tree import Scope


def _batchnorm_census(add_op: str) -> tuple[NodeOpTypeFeature, ...]:
    return (NodeOpTypeFeature("Sub", 1), NodeOpTypeFeature(add_op, 2), NodeOpTypeFeature("Rsqrt", 1),
            NodeOpTypeFeature("Mul", 3), NodeOpTypeFeature("Identity", -1))


@register
class ScopeLayerNormPass(ScopeRulePass):
    id = "ScopeLayerNormPass"
    title = "LayerNorm scope -> LayerNorm"
    description = ("Sibling scopes X/batchnorm (Sub 1, Add or AddV2 2, Rsqrt 1, Mul 3, no Identity) and "
                   "X/moments (Mean 2, SquaredDifference 1, no Squeeze) become one LayerNorm(x, gamma, beta) "
                   "with outputs y, mean, rsqrt. Skipped inside while loops and BigGAN resblocks.")
    general = True
    order = 10
    rule = moments_pair_rule(
        "ScopeLayerNormPass", "LayerNorm", "batchnorm", [_batchnorm_census("Add"), _batchnorm_census("AddV2")],
        skip_names=("while", "resblock"),
        unpaired_hint=" (a Keras BatchNormalization, not a LayerNorm)",
    )

    def fused_attrs(self, graph: Graph, group: tuple[Scope, ...], inputs: Sequence[TensorRef]) -> dict[str, Any]:
        """begin_norm_axis = the first reduction axis of moments/mean, as the graph writes it;
        begin_params_axis = minus gamma's rank (gamma covers the last axes)."""
        mean = next(n for n in group[1].all_nodes() if graph.op(n) == "Mean")
        axes = graph.const_value(graph.inputs(mean)[1].node)
        x_shape = graph.output_shape(inputs[0].node, inputs[0].port)
        gamma_shape = graph.output_shape(inputs[1].node, inputs[1].port)
        attrs: dict[str, Any] = {}
        if axes is not None and axes.size and x_shape is not None:
            rank = len(x_shape)
            first = min(int(a) % rank for a in axes.reshape(-1))
            attrs["begin_norm_axis"] = first - rank if (axes < 0).any() else first
        if gamma_shape is not None:
            attrs["begin_params_axis"] = -len(gamma_shape)
        return attrs
