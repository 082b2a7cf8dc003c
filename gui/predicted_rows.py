"""The predicted-vs-actual table's rows (gui/predicted_view.py shows them): session/npu_check's report, read as
what a user compares: agreed, missing on device, extra on device, different, no evidence; each row names the
kinds of record it rests on (profile, dump, OM JSON, log, fusion_result.json ...)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fuselens.session.npu_check.finding import FOUND, NOT_FOUND, UNKNOWN, source_label

if TYPE_CHECKING:
    from fuselens.session.npu_check.report import CheckReport

AGREED, MISSING, EXTRA, DIFFERENT, NO_EVIDENCE = (
    "agreed", "missing on device", "extra on device", "different", "no evidence")
STATUSES = (AGREED, MISSING, EXTRA, DIFFERENT, NO_EVIDENCE)
LOG_STATUSES = {"agree": AGREED, "missing": MISSING, "extra": EXTRA, "unverifiable": NO_EVIDENCE}  # log_check's


@dataclass(frozen=True)
class CheckRow:
    """One row of the predicted-vs-actual table: a FuseLens prediction, a toolchain fusion it did not predict, a
    pass's counts in fusion_result.json, or what the logs say of a pass, with what the toolchain did."""

    status: str  # one of STATUSES
    kind: str  # "prediction", "toolchain" (a fusion FuseLens did not predict), "pass count" or "log"
    pass_id: str
    node: str  # FuseLens's fused (or kept) node; "" where FuseLens made none
    originals: tuple[str, ...]  # the original nodes it stands for: what a click selects
    toolchain: str  # what the toolchain made of them: its node or kernel, or its pass counts
    detail: str
    time_us: float | None = None
    kinds: tuple[str, ...] = ()  # the kinds of record behind the row ("dump", "OM JSON", "log" ...)


def _labels(sources: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(source_label(s) for s in sources))


def check_rows(report: CheckReport) -> list[CheckRow]:
    """The report as table rows: predictions first, then the toolchain's fusions FuseLens did not predict, then
    pass counts, then the logs' word on each pass. A prediction is agreed when no record contradicts it,
    different when the toolchain fused its nodes otherwise (or the records disagree), missing when they ran
    unfused; a toolchain fusion overlapping a prediction is its different counterpart, one overlapping none is
    extra."""
    rows = []
    for row in report.predicted:
        p = row.prediction
        overlapping = [u for u in report.unpredicted if set(u.original_nodes) & set(p.toolchain_names)]
        kinds = {v.verdict for v in row.evidence}
        status = (NO_EVIDENCE if row.verdict is UNKNOWN else AGREED if NOT_FOUND not in kinds else
                  DIFFERENT if overlapping or FOUND in kinds else MISSING)  # some record says otherwise: different
        toolchain = next((v.node for v in row.evidence if v.node), None)
        if overlapping:
            toolchain = ", ".join(u.name for u in overlapping)
        rows.append(CheckRow(status, "prediction", p.pass_id, p.node, p.originals, toolchain or "",
                             "; ".join(f"{v.source}: {v.detail}" for v in row.evidence) or
                             "no record came back that names these nodes", row.time_us,
                             _labels([v.source for v in row.evidence])))
    for u in report.unpredicted:
        what = f"{u.name} ({u.op_type})" if u.op_type else u.name
        detail = "; ".join(filter(None, [f"from {', '.join(u.sources)}", u.detail]))
        overlaps = any(set(u.original_nodes) & set(r.prediction.toolchain_names) for r in report.predicted)
        rows.append(CheckRow(DIFFERENT if overlaps else EXTRA, "toolchain", ", ".join(u.passes) or "(toolchain)", "",
                             u.original_nodes, what, detail, u.time_us, _labels(u.sources)))
    graph = report.sources.get("fusion_result_graph", "")
    for r in report.ledger:
        counts, mine = r.actual, r.predicted
        matched, fused = (counts.match_times, counts.effect_times) if counts else (0, 0)
        nothing = mine is not None and (matched, fused) == (mine.match_times, mine.effect_times) == (0, 0)
        if r.status not in ("agree", "disagree") or nothing:
            continue  # unrecorded passes are judged by their matches above, unmodelled ones listed as extra; 0 = 0
        toolchain = f"fusion_result.json {graph}: {matched} matched, {fused} fused"
        detail = r.note or (f"FuseLens too: {mine.match_times} matched, {mine.effect_times} fused" if mine else "")
        rows.append(CheckRow(AGREED if r.status == "agree" else DIFFERENT, "pass count", r.name, "", (),
                             toolchain, detail, kinds=("fusion_result.json",)))
    rows += [CheckRow(LOG_STATUSES[r.status], "log", r.pass_id, "", (), r.log, r.note, kinds=("log",))
             for r in report.log]
    return rows
