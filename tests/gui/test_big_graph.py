"""A big graph opens as an overview of its scopes; a double-click, a search hit or a match opens
only the scope it needs, in place (no layout of the whole graph); the after pane follows the before
pane's scopes; closing a scope gives back the view it was opened from."""

from __future__ import annotations

import threading
import time

import pytest

import fuselens.gui.pane
from benchmarks.bench_amct import synthetic
from fuselens.core.layout import FRAME_PREFIX, SCOPE_PREFIX, Layout
from fuselens.core.layout.overview import BIG_GRAPH_NODES
from tests.gui.helpers import WAIT_MS, open_and_wait, wait_idle


def scope_boxes(pane) -> set[str]:
    """The scopes drawn as closed boxes."""
    return {n.scope for n in pane.shown.nodes.values() if n.is_scope}


def geometry(layout: Layout) -> tuple[dict, list]:
    return ({k: (n.x, n.y, n.width, n.height, n.open) for k, n in layout.nodes.items()},
            sorted((e.source, e.target, e.control, e.points) for e in layout.edges))


def test_a_5k_node_graph_opens_collapsed_and_expands_one_scope_at_a_time_in_place(qtbot, window, tmp_path,
                                                                                     monkeypatch):
    path = tmp_path / "synthetic5k.pb"
    graph = synthetic(5000)
    path.write_bytes(graph.graph_def.SerializeToString())
    full_layouts = []
    layout_graph = fuselens.gui.pane.layout_graph
    monkeypatch.setattr(fuselens.gui.pane, "layout_graph",
                        lambda *a, **k: full_layouts.append(a) or layout_graph(*a, **k))
    open_and_wait(qtbot, window, str(path), timeout=WAIT_MS * 2)
    before, after = window.panes["before"], window.panes["after"]
    assert len(graph) > BIG_GRAPH_NODES and len(before.shown.nodes) < len(graph) / 5
    assert window.session.collapsed["before"] == before.shown.collapsed and scope_boxes(before)
    assert scope_boxes(after) and scope_boxes(after) <= window.session.collapsed["before"]  # the same scopes
    for pane in (before, after):  # the first view shows boxes, not an empty corner of a wide scene
        view = pane.view
        visible = view.mapToScene(view.viewport().rect()).boundingRect()
        assert any(visible.intersects(item.sceneBoundingRect()) for item in view.items_by_key.values())
    block = "block7"
    assert block in scope_boxes(before)
    overview = before.shown
    old_box = overview.nodes[SCOPE_PREFIX + block]
    full_layouts.clear()

    window._on_activated("before", SCOPE_PREFIX + block)  # a double-click on the scope box
    qtbot.waitUntil(lambda: block not in scope_boxes(before) and block not in scope_boxes(after), timeout=WAIT_MS)
    wait_idle(qtbot, window)
    assert not full_layouts  # opened in place: only the scope's own nodes were laid out
    assert block not in window.session.collapsed["before"] and block not in window.session.collapsed["after"]
    opened = before.shown
    frame = opened.nodes[FRAME_PREFIX + block]
    inside = [k for k, n in opened.nodes.items() if n.parent == frame.key]
    assert frame.open and inside and all(k.startswith(block + "/") for k in inside)
    assert SCOPE_PREFIX + block not in before.view.items_by_key  # the box became the frame
    assert len(opened.nodes) == len(overview.nodes) + len(inside)
    assert set(before.view.items_by_key) == set(opened.nodes) - {frame.key}  # the scene shows the layout
    assert set(before.view.frame_items) == {frame.key}
    # the frame grew from its top left corner; boxes below it moved down by its growth, the rest stayed
    left, top, right, bottom = frame.rect
    assert (left, top) == pytest.approx(old_box.rect[:2])
    dy = frame.height - old_box.height
    for key, node in overview.nodes.items():
        if key == old_box.key:
            continue
        new = opened.nodes[key]
        moved = (round(new.x - node.x, 6), round(new.y - node.y, 6))
        assert moved in {(0.0, 0.0), (0.0, round(dy, 6)), (round(frame.width - old_box.width, 6), 0.0)}, key
        if node.rect[1] >= old_box.rect[3]:
            assert moved == (0.0, round(dy, 6)), key
        elif node.rect[3] <= old_box.rect[1]:
            assert moved == (0.0, 0.0), key
    for key in inside:  # the content is inside the frame, below its title
        n_left, n_top, n_right, n_bottom = opened.nodes[key].rect
        assert left < n_left and n_right < right and top < n_top and n_bottom < bottom
    # edges that crossed the box's border now end at the nodes inside that they connect to
    into = {e.target for e in opened.edges if e.target in inside and e.source not in inside}
    out = {e.source for e in opened.edges if e.source in inside and e.target not in inside}
    assert into and out and not any({frame.key, old_box.key} & {e.source, e.target} for e in opened.edges)

    window._on_activated("before", frame.key)  # a double-click on the open frame closes it
    qtbot.waitUntil(lambda: block in scope_boxes(before) and block in scope_boxes(after), timeout=WAIT_MS)
    wait_idle(qtbot, window)
    assert not full_layouts
    assert geometry(before.shown) == geometry(overview)  # exactly the view it was opened from
    assert set(before.view.items_by_key) == set(overview.nodes) and not before.view.frame_items

    hidden = "block10/bn/batchnorm/Rsqrt"  # a small-op BatchNorm deep inside a collapsed block
    window.search.setText(hidden.split("/")[-1])
    window.select_key("before", SCOPE_PREFIX + "block10")  # what a click on the box selects: no expand
    assert "block10" in scope_boxes(before)
    window.selection.select_original([hidden], origin="search")  # a search hit inside it opens it
    qtbot.waitUntil(lambda: hidden in before.shown.nodes, timeout=WAIT_MS)
    wait_idle(qtbot, window)
    assert not full_layouts
    assert before.view.items_by_key[hidden].hit  # outlined as a search hit once drawn
    view = before.view  # and centred once its scope has opened (not on the closed box it was in)
    centre = view.mapToScene(view.viewport().rect()).boundingRect().center()
    target = view.items_by_key[hidden].sceneBoundingRect().center()
    assert abs(centre.y() - target.y()) < 2  # (the overview is narrower than the view: it stays centred across)


def test_the_first_view_of_a_tall_graph_with_a_wide_part_shows_its_inputs(qtbot, window, tmp_path):
    """A chain drawn in the middle of a wide scene: the first view is centred on it, not on the
    scene's empty top-left corner (the fit must not wait for the items built in slices)."""
    from fuselens.core.graph import proto
    from fuselens.core.graph.nodes import make_node

    dtype = {"dtype": proto.AttrValue(type=proto.DT_FLOAT)}
    nodes = [make_node("Placeholder", "input", attrs=dtype)]
    for i in range(40):
        nodes.append(make_node("Relu", f"chain/relu_{i}", [nodes[-1].name]))
    branches = [make_node("Abs", f"fan/abs_{j}", [nodes[-1].name]) for j in range(60)]
    total = make_node("AddN", "total", [b.name for b in branches], attrs={"N": len(branches), "T": dtype["dtype"]})
    path = tmp_path / "wide.pb"
    path.write_bytes(proto.GraphDef(node=[*nodes, *branches, total]).SerializeToString())
    open_and_wait(qtbot, window, str(path))
    view = window.panes["before"].view
    visible = view.mapToScene(view.viewport().rect()).boundingRect()
    assert visible.intersects(view.items_by_key["input"].sceneBoundingRect())


def test_opening_a_scope_lays_each_pane_out_once_the_after_pane_once_the_before_pane_is_painted(
        qtbot, window, tmp_path, monkeypatch):
    """The two panes' layout workers, scene updates and paints would otherwise share the interpreter lock."""
    path = tmp_path / "synthetic5k.pb"
    path.write_bytes(synthetic(5000).graph_def.SerializeToString())
    open_and_wait(qtbot, window, str(path), timeout=WAIT_MS * 2)
    before, after = window.panes["before"], window.panes["after"]
    block = "block7"
    layouts = []  # (side, whether the before pane's scene showed the scope open by then, and was painted)
    relayout = fuselens.gui.pane.Pane.relayout

    def recorded(pane, *args, **kwargs):
        shown_open = not before.view.building and block not in scope_boxes(before)
        layouts.append((pane.side, shown_open and not before.view._paint_pending))
        return relayout(pane, *args, **kwargs)

    monkeypatch.setattr(fuselens.gui.pane.Pane, "relayout", recorded)
    window._on_activated("before", SCOPE_PREFIX + block)
    qtbot.waitUntil(lambda: block not in scope_boxes(after), timeout=WAIT_MS)
    wait_idle(qtbot, window)
    assert layouts == [("before", False), ("after", True)]
    assert block not in scope_boxes(before) and not window._following


def test_a_before_layout_that_is_cancelled_does_not_hold_the_after_pane_back(qtbot, window, tmp_path):
    path = tmp_path / "synthetic5k.pb"
    path.write_bytes(synthetic(5000).graph_def.SerializeToString())
    open_and_wait(qtbot, window, str(path), timeout=WAIT_MS * 2)
    before, after = window.panes["before"], window.panes["after"]
    window._on_activated("before", SCOPE_PREFIX + "block7")
    window.workers.cancel_all()  # the Cancel button, while the before pane's worker runs
    qtbot.waitUntil(lambda: "block7" not in scope_boxes(after), timeout=WAIT_MS)
    wait_idle(qtbot, window)
    assert not window._following
    window._on_activated("before", SCOPE_PREFIX + "block10")  # and the next opening follows as usual
    qtbot.waitUntil(lambda: "block10" not in scope_boxes(before) and "block10" not in scope_boxes(after),
                    timeout=WAIT_MS)


def test_a_graph_fused_before_its_overview_is_chosen_waits_for_the_before_panes_scopes(
        qtbot, window, tmp_path, monkeypatch):
    """A graph under EARLY_FUSION_NODES is fused at load, beside the before pane's first layout; when the fusion
    ends first, the after pane's first layout waits for the before pane's scopes instead of choosing its own."""
    path = tmp_path / "synthetic5k.pb"
    path.write_bytes(synthetic(5000).graph_def.SerializeToString())
    layout_graph = fuselens.gui.pane.layout_graph
    fused = threading.Event()

    def slow_before(graph, *args, **kwargs):
        if graph is window.session.model.graph:  # the before pane's layout ends after the fusion
            fused.wait(30)
            time.sleep(0.2)
        return layout_graph(graph, *args, **kwargs)

    monkeypatch.setattr(fuselens.gui.pane, "layout_graph", slow_before)
    window.session.subscribe(lambda what: what == "pipeline" and fused.set())
    open_and_wait(qtbot, window, str(path), timeout=WAIT_MS * 2)
    after = window.panes["after"]
    assert scope_boxes(after) and scope_boxes(after) <= window.session.collapsed["before"]
