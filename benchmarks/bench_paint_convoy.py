"""A paint of the graph view beside a busy worker thread, with and without its lowered switch interval.

    .venv/bin/python benchmarks/bench_paint_convoy.py [--boxes N] [--repeat N]

The view paints through one Python call per visible item (NodeItem.paint, EdgeItem.paint); each
call needs the interpreter lock, and while a worker thread computes (a layout, a fusion result
being read) the GUI thread waits up to the switch interval for it, per call. This repaints a view
of N boxes and N-1 edges (zoomed so that items, not the far-zoom picture, are drawn), alone and
beside a thread running Python, at Python's default switch interval (5 ms) and at the window's
(gui.app.SWITCH_INTERVAL_S), alternated in one run; min and max of `--repeat` paints each.
Set DISPLAY and QT_QPA_PLATFORM=xcb to paint on a real (or Xvfb) display; offscreen otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QApplication  # noqa: E402

from fuselens.core.layout import Layout, LayoutEdge, LayoutNode  # noqa: E402

COLUMNS = 40


def grid_layout(boxes: int) -> Layout:
    """`boxes` Conv2D boxes in rows of COLUMNS, each joined to the next by a straight edge."""
    def centre(i: int) -> tuple[float, float]:
        return (i % COLUMNS) * 150.0, (i // COLUMNS) * 80.0

    nodes = {f"n{i}": LayoutNode(f"n{i}", "Conv2D", f"n{i}", "conv", (f"n{i}",), x=centre(i)[0], y=centre(i)[1],
                                 width=120, height=40) for i in range(boxes)}
    edges = [LayoutEdge(f"n{i}", f"n{i + 1}", f"n{i}", "", points=(centre(i), centre(i + 1)), spline=False)
             for i in range(boxes - 1)]
    return Layout(nodes, edges, {key: key for key in nodes}, width=COLUMNS * 150.0, height=boxes / COLUMNS * 80 + 80)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boxes", type=int, default=1600)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    app = QApplication.instance() or QApplication([])
    from fuselens.gui.app import SWITCH_INTERVAL_S
    from fuselens.gui.graph_view import GraphView

    view = GraphView()
    view.resize(1400, 900)
    view.show()
    view.show_layout(grid_layout(args.boxes))
    while view.building:
        app.processEvents()
    view.resetTransform()
    view.scale(0.2, 0.2)  # every box in view, drawn as items (above the far-zoom picture's level)

    def paints() -> str:
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            view.viewport().repaint()
            times.append((time.perf_counter() - start) * 1000)
        return f"{min(times):.1f}-{max(times):.1f}"

    spinning = threading.Event()

    def busy() -> None:
        count = 0
        while spinning.is_set():
            count += 1

    print(f"{args.boxes} boxes, {args.boxes - 1} edges; repaint ms, min-max of {args.repeat}")
    print("| switch interval | alone | beside a busy thread |")
    print("|---|---:|---:|")
    for interval in (sys.getswitchinterval(), SWITCH_INTERVAL_S) * 2:
        sys.setswitchinterval(interval)
        alone = paints()
        spinning.set()
        thread = threading.Thread(target=busy)
        thread.start()
        beside = paints()
        spinning.clear()
        thread.join()
        print(f"| {interval * 1000:g} ms | {alone} | {beside} |", flush=True)
    view.close()


if __name__ == "__main__":
    main(sys.argv[1:])
