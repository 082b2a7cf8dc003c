"""Memory over a session: one window opens models one after another; its RSS must level off.

    .venv/bin/python benchmarks/bench_leak.py [--models 20] [--samples demo,conv_bn,...]

The window (offscreen unless BENCH_PLATFORM is set) opens the samples in turn, cycling, each time
waiting until the model is loaded, fused and both panes are drawn, then reads the process's RSS
(VmRSS) after a garbage collection. The goal (issue 27): RSS after the 20th model within 15 % of
RSS after the 2nd. Prints one row per model and the ratio; exits 1 when the goal is missed.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
GOAL = 1.15
DEFAULT_SAMPLES = "demo,mobilenet_v2,conv_bn,bert_layernorm,keras_bn_small_ops,ssd_decode,group_conv_bn,abs_relu_exp"


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--samples", default=DEFAULT_SAMPLES)
    args = parser.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", os.environ.get("BENCH_PLATFORM", "offscreen"))
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from PySide6.QtCore import QEventLoop, QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    app = QApplication([])
    from fuselens.gui.app import tune_interpreter
    tune_interpreter()  # as run_gui
    from fuselens.core.layout import LayoutCache
    from fuselens.gui.main_window import MainWindow

    samples = args.samples.split(",")
    with tempfile.TemporaryDirectory(prefix="fuselens-leak-") as tmp:
        settings = QSettings(str(Path(tmp) / "settings.ini"), QSettings.Format.IniFormat)
        window = MainWindow(settings=settings, layout_cache=LayoutCache(directory=None))
        window.resize(1400, 860)
        window.show()

        def spin(ms: int) -> None:
            loop = QEventLoop()
            QTimer.singleShot(ms, loop.quit)
            loop.exec()

        print("| model # | sample | seconds to idle | RSS (MB) |")
        print("|---:|---|---:|---:|")
        rss = []
        for i in range(args.models):
            name = samples[i % len(samples)]
            start = time.perf_counter()
            window.open_model(name)
            spin(50)
            while not window.is_idle():
                spin(20)
            spin(200)
            gc.collect()
            rss.append(rss_mb())
            print(f"| {i + 1} | {name} | {time.perf_counter() - start:.2f} | {rss[-1]:.0f} |", flush=True)
        window.close()
        app.processEvents()
    ratio = rss[-1] / rss[1]
    print(f"\nRSS after model {args.models}: {rss[-1]:.0f} MB, after model 2: {rss[1]:.0f} MB: {ratio:.2f}x "
          f"(goal <= {GOAL:.2f}x): {'met' if ratio <= GOAL else 'MISSED'}")
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
