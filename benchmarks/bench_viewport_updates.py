"""The graph view's viewport update mode: every box recoloured at once, Qt's smart mode against the window's.

    .venv/bin/python benchmarks/bench_viewport_updates.py [--boxes N] [--repeat N]

A heat map, a diff's colours or a new layout replacing the old one marks every box changed at once. Each
changed item's rectangle then goes to the view: Qt's smart (and minimal) mode adds it to a QRegion, whose cost
grows with the rectangles already in it when they are scattered as a layout's boxes are; the bounding-rect
mode the window uses (gui/graph_view.py) keeps one rectangle. This shows N boxes at seeded random places in a
GraphView, zoomed so that they are drawn as items (not the far-zoom picture), recolours all of them
(`set_heat`) and times that call and the event loop's work after it, for each mode; min and max of `--repeat`.
Set DISPLAY and QT_QPA_PLATFORM=xcb to paint on a real (or Xvfb) display; offscreen otherwise.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QApplication, QGraphicsView  # noqa: E402

from fuselens.core.layout import Layout, LayoutNode  # noqa: E402

MODES = ("SmartViewportUpdate", "BoundingRectViewportUpdate")
ZOOM = 0.13  # every box in view, drawn as items: just above the far-zoom picture's level (graph_view.PICTURE_LOD)


def scattered_layout(boxes: int, seed: int = 1) -> Layout:
    """`boxes` boxes of varied sizes at random places on a 10,000 x 6,500 canvas (all of it in a 1400 x 900 view
    at ZOOM), no edges."""
    rng = random.Random(seed)
    nodes = {f"n{i}": LayoutNode(f"n{i}", "Conv2D", f"n{i}", "conv", (f"n{i}",), x=rng.uniform(0, 10_000),
                                 y=rng.uniform(0, 6_500), width=rng.uniform(60, 160), height=rng.uniform(30, 50))
             for i in range(boxes)}
    return Layout(nodes, [], {key: key for key in nodes}, width=10_200.0, height=6_600.0)


def settle(app: QApplication) -> float:
    """The event loop's work until nothing is left to do, in ms."""
    start = time.perf_counter()
    for _ in range(3):
        app.processEvents()
    return (time.perf_counter() - start) * 1000


def replace_layout(app: QApplication, view, layout: Layout) -> tuple[float, float]:
    """`layout` shown in place of the view's: (ms until built and settled, the longest event-loop pass in ms)."""
    start = time.perf_counter()
    longest = 0.0
    view.show_layout(layout, keep_view=True)
    while view.building:
        before = time.perf_counter()
        app.processEvents()
        longest = max(longest, time.perf_counter() - before)
    longest = max(longest, settle(app) / 1000)
    return (time.perf_counter() - start) * 1000, longest * 1000


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boxes", type=int, default=9000, help="the 100k graph's overview draws 9,093")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    app = QApplication.instance() or QApplication([])
    from fuselens.gui.graph_view import GraphView

    layouts = [scattered_layout(args.boxes, seed) for seed in (1, 2)]
    print(f"{args.boxes} scattered boxes in view, drawn as items; ms, min-max of {args.repeat}")
    print("| viewport update mode | every box recoloured: set_heat | event loop after it "
          "| a new layout in place of the old: until built | its longest event-loop pass |")
    print("|---|---:|---:|---:|---:|")
    for mode in MODES:
        view = GraphView()
        view.setViewportUpdateMode(getattr(QGraphicsView.ViewportUpdateMode, mode))
        view.resize(1400, 900)
        view.show()
        view.show_layout(layouts[0])
        while view.building:
            app.processEvents()
        view.resetTransform()
        view.scale(ZOOM, ZOOM)
        view.centerOn(layouts[0].width / 2, layouts[0].height / 2)
        settle(app)
        marks, loops, builds, passes = [], [], [], []
        for round_ in range(args.repeat):
            heat = {key: (i * 7 + round_) % 10 / 10 for i, key in enumerate(layouts[0].nodes)}
            start = time.perf_counter()
            view.set_heat(heat)
            marks.append((time.perf_counter() - start) * 1000)
            loops.append(settle(app))
        for round_ in range(args.repeat):
            built, longest = replace_layout(app, view, layouts[(round_ + 1) % 2])
            builds.append(built)
            passes.append(longest)
        print(f"| {mode} | {span(marks)} | {span(loops)} | {span(builds)} | {span(passes)} |", flush=True)
        view.close()
        view.deleteLater()
        settle(app)


def span(values: list[float]) -> str:
    return f"{min(values):.0f}-{max(values):.0f}"


if __name__ == "__main__":
    main(sys.argv[1:])
