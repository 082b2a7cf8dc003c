"""Each source's verdict on one prediction: the profile's kernel names, fusion_op_*.csv's fused ops, the dump's
and the OM model's fused nodes (`_datadump_original_op_names`), what the toolchain's logs say of its pass."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fuselens.core.ascend.ge.provenance import ToolchainProvenance
from fuselens.core.ascend.toolchain_log import ToolchainLog
from fuselens.core.measure.msprof import FusionOpRecord
from fuselens.core.measure.profile import NodeMapper
from fuselens.core.measure.result import GraphRun, KernelStat
from fuselens.passes.switch import ToolchainSwitch
from fuselens.session.npu_check.finding import FOUND, NOT_FOUND, UNKNOWN, Finding
from fuselens.session.npu_check.log_check import times
from fuselens.session.npu_check.predictions import Prediction


@dataclass(frozen=True)
class Verdict:
    """What one source (`profile`, `fusion_op`, `dump`, `om_json`, `log`, `amct`) says of one prediction."""

    source: str
    verdict: Finding
    detail: str
    time_us: float | None = None
    node: str | None = None  # the toolchain's node or kernel for it

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "verdict": self.verdict.value, "detail": self.detail,
                "npu_time_us": self.time_us, "toolchain_node": self.node}


def per_step(kernel: KernelStat, run: GraphRun) -> float:
    return round(kernel.total_us / run.steps, 3) if run.steps else kernel.mean_us


def profile_verdict(p: Prediction, run: GraphRun, mapper: NodeMapper) -> Verdict:
    by_name = {k.kernel: k for k in run.kernels}
    leftovers = [n for n in p.removed if n in by_name]
    present = [k for k in run.kernels if k.kernel not in leftovers and (k.kernel in p.kernels or (
        k.kernel not in p.toolchain_names and mapper.node(k.kernel) in p.kernels))]
    time = round(sum(per_step(k, run) for k in present), 3) if present else None
    if leftovers:
        return Verdict("profile", NOT_FOUND, f"{', '.join(leftovers)} ran as kernels of their own", time)
    if present:
        return Verdict("profile", FOUND, "kernel " + ", ".join(k.kernel for k in present), time, present[0].kernel)
    return Verdict("profile", UNKNOWN, "no kernel named like the prediction or its original nodes")


def fusion_op_verdict(p: Prediction, rows: list[FusionOpRecord], run: GraphRun | None) -> Verdict | None:
    wanted = set(p.toolchain_names)
    for row in rows:
        if len(wanted) > 1 and wanted <= set(row.original_ops):
            kernel = next((k for k in run.kernels if k.kernel == row.fusion_op), None) if run else None
            return Verdict("fusion_op", FOUND, f"fused op {row.fusion_op} holds {', '.join(row.original_ops)}",
                           per_step(kernel, run) if kernel and run else None, row.fusion_op)
    partial = [row for row in rows if wanted & set(row.original_ops)]
    if partial and len(wanted) > 1:
        row = partial[0]
        return Verdict("fusion_op", NOT_FOUND, f"fused op {row.fusion_op} holds only "
                       f"{', '.join(sorted(wanted & set(row.original_ops)))} of them", None, row.fusion_op)
    return None


def provenance_verdict(p: Prediction, source: str, label: str, table: Mapping[str, ToolchainProvenance],
                       op_types: Mapping[str, str]) -> Verdict:
    """What a graph of the toolchain's (a dump stage, the OM model) says: a fused node stands for all of the
    prediction's nodes, or they stand apart or in other nodes. `table` holds its fused nodes, `op_types` every
    node's type."""
    wanted = set(p.toolchain_names)
    for name, record in table.items():
        if wanted and wanted <= set(record.original_names):
            by = f" by {', '.join(record.passes)}" if record.passes else ""
            return Verdict(source, FOUND, f"{label}: node {name} ({op_types.get(name, '?')}) stands for them{by}",
                           None, name)
    standing = [n for n in p.toolchain_names if n in op_types and n not in table]
    holders = {name: sorted(wanted & set(r.original_names)) for name, r in table.items()
               if wanted & set(r.original_names)}
    if len(wanted) > 1 and (len(standing) == len(wanted) or holders):
        split = [f"{', '.join(names)} in {name}" for name, names in holders.items()] + \
            ([f"{', '.join(standing)} separate"] if standing else [])
        return Verdict(source, NOT_FOUND, f"{label}: " + "; ".join(split))
    return Verdict(source, UNKNOWN, f"{label}: no node records these original nodes")


def log_verdict(p: Prediction, switch: ToolchainSwitch, log: ToolchainLog) -> Verdict | None:
    """What the logs say of the prediction's pass (a scope pass that did not match or never ran, an FE pass
    that did not run) or of its nodes (AutoFuse refusing to fuse two of them); None when they say nothing.
    A pass that matched or ran is no proof of this match (the log names no scope): unknown, with what it says."""
    for name in switch.names:
        summary = log.scope_pass(name)
        if summary is None:
            continue
        if summary.matched:
            runs = summary.matched + summary.not_matched
            return Verdict("log", UNKNOWN, f"{name} matched in {summary.matched} of {times(runs, 'run')} (the log "
                                           "names no scope)")
        if summary.not_matched:
            return Verdict("log", NOT_FOUND, f"{name}'s patterns did not match ({times(summary.not_matched)})")
        if summary.registered is False:
            return Verdict("log", NOT_FOUND, f"{name} was registered off (is_enable = false) and never ran")
    ran = log.fe_passes()
    for name in switch.ge_passes:
        if name in ran:
            runs, total = ran[name]
            return Verdict("log", UNKNOWN, f"FE ran {name} ({times(runs)}, {total} us; the log does not say what "
                                           "it rewrote)")
    if switch.ge_passes and ran:
        return Verdict("log", NOT_FOUND, f"FE ran {len(ran)} graph fusion passes, not {' or '.join(switch.ge_passes)}")
    wanted = set(p.toolchain_names)
    refused = next((r for r in log.refusals if len(r.nodes) == 2 and set(r.nodes) <= wanted), None)
    if refused is not None:
        return Verdict("log", NOT_FOUND, f"AutoFuse: {refused.nodes[0]} and {refused.nodes[1]} cannot fuse, "
                                         f"[{refused.code}] {refused.reason}")
    return None


def combine(verdicts: list[Verdict]) -> Finding:
    """Found if any record found it, else not found if any contradicts it, else unknown."""
    kinds = {v.verdict for v in verdicts}
    return FOUND if FOUND in kinds else NOT_FOUND if NOT_FOUND in kinds else UNKNOWN


