"""Each source's verdict on one prediction: the profile's kernel names, fusion_op_*.csv's fused ops, the dump's
fused nodes (`_datadump_original_op_names`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fuselens.core.ascend.ge.provenance import ToolchainProvenance
from fuselens.core.graph import Graph
from fuselens.core.measure.msprof.fusion_op import FusionOpRecord
from fuselens.core.measure.profile import NodeMapper
from fuselens.core.measure.result import GraphRun, KernelStat
from fuselens.session.npu_check.finding import FOUND, NOT_FOUND, UNKNOWN, Finding
from fuselens.session.npu_check.predictions import Prediction


@dataclass(frozen=True)
class Verdict:
    """What one source (`profile`, `fusion_op`, `dump`, `amct`) says of one prediction."""

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


def dump_verdict(p: Prediction, graph: Graph, table: dict[str, ToolchainProvenance], stage: str) -> Verdict:
    wanted = set(p.toolchain_names)
    for name, record in table.items():
        if wanted and wanted <= set(record.original_names):
            by = f" by {', '.join(record.passes)}" if record.passes else ""
            return Verdict("dump", FOUND, f"{stage}: node {name} ({graph.op_type(name)}) stands for them{by}",
                           None, name)
    standing = [n for n in p.toolchain_names if n in graph and n not in table]
    holders = {name: sorted(wanted & set(r.original_names)) for name, r in table.items()
               if wanted & set(r.original_names)}
    if len(wanted) > 1 and (len(standing) == len(wanted) or holders):
        split = [f"{', '.join(names)} in {name}" for name, names in holders.items()] + \
            ([f"{', '.join(standing)} separate"] if standing else [])
        return Verdict("dump", NOT_FOUND, f"{stage}: " + "; ".join(split))
    return Verdict("dump", UNKNOWN, f"{stage}: no node records these original nodes")


def combine(verdicts: list[Verdict]) -> Finding:
    """Found if any record found it, else not found if any contradicts it, else unknown."""
    kinds = {v.verdict for v in verdicts}
    return FOUND if FOUND in kinds else NOT_FOUND if NOT_FOUND in kinds else UNKNOWN


