"""A configuration's passes as the Ascend toolchain switches them: the NPU bundle's two sides and what the
toolchain cannot switch.

Each pass declares its own switch (`FusionPass.switch`, passes/switch.py); a configuration writes the
forms of its choices (`PassConfig.scope_names`, `.autofuse_flags`, `.switch_file`). Here: the baseline
with every toolchain fusion FuseLens models switched off, the fused side with the user's choices
(per-match skips included), and `limits`, the choices the toolchain cannot carry out, and why.
"""

from __future__ import annotations

from typing import Any

from fuselens.core.formats.switch_file import FusionSwitches, SwitchForms
from fuselens.passes.autofuse.flags import DEFAULT_CATEGORIES
from fuselens.passes.base import FusionPass
from fuselens.passes.config import AUTOFUSE_PASS_ID, PassConfig
from fuselens.passes.pipeline import PipelineResult
from fuselens.passes.switch import AMCT, AUTOFUSE, NONE, SCOPE, ToolchainSwitch

BASELINE_AUTOFUSE_FLAGS = "--enable_autofuse=false"


def switch_of(cls: type[FusionPass]) -> ToolchainSwitch:
    """The pass's toolchain switch (its `switch`; a user rule's is set by the rule file's loader)."""
    return cls.switch


def modelled_ge_passes(passes: list[type[FusionPass]]) -> tuple[str, ...]:
    """The GE/FE graph fusion passes whose folds these passes stand for, in catalog order."""
    return tuple(dict.fromkeys(name for cls in passes for name in cls.switch.ge_passes))


# ---- the switch forms of the two sides ------------------------------------------------------------
def baseline_switches(config: PassConfig) -> FusionSwitches:
    """The baseline's switch file: every GE/FE pass FuseLens models off; other imported entries as given,
    so both sides differ only in what FuseLens models."""
    foreign = config.foreign_switches
    return FusionSwitches(graph_fusion={**foreign.graph_fusion,
                                        **dict.fromkeys(modelled_ge_passes(config.catalog()), "off")},
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
    return SwitchForms(config.scope_names(), config.autofuse_flags(), config.switch_file(skipped),
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
        switch = cls.switch
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
