"""GUI timings: window shown, model painted, re-layout, scope and fused-node opening, GUI-thread stalls.

    .venv/bin/python benchmarks/bench_gui.py [NAME|FILE|synthetic:N|bare:N ...] [--before DIR] [--repeat N]
    (default: mobilenet_v2 resnet50 densenet121 synthetic:19500)

Each model runs in a fresh process: the real entry point, `python main.py MODEL`, with the main
window class wrapped to record when things happen; it uses an empty layout cache (no disk cache),
so `dot` runs. `synthetic:N` is the chain of Conv+BN blocks of `bench_amct.synthetic` with about N
nodes (19,500 gives the 19,505-node graph of 1,000 blocks), written to a temporary .pb first;
`bare:N` is the same graph without `_output_shapes` (a bare .pb; bare:100000 is issue 27's 100k-node
graph, the size of a large language model's).
  * shown:    process start -> the window's first paint
  * painted:  process start -> the first paint of the before pane after its layout arrived, fitted
              so that every box of the graph is drawn in that paint (a big graph: its scope overview)
  * after:    process start -> the fused graph painted in the after pane (fusion included)
  * relayout: the before graph laid out again with the cache off, request -> painted (best of 3)
  * stalls:   a 5 ms QTimer heartbeat on the GUI thread; the longest gap while each step runs, and
              the longest anywhere during the open (load, layout and fusion in workers, and after the
              after pane's paint the match list and the explanations, until the window is idle)
  * scene:    GUI-thread time to build the scene items from a finished layout (longest)
  * a big graph (overview of its scopes), each request -> painted in the before pane:
      expand:       one scope (one holding a fused node) opened in place (both panes follow)
      collapse:     closed again in place (with the fused node opened inside it)
      expand whole: the same scope opened the way it was done before in-place opening: the whole
                    collapsed graph laid out again with `dot`, its scene built again
  * fused:    a fused node opened in place in the after pane (on a big graph: inside the scope just
              opened, a frame in a frame), request -> painted
  * until the window is idle again (polled every 10 ms), with the longest stall:
      step 20:      Next match pressed 20 times, each once the last one is drawn (on a big graph each
                    opens the match's scope in place)
      refuse:       the first switchable pass switched off: fused again, the after pane drawn again
      expand all:   a big graph's "Expand all scopes" in the before pane (the whole graph laid out)
      collapse one: then "Collapse scope" on one scope never opened in place
`--before DIR` measures another checkout (e.g. `git worktree add /tmp/old <commit>`) alternated
with this one in the same run; `--repeat N` runs each N times.
The child's JSON (`measure`) also has when the model was loaded, laid out and built per pane, and
every heartbeat gap over 80 ms with its time, to find what stalled.
Set DISPLAY and BENCH_PLATFORM=xcb to measure on a real (or Xvfb) display; offscreen otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHILD = r"""
import json, os, sys, time
spawned = float(sys.argv[2])
ORIGIN = time.perf_counter() - (time.time() - spawned)  # perf_counter at process start
marks = {"python_started": time.time() - spawned}

import fuselens.gui.app
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
from fuselens.core.layout import SCOPE_PREFIX, LayoutCache
from fuselens.gui.main_window import MainWindow

class Heartbeat:
    def __init__(self):
        self.ticks = [time.perf_counter()]
        self.timer = QTimer(interval=5)
        self.timer.timeout.connect(lambda: self.ticks.append(time.perf_counter()))
        self.timer.start()

    def longest_gap(self, start=None, end=None):  # of the gaps overlapping [start, end], one past either end too
        t = self.ticks
        return max((b - a for a, b in zip(t, t[1:]) if (start is None or b > start) and (end is None or a < end)),
                   default=0.0)

def _every_box_in(visible, nodes):
    # From the layout's numbers, not each item's sceneBoundingRect(): 1,775 Qt calls beside the fusion's
    # worker held the GUI thread 100 ms in the bench's own check, counted as the window's stall.
    nodes = list(nodes)
    left = min(n.x - n.width / 2 for n in nodes)
    right = max(n.x + n.width / 2 for n in nodes)
    top = min(n.y - n.height / 2 for n in nodes)
    bottom = max(n.y + n.height / 2 for n in nodes)
    return (visible.left() <= left and right <= visible.right() and visible.top() <= top
            and bottom <= visible.bottom())

class BenchWindow(MainWindow):
    def __init__(self, **kwargs):
        super().__init__(layout_cache=LayoutCache(None), **kwargs)
        self.heart = Heartbeat()
        self.relayouts, self.scene_s, self._relayout_start = [], [], None
        self._first_paint, self._step = True, None  # (name, pane side, start) of the step being timed
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

    def _on_loaded(self, spec, model):
        marks.setdefault("loaded", time.time() - spawned)
        super()._on_loaded(spec, model)

    def _on_built(self, side):
        marks.setdefault(f"built_{side}", time.time() - spawned)
        super()._on_built(side)

    def _on_layout_done(self, side):
        marks.setdefault(f"laid_out_{side}", time.time() - spawned)
        if side == "before" and self._step is None:
            self.before.fit()  # every box in the next paint

    def _step_painted(self, side):
        if self._step is None or self._step[1] != side:
            return False
        name, _, start = self._step
        end = time.perf_counter()
        marks[f"{name}_s"] = end - start
        marks[f"{name}_stall_s"] = self.heart.longest_gap(start, end)
        self._step = None
        QTimer.singleShot(100, self._next)
        return True

    def _before_painted(self):
        if self._step_painted("before") or (self._step is not None and self._step[1] is None):
            return
        view = self.before
        visible = view.mapToScene(view.viewport().rect()).boundingRect()
        assert len(view.items_by_key) == len(self.panes["before"].shown.nodes)
        if not _every_box_in(visible, self.panes["before"].shown.nodes.values()):
            view.fit()  # the pane was resized after the fit: wait for a paint that shows every node
            view._paint_pending = True
            return
        if self._relayout_start is None:
            marks.setdefault("painted", time.time() - spawned)
            marks.setdefault("drawn_boxes", len(view.items_by_key))
            marks.setdefault("engine", self.panes["before"].shown.engine)
        else:
            end = time.perf_counter()
            self.relayouts.append((end - self._relayout_start, self.heart.longest_gap(self._relayout_start, end)))
            self._relayout_start = None
            QTimer.singleShot(50, self._next)

    def _after_painted(self):
        if self._step_painted("after"):
            return
        if "after" not in marks:
            marks["after"] = time.time() - spawned
            QTimer.singleShot(200, self._next)  # which counts the open's stalls once the window is idle

    def _start(self, name, side, action):
        # in a later event-loop turn: what the bench computed to choose the step (a scope holding a fused node:
        # fused_info on every node, 95 ms on the 20k graph) is no stall of the window's
        def start():
            self._step = (name, side, time.perf_counter())
            action()
        QTimer.singleShot(100, start)

    def _next(self):
        if not self.is_idle():  # the other pane still follows the last step
            QTimer.singleShot(20, self._next)
            return
        if "open_stall_s" not in marks:  # the match list filled and the explanations made too, after the paint
            marks["open_stall_s"] = self.heart.longest_gap()
        if len(self.relayouts) < 3:
            self.panes["before"].cache = LayoutCache(None)
            self._relayout_start = time.perf_counter()
            self.panes["before"].shown = None  # a fresh view (fit), like opening
            self.relayout("before")
            return
        collapsed = self.session.collapsed["before"]
        if collapsed and "expand_s" not in marks:  # a big graph's overview: open one scope in place
            scope = self._scope_with_a_fused_node(collapsed)
            self._start("expand", "before", lambda: self.open_scopes({scope}))
            return
        if "fused_s" not in marks:  # in the opened scope's frame on a big graph
            after = self.panes["after"]
            fused = [k for k, n in after.shown.nodes.items()
                     if k in after.shown_graph and after.shown_graph.fused_info(k) and not n.open]
            marks["fused_s"] = None
            if fused:
                key = fused[len(fused) // 2]
                marks["fused_node"] = key
                self._start("fused", "after", lambda: self._on_activated("after", key))
                return
        if "expand_s" in marks and "collapse_s" not in marks:
            self._start("collapse", "before", lambda: self.close_scopes({self._opened}))
            return
        if "expand_s" in marks and "expand_whole_s" not in marks:  # the way it was: everything again
            for pane in self.panes.values():
                pane.shown_graph = None
            self._start("expand_whole", "before", lambda: self.open_scopes({self._opened}))
            return
        if "step20_s" not in marks:
            self._until_idle("step20", [lambda: self.step_match(1)] * 20)
            return
        if "refuse_s" not in marks:
            config = self.session.config
            toggled = next(p for p in config.pass_ids() if not config.get_pass(p).general)
            marks["refused_pass"] = toggled
            self._until_idle("refuse", [lambda: self.set_config(config.with_pass(toggled, False))])
            return
        if collapsed and "expand_all_s" not in marks:
            self._never_opened = sorted(collapsed - {self._opened})[0]
            self._until_idle("expand_all", [lambda: self.session.set_collapsed("before", frozenset())])
            return
        if "expand_all_s" in marks and "collapse_one_s" not in marks:
            self._until_idle("collapse_one",
                             [lambda: self.session.set_collapsed("before", frozenset({self._never_opened}))])
            return
        marks["relayout_s"] = min(r[0] for r in self.relayouts)
        marks["relayout_stall_s"] = max(r[1] for r in self.relayouts)
        marks["scene_s"] = max(self.scene_s)
        marks["nodes"] = len(self.session.model.graph)
        marks["engine_relayout"] = self.panes["before"].shown.engine
        self.close()
        ticks = self.heart.ticks
        marks["long_gaps"] = [(round(a - ORIGIN, 3), round(b - a, 3)) for a, b in zip(ticks, ticks[1:]) if b - a > 0.08]
        QApplication.instance().quit()

    def _until_idle(self, name, actions):
        start = time.perf_counter()
        self._step = (name, None, start)  # no fit of the before pane meanwhile (a user's view stays)

        def run(remaining):
            if not self.is_idle():
                QTimer.singleShot(10, lambda: run(remaining))
            elif remaining:
                remaining[0]()
                QTimer.singleShot(10, lambda: run(remaining[1:]))
            else:
                end = time.perf_counter()
                marks[f"{name}_s"] = end - start
                marks[f"{name}_stall_s"] = self.heart.longest_gap(start, end)
                marks[f"{name}_at"] = [round(start - ORIGIN, 3), round(end - ORIGIN, 3)]
                self._step = None
                QTimer.singleShot(100, self._next)
        run(list(actions))

    def _scope_with_a_fused_node(self, collapsed):
        # the collapsed scope that holds the middle one (by name) of the fused nodes in the after pane, or the next
        # that is in a collapsed scope (else the middle collapsed scope); looked for from the middle, not over every
        # node of the graph decoded: on the 100k graph that walk held the GUI thread 140-165 ms between two steps
        from fuselens.core.layout.overview import drawn_name, hidden_in
        fused = self.session.graph("after")
        created = sorted({n for r in self.session.pipeline.results for w in r.rewrites for n in w.created})
        middle = len(created) // 2
        for name in created[middle:] + created[:middle]:
            if name in fused and fused.fused_info(name):
                holding = hidden_in(collapsed, [drawn_name(fused, name)])
                if holding:
                    return next(iter(holding))
        return sorted(collapsed)[len(collapsed) // 2]

    def open_scopes(self, scopes):
        self._opened = next(iter(scopes))
        super().open_scopes(scopes)

fuselens.gui.app.MainWindow = BenchWindow
from fuselens import main
main.main([sys.argv[1]])
print("BENCH " + json.dumps(marks))
"""


def model_file(name: str, directory: Path) -> str:
    """A sample name or file as given; `synthetic:N` (`bare:N`: without `_output_shapes`) written to a .pb in
    `directory` first."""
    kind, _, size = name.partition(":")
    if kind in ("synthetic", "bare") and size:
        from benchmarks.bench_amct import bare, synthetic

        graph = synthetic(int(size))
        path = directory / f"{kind}{size}.pb"
        path.write_bytes(bare(graph) if kind == "bare" else graph.graph_def.SerializeToString())
        return str(path)
    if not Path(name).exists():
        from fuselens.core.formats.samples import sample_path

        sample_path(name)  # build a cached sample first, outside the timing
    return name


def measure(name: str, root: Path = ROOT) -> dict:
    """One model opened in a fresh process of the checkout at `root` (its own gui and main)."""
    from benchmarks.bench_startup import run_in_session

    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", QT_QPA_PLATFORM=os.environ.get("BENCH_PLATFORM", "offscreen"))
    with tempfile.TemporaryDirectory() as tmp:
        spec = model_file(name, Path(tmp))
        spawned = time.time()
        out = run_in_session([sys.executable, "-c", CHILD, spec, repr(spawned)], root, env, 900)
    lines = [line for line in out.stdout.splitlines() if line.startswith("BENCH ")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"{name}: benchmark child failed:\n{out.stderr[-2000:]}")
    return {"name": name, **json.loads(lines[-1][6:])}


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f}"


def main(names: list[str], before: Path | None = None, repeat: int = 1) -> None:
    names = names or ["mobilenet_v2", "resnet50", "densenet121", "synthetic:19500"]
    columns = ["model", "nodes", "boxes", "shown s", "painted s", "after s", "relayout s", "stall ms",
               "open stall ms", "scene ms"]
    steps = ("expand", "collapse", "expand_whole", "fused", "step20", "refuse", "expand_all", "collapse_one")
    columns += [f"{column} ms" for step in steps for column in (step.replace("_", " "), "stall")]
    print(" | ".join(columns))
    checkouts = [("before", before), ("", ROOT)] if before else [("", ROOT)]
    for name in names:
        for _ in range(repeat):
            for label, root in checkouts:
                r = measure(name, root)
                row = [f"{r['name']}{f' ({label})' if label else ''}", f"{r['nodes']}", f"{r['drawn_boxes']}",
                       f"{r['shown']:.2f}", f"{r['painted']:.2f}", f"{r['after']:.2f}", f"{r['relayout_s']:.3f}",
                       ms(r["relayout_stall_s"]), ms(r["open_stall_s"]), ms(r["scene_s"])]
                for step in steps:
                    row += [ms(r.get(f"{step}_s")), ms(r.get(f"{step}_stall_s"))]
                print(" | ".join(row) + f"   ({r['engine']})", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*", help="sample names, model files, synthetic:N or bare:N")
    parser.add_argument("--before", type=Path, metavar="DIR", help="also this checkout, alternated in the same run")
    parser.add_argument("--repeat", type=int, default=1, help="runs per model (and checkout)")
    args = parser.parse_args()
    main(args.models, args.before, args.repeat)
