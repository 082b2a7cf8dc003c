"""An audit from start to report: the models the PATHs name, one task each, run in worker processes here
or on a Dask cluster, then the report (rows in the order given, the zoo's summary, regressions against
a baseline). Qt-free: `fuselens audit` and the window's File > Audit folder… both call `run_audit`."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fuselens.passes.config import PassConfig
from fuselens.session.audit.baseline import regressions
from fuselens.session.audit.collect import collect_models
from fuselens.session.audit.model import AuditTask
from fuselens.session.audit.pool import default_jobs, run_dask, run_local
from fuselens.session.audit.reports import AUDIT_FORMAT, AUDIT_VERSION
from fuselens.session.audit.summary import summarize

Report = dict[str, Any]


@dataclass
class AuditOptions:
    numeric: bool = False
    run: bool = False
    steps: int = 20
    timeout: float = 600.0
    pictures: int = 0  # near misses drawn per model (the HTML report's)
    jobs: int = field(default_factory=default_jobs)
    scheduler: str | None = None  # a Dask scheduler address: the tasks run there


@dataclass
class AuditProgress:
    """What the progress bar shows: models done of total, the ones in flight (name: stage), an ETA."""

    done: int
    total: int
    in_flight: dict[str, str]
    elapsed: float
    last: Report | None = None  # the row that just finished, if one did

    @property
    def eta(self) -> float | None:
        if not self.done or self.done >= self.total:
            return None
        return self.elapsed / self.done * (self.total - self.done)


def build_tasks(paths: list[str], config: PassConfig, options: AuditOptions) -> list[AuditTask]:
    return [AuditTask(name, spec, config, numeric=options.numeric, run=options.run, steps=options.steps,
                      pictures=options.pictures, timeout=options.timeout)
            for name, spec in collect_models(paths)]


def run_audit(tasks: list[AuditTask], config: PassConfig, options: AuditOptions, *,
              progress: Callable[[AuditProgress], None] = lambda _: None,
              cancelled: Callable[[], bool] = lambda: False,
              baseline: Report | None = None, tolerance: float = 1e-5, slower: float = 0.10) -> Report:
    """Audit every task and return the report. After `cancelled()` turned true the report holds the models
    that finished (`complete` false); Ctrl+C raises AuditInterrupted, which carries that report."""
    rows: dict[int, Report] = {}
    flying: dict[int, str] = {}
    lock = threading.Lock()
    start = time.monotonic()

    def report_progress(last: Report | None) -> None:
        progress(AuditProgress(len(rows), len(tasks), {tasks[i].name: s for i, s in flying.items()},
                               time.monotonic() - start, last))

    def on_stage(i: int, text: str) -> None:
        with lock:
            flying[i] = text
            report_progress(None)

    def on_row(i: int, row: Report) -> None:
        with lock:
            rows[i] = row
            flying.pop(i, None)
            report_progress(row)

    interrupted = False
    try:
        if options.scheduler:
            run_dask(tasks, options.scheduler, on_row=on_row, on_stage=on_stage, cancelled=cancelled)
        else:
            run_local(tasks, options.jobs, on_row=on_row, on_stage=on_stage, cancelled=cancelled)
    except KeyboardInterrupt:
        interrupted = True
    report = build_report([rows[i] for i in sorted(rows)], config, options, total=len(tasks),
                          baseline=baseline, tolerance=tolerance, slower=slower)
    if interrupted:
        raise AuditInterrupted(report)
    return report


class AuditInterrupted(KeyboardInterrupt):
    """Ctrl+C during an audit: `report` holds the models done."""

    def __init__(self, report: Report):
        super().__init__("audit interrupted")
        self.report = report


def build_report(rows: list[Report], config: PassConfig, options: AuditOptions, *, total: int,
                 baseline: Report | None = None, tolerance: float = 1e-5, slower: float = 0.10) -> Report:
    report: Report = {
        "format": AUDIT_FORMAT, "version": AUDIT_VERSION, "complete": len(rows) == total, "models_total": total,
        "config": config.to_json(),
        "options": {"numeric": options.numeric, "run": options.run, "steps": options.steps,
                    "timeout": options.timeout},
        "models": rows, "summary": summarize(rows)}
    if baseline is not None:
        report["regressions"] = regressions(baseline, report, tolerance=tolerance,
                                            slower=slower if options.run else None)
    return report
