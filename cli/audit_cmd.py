"""`audit`: fuse a whole model zoo, check it, rank its near misses, write JSON / HTML / JUnit, gate CI."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from fuselens.cli.pass_args import add_pass_selection_args
from fuselens.core.errors import FuseLensError
from fuselens.core.formats.io import check_output_path

BAR_WIDTH = 24
SHOWN_REASONS = 10


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("audit", help="fuse and check every model of a zoo: coverage, near-miss reasons, numerics, "
                                     "reports and a CI gate")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="model files, folders (searched recursively, SavedModel directories included) or sample "
                        "names")
    add_pass_selection_args(p)
    p.add_argument("--numeric", action="store_true",
                   help="compare the original and the fused graph on seeded random inputs (max abs / rel error)")
    p.add_argument("--run", action="store_true", help="time both graphs (median step time)")
    p.add_argument("--steps", type=int, default=20, metavar="N", help="timed steps per graph with --run (20)")
    p.add_argument("--json", metavar="R.json", help="write the whole audit as JSON")
    p.add_argument("--html", metavar="R.html", help="write a self-contained HTML report")
    p.add_argument("--junit", metavar="R.xml", help="write JUnit XML: one test case per model")
    p.add_argument("-j", "--jobs", type=int, metavar="N", help="models audited at once (default: the core count)")
    p.add_argument("--timeout", type=float, default=600.0, metavar="S",
                   help="seconds one model may take before its row says it timed out (600)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the per-model tasks on this Dask distributed scheduler (pip install 'fuselens[cluster]')")
    p.add_argument("--baseline", metavar="OLD.json",
                   help="an earlier audit's JSON: exit 1 and name each regression against it")
    p.add_argument("--update-baseline", action="store_true",
                   help="write this audit to the --baseline file (regressions are reported, the exit code is 0)")
    p.add_argument("--slower", type=_share, default=0.10, metavar="P",
                   help="with --run and --baseline: a fused graph this much slower is a regression (10%%)")
    p.add_argument("--tolerance", type=float, default=1e-5, metavar="E",
                   help="with --numeric and --baseline: max abs error a model may gain (1e-5)")
    p.set_defaults(func=run_audit_command)


def _share(text: str) -> float:
    try:
        value = float(text.strip().removesuffix("%")) / (100 if text.strip().endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a share: {text!r} (write 10% or 0.1)") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"a share is not negative: {text!r}")
    return value


def run_audit_command(args: argparse.Namespace) -> int:
    from fuselens.passes.config import PassConfig
    from fuselens.session.audit.audit import AuditInterrupted, AuditOptions, build_tasks, run_audit
    from fuselens.session.audit.html import SHOWN_NEAR_MISSES
    from fuselens.session.audit.reports import read_report

    config = PassConfig.from_args(args)
    if args.update_baseline and not args.baseline:
        raise FuseLensError("--update-baseline writes the --baseline file: give --baseline OLD.json")
    if args.jobs is not None and args.jobs < 1:
        raise FuseLensError(f"-j takes a count of 1 or more (got {args.jobs})")
    if args.timeout <= 0 or args.steps < 1:
        raise FuseLensError("--timeout must be above 0 and --steps at least 1")
    for out in (args.json, args.html, args.junit):
        if out:
            check_output_path(out)
    baseline = read_report(args.baseline) if args.baseline and not args.update_baseline else None
    options = AuditOptions(numeric=args.numeric, run=args.run, steps=args.steps, timeout=args.timeout,
                           pictures=SHOWN_NEAR_MISSES if args.html else 0, scheduler=args.scheduler,
                           **({"jobs": args.jobs} if args.jobs else {}))
    tasks = build_tasks(args.paths, config, options)
    bar = ProgressBar(sys.stderr)
    interrupted = False
    try:
        report = run_audit(tasks, config, options, progress=bar.update, baseline=baseline,
                           tolerance=args.tolerance, slower=args.slower)
    except AuditInterrupted as stop:
        report, interrupted = stop.report, True
    bar.close()
    write_reports(report, args)
    print(format_audit(report))
    if interrupted:
        print(f"fuselens: interrupted: {len(report['models'])} of {report['models_total']} models audited; "
              "the reports hold those", file=sys.stderr)
        return 130
    if args.update_baseline:
        from fuselens.session.audit.reports import write_json

        write_json(args.baseline, report)
        print(f"wrote the baseline {args.baseline}", file=sys.stderr)
        return 0
    if report.get("regressions"):
        return 1
    return 1 if args.strict and any(row["status"] != "ok" or row.get("errors") for row in report["models"]) else 0


def write_reports(report: dict[str, Any], args: argparse.Namespace) -> None:
    from fuselens.session.audit.html import write_html
    from fuselens.session.audit.reports import write_json, write_junit

    for path, write in ((args.json, write_json), (args.html, write_html), (args.junit, write_junit)):
        if path:
            write(path, report)
            print(f"wrote {path}", file=sys.stderr)


def format_audit(report: dict[str, Any]) -> str:
    """The printed audit: a line per model, the ranked near-miss reasons, disagreements, regressions."""
    rows = report["models"]
    width = min(48, max((len(row["model"]) for row in rows), default=5))
    lines = [f"{'model':{width}s}  {'status':12s} {'nodes':>13s} {'matches':>7s} {'fused':>6s}  numeric"]
    for row in rows:
        if row["status"] != "ok":
            lines.append(f"{row['model']:{width}s}  {row['status']:12s} {row['reason']}")
            continue
        matches = sum(p["matches"] for p in row["passes"].values())
        numeric = row.get("numeric")
        checked = "" if not numeric else (numeric["error"] if numeric.get("error") else
                                          f"{'ok' if numeric['allclose'] else 'DISAGREES'} max abs "
                                          f"{numeric['max_abs'] if numeric['max_abs'] is not None else '-'}")
        nodes = f"{row['nodes_before']} -> {row['nodes_after']}"
        lines.append(f"{row['model']:{width}s}  {'ok':12s} {nodes:>13s} {matches:7d} {row['fused_share']:6.0%}  "
                     f"{checked}")
    summary = report["summary"]
    lines.append(f"{len(rows)} models: " + ", ".join(f"{n} {s}" for s, n in summary["statuses"].items())
                 + f"; {summary['matches']} matches")
    if summary["reasons"]:
        lines.append("near-miss reasons (matches lost, by kind):")
        lines += [f"  {r['summary']}" for r in summary["reasons"][:SHOWN_REASONS]]
        if len(summary["reasons"]) > SHOWN_REASONS:
            lines.append(f"  ... {len(summary['reasons']) - SHOWN_REASONS} more kinds (--json or --html lists them)")
    for row in summary["disagreeing"]:
        lines.append(f"numerics disagree: {row['model']}" + (f" ({row['error']})" if row["error"] else
                                                            f" (max abs {row['max_abs']}, max rel {row['max_rel']})"))
    regressions = report.get("regressions")
    if regressions is not None:
        lines.append(f"{len(regressions)} regressions against the baseline" + (":" if regressions else ""))
        lines += [f"  {r['text']}" for r in regressions]
    return "\n".join(lines)


class ProgressBar:
    """On a terminal one line redrawn (done/total, the model in flight, ETA); otherwise a line per model."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.tty = stream.isatty()
        self._drawn = False

    def update(self, progress: Any) -> None:
        if not self.tty:
            if progress.last is not None:
                row = progress.last
                self.stream.write(f"audit {progress.done}/{progress.total}: {row['model']} {row['status']} "
                                  f"({row.get('seconds', 0):.1f} s)\n")
                self.stream.flush()
            return
        filled = BAR_WIDTH * progress.done // max(progress.total, 1)
        flying = ", ".join(f"{name} ({stage})" for name, stage in list(progress.in_flight.items())[:2])
        eta = f" ETA {progress.eta:.0f} s" if progress.eta is not None else ""
        text = f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {progress.done}/{progress.total}{eta} {flying}"
        self.stream.write("\r\x1b[K" + text[:200])
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
