"""The predicted-vs-actual report (session/npu_check) as the text `import-profile --model` prints."""

from __future__ import annotations

from fuselens.session.npu_check import FOUND, NOT_FOUND, UNKNOWN, CheckReport

MARKS = {FOUND: "found    ", NOT_FOUND: "NOT FOUND", UNKNOWN: "unknown  "}


def format_check(report: CheckReport, *, limit: int = 30) -> str:
    """The report as text: summary, predictions with verdicts, unpredicted fusions, ledger disagreements."""
    s = report.summary
    sources = report.sources
    lines = [f"Predicted vs actual for {report.model} (evidence: {', '.join(s.evidence) or 'none'})"]
    lines += [f"  {key}: {value}" for key, value in sources.items()]
    lines.append(f"  {s.predicted} predicted fusions: {s.found} found, {s.not_found} not found, "
                 f"{s.unknown} unknown; {s.unpredicted} toolchain fusions not predicted; "
                 f"{s.ledger_disagreements} ledger disagreements" +
                 (f"; {s.log_disagreements} log disagreements" if report.log else ""))
    for row in report.predicted[:limit]:
        p = row.prediction
        time = f", {row.time_us:.1f} us/step" if row.time_us is not None else ""
        lines.append(f"  {MARKS[row.verdict]} {p.pass_id}: {p.node} ({p.op_type or '?'}) <- "
                     f"{', '.join(p.originals)}{time}")
        lines += [f"              {v.source}: {v.detail}" for v in row.evidence]
    if len(report.predicted) > limit:
        lines.append(f"  ... {len(report.predicted) - limit} more (--json for all)")
    if report.unpredicted:
        lines.append("toolchain fusions FuseLens did not predict:")
        for entry in report.unpredicted[:limit]:
            time = f", {entry.time_us:.1f} us/step" if entry.time_us is not None else ""
            origin = f" <- {', '.join(entry.original_nodes)}" if entry.original_nodes else ""
            by = f" [{', '.join(entry.passes)}]" if entry.passes else ""
            detail = f"; {entry.detail}" if entry.detail else ""
            lines.append(f"  + {entry.name}{origin}{by} ({', '.join(entry.sources)}{time}){detail}")
    disagreements = [r for r in report.ledger if r.status == "disagree"]
    if disagreements:
        lines.append(f"ledger disagreements ({sources.get('fusion_result_graph', '')}):")
        lines += [f"  {r.name}: {r.note}" for r in disagreements]
    if report.log:
        lines.append("what the logs say, pass by pass:")
        lines += [f"  {r.status:12s} {r.log}; {r.note}" for r in report.log]
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines)
