"""A scene being built in slices is not painted half-built: each paint of a big graph zoomed out
costs a Python call per item in view, and paints between the slices stalled the window."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject

from core.layout import layout_graph
from gui import graph_view
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
