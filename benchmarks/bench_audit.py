"""`fuselens audit` over the samples and the tests' Keras zoo (--numeric): wall time with -j 1, -j 2 and
through a 2-worker Dask LocalCluster, in one run; and the per-model overhead of the audit over a plain
`fuselens fuse` (a process per model: start-up, fuse, count).

    .venv/bin/python benchmarks/bench_audit.py [--no-zoo] [--no-numeric]

The zoo's models are built into the sample cache on first use (tests/zoo/models.py; minutes, once).
Figures from a loaded machine are not figures: run it on a quiet one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from fuselens.core.formats.samples import SAMPLES  # noqa: E402
from fuselens.passes.config import PassConfig  # noqa: E402
from fuselens.session.audit.audit import AuditOptions, build_tasks, run_audit  # noqa: E402
from tests.zoo.models import BERT_NAME, ZOO, zoo_model  # noqa: E402

KERAS_ZOO = [name for name in ZOO if name != BERT_NAME]  # the 8 Keras applications


def timed_audit(paths: list[str], numeric: bool, **options: object) -> tuple[float, dict]:
    config = PassConfig.default()
    opts = AuditOptions(numeric=numeric, **options)  # type: ignore[arg-type]
    start = time.perf_counter()
    report = run_audit(build_tasks(paths, config, opts), config, opts)
    return time.perf_counter() - start, report


def plain_fuse_seconds(specs: list[str]) -> float:
    """`fuselens fuse` on each model, one process each, one after another."""
    start = time.perf_counter()
    for spec in specs:
        subprocess.run([sys.executable, "-m", "fuselens", "fuse", spec], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-zoo", action="store_true", help="the samples only")
    parser.add_argument("--no-numeric", action="store_true", help="fuse and count only")
    args = parser.parse_args()
    numeric = not args.no_numeric
    with tempfile.TemporaryDirectory() as tmp:
        paths = [name for name, sample in SAMPLES.items() if not sample.cached]
        if not args.no_zoo:
            zoo = Path(tmp) / "zoo"
            zoo.mkdir()
            for name in KERAS_ZOO:
                (zoo / f"{name}.pb").symlink_to(zoo_model(name))
            paths.append(str(zoo))
        print(f"command: fuselens audit {' '.join(paths)}{' --numeric' if numeric else ''} -j N")
        runs = {}
        for label, options in (("-j 1", {"jobs": 1}), ("-j 2", {"jobs": 2})):
            runs[label] = timed_audit(paths, numeric, **options)
        from distributed import LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
            runs["2-worker LocalCluster"] = timed_audit(paths, numeric, scheduler=cluster.scheduler_address)
        for label, (seconds, report) in runs.items():
            statuses = report["summary"]["statuses"]
            print(f"{label:24s} {seconds:8.1f} s wall  {len(report['models'])} models  {statuses}")
        _, report = runs["-j 1"]
        specs = [row["spec"] for row in report["models"] if row["status"] == "ok"]
        plain = plain_fuse_seconds(specs)
        fused_only, _ = timed_audit(paths, False, jobs=1)
        print(f"per model: plain `fuselens fuse` {plain / len(specs):.2f} s, audit -j 1 without --numeric "
              f"{fused_only / len(specs):.2f} s ({len(specs)} models)")


if __name__ == "__main__":
    main()
