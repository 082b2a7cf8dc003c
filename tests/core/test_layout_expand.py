"""Opening boxes in place (core.layout.expand): only the box's content is laid out, boxes beyond it
move out of its way, closing restores the layout exactly, contents are cached."""

from __future__ import annotations

import pytest

import fuselens.core.layout.expand as expand
from benchmarks.bench_amct import synthetic
from fuselens.core.layout import FRAME_PREFIX, SCOPE_PREFIX, LayoutCache, layout_graph
from fuselens.core.layout.drawn import drawn_names
from fuselens.core.layout.expand import close_box, follow_collapsed, open_box, outermost
from fuselens.core.layout.overview import overview_scopes


@pytest.fixture(scope="module")
def overview():
    graph = synthetic(1600)
    scopes = overview_scopes(drawn_names(graph), limit=100)
    return graph, layout_graph(graph, scopes)


def test_opening_a_scope_moves_only_what_is_beyond_it_and_closing_restores_it(overview):
    graph, layout = overview
    key = SCOPE_PREFIX + "block4"
    opened = open_box(graph, layout, key)
    frame, box = opened.nodes[FRAME_PREFIX + "block4"], layout.nodes[key]
    assert key not in opened.nodes
    assert frame.open and frame.rect[:2] == pytest.approx(box.rect[:2])
    assert frame.width > box.width and frame.height > box.height
    for k, node in layout.nodes.items():
        if k == key:
            continue
        moved = opened.nodes[k].y - node.y
        assert moved == pytest.approx(frame.height - box.height if node.rect[1] >= box.rect[3] else 0.0), k
    inner = {k for k, n in opened.nodes.items() if n.parent == frame.key}
    assert inner == {n for n in drawn_names(graph) if n.startswith("block4/")}
    assert opened.collapsed == layout.collapsed - {"block4"}
    assert close_box(graph, opened, key) is layout


def test_closing_an_earlier_box_keeps_the_later_ones_open(overview):
    graph, layout = overview
    first, second = SCOPE_PREFIX + "block2", SCOPE_PREFIX + "block9"
    both = open_box(graph, open_box(graph, layout, first), second)
    only_second = close_box(graph, both, first)
    direct = open_box(graph, layout, second)
    assert [k for k, _ in only_second.opened] == [second]
    assert {k: (n.x, n.y, n.width, n.height) for k, n in only_second.nodes.items()} == \
        {k: (n.x, n.y, n.width, n.height) for k, n in direct.nodes.items()}
    with pytest.raises(KeyError):
        close_box(graph, layout, first)


def test_following_the_collapsed_scopes_opens_and_closes_in_place(overview):
    graph, layout = overview
    wanted = layout.collapsed - {"block3"}
    followed = follow_collapsed(graph, layout, wanted)
    assert followed is not None and outermost(followed.collapsed) == outermost(wanted)
    assert follow_collapsed(graph, followed, layout.collapsed) is layout
    assert follow_collapsed(graph, followed, wanted | {"block3/bn"}) is None  # never opened in place
    assert follow_collapsed(graph, layout, frozenset()) is None  # Expand all: one layout, not 100 openings


def test_a_box_content_is_laid_out_once_per_graph_and_box(overview, monkeypatch):
    graph, layout = overview
    runs = []
    position = expand.position_boxes
    monkeypatch.setattr(expand, "position_boxes", lambda *a, **k: runs.append(a) or position(*a, **k))
    cache = LayoutCache(None)
    first = open_box(graph, layout, SCOPE_PREFIX + "block5", cache=cache)
    again = open_box(graph, layout, SCOPE_PREFIX + "block5", cache=cache)
    assert len(runs) == 1
    assert {k: (n.x, n.y) for k, n in first.nodes.items()} == {k: (n.x, n.y) for k, n in again.nodes.items()}


def test_a_sub_scope_opens_inside_its_open_scope_and_closing_the_outer_closes_both(overview):
    graph, layout = overview
    outer, inner = SCOPE_PREFIX + "block1", SCOPE_PREFIX + "block1/bn"
    opened = open_box(graph, layout, outer, frozenset({"block1/bn"}))  # a big scope opens with its sub-scopes shut
    assert inner in opened.nodes and opened.nodes[inner].parent == FRAME_PREFIX + "block1"
    nested = open_box(graph, opened, inner)
    frame, sub_frame = nested.nodes[FRAME_PREFIX + "block1"], nested.nodes[FRAME_PREFIX + "block1/bn"]
    assert sub_frame.parent == frame.key
    f_left, f_top, f_right, f_bottom = frame.rect
    s_left, s_top, s_right, s_bottom = sub_frame.rect
    assert f_left <= s_left and s_right <= f_right and f_top <= s_top and s_bottom <= f_bottom
    assert all(f_left < n.x < f_right and f_top < n.y < f_bottom
               for n in nested.nodes.values() if n.parent == sub_frame.key)
    assert nested.collapsed == layout.collapsed - {"block1"}
    assert close_box(graph, nested, inner) is opened
    assert close_box(graph, nested, outer) is layout
