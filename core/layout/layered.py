"""The fallback when `dot` is too slow, missing or failing: boxes in rows by depth, straight edges.

Cheap enough for any graph size; it does not try to reduce crossings, so the view shows a notice.
"""

from __future__ import annotations

from collections import defaultdict

from fuselens.core.graph import topological_sort
from fuselens.core.layout.drawn import NODE_HEIGHT, WEIGHT_LINE_HEIGHT
from fuselens.core.layout.model import Layout, copy_with

GAP_X = 24.0
GAP_Y = 36.0


def layer_ranks(layout: Layout) -> dict[str, int]:
    """Row of every box: its longest path from a source, which is its topological generation.

    A cycle (a TF1 while loop, or a collapsed scope that both feeds and reads a box outside it)
    leaves boxes without a generation: one fed by ranked boxes goes a row below the lowest of
    them, the others each get a row of their own after everything else, in graph order.
    (The graph's own topological sort, not networkx's: importing networkx took 0.1-1.4 s of the
    first view of a big graph, the only thing the window needed it for.)
    """
    preds: dict[str, list[str]] = defaultdict(list)
    for edge in layout.edges:
        preds[edge.target].append(edge.source)
    rank: dict[str, int] = {}
    for key in topological_sort(layout.nodes, ((edge.source, edge.target) for edge in layout.edges)):
        rank[key] = max((rank[p] + 1 for p in preds[key]), default=0)  # keys on or after a cycle are left out
    unranked = [key for key in layout.nodes if key not in rank]
    fed = {key: [rank[p] + 1 for p in preds[key] if p in rank] for key in unranked}
    rank.update({key: max(below) for key, below in fed.items() if below})
    next_row = max(rank.values(), default=0) + 1
    for key in unranked:
        if key not in rank:
            rank[key] = next_row
            next_row += 1
    return rank


def layered_positions(layout: Layout) -> None:
    """Rows by `layer_ranks`, each row ordered by its boxes' inputs' mean x; edges as straight lines."""
    preds: dict[str, list[str]] = defaultdict(list)
    for edge in layout.edges:
        preds[edge.target].append(edge.source)
    rank = layer_ranks(layout)
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
    layout.edges = [copy_with(e, points=(positions[e.source], positions[e.target]), spline=False)
                    for e in layout.edges]
