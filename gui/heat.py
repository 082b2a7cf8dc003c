"""The heat overlay: graph nodes coloured by their kernel time per step, with a legend; on and off.

Values come from core (`node_times`: kernel time summed per node); the panes draw them through
the panes' `set_heat` with this module's colour scale (the one the legend draws), each pane
scaled to its own slowest node, which the legend states.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from PySide6.QtCore import QObject, QRectF, Qt
from PySide6.QtGui import QColor, QLinearGradient, QPainter
from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

from core.runtime.result import RunResult
from core.runtime.run_view import SIDE_OF_LABEL, format_us, node_times
from gui.graph_view import GraphView
from session import Session

GRADIENT_STOPS = 8


def heat_colour(fraction: float) -> QColor:
    """Pale yellow (cold) through orange to a light red (hot): light enough for the boxes' dark text."""
    fraction = min(1.0, max(0.0, fraction))
    return QColor.fromHsvF(0.16 * (1 - fraction), 0.12 + 0.58 * fraction, 1.0 - 0.04 * fraction)


class GradientBar(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setFixedSize(110, 14)

    def paintEvent(self, event: Any) -> None:
        painter = QPainter(self)
        gradient = QLinearGradient(0, 0, self.width(), 0)
        for i in range(GRADIENT_STOPS + 1):
            gradient.setColorAt(i / GRADIENT_STOPS, heat_colour(i / GRADIENT_STOPS))
        painter.fillRect(QRectF(self.rect()), gradient)
        painter.setPen(Qt.GlobalColor.darkGray)
        painter.drawRect(self.rect().adjusted(0, 0, -1, -1))
        painter.end()


class HeatLegend(QWidget):
    """`0 [gradient] slowest node` plus the slowest node time per pane."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.scale = QLabel(self)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(QLabel("kernel time: 0", self))
        layout.addWidget(GradientBar(self))
        layout.addWidget(self.scale)

    def set_maxima(self, maxima: dict[str, float]) -> None:
        self.scale.setText("slowest node (" + ", ".join(f"{side} {format_us(v)}" for side, v in maxima.items())
                           + " per step)" if maxima else "no kernel times")


class HeatOverlay(QObject):
    """Keeps the panes' heat in step with the result, the switch and fresh layouts (which redraw nodes)."""

    def __init__(self, session: Session, views: Mapping[str, GraphView], legend: HeatLegend,
                 parent: QObject | None = None):
        super().__init__(parent)
        self.session = session
        self.views = views
        self.legend = legend
        self.enabled = False
        self.values: dict[str, dict[str, float]] = {}

    def set_result(self, result: RunResult | None) -> None:
        self.values = {}
        for label, run in (result.graphs.items() if result else ()):
            side = SIDE_OF_LABEL.get(label, "after")
            graph = self.session.graph(side)
            times = node_times(run, (node.name for node in graph) if graph is not None else ())
            # coolest first: where a pane draws several nodes in one box (folded constants, a collapsed
            # scope), the last value written, the hottest, colours the box
            self.values[side] = dict(sorted(times.items(), key=lambda item: item[1]))
        self.legend.set_maxima({side: max(v.values()) for side, v in self.values.items() if v})
        self.apply()

    def set_enabled(self, on: bool) -> None:
        self.enabled = on
        self.legend.setVisible(on)
        self.apply()

    def apply(self) -> None:
        for side in ("before", "after"):
            self._apply(side)

    def _apply(self, side: str) -> None:
        self.views[side].set_heat(self.values.get(side) if self.enabled else None, heat_colour)

    def on_layout(self, side: str) -> None:
        """A pane shows a new layout (its nodes were redrawn): colour them again."""
        if self.enabled:
            self._apply(side)
