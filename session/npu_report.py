"""Predicted vs actual as the window reads it: the report's verdicts and statuses, its table rows, its text.

Apart from session.npu_check, which gathers the evidence (the Ascend readers: core.ge, msprof) and
writes the report, so that the window's predicted-vs-actual table, built with the run dock, imports
none of those before the first paint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FOUND, NOT_FOUND, UNKNOWN = "found", "not_found", "unknown"  # a prediction's verdict in the report


# A row's status in the window's table
AGREED, MISSING, EXTRA, DIFFERENT, NO_EVIDENCE = (
    "agreed", "missing on device", "extra on device", "different", "no evidence")
STATUSES = (AGREED, MISSING, EXTRA, DIFFERENT, NO_EVIDENCE)


@dataclass(frozen=True)
class CheckRow:
    """One row of the predicted-vs-actual table: a FuseLens prediction, a toolchain fusion it did not predict, or
    a pass's counts in fusion_result.json, with what the toolchain did."""

    status: str  # one of STATUSES
    kind: str  # "prediction", "toolchain" (a fusion FuseLens did not predict) or "pass count"
    pass_id: str
    node: str  # FuseLens's fused (or kept) node; "" where FuseLens made none
    originals: tuple[str, ...]  # the original nodes it stands for: what a click selects
    toolchain: str  # what the toolchain made of them: its node or kernel, or its pass counts
    detail: str
    time_us: float | None = None


def check_rows(report: dict[str, Any]) -> list[CheckRow]:
    """The report as table rows: predictions first, then the toolchain's fusions FuseLens did not predict, then
    pass counts. A prediction is agreed when no record contradicts it, different when the toolchain fused its
    nodes otherwise (or the records disagree), missing when they ran unfused; a toolchain fusion overlapping a
    prediction is its different counterpart, one overlapping none is extra."""
    rows = []
    for p in report["predicted"]:
        overlapping = [u for u in report["unpredicted"] if set(u["original_nodes"]) & set(p["toolchain_nodes"])]
        kinds = {e["verdict"] for e in p["evidence"]}
        status = (NO_EVIDENCE if p["verdict"] == UNKNOWN else AGREED if NOT_FOUND not in kinds else
                  DIFFERENT if overlapping or FOUND in kinds else MISSING)  # some record says otherwise: different
        toolchain = next((e["toolchain_node"] for e in p["evidence"] if e["toolchain_node"]), None)
        if overlapping:
            toolchain = ", ".join(u["name"] for u in overlapping)
        rows.append(CheckRow(status, "prediction", p["pass"], p["node"], tuple(p["original_nodes"]), toolchain or "",
                             "; ".join(f"{e['source']}: {e['detail']}" for e in p["evidence"]) or
                             "no record came back that names these nodes", p["npu_time_us"]))
    for u in report["unpredicted"]:
        what = f"{u['name']} ({u['op_type']})" if u["op_type"] else u["name"]
        detail = "; ".join(filter(None, [f"from {', '.join(u['sources'])}", u["detail"]]))
        overlaps = any(set(u["original_nodes"]) & set(p["toolchain_nodes"]) for p in report["predicted"])
        rows.append(CheckRow(DIFFERENT if overlaps else EXTRA, "toolchain", ", ".join(u["passes"]) or "(toolchain)", "",
                             tuple(u["original_nodes"]), what, detail, u["npu_time_us"]))
    graph = report["sources"].get("fusion_result_graph", "")
    for r in report["ledger"]:
        none = {"match_times": 0, "effect_times": 0}
        counts, mine = r["actual"] or none, r["predicted"]
        if r["status"] not in ("agree", "disagree") or counts == mine == none:
            continue  # unrecorded passes are judged by their matches above, unmodelled ones listed as extra; 0 = 0
        toolchain = f"fusion_result.json {graph}: {counts['match_times']} matched, {counts['effect_times']} fused"
        detail = r["note"] or (f"FuseLens too: {mine['match_times']} matched, {mine['effect_times']} fused"
                               if mine else "")
        rows.append(CheckRow(AGREED if r["status"] == "agree" else DIFFERENT, "pass count", r["pass"], "", (),
                             toolchain, detail))
    return rows


def format_check(report: dict[str, Any], *, limit: int = 30) -> str:
    """The report as text: summary, predictions with verdicts, unpredicted fusions, ledger disagreements."""
    s = report["summary"]
    sources = report["sources"]
    lines = [f"Predicted vs actual for {report['model']} (evidence: {', '.join(s['evidence']) or 'none'})"]
    lines += [f"  {key}: {value}" for key, value in sources.items()]
    lines.append(f"  {s['predicted']} predicted fusions: {s['found']} found, {s['not_found']} not found, "
                 f"{s['unknown']} unknown; {s['unpredicted']} toolchain fusions not predicted; "
                 f"{s['ledger_disagreements']} ledger disagreements")
    marks = {FOUND: "found    ", NOT_FOUND: "NOT FOUND", UNKNOWN: "unknown  "}
    for row in report["predicted"][:limit]:
        time = f", {row['npu_time_us']:.1f} us/step" if row["npu_time_us"] is not None else ""
        lines.append(f"  {marks[row['verdict']]} {row['pass']}: {row['node']} ({row['op_type'] or '?'}) <- "
                     f"{', '.join(row['original_nodes'])}{time}")
        lines += [f"              {e['source']}: {e['detail']}" for e in row["evidence"]]
    if len(report["predicted"]) > limit:
        lines.append(f"  ... {len(report['predicted']) - limit} more (--json for all)")
    if report["unpredicted"]:
        lines.append("toolchain fusions FuseLens did not predict:")
        for entry in report["unpredicted"][:limit]:
            time = f", {entry['npu_time_us']:.1f} us/step" if entry["npu_time_us"] is not None else ""
            origin = f" <- {', '.join(entry['original_nodes'])}" if entry["original_nodes"] else ""
            by = f" [{', '.join(entry['passes'])}]" if entry["passes"] else ""
            detail = f"; {entry['detail']}" if entry["detail"] else ""
            lines.append(f"  + {entry['name']}{origin}{by} ({', '.join(entry['sources'])}{time}){detail}")
    disagreements = [r for r in report["ledger"] if r["status"] == "disagree"]
    if disagreements:
        lines.append(f"ledger disagreements ({sources.get('fusion_result_graph', '')}):")
        lines += [f"  {r['pass']}: {r['note']}" for r in disagreements]
    lines += [f"note: {n}" for n in report["notes"]]
    return "\n".join(lines)
