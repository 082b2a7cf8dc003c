"""The chaos driver (tests/gui/chaos.py) at length: the window's own actions in random order, per seed.

    .venv/bin/python benchmarks/bench_chaos.py [--seeds 1,2,3] [--actions 5000]
    .venv/bin/python benchmarks/bench_chaos.py --seed 7 --actions 200    # replay one seed

Each seed runs in a fresh process (`python benchmarks/bench_chaos.py --child`), so a crash of one is
a row of its own ("died: SIGSEGV") and the others go on. Per seed: actions per second, the longest
GUI-thread stall (a 5 ms heartbeat), exceptions that reached sys.excepthook, Qt warnings, threads or
child processes left after the window closed, the slowest steps. `make test` runs 200 actions for
two seeds (tests/gui/test_chaos.py). Set DISPLAY and BENCH_PLATFORM=xcb to drive a real (or Xvfb)
display; offscreen otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.gui.chaos import command_line  # noqa: E402

# Marks a seed's process and everything it starts, to find what outlived it.
TOKEN_ENV = "FUSELENS_CHAOS_TOKEN"


def _outliving(token: str, grace_s: float = 5.0) -> list[str]:
    """Processes started by a seed's process (they inherit TOKEN_ENV) still alive after it exited."""
    deadline = time.monotonic() + grace_s
    while True:
        found = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and f"{TOKEN_ENV}={token}".encode() in (entry / "environ").read_bytes():
                    found.append(f"{entry.name}: {command_line(entry)}")
            except OSError:
                continue
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def child(seed: int, actions: int) -> int:
    """One seed in this process: the window, the drive, the report as one JSON line on stdout."""
    import threading

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    app = QApplication([])
    from fuselens.gui.app import tune_interpreter
    tune_interpreter()  # as run_gui
    from fuselens.core.layout import LayoutCache
    from fuselens.gui.main_window import MainWindow
    from tests.gui.chaos import Chaos, ChaosFiles, leftovers

    threads = {t.ident for t in threading.enumerate()}
    with tempfile.TemporaryDirectory(prefix="fuselens-chaos-") as tmp:
        settings = QSettings(str(Path(tmp) / "settings.ini"), QSettings.Format.IniFormat)
        window = MainWindow(settings=settings, layout_cache=LayoutCache(directory=None))
        window.resize(1400, 860)
        window.show()
        report = Chaos(window, seed, ChaosFiles.make(Path(tmp) / "files")).run(actions)
        window.close()
        app.processEvents()
        left = leftovers(threads)
    slowest = sorted(report.log, key=lambda line: -float(line.rsplit("(", 1)[1].split(" ")[0]))[:5]
    print(json.dumps({"summary": report.summary(), "rate": report.actions / report.seconds,
                      "stall_ms": report.longest_stall_ms, "exceptions": report.exceptions,
                      "qt_warnings": report.qt_warnings, "stuck": report.stuck, "left": left, "slowest": slowest,
                      "replay": report.replay}))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--seed", type=int, help="one seed (a replay)")
    parser.add_argument("--actions", type=int, default=5000)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    seeds = [args.seed] if args.seed is not None else [int(s) for s in args.seeds.split(",")]
    if args.child:
        return child(seeds[0], args.actions)
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("BENCH_PLATFORM", "offscreen"),
           "TF_CPP_MIN_LOG_LEVEL": "2"}
    print(f"| seed | actions | actions/s | longest stall (ms) | exceptions | Qt warnings | never idle | left running | "
          f"platform {env['QT_QPA_PLATFORM']} |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|---|")
    failed = False
    for seed in seeds:
        token = f"{os.getpid()}-{seed}"
        done = subprocess.run([sys.executable, __file__, "--child", "--seed", str(seed), "--actions",
                               str(args.actions)], cwd=ROOT, env={**env, TOKEN_ENV: token},
                              capture_output=True, text=True)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        orphans = _outliving(token)
        if done.returncode != 0 or not lines:
            died = (f"died: {signal.Signals(-done.returncode).name}" if done.returncode < 0
                    else f"exit {done.returncode}")
            print(f"| {seed} | {args.actions} | | | {died} | | | | replay: --seed {seed} |")
            print(done.stderr[-2000:], file=sys.stderr)
            failed = True
            continue
        row = json.loads(lines[-1])
        row["left"] += [f"after exit: {o}" for o in orphans]
        failed |= bool(row["exceptions"] or row["qt_warnings"] or row["stuck"] or row["left"])
        print(f"| {seed} | {args.actions} | {row['rate']:.1f} | {row['stall_ms']:.0f} | {len(row['exceptions'])} | "
              f"{len(row['qt_warnings'])} | {len(row['stuck'])} | {', '.join(row['left']) or 'none'} | |", flush=True)
        for line in row["exceptions"][:5] + row["qt_warnings"][:5] + row["stuck"][:5]:
            print(f"    {line}")
        print(f"    slowest steps: {'; '.join(row['slowest'])}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
