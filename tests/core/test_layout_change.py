"""What the layout worker tells the view after a box opened or closed in place (core.layout.change):
applied to the old layout it gives the new one, box by box and edge by edge."""

from __future__ import annotations

import pytest

from benchmarks.bench_amct import synthetic
from fuselens.core.layout import FRAME_PREFIX, SCOPE_PREFIX, layout_graph
from fuselens.core.layout.change import edge_key, layout_change
from fuselens.core.layout.drawn import drawn_names
from fuselens.core.layout.expand import open_box
from fuselens.core.layout.overview import overview_scopes


@pytest.fixture(scope="module")
def opened():
    graph = synthetic(1600)
    layout = layout_graph(graph, overview_scopes(drawn_names(graph), limit=100))
    return layout, open_box(graph, layout, SCOPE_PREFIX + "block4")


def near(a, b) -> bool:
    return len(a) == len(b) and all(abs(p - q) <= 0.01 for u, v in zip(a, b) for p, q in zip(u, v))


def replayed(change):
    """The old layout's boxes and edges with the change applied, as the view applies it to its items."""
    nodes = {k: n for k, n in change.old.nodes.items() if k not in set(change.dropped_nodes)}
    for node in change.retagged_nodes + change.moved_nodes:
        assert node.key in nodes
        nodes[node.key] = node
    nodes.update((node.key, node) for node in change.added_nodes)
    edges = {edge_key(e): e.points for e in change.old.edges}
    for key in change.dropped_edges:
        del edges[key]
    for edge in change.retagged_edges:
        assert near(edges[edge_key(edge)], edge.points)
    for edge, dx, dy in change.moved_edges:
        assert near(edges[edge_key(edge)], tuple((x - dx, y - dy) for x, y in edge.points))
        edges[edge_key(edge)] = edge.points
    for edge in change.added_edges:
        assert edge_key(edge) not in edges
        edges[edge_key(edge)] = edge.points
    return nodes, edges


@pytest.mark.parametrize("direction", ["open", "close"])
def test_a_change_applied_to_the_old_layout_gives_the_new_one(opened, direction):
    layout, bigger = opened
    old, new = (layout, bigger) if direction == "open" else (bigger, layout)
    change = layout_change(old, new)
    nodes, edges = replayed(change)
    assert nodes == new.nodes
    assert edges == {edge_key(e): e.points for e in new.edges}
    # most of the overview only moved or stayed: its items are kept, not rebuilt
    kept = len(change.moved_nodes) + len(change.retagged_nodes) + sum(1 for k in old.nodes if new.nodes.get(k)
                                                                        is old.nodes[k])
    assert kept == len(old.nodes.keys() & new.nodes.keys())
    assert change.moved_nodes and change.moved_edges  # the boxes below the opened one moved down
    assert (FRAME_PREFIX + "block4" in {n.key for n in change.added_nodes}) == (direction == "open")


def test_a_box_that_changed_more_than_its_place_is_rebuilt(opened):
    layout, bigger = opened
    graph_box = SCOPE_PREFIX + "block4"
    change = layout_change(layout, bigger)
    assert graph_box in change.dropped_nodes  # the box became a frame: a new item
    unchanged = layout_change(layout, layout)
    assert not (unchanged.moved_nodes or unchanged.added_nodes or unchanged.dropped_nodes or unchanged.moved_edges
                or unchanged.added_edges or unchanged.dropped_edges)
