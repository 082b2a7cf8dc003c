"""A scope fusion rule as the toolchain declares one: the patterns that pick scopes, the pairing, and
which inner node each fused input and output is wired from (DefinePatterns, LastMatchScopesAndOPs,
GenerateFusionResult). Built-in passes write one in Python, user rule files in YAML
(passes/scope/user_rules.py); passes/scope/scope_pass.py runs any of them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fuselens.passes.scope.features import NodeOpTypeFeature, ScopeFeature, ScopePattern


@dataclass(frozen=True)
class InputWire:
    """Fused input i = input `input` of inner node `node`; `input` None = its one input from outside."""

    node: str  # relative to the fused scope (`batchnorm/mul_1`), or a unique `/`-suffix of an inner name
    input: int | None = None


@dataclass(frozen=True)
class OutputWire:
    """Fused output k = output `port` of inner node `node`."""

    node: str
    port: int = 0


@dataclass(frozen=True)
class ScopeRule:
    name: str
    op_type: str
    patterns: tuple[ScopePattern, ...]
    inputs: tuple[InputWire, ...]
    outputs: tuple[OutputWire, ...]
    pair: tuple[str, str] | None = None  # (sub type, sibling sub type) fused together
    skip_names: tuple[str, ...] = ()  # a fused scope whose name contains one of these is left alone
    attrs: Mapping[str, Any] = field(default_factory=dict)  # constant attrs of the fused node
    unpaired_hint: str = ""  # appended to "a X scope without a sibling Y scope"
    # A scope whose name holds this and that holds a `<its last part>/ReadVariableOp` node marks a TF 2.x
    # graph, for which the toolchain's pass fuses nothing at all (LayerNorm, InstanceNorm: "<norm>/mul").
    variable_read_scope: str | None = None

    @property
    def sub_types(self) -> list[str]:
        return list(dict.fromkeys(p.sub_type for p in self.patterns))

    @property
    def fused_sub_type(self) -> str:
        return self.pair[0] if self.pair else self.sub_types[-1]


def moments_pair_rule(name: str, op_type: str, norm_scope: str, norm_census: Iterable[Sequence[NodeOpTypeFeature]],
                      *, skip_names: tuple[str, ...], unpaired_hint: str = "") -> ScopeRule:
    """LayerNorm / InstanceNorm: `X/<norm_scope>` (one census per variant) + sibling `X/moments`.

    Wiring (toolchain): x = the outside input of `<norm>/mul_1`, gamma = that of `<norm>/mul`,
    beta = input 0 of `<norm>/sub`; outputs y = `<norm>/add_1`, mean = `moments/mean`,
    rstd = `<norm>/Rsqrt`. A TF 2.x graph, whose gamma is read through `<norm>/mul/ReadVariableOp`,
    is refused whole (scope_layernorm_pass.cc and scope_instancenorm_pass.cc: "tf2.x can not do
    scope fusion").
    """
    norm = [ScopePattern(norm_scope, (*census, ScopeFeature(suffix=norm_scope))) for census in norm_census]
    moments = ScopePattern("moments", (NodeOpTypeFeature("Mean", 2), NodeOpTypeFeature("SquaredDifference", 1),
                                       NodeOpTypeFeature("Squeeze", -1), ScopeFeature(suffix="moments")))
    return ScopeRule(
        name, op_type, (*norm, moments),
        inputs=(InputWire(f"{norm_scope}/mul_1"), InputWire(f"{norm_scope}/mul"), InputWire(f"{norm_scope}/sub", 0)),
        outputs=(OutputWire(f"{norm_scope}/add_1"), OutputWire("moments/mean"), OutputWire(f"{norm_scope}/Rsqrt")),
        pair=(norm_scope, "moments"), skip_names=skip_names, unpaired_hint=unpaired_hint,
        variable_read_scope=f"{norm_scope}/mul",
    )
