"""Start-up: process spawn -> the window's first paint, cold and warm, next to a baseline checkout.

    .venv/bin/python benchmarks/bench_startup.py [--before DIR] [--repeat N] [--model NAME]

Each run is a fresh process of the real entry point (`python main.py [MODEL]`, in the checkout's
directory, so its own gui, core and main are imported), the main window class wrapped to record its
first paint; the clock starts just before the process is spawned and the process quits once painted.
  * cold: the first process after the checkout's __pycache__ directories were deleted (every module
          of the checkout compiled again and fresh .pyc files written, as on the first run after
          install; the page cache cannot be dropped here, so installed packages are read warm)
  * after setup: the first process after the __pycache__ directories were deleted and the tree compiled
          again as `make setup` does (compileall), so no .pyc is written by the window: the first
          `make run` after `make setup`
  * warm: the median of N processes after that (default 5)
  * cpu:  the process's CPU seconds by its first paint (all its threads; steadier than wall time when
          other work shares the machine)
  * modules: how many modules were imported by the first paint, and which of HEAVY_AT_START
`--before DIR` measures another checkout (e.g. `git worktree add /tmp/old main`) alternated with this
one: cold once each, then warm runs one of each in turn. `--model NAME` opens a model as `main.py NAME`
does (its loading starts after the first paint, so it should not move it).
Set DISPLAY and BENCH_PLATFORM=xcb to measure on a real (or Xvfb) display; offscreen otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Modules the window must not have imported by its first paint (tests/gui/test_startup.py fails on any):
# each is needed only once the user does something, and each costs start-up time (measured with
# `python -X importtime -c "import gui.app"` on the 2-core machine; the first two were imported before).
HEAVY_AT_START = (
    "ml_dtypes",  # 0.87-1.1 s: only a bfloat16 / float8 / int4 tensor needs it (core.graph.proto)
    "pyqtgraph",  # 0.3 s: only the run dock's charts, made with the first run result (gui.plots)
    "tensorflow",  # ~3 s: only ever in the TensorFlow helper's and the runner's child processes
    "scipy",  # no start-up code needs it; brought by TensorFlow or numerics when present
    "fuselens.core.runtime.runner",  # a run, the bisect, the configuration compare: when one is started
    "fuselens.core.runtime.child",  # the runner's child process's side, never the window's
    "fuselens.core.runtime.lowering",
    "fuselens.core.ascend.profile_import",  # a profile or run file imported
    "fuselens.core.measure.msprof",
    "fuselens.core.ascend.npu_bundle",  # the NPU bundle, written by the TensorFlow helper
    "fuselens.core.ascend.npu_script",
    "fuselens.core.ascend.ge",  # the GE dump and fusion_result readers: a dump folder or an NPU run opened
    "fuselens.session.npu_check.evidence",  # predicted vs actual: gathers the Ascend evidence
    "fuselens.session.npu_check.report",
    "fuselens.session.npu_export",
    "fuselens.session.bisect",
    "fuselens.session.config_diff",
    "fuselens.session.layerwise",
)

CHILD = r"""
import json, sys, time
spawned = float(sys.argv[1])
import importlib, os
# A checkout from before the one import package (issue 24) imports its folders bare.
prefix = "fuselens." if os.path.isdir("fuselens") else ""
app = importlib.import_module(prefix + "gui.app")
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

class FirstPaint(app.MainWindow):
    painted = None

    def paintEvent(self, event):
        super().paintEvent(event)
        if FirstPaint.painted is None:
            FirstPaint.painted = {"shown": time.time() - spawned, "cpu": time.process_time(),
                                  "modules": sorted(sys.modules)}
            QTimer.singleShot(0, QApplication.instance().quit)

app.MainWindow = FirstPaint
importlib.import_module(prefix + "main").main(sys.argv[2:])
print("STARTUP " + json.dumps(FirstPaint.painted))
"""


def first_paint(root: Path, model: str | None = None) -> dict:
    """One process of the checkout at `root`: seconds from spawn to the window's first paint (`shown`), the
    process's CPU seconds by then (`cpu`, steadier than wall time on a shared machine) and its modules then.

    """
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", QT_QPA_PLATFORM=os.environ.get("BENCH_PLATFORM", "offscreen"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # .pyc files written, as a user's Python does
    spawned = time.time()
    done = run_in_session([sys.executable, "-c", CHILD, repr(spawned), *([model] if model else [])], root, env, 300)
    lines = [line for line in done.stdout.splitlines() if line.startswith("STARTUP ")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{root}: start-up child failed:\n{done.stderr[-2000:]}")
    return json.loads(lines[-1][8:])


def run_in_session(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """`argv` in a session of its own, killed with everything it started once it has ended: a window's children
    (the TensorFlow helper, the backend probe) would otherwise outlive one run and load the next."""
    child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        out, err = child.communicate(timeout=timeout)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(argv, child.returncode, out, err)


def drop_bytecode(root: Path) -> None:
    """Delete the checkout's compiled modules, so the next process compiles and writes them again."""
    for cache in root.rglob("__pycache__"):
        if ".venv" not in cache.parts:
            shutil.rmtree(cache, ignore_errors=True)


def compile_like_setup(root: Path) -> None:
    """What `make setup` does after installing: every module of the checkout compiled (the Makefile's SOURCES)."""
    sources = [name for name in ("fuselens", "core", "passes", "session", "cli", "gui", "main.py")
               if (root / name).exists()]
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", *sources], cwd=root, check=True,
                   stdout=subprocess.DEVNULL)


def heavy_imported(modules: list[str]) -> list[str]:
    """The HEAVY_AT_START entries among `modules` (a package counts when any of its modules is there)."""
    return [h for h in HEAVY_AT_START if any(m == h or m.startswith(h + ".") for m in modules)]


def main(before: Path | None, repeat: int, model: str | None) -> None:
    checkouts = {"before": before, "after": ROOT} if before else {str(ROOT): ROOT}
    for root in checkouts.values():
        drop_bytecode(root)
    cold = {label: first_paint(root, model) for label, root in checkouts.items()}
    after_setup = {}
    for label, root in checkouts.items():
        drop_bytecode(root)
        compile_like_setup(root)
        after_setup[label] = first_paint(root, model)
    warm: dict[str, list[dict]] = {label: [] for label in checkouts}
    for _ in range(repeat):
        for label, root in checkouts.items():
            warm[label].append(first_paint(root, model))
    print(f"first paint from process spawn ({os.environ.get('BENCH_PLATFORM', 'offscreen')}"
          f"{f', opening {model}' if model else ''}), seconds; warm: median of {repeat}")
    print("checkout | cold | after setup | warm | cold cpu | warm cpu | warm runs | modules | heavy modules imported")
    for label, runs in warm.items():
        shown = statistics.median(r["shown"] for r in runs)
        cpu = statistics.median(r["cpu"] for r in runs)
        each = " ".join(f"{r['shown']:.2f}" for r in runs)
        print(f"{label} | {cold[label]['shown']:.2f} | {after_setup[label]['shown']:.2f} |"
              f" {shown:.2f} | {cold[label]['cpu']:.2f} | {cpu:.2f} | {each} | "
              f"{len(cold[label]['modules'])} | "
              f"{', '.join(heavy_imported(cold[label]['modules'])) or 'none'}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, metavar="DIR", help="also this checkout, alternated in the same run")
    parser.add_argument("--repeat", type=int, default=5, help="warm runs per checkout")
    parser.add_argument("--model", help="a sample name or model file to open, as `main.py MODEL`")
    args = parser.parse_args()
    main(args.before, args.repeat, args.model)
