"""Every FuseLens pass and the switch that really controls it in the Ascend toolchain.

FuseLens's pass ids mean nothing to the toolchain unless the toolchain registered that name, so an
NPU run cannot be switched by them. This table says, per pass, what does switch it:

* scope passes: the registered scope pass names for `enable_scope_fusion_passes` (general ones run
  whatever the list says);
* AutoFuse: `AUTOFUSE_FLAGS` (on/off and the opt-in kinds), per node `AUTOFUSE_DFX_FLAGS`'s
  `--skip_node_names_cfg` .ini;
* AMCT passes: nothing in the toolchain; AMCT applies them offline, so they are in the graph handed
  over or not. Where GE/FE runs a graph fusion pass doing the same fold on the device, the fusion
  switch file names it, so a fold FuseLens leaves out is not done on the device either.

Every name below was checked against the toolchain's own registrations; `sources` cites them
(repository and path, or the CANN documentation page). The NPU bundle's two sides come from here:
the baseline with every toolchain fusion FuseLens models switched off, the fused side with the
user's choices, and `limits` says which choices the toolchain cannot switch, and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.formats.switch_file import FusionSwitches, SwitchForms
from passes.autofuse.flags import DEFAULT_CATEGORIES
from passes.base import FusionPass

if TYPE_CHECKING:
    from passes.config import PassConfig
    from passes.registry import PipelineResult

SCOPE, AUTOFUSE, AMCT, NONE = "scope", "autofuse", "amct", "none"
AUTOFUSE_PASS_ID = "AutoFusePass"
BASELINE_AUTOFUSE_FLAGS = "--enable_autofuse=false"

# Where the names were checked (repository path, or documentation page).
_BUILTIN_SCOPE = ("dengguojie/vue-element-admin ops/built-in/framework/tf_scope_fusion_passes/"
                  "register_scope_fusion_passes.cc (a copy of Ascend's built-in ops tree; REGISTER_SCOPE_FUSION_PASS "
                  "with the general flag)")
_SAMPLE_DECODE = ("Ascend/samples cplusplus/level1_single_api/4_op_dev/1_custom_op/framework/tf_scope_fusion_pass/"
                  "decode_bbox_v2_scope_fusion_pass.cpp (REGISTER_SCOPE_FUSION_PASS(\"DecodeBboxV2ScopeFusionPass\", "
                  "..., false))")
_SCOPE_DOC = ("https://www.hiascend.com/document/detail/en/TensorFlowCommercial/800/Scopefusionpattern/"
              "tfscopefusionref (enable_scope_fusion_passes; its example enables DecodeBboxV2ScopeFusionPass)")
_UNKNOWN_SCOPE_NAME = ("hicann/ge parser/parser/tensorflow/tensorflow_parser.cc (a listed name no pass registered is "
                       "a warning, 'Failed to set enable flag of scope fusion pass', and is skipped)")
_FE_GRAPH = "dengguojie/vue-element-admin ops/built-in/fusion_pass/graph_fusion/ai_core/"
_FE_CONV_BN = (f"{_FE_GRAPH}conv_batchnorm_fusion_pass.cc "
               "(REGISTER_PASS(\"ConvBatchnormFusionPass\", BUILT_IN_GRAPH_PASS, ...): Conv2D, Conv3D or "
               "DepthwiseConv2D + BatchNorm/BNInferenceD); hicann/ge compiler/engines/nn_engine/fusion/"
               "graph_optimizer/fusion_common/fusion_pass_name.h")
_FE_CONV_MUL = (f"{_FE_GRAPH}a_conv2d_mul_fusion_pass.cc "
                "(REGISTER_PASS(\"AConv2dMulFusion\", BUILT_IN_GRAPH_PASS, ...): Conv2D or Conv3D + Mul)")
_FE_CLOSABLE = ("hicann/ge compiler/engines/nn_engine/inc/common/fusion_pass_util.h (ForbiddenClosedPass, the passes "
                "a switch file cannot close, lists neither)")
_FE_CONV3D_BN = (f"{_FE_GRAPH}batchnorm_fusion_pass.cc (ABatchnormFusionPass: small-op BatchNorm after a Conv3D only)")
_AMCT_DOC = ("https://www.hiascend.com/document/detail/en/canncommercial/850/devaids/amct/atlasamct_16_0333.html "
             "(AMCT for TensorFlow, Fusion Support)")
_AUTOFUSE_CONFIG = ("hicann/ge compiler/graph/optimize/autofuse/autofuse/utils/auto_fuse_config.h (AUTOFUSE_FLAGS "
                    "--enable_autofuse, --autofuse_enable_pass/--autofuse_disable_pass for concat, reduce, slice, "
                    "split, transpose, gather, matmul, conv; AUTOFUSE_DFX_FLAGS --skip_node_names_cfg, [ByNodeName])")


@dataclass(frozen=True)
class ToolchainSwitch:
    """How the toolchain switches one FuseLens pass."""

    kind: str  # SCOPE, AUTOFUSE, AMCT or NONE
    names: tuple[str, ...]  # registered scope pass names; AUTOFUSE_FLAGS keys; AMCT's name of the fusion
    ge_passes: tuple[str, ...] = ()  # GE/FE graph fusion passes doing the same fold on the device
    general: bool = False  # a general scope pass: the toolchain always runs it
    note: str = ""
    sources: tuple[str, ...] = ()

    def describe(self) -> str:
        """The switch in words, as the bundle README and the CLI list it."""
        if self.kind == SCOPE:
            names = " or ".join(self.names)
            return f"{names} (general: always on)" if self.general else f"enable_scope_fusion_passes: {names}"
        if self.kind == AUTOFUSE:
            return "AUTOFUSE_FLAGS (" + ", ".join(self.names) + ")"
        if self.kind == AMCT:
            device = f"; on the device FE's {', '.join(self.ge_passes)} (fusion switch file)" if self.ge_passes else ""
            return f"AMCT, applied offline ({self.names[0]}){device}"
        return "no toolchain switch"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "names": list(self.names), "ge_passes": list(self.ge_passes),
                "general": self.general, "switch": self.describe(), "note": self.note, "sources": list(self.sources)}


SWITCHES: dict[str, ToolchainSwitch] = {
    "ScopeLayerNormPass": ToolchainSwitch(SCOPE, ("ScopeLayerNormPass",), general=True, sources=(_BUILTIN_SCOPE,)),
    "ScopeInstanceNormPass": ToolchainSwitch(SCOPE, ("ScopeInstanceNormPass",), sources=(_BUILTIN_SCOPE,)),
    "ScopeClipBoxesPass": ToolchainSwitch(
        SCOPE, ("ScopeClipBoxesPass",), note="registered general in older CANN ops packages, non-general since",
        sources=(_BUILTIN_SCOPE,)),
    "DecodeBboxV2ScopeFusionPass": ToolchainSwitch(
        SCOPE, ("DecodeBboxV2ScopeFusionPass", "ScopeDecodeBboxV2Pass"),
        note="the CANN reference and Ascend/samples register the rule as DecodeBboxV2ScopeFusionPass, the built-in "
             "ops package as ScopeDecodeBboxV2Pass; both names are listed, and the parser skips the one the host "
             "did not register",
        sources=(_SAMPLE_DECODE, _BUILTIN_SCOPE, _SCOPE_DOC, _UNKNOWN_SCOPE_NAME)),
    "SmallOpBatchnormFusionPass": ToolchainSwitch(
        AMCT, ("fusion of small BN operators into FusedBatchNormV3",),
        note="FE's only small-op BatchNorm pass, ABatchnormFusionPass, folds one after a Conv3D, not this structure",
        sources=(_AMCT_DOC, _FE_CONV3D_BN)),
    "GroupConvBatchnormFusionPass": ToolchainSwitch(AMCT, ("Group_conv+BN fusion",), sources=(_AMCT_DOC,)),
    "ConvBatchnormFusionPass": ToolchainSwitch(
        AMCT, ("Conv+BN fusion",), ge_passes=("ConvBatchnormFusionPass",), sources=(_AMCT_DOC, _FE_CONV_BN,
                                                                                   _FE_CLOSABLE)),
    "DepthwiseConvBatchnormFusionPass": ToolchainSwitch(
        AMCT, ("Depthwise_Conv+BN fusion",), ge_passes=("ConvBatchnormFusionPass",),
        note="FE's ConvBatchnormFusionPass also folds a BatchNorm after a depthwise convolution",
        sources=(_AMCT_DOC, _FE_CONV_BN, _FE_CLOSABLE)),
    "OpBiasAddMulFusionPass": ToolchainSwitch(
        AMCT, ("OP+(BiasAdd)+Mul fusion",), ge_passes=("AConv2dMulFusion",),
        note="FE's AConv2dMulFusion covers Conv2D/Conv3D directly followed by Mul, not MatMul, depthwise or a "
             "BiasAdd in between", sources=(_AMCT_DOC, _FE_CONV_MUL, _FE_CLOSABLE)),
    AUTOFUSE_PASS_ID: ToolchainSwitch(
        AUTOFUSE, ("--enable_autofuse", "--autofuse_enable_pass", "--max_fusion_size"),
        note="pointwise and broadcast fuse whenever AutoFuse is on; only the opt-in kinds can be disabled",
        sources=(_AUTOFUSE_CONFIG,)),
}
# The GE/FE graph fusion passes FuseLens models: the baseline's switch file closes all of them.
GE_PASSES = tuple(dict.fromkeys(name for s in SWITCHES.values() for name in s.ge_passes))
_REGISTERED_SCOPE_NAMES = {name: pass_id for pass_id, s in SWITCHES.items() if s.kind == SCOPE for name in s.names}


def switch_of(cls: type[FusionPass]) -> ToolchainSwitch:
    """The pass's toolchain switch; a user scope rule has none (the toolchain runs C++ scope passes only),
    unless it replaces a built-in, whose registered name then switches the toolchain's own rule."""
    if getattr(cls, "source", None) is None and cls.id in SWITCHES:  # user rule classes carry their file
        return SWITCHES[cls.id]
    replaced = _REGISTERED_SCOPE_NAMES.get(cls.id)
    if replaced is not None:
        builtin = SWITCHES[replaced]
        return ToolchainSwitch(SCOPE, builtin.names, general=builtin.general, sources=builtin.sources,
                               note="a user rule with a built-in's name: the toolchain runs its own built-in rule "
                                    "of that name, not the rule file's")
    return ToolchainSwitch(NONE, (), note="a FuseLens user scope rule: the toolchain's parser runs only scope passes "
                                          "registered in C++ (REGISTER_SCOPE_FUSION_PASS), so no switch reaches it; "
                                          "add its name to enable_scope_fusion_passes yourself if you built such a "
                                          "plugin", sources=(_BUILTIN_SCOPE,))


def passes_for_ge_name(passes: list[type[FusionPass]], name: str) -> list[type[FusionPass]]:
    """The passes whose fold a GE/FE pass of this name does on the device (importing a switch file)."""
    return [cls for cls in passes if name in switch_of(cls).ge_passes]


# ---- the switch forms of the two sides ------------------------------------------------------------
def scope_names(config: PassConfig) -> list[str]:
    """`enable_scope_fusion_passes`: the registered names of the non-general scope passes switched on."""
    names: list[str] = []
    for cls in config.catalog():
        switch = switch_of(cls)
        if switch.kind == SCOPE and not switch.general and config.is_enabled(cls.id):
            names += [n for n in switch.names if n not in names]
    return names


def ge_states(config: PassConfig, skipped: frozenset[str] = frozenset()) -> dict[str, str]:
    """Each GE/FE pass FuseLens models: on only when every FuseLens pass folding the same structure is on
    and has no skipped match. AMCT already did the enabled folds offline, so the device pass only matters
    where FuseLens left a structure unfused, and there it must not fold either."""
    states: dict[str, str] = {}
    for cls in config.catalog():
        for name in switch_of(cls).ge_passes:
            on = config.is_enabled(cls.id) and cls.id not in skipped
            states[name] = "on" if on and states.get(name, "on") == "on" else "off"
    return states


def fused_switches(config: PassConfig, skipped: frozenset[str] = frozenset()) -> FusionSwitches:
    """The fusion switch file of the fused side: GE/FE names only, then the imported entries of passes
    FuseLens does not model, as the user gave them."""
    foreign = config.foreign_switches
    return FusionSwitches(graph_fusion={**foreign.graph_fusion, **ge_states(config, skipped)},
                          ub_fusion=dict(foreign.ub_fusion))


def baseline_switches(config: PassConfig) -> FusionSwitches:
    """The baseline's switch file: every GE/FE pass FuseLens models off; other imported entries as given,
    so both sides differ only in what FuseLens models."""
    foreign = config.foreign_switches
    return FusionSwitches(graph_fusion={**foreign.graph_fusion, **dict.fromkeys(GE_PASSES, "off")},
                          ub_fusion=dict(foreign.ub_fusion))


def skipped_by_pass(pipeline: PipelineResult) -> dict[str, list[Any]]:
    """The matches the user kept out of fusion, per pass (only passes with any)."""
    return {r.pass_id: list(r.skipped) for r in pipeline.results if r.skipped}


def autofuse_skip_nodes(pipeline: PipelineResult) -> list[str]:
    """Nodes of skipped AutoFuse matches, for `--skip_node_names_cfg`'s [ByNodeName] section."""
    skipped = skipped_by_pass(pipeline).get(AUTOFUSE_PASS_ID, [])
    return list(dict.fromkeys(node for match in skipped for node in match.nodes))


def fused_forms(pipeline: PipelineResult) -> SwitchForms:
    """The fused side: the user's scope list, AUTOFUSE_FLAGS and switch file, per-match AutoFuse skips."""
    config = pipeline.config
    skipped = frozenset(skipped_by_pass(pipeline))
    return SwitchForms(scope_names(config), config.autofuse_flags(), fused_switches(config, skipped),
                       tuple(autofuse_skip_nodes(pipeline)))


def baseline_forms(config: PassConfig) -> SwitchForms:
    """The baseline: no non-general scope pass, AutoFuse off, every GE/FE pass FuseLens models off."""
    return SwitchForms([], BASELINE_AUTOFUSE_FLAGS, baseline_switches(config))


# ---- what the toolchain cannot switch --------------------------------------------------------------
def limits(pipeline: PipelineResult) -> list[str]:
    """The user's choices the toolchain cannot carry out, each with the reason, in catalog order."""
    config = pipeline.config
    matched = {r.pass_id: len(r.matches) for r in pipeline.results}
    skipped = skipped_by_pass(pipeline)
    found: list[str] = []
    for cls in config.catalog():
        switch = switch_of(cls)
        if switch.kind == NONE:
            state = "on" if config.is_enabled(cls.id) else "off"
            found.append(f"{cls.id} ({state}): no toolchain switch; {switch.note}.")
        elif switch.general and matched.get(cls.id):
            found.append(f"{cls.id}: a general scope pass, which the parser always runs: the baseline fuses its "
                         f"{matched[cls.id]} match(es) too, so only the fused side's other fusions differ.")
        elif switch.kind == SCOPE and switch.note.startswith("a user rule"):
            found.append(f"{cls.id}: {switch.note}.")
        for match in skipped.get(cls.id, []):
            found.append(_skip_limit(cls.id, switch, match.id))
    flags = config.autofuse
    fixed = sorted(set(flags.disable_pass) & DEFAULT_CATEGORIES)
    if fixed and config.is_enabled(AUTOFUSE_PASS_ID):
        found.append(f"AUTOFUSE_FLAGS --autofuse_disable_pass={','.join(fixed)}: AutoFuse takes only its opt-in kinds "
                     "there; pointwise and broadcast fuse whenever AutoFuse is on.")
    return found


def _skip_limit(pass_id: str, switch: ToolchainSwitch, match_id: str) -> str:
    if switch.kind == AUTOFUSE:
        return (f"skip {match_id}: AutoFuse's --skip_node_names_cfg keeps its nodes out of every kernel, not only "
                "this group.")
    if switch.kind == AMCT:
        device = (f"; {', '.join(switch.ge_passes)} is switched off on the fused side so FE does not fold it on the "
                  "device (FE has no per-node switch), which closes that pass for the whole graph"
                  if switch.ge_passes else "")
        return f"skip {match_id}: left unfolded in the AMCT graph{device}."
    return (f"skip {match_id}: the parser's scope passes have no per-scope switch, so the toolchain fuses this scope "
            f"whenever {pass_id} runs.")
