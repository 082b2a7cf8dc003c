"""ScopeLayerNormPass: TF1 / BERT `X/moments` + `X/batchnorm` -> one LayerNorm (general: always on).

Keras 3 `LayerNormalization` writes `X/moments` with the normalisation ops directly in `X` (no
`X/batchnorm`). The toolchain's rule does not fuse that layout, and neither does this pass, but it
says so: a near miss naming what differs from the pattern (resources/keras3_layer_norm.yaml is a
user rule that fuses it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from fuselens.core.graph import Graph, TensorRef
from fuselens.passes.base import Culprit, Match, NearMiss
from fuselens.passes.registry import register
from fuselens.passes.scope.features import NodeOpTypeFeature, ScopeContext
from fuselens.passes.scope.rule import moments_pair_rule
from fuselens.passes.scope.scope_pass import ScopeRulePass
from fuselens.passes.scope.scope_tree import Scope, ScopeTree
from fuselens.passes.switch import BUILTIN_SCOPE_SOURCE, SCOPE, ToolchainSwitch

KERAS3_RULE_FILE = "resources/keras3_layer_norm.yaml"


def _batchnorm_census(add_op: str) -> tuple[NodeOpTypeFeature, ...]:
    return (NodeOpTypeFeature("Sub", 1), NodeOpTypeFeature(add_op, 2), NodeOpTypeFeature("Rsqrt", 1),
            NodeOpTypeFeature("Mul", 3), NodeOpTypeFeature("Identity", -1))


@register
class ScopeLayerNormPass(ScopeRulePass):
    id = "ScopeLayerNormPass"
    title = "LayerNorm scope -> LayerNorm"
    description = ("Sibling scopes X/batchnorm (Sub 1, Add or AddV2 2, Rsqrt 1, Mul 3, no Identity) and "
                   "X/moments (Mean 2, SquaredDifference 1, no Squeeze) become one LayerNorm(x, gamma, beta) "
                   "with outputs y, mean, rsqrt. Skipped inside while loops and BigGAN resblocks; a TF 2.x graph "
                   "(gamma read through X/batchnorm/mul/ReadVariableOp) is refused whole, as the toolchain does.")
    general = True
    order = 10
    rule = moments_pair_rule(
        "ScopeLayerNormPass", "LayerNorm", "batchnorm", [_batchnorm_census("Add"), _batchnorm_census("AddV2")],
        skip_names=("while", "resblock"),
        unpaired_hint=" (a Keras BatchNormalization, not a LayerNorm)",
    )
    fused_formula = ("μ = mean(x, axes),  σ² = mean((x − μ)², axes)", "y = γ · (x − μ) / √(σ² + ε) + β")
    switch = ToolchainSwitch(SCOPE, ("ScopeLayerNormPass",), general=True, sources=(BUILTIN_SCOPE_SOURCE,))

    def candidates(self, graph: Graph) -> Iterator[Match | NearMiss]:
        tree = ScopeTree(graph)
        if self.variable_read(tree) is not None:  # refused whole: no layout is worth a near miss of its own
            yield from self.candidates_in(graph, tree)
            return
        found = []
        for item in self.candidates_in(graph, tree):
            found.append(item)
            yield item
        paired = {m.bindings.get("moments") for m in found if isinstance(m, Match)}
        yield from self._other_layouts(graph, tree, paired)

    def _other_layouts(self, graph: Graph, tree: ScopeTree, paired: set[str | None]) -> Iterator[NearMiss]:
        """Near misses for X whose X/moments matches and whose Rsqrt sits directly in X, with no
        sibling X/batchnorm (an unpaired batchnorm already has its own near miss)."""
        moments = next(p for p in self.rule.patterns if p.sub_type == "moments")
        context = ScopeContext(graph, {})
        for scope in tree.scopes.values():
            parent = scope.parent
            if (scope.last_name != "moments" or scope.name in paired or parent is None or not parent.name
                    or any(c.last_name == "batchnorm" for c in parent.children.values())
                    or not any(graph.op(n) == "Rsqrt" for n in parent.nodes)
                    or moments.failures(scope, context)):
                continue
            inside = set(scope.all_nodes())
            rest = Scope(parent.name, census=Counter(graph.op(n) for n in parent.all_nodes() if n not in inside))
            differs = min(([r for f in _batchnorm_census(add) if (r := f.check(rest, context))]
                           for add in ("AddV2", "Add")), key=len)
            differ = f", and differ from the batchnorm pattern ({'; '.join(differs)})" if differs else ""
            misplaced = Culprit(tuple(n for n in parent.nodes if graph.op(n) == "Rsqrt"))
            yield NearMiss(self.id, parent.name, tuple(parent.all_nodes()), culprit=misplaced, reason=(
                "a LayerNorm laid out differently (Keras 3 LayerNormalization): its moments scope matches, but "
                "the normalisation ops (Rsqrt, Mul, ...) sit directly in the layer's scope instead of a sibling "
                f"batchnorm scope{differ}. The toolchain fuses only the TF1 / BERT layout; the user rule "
                f"{KERAS3_RULE_FILE} fuses this one"))

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
