"""Zoomed far out, a pane draws one picture of its layout instead of a Python paint call per item
(10k items in view made one repaint of the 20k graph ~110 ms): the picture shows the boxes in their
colours and follows a diff-colour change, clicks still find the box, and zooming in shows the items."""

from __future__ import annotations

import time

import pytest
from PySide6.QtCore import QEvent, QPoint, Qt
from PySide6.QtGui import QColor, QHelpEvent
from PySide6.QtWidgets import QApplication, QToolTip

from fuselens.core.graph.opclass import DIFF_COLOURS
from fuselens.core.layout import layout_graph
from fuselens.gui import graph_view
from fuselens.gui.graph_view import PICTURE_LOD, GraphView, NodeItem
from tests.gui.helpers import shown_view


@pytest.fixture
def far_view(qtbot, load_sample, layout_cache):
    """resnet50 drawn at a zoom where its boxes are a few pixels, centred on one box."""
    layout = layout_graph(load_sample("resnet50"), frozenset(), cache=layout_cache)
    view = shown_view(qtbot)
    with qtbot.waitSignal(view.painted, timeout=20000):
        view.show_layout(layout)
    view.resetTransform()
    view.scale(PICTURE_LOD * 0.8, PICTURE_LOD * 0.8)
    key = sorted(view.items_by_key)[len(view.items_by_key) // 2]
    view.centerOn(layout.nodes[key].x, layout.nodes[key].y)
    return view, key


def pixel_at_box(view: GraphView, key: str, *, drawn: bool = True) -> QColor:
    """The colour on screen at a box's centre; `drawn`: once the picture that paint started is in (on a busy
    machine even a small graph's picture can take longer than the paint's own share)."""
    node = view.items_by_key[key].node
    image = view.viewport().grab().toImage()
    deadline = time.monotonic() + 10
    while drawn and view._picture_drawing and time.monotonic() < deadline:
        QApplication.processEvents()
        image = view.viewport().grab().toImage()
    return image.pixelColor(view.mapFromScene(node.x, node.y))


def count_item_paints(monkeypatch) -> list[int]:
    paints = [0]
    paint = NodeItem.paint

    def counted(self, *args):
        paints[0] += 1
        paint(self, *args)

    monkeypatch.setattr(NodeItem, "paint", counted)
    return paints


def test_far_out_the_items_are_not_painted_and_the_picture_shows_the_boxes(far_view, monkeypatch):
    view, key = far_view
    paints = count_item_paints(monkeypatch)
    fill = QColor(NodeItem.look.fills[view.items_by_key[key].node.category])
    assert pixel_at_box(view, key).name() == fill.name()
    assert paints[0] == 0 and not view.layer.isVisible()
    view.resetTransform()  # zoom 1: the items again
    view.centerOn(view.items_by_key[key].node.x, view.items_by_key[key].node.y)
    view.viewport().grab()
    assert paints[0] > 0 and view.layer.isVisible()


def test_the_picture_follows_a_diff_colour_change(far_view):
    view, key = far_view
    pixel_at_box(view, key)  # the picture rendered with the op-class colour
    view.items_by_key[key].status = "removed"
    view.viewport().update()
    assert pixel_at_box(view, key).name() == QColor(DIFF_COLOURS["removed"][0]).name()


def test_a_click_far_out_selects_the_box_under_it_and_a_double_click_opens_it(far_view, qtbot):
    view, key = far_view
    node = view.items_by_key[key].node
    at = view.mapFromScene(node.x, node.y)
    with qtbot.waitSignal(view.node_clicked, timeout=2000) as clicked:
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=at)
    assert clicked.args == [key]
    with qtbot.waitSignal(view.node_activated, timeout=2000) as activated:
        qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=at)
    assert activated.args == [key]
    with qtbot.waitSignal(view.background_clicked, timeout=2000):
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(2, 2) if view.node_at(QPoint(2, 2))
                         is None else QPoint(view.viewport().width() - 2, 2))


def test_far_out_a_box_still_shows_its_tooltip(far_view, qtbot):
    view, key = far_view
    item = view.items_by_key[key]
    at = view.mapFromScene(item.node.x, item.node.y)
    QApplication.sendEvent(view.viewport(), QHelpEvent(QEvent.Type.ToolTip, at, view.viewport().mapToGlobal(at)))
    qtbot.waitUntil(lambda: QToolTip.isVisible(), timeout=2000)
    assert QToolTip.text() == item.toolTip() and item.node.op in QToolTip.text()
    QToolTip.hideText()


def test_a_picture_bigger_than_its_pixel_budget_leaves_the_items_drawn(far_view, monkeypatch):
    view, _ = far_view
    assert view.picture_wanted()
    monkeypatch.setattr(graph_view, "PICTURE_MAX_PIXELS", 1000)
    assert not view.picture_wanted()


def test_a_graph_fitted_further_out_than_the_zoom_limit_can_be_zoomed_in(far_view):
    view, _ = far_view
    view.resetTransform()
    view.scale(0.002, 0.002)  # the 20k graph fitted: 0.0015
    view.zoom(1.25)
    assert view.zoom_level() == pytest.approx(0.0025)
    view.zoom(0.8)
    assert view.zoom_level() == pytest.approx(0.0025)  # no further out than the limit by the keys or the wheel


def test_the_picture_follows_the_heat_overlay(far_view):
    view, key = far_view
    pixel_at_box(view, key)
    name = next(name for name, owner in view.layout_.owner.items() if owner == key)
    view.set_heat({name: 1.0}, lambda fraction: QColor("#7b1fa2"))
    assert pixel_at_box(view, key).name() == "#7b1fa2"
    view.set_heat(None)
    assert pixel_at_box(view, key).name() == QColor(NodeItem.look.fills[view.items_by_key[key].node.category]).name()


def test_a_picture_too_slow_for_one_paint_is_drawn_in_slices_the_last_one_shown_meanwhile(far_view, qtbot,
                                                                                          monkeypatch):
    view, key = far_view
    fill = QColor(NodeItem.look.fills[view.items_by_key[key].node.category]).name()
    assert pixel_at_box(view, key).name() == fill  # drawn in its paint: a small graph's picture is quick
    monkeypatch.setattr(graph_view, "PICTURE_INLINE_S", 0.0)
    monkeypatch.setattr(graph_view, "PICTURE_CHUNK", 8)  # a step per 8 edges or boxes: many slices
    monkeypatch.setattr(graph_view, "PICTURE_BOX_CHUNK", 8)
    drawn_at = view.zoom_level()
    view.zoom(0.8)
    view.centerOn(view.items_by_key[key].node.x, view.items_by_key[key].node.y)
    assert pixel_at_box(view, key, drawn=False).name() == fill  # the last picture, scaled, while the new one is drawn
    assert view._picture_key[0] == drawn_at and view._picture_drawing
    qtbot.waitUntil(lambda: view._picture_key[:1] == (view.zoom_level(),), timeout=10000)
    assert not view._picture_drawing and pixel_at_box(view, key).name() == fill


def test_a_layout_drawn_as_a_picture_is_painted_once_its_picture_is_in(far_view, qtbot, monkeypatch):
    view, _ = far_view
    monkeypatch.setattr(graph_view, "PICTURE_INLINE_S", 0.0)
    monkeypatch.setattr(graph_view, "PICTURE_CHUNK", 8)
    monkeypatch.setattr(graph_view, "PICTURE_BOX_CHUNK", 8)
    painted = []
    view.painted.connect(lambda: painted.append(view._picture is not None and not view._picture_drawing))
    view.show_layout(view.layout_, keep_view=True)  # as Expand all does: the view stays far out
    assert not view.layer.isVisible()  # hidden before its items were made: no hiding them all at the first paint
    qtbot.waitUntil(lambda: bool(painted), timeout=20000)
    assert painted == [True] and not view.layer.isVisible()


CLOSED_WHILE_DRAWING = """
import sys
from PySide6.QtWidgets import QApplication
app = QApplication([])
from fuselens.core.formats.loaders import load_model
from fuselens.core.formats.samples import sample_path
from fuselens.core.layout import LayoutCache, layout_graph
from fuselens.gui import graph_view
from fuselens.gui.graph_view import PICTURE_LOD, GraphView
graph_view.PICTURE_INLINE_S, graph_view.PICTURE_CHUNK, graph_view.PICTURE_BOX_CHUNK = 0.0, 8, 8
view = GraphView()
view.resize(600, 500)
view.show()
view.show_layout(layout_graph(load_model(sample_path("resnet50")).graph, frozenset(), cache=LayoutCache(None)))
while view.building:
    app.processEvents()
view.resetTransform()
view.scale(PICTURE_LOD * 0.8, PICTURE_LOD * 0.8)
view.viewport().grab()  # a picture started, the rest of it queued
assert view._picture_drawing
view.close()
print("closed while drawing")
"""


def test_a_window_closed_while_a_picture_is_drawn_exits_cleanly():
    """A drawing still queued when the process ends: its image was freed with its painter still on it (Qt:
    "QPaintDevice: Cannot destroy paint device that is being painted"), and the benchmark's child died at exit."""
    import subprocess
    import sys

    from fuselens.core.package_data import child_environ, import_root

    done = subprocess.run([sys.executable, "-c", CLOSED_WHILE_DRAWING], capture_output=True, text=True, timeout=120,
                          cwd=str(import_root()), env=child_environ(QT_QPA_PLATFORM="offscreen"))
    assert "closed while drawing" in done.stdout, done.stderr[-2000:]
    assert done.returncode == 0 and "being painted" not in done.stderr, done.stderr[-2000:]
