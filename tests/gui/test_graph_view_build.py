"""A scene being built in slices is not painted half-built: each paint of a big graph zoomed out
costs a Python call per item in view, and paints between the slices stalled the window."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QColor

from benchmarks.bench_amct import synthetic
from fuselens.core.layout import SCOPE_PREFIX, Layout, LayoutEdge, LayoutNode, layout_graph
from fuselens.core.layout.change import edge_key, layout_change
from fuselens.core.layout.drawn import drawn_names
from fuselens.core.layout.expand import open_box
from fuselens.core.layout.overview import overview_scopes
from fuselens.gui import graph_view
from fuselens.gui.graph_view import NodeItem
from tests.gui.helpers import shown_view


class PaintCounter(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.paints = 0

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            self.paints += 1
        return False


def test_the_view_is_painted_once_the_scene_is_built_and_not_between_its_slices(qtbot, load_sample,
                                                                                layout_cache, monkeypatch):
    layout = layout_graph(load_sample("resnet50"), frozenset(), cache=layout_cache)
    view = shown_view(qtbot)
    counter = PaintCounter()
    view.viewport().installEventFilter(counter)
    monkeypatch.setattr(graph_view, "BUILD_SLICE_S", 0.0)  # 50 items a slice: many slices
    slices = []
    view.built.connect(lambda: slices.append(counter.paints))
    with qtbot.waitSignal(view.painted, timeout=20000):
        view.show_layout(layout)
        view.viewport().update()  # asked for while building: held until the scene is complete
        qtbot.waitSignal(view.built, timeout=20000).wait()
    assert slices == [0] and counter.paints >= 1
    assert len(view.layer.childItems()) == len(layout.nodes) + len(layout.edges)


def items_match(view, layout) -> None:
    """Every box and edge of `layout` has an item, at its place, and nothing else is drawn."""
    assert set(view.items_by_key) | set(view.frame_items) == set(layout.nodes)
    assert len(view.layer.childItems()) == len(layout.nodes) + len(layout.edges)
    for key, node in layout.nodes.items():
        item = view.items_by_key.get(key) or view.frame_items[key]
        assert item.node is node and (item.pos().x(), item.pos().y()) == pytest.approx((node.x, node.y)), key
    for edge in layout.edges:
        item = view.edge_items[edge_key(edge)]
        start = item.mapToScene(item.route.elementAt(0).x, item.route.elementAt(0).y)
        assert (start.x(), start.y()) == pytest.approx(edge.points[0], abs=0.02)


@pytest.mark.parametrize("made", ["in the worker", "here", "against another layout"])
def test_a_box_opened_and_closed_in_place_moves_the_items_to_the_new_layout(qtbot, monkeypatch, made):
    graph = synthetic(1600)
    layout = layout_graph(graph, overview_scopes(drawn_names(graph), limit=100))
    opened = open_box(graph, layout, SCOPE_PREFIX + "block4")
    view = shown_view(qtbot)
    monkeypatch.setattr(graph_view, "BUILD_SLICE_S", 0.0)  # the change applied in many slices
    with qtbot.waitSignal(view.built, timeout=20000):
        view.show_layout(layout)
    for old, new in ((layout, opened), (opened, layout)):
        change = {"in the worker": layout_change(old, new), "here": None,
                  "against another layout": layout_change(new, old)}[made]
        with qtbot.waitSignal(view.built, timeout=20000):
            view.update_layout(new, None, change)
            assert view.building  # applied in slices, the viewport repainted once they are all in
        items_match(view, new)


def test_a_box_of_a_category_the_palette_does_not_know_is_drawn_as_other(qtbot):
    """A layout cached by another version may name a category this one lacks: a KeyError while painting
    took the process down (PySide), so such a box takes the colours of "other"."""
    nodes = {key: LayoutNode(key, "Conv2D", key, "conv" if key == "a" else "renamed", (key,), x=x, y=40.0,
                             width=120, height=40) for key, x in (("a", 80.0), ("b", 260.0))}
    edges = [LayoutEdge("a", "b", "a", "", points=((80.0, 40.0), (260.0, 40.0)), spline=False)]
    view = shown_view(qtbot)
    with qtbot.waitSignal(view.painted, timeout=5000):
        view.show_layout(Layout(nodes, edges, {"a": "a", "b": "b"}, width=340, height=80))
    view.viewport().grab()  # painted without raising
    fill, _ = view.items_by_key["b"].colours()
    assert fill.name() == QColor(NodeItem.look.fills["other"]).name()


def test_a_new_layout_deletes_the_old_items_even_when_it_replaces_a_build_half_done(qtbot, monkeypatch):
    """The old items are deleted in the build's slices (not by scene.clear(), which held the GUI thread for
    the whole picture at once): none may be left in the scene, also when a third layout overtakes the second."""
    graph = synthetic(1600)
    whole = layout_graph(graph, frozenset())
    overview = layout_graph(graph, overview_scopes(drawn_names(graph), limit=100))
    view = shown_view(qtbot)
    monkeypatch.setattr(graph_view, "BUILD_SLICE_S", 0.0)  # 50 steps a slice: many slices
    with qtbot.waitSignal(view.built, timeout=20000):
        view.show_layout(whole)
    old = view.layer
    with qtbot.waitSignal(view.built, timeout=20000):
        view.show_layout(overview)
        qtbot.wait(1)  # a slice or so of the old items' deletion
        view.show_layout(whole)  # the overview's build is abandoned with most of the old items still there
    assert not graph_view.shiboken6.isValid(old)
    assert set(view.scene().items()) == {view.layer, *view.layer.childItems()}
    items_match(view, whole)
