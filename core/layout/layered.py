"""The fallback when `dot` is too slow, missing or failing: boxes in rows by depth, straight edges.

Cheap enough for any graph size; it does not try to reduce crossings, so the view shows a notice.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from core.layout.drawn import NODE_HEIGHT, WEIGHT_LINE_HEIGHT
from core.layout.model import Layout

GAP_X = 24.0
GAP_Y = 36.0


def layered_positions(layout: Layout) -> None:
    """The cheap fallback: rank = longest path from a source, order in a rank by parents' mean x."""
    preds: dict[str, list[str]] = defaultdict(list)
    succs: dict[str, list[str]] = defaultdict(list)
    for edge in layout.edges:
        preds[edge.target].append(edge.source)
        succs[edge.source].append(edge.target)
    indegree = {key: len(preds[key]) for key in layout.nodes}
    ready = [key for key, d in indegree.items() if d == 0]
    rank: dict[str, int] = dict.fromkeys(ready, 0)
    order: list[str] = []
    while ready:
        key = ready.pop()
        order.append(key)
        for nxt in succs[key]:
            rank[nxt] = max(rank.get(nxt, 0), rank[key] + 1)
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                ready.append(nxt)
    for key in layout.nodes:  # nodes on a cycle (TF1 loops): after everything else
        rank.setdefault(key, max(rank.values(), default=0) + 1)
    rows: dict[int, list[str]] = defaultdict(list)
    for key in layout.nodes:
        rows[rank[key]].append(key)
    row_height = NODE_HEIGHT + WEIGHT_LINE_HEIGHT + GAP_Y
    positions: dict[str, tuple[float, float]] = {}
    for r in sorted(rows):
        row = rows[r]
        wanted = {k: (sum(positions[p][0] for p in preds[k] if p in positions) /
                      max(1, sum(1 for p in preds[k] if p in positions))) for k in row}
        row.sort(key=lambda k: wanted[k])
        x = 0.0
        for key in row:
            width = layout.nodes[key].width
            x = max(x, wanted[key] - width / 2) if r else x
            positions[key] = (x + width / 2, r * row_height + row_height / 2)
            x += width + GAP_X
    layout.width = max((positions[k][0] + layout.nodes[k].width / 2 for k in positions), default=0.0)
    layout.height = (max(rows, default=0) + 1) * row_height
    layout.place(positions)
    layout.edges = [replace(e, points=(positions[e.source], positions[e.target]), spline=False)
                    for e in layout.edges]
