"""GUI timings: window shown, model painted, re-layout, and GUI-thread stalls, each in a fresh process.

    .venv/bin/python benchmarks/bench_gui.py [NAME|FILE ...]   (default: mobilenet_v2 resnet50 densenet121)

The child runs the real entry point, `python main.py MODEL`, with the main window class wrapped
to record when things happen; it uses an empty layout cache (no disk cache), so `dot` runs.
  * shown:    process start -> the window's first paint
  * painted:  process start -> the first paint of the before pane after its layout arrived, fitted
              so that every op node of the graph is drawn in that paint
  * after:    process start -> the fused graph painted in the after pane (fusion included)
  * relayout: the before graph laid out again with the cache off, request -> painted (best of 3)
  * stalls:   a 5 ms QTimer heartbeat on the GUI thread; the longest gap while a re-layout runs,
              and the longest anywhere during the open (load, layout and fusion in workers)
  * scene:    GUI-thread time to build the scene items from a finished layout
  * expand:   a big graph (overview of its scopes): one scope opened, request -> painted, and the
              longest GUI-thread stall meanwhile
Set DISPLAY and BENCH_PLATFORM=xcb to measure on a real (or Xvfb) display; offscreen otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHILD = r"""
import json, os, sys, time
spawned = float(sys.argv[2])
marks = {"python_started": time.time() - spawned}

import gui.app
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
from core.layout import LayoutCache
from gui.main_window import MainWindow

class Heartbeat:
    def __init__(self):
        self.ticks = [time.perf_counter()]
        self.timer = QTimer(interval=5)
        self.timer.timeout.connect(lambda: self.ticks.append(time.perf_counter()))
        self.timer.start()

    def longest_gap(self, start=None, end=None):
        t = [x for x in self.ticks if (start is None or x >= start) and (end is None or x <= end)]
        return max((b - a for a, b in zip(t, t[1:])), default=0.0)

class BenchWindow(MainWindow):
    def __init__(self, **kwargs):
        super().__init__(layout_cache=LayoutCache(None), **kwargs)
        self.heart = Heartbeat()
        self.relayouts, self.scene_s, self._relayout_start, self._first_paint = [], [], None, True
        self.layout_done.connect(self._on_layout_done)
        for pane in self.panes.values():
            self._timed_scene(pane)
        self.before.painted.connect(self._before_painted)
        self.after.painted.connect(self._after_painted)

    def paintEvent(self, event):
        super().paintEvent(event)
        if self._first_paint:
            self._first_paint = False
            marks["shown"] = time.time() - spawned

    def _timed_scene(self, pane):
        show = pane._show

        def timed(*args):
            start = time.perf_counter()
            show(*args)
            self.scene_s.append(time.perf_counter() - start)
        pane._show = timed

    def _on_layout_done(self, side):
        if side == "before":
            self.before.fit()  # every op node in the next paint

    def _before_painted(self):
        view = self.before
        visible = view.mapToScene(view.viewport().rect()).boundingRect()
        assert len(view.items_by_key) == len(self.panes["before"].shown.nodes)
        if not all(visible.intersects(item.sceneBoundingRect()) for item in view.items_by_key.values()):
            view.fit()  # the pane was resized after the fit: wait for a paint that shows every node
            view._paint_pending = True
            return
        if getattr(self, "_expand_start", None) is not None:
            end = time.perf_counter()
            marks["expand_s"] = end - self._expand_start
            marks["expand_stall_s"] = self.heart.longest_gap(self._expand_start, end)
            self._expand_start = None
            QTimer.singleShot(50, self._next_relayout)
            return
        if self._relayout_start is None:
            marks.setdefault("painted", time.time() - spawned)
            marks.setdefault("drawn_boxes", len(view.items_by_key))
            marks.setdefault("engine", self.panes["before"].shown.engine)
        else:
            end = time.perf_counter()
            self.relayouts.append((end - self._relayout_start, self.heart.longest_gap(self._relayout_start, end)))
            self._relayout_start = None
            QTimer.singleShot(50, self._next_relayout)

    def _after_painted(self):
        if "after" not in marks:
            marks["after"] = time.time() - spawned
            marks["open_stall_s"] = self.heart.longest_gap()
            QTimer.singleShot(200, self._next_relayout)

    def _next_relayout(self):
        collapsed = self.session.collapsed["before"]
        if len(self.relayouts) == 3 and collapsed and "expand_s" not in marks:
            self._expand_start = time.perf_counter()  # a big graph's overview: open one scope
            self.open_scopes({sorted(collapsed)[len(collapsed) // 2]})
            return
        if len(self.relayouts) == 3:
            marks["relayout_s"] = min(r[0] for r in self.relayouts)
            marks["relayout_stall_s"] = max(r[1] for r in self.relayouts)
            marks["scene_s"] = max(self.scene_s)
            marks["nodes"] = len(self.session.model.graph)
            marks["engine_relayout"] = self.panes["before"].shown.engine
            self.close()
            QApplication.instance().quit()
            return
        self.panes["before"].cache = LayoutCache(None)
        self._relayout_start = time.perf_counter()
        self.panes["before"].shown = None  # a fresh view (fit), like opening
        self.relayout("before")

gui.app.MainWindow = BenchWindow
import main
main.main([sys.argv[1]])
print("BENCH " + json.dumps(marks))
"""


def measure(name: str) -> dict:
    from core.samples import sample_path

    if not Path(name).exists():
        sample_path(name)  # build a cached sample first, outside the timing
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", QT_QPA_PLATFORM=os.environ.get("BENCH_PLATFORM", "offscreen"))
    spawned = time.time()
    out = subprocess.run([sys.executable, "-c", CHILD, name, repr(spawned)], capture_output=True, text=True,
                         cwd=ROOT, env=env, timeout=600)
    lines = [line for line in out.stdout.splitlines() if line.startswith("BENCH ")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"{name}: benchmark child failed:\n{out.stderr[-2000:]}")
    return {"name": name, **json.loads(lines[-1][6:])}


def main(names: list[str]) -> None:
    names = names or ["mobilenet_v2", "resnet50", "densenet121"]
    print(f"{'model':14s} {'nodes':>6s} {'boxes':>6s} {'shown s':>8s} {'painted s':>10s} {'after s':>8s} "
          f"{'relayout s':>11s} {'stall ms':>9s} {'open stall ms':>14s} {'scene ms':>9s} {'expand s':>9s} "
          f"{'expand stall ms':>16s}")
    for name in names:
        r = measure(name)
        print(f"{r['name']:14s} {r['nodes']:6d} {r['drawn_boxes']:6d} {r['shown']:8.2f} {r['painted']:10.2f} "
              f"{r['after']:8.2f} {r['relayout_s']:11.3f} {r['relayout_stall_s'] * 1000:9.0f} "
              f"{r['open_stall_s'] * 1000:14.0f} {r['scene_s'] * 1000:9.0f} {r.get('expand_s', 0):9.3f} "
              f"{r.get('expand_stall_s', 0) * 1000:16.0f}   ({r['engine']})")


if __name__ == "__main__":
    main(sys.argv[1:])
