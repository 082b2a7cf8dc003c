"""Reading `dot -Tplain`: box centres and edge splines, from inches with y up to scene pixels with y down.

The plain format is a line per item (`graph`, `node`, `edge`, `stop`); dot names the boxes by the
ids `dot_source` gave them (`n0`, `n1`, ...), so `keys` maps them back.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from fuselens.core.layout.dot import POINTS_PER_INCH
from fuselens.core.layout.model import Layout

Point = tuple[float, float]


def apply_plain(layout: Layout, plain: str, keys: list[str]) -> None:
    """Fill the layout's size, box positions and edge splines from dot's plain output."""
    scale = POINTS_PER_INCH
    height = 0.0
    positions: dict[str, Point] = {}
    routes: dict[tuple[str, str], list[tuple[Point, ...]]] = defaultdict(list)
    for line in plain.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "graph":
            layout.width, height = float(parts[2]) * scale, float(parts[3]) * scale
        elif parts[0] == "node":
            positions[keys[int(parts[1][1:])]] = (float(parts[2]) * scale, height - float(parts[3]) * scale)
        elif parts[0] == "edge":
            count = int(parts[3])
            coords = parts[4:4 + 2 * count]
            points = tuple((float(coords[i]) * scale, height - float(coords[i + 1]) * scale)
                           for i in range(0, len(coords), 2))
            routes[(keys[int(parts[1][1:])], keys[int(parts[2][1:])])].append(points)
    layout.height = height
    layout.place(positions)
    placed = []
    for edge in layout.edges:  # two edges between the same boxes (data and control) take dot's routes in order
        between = routes.get((edge.source, edge.target))
        placed.append(replace(edge, points=between.pop(0) if between else (), spline=True))
    layout.edges = placed
