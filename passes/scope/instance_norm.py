"""ScopeInstanceNormPass: `X/moments` + `X/instancenorm` -> one InstanceNorm (off until enabled)."""

from __future__ import annotations

from fuselens.passes.registry import register
from fuselens.passes.scope.features import NodeOpTypeFeature
from fuselens.passes.scope.rule import moments_pair_rule
from fuselens.passes.scope.scope_pass import ScopeRulePass
from fuselens.passes.switch import BUILTIN_SCOPE_SOURCE, SCOPE, ToolchainSwitch


@register
class ScopeInstanceNormPass(ScopeRulePass):
    id = "ScopeInstanceNormPass"
    title = "InstanceNorm scope -> InstanceNorm"
    description = ("Sibling scopes X/instancenorm (Sub 1, Rsqrt 1, Mul 3, no Identity) and X/moments "
                   "(Mean 2, SquaredDifference 1, no Squeeze) become one InstanceNorm(x, gamma, beta) with "
                   "outputs y, mean, rsqrt. Skipped in BigGAN resblocks; a TF 2.x graph (gamma read through "
                   "X/instancenorm/mul/ReadVariableOp) is refused whole, as the toolchain does.")
    default_enabled = False
    order = 30
    rule = moments_pair_rule(
        "ScopeInstanceNormPass", "InstanceNorm", "instancenorm",
        [(NodeOpTypeFeature("Sub", 1), NodeOpTypeFeature("Rsqrt", 1), NodeOpTypeFeature("Mul", 3),
          NodeOpTypeFeature("Identity", -1))],
        skip_names=("resblock",),
    )
    fused_formula = ("μ = mean(x, spatial axes) per sample and channel,  σ² = mean((x − μ)², same axes)",
                     "y = γ · (x − μ) / √(σ² + ε) + β")
    switch = ToolchainSwitch(SCOPE, ("ScopeInstanceNormPass",), sources=(BUILTIN_SCOPE_SOURCE,))
