"""The heat overlay: graph nodes coloured by their kernel time per step, or by their layerwise error,
with a legend; on and off.

Kernel times come from core (`node_times`: kernel time summed per node); layerwise errors from the
session's `LayerwiseReport` (fused nodes after, the original tensors they replace before), on a log
scale from ERROR_FLOOR. The panes draw them through the panes' `set_heat` with this module's colour
scale (the one the legend draws), each pane scaled to its own largest value, which the legend states.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QRectF, Qt
from PySide6.QtGui import QColor, QLinearGradient, QPainter
from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

from fuselens.core.measure.result import RunResult
from fuselens.core.runtime.run_view import SIDE_OF_LABEL, format_us, node_times
from fuselens.gui.graph_view import GraphView
from fuselens.gui.guard import safe_override
from fuselens.session import Session

if TYPE_CHECKING:
    from fuselens.session.layerwise import LayerwiseReport

GRADIENT_STOPS = 8
ERROR_FLOOR = 1e-9  # errors at or below it are drawn coldest: float32 rounding of a reordered sum
MODES = ("time", "error")


def heat_colour(fraction: float) -> QColor:
    """Pale yellow (cold) through orange to a light red (hot): light enough for the boxes' dark text."""
    fraction = min(1.0, max(0.0, fraction))
    return QColor.fromHsvF(0.16 * (1 - fraction), 0.12 + 0.58 * fraction, 1.0 - 0.04 * fraction)


class GradientBar(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setFixedSize(110, 14)

    @safe_override()
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
    """`0 [gradient] slowest node` plus the slowest node time per pane (or the same for errors)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.low = QLabel("kernel time: 0", self)
        self.scale = QLabel(self)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self.low)
        layout.addWidget(GradientBar(self))
        layout.addWidget(self.scale)

    def set_maxima(self, maxima: dict[str, float]) -> None:
        self.low.setText("kernel time: 0")
        self.scale.setText("slowest node (" + ", ".join(f"{side} {format_us(v)}" for side, v in maxima.items())
                           + " per step)" if maxima else "no kernel times")

    def set_error_maxima(self, maxima: dict[str, float]) -> None:
        self.low.setText(f"max abs error (log): ≤{ERROR_FLOOR:.0e}")
        self.scale.setText("largest (" + ", ".join(f"{side} {v:.2g}" for side, v in maxima.items()) + ")"
                           if maxima else "no layerwise compare yet: run with Layerwise on")


class HeatOverlay(QObject):
    """Keeps the panes' heat in step with the result, the switch and fresh layouts (which redraw nodes)."""

    def __init__(self, session: Session, views: Mapping[str, GraphView], legend: HeatLegend,
                 parent: QObject | None = None):
        super().__init__(parent)
        self.session = session
        self.views = views
        self.legend = legend
        self.enabled = False
        self.mode = "time"
        self.values: dict[str, dict[str, float]] = {}
        self.errors: dict[str, dict[str, float]] = {}  # per side, node -> max abs error

    def set_result(self, result: RunResult | None) -> None:
        self.values = {}
        for label, run in (result.graphs.items() if result else ()):
            side = SIDE_OF_LABEL.get(label, "after")
            graph = self.session.graph(side)
            times = node_times(run, (node.name for node in graph) if graph is not None else ())
            # coolest first: where a pane draws several nodes in one box (folded constants, a collapsed
            # scope), the last value written, the hottest, colours the box
            self.values[side] = dict(sorted(times.items(), key=lambda item: item[1]))
        self._legend()
        self.apply()

    def set_errors(self, report: LayerwiseReport | None) -> None:
        """Layerwise errors: each fused node's, and on the original side each replaced tensor's node."""
        after: dict[str, float] = {}
        before: dict[str, float] = {}
        for node, comparisons in (report.nodes.items() if report else ()):
            for c in comparisons:
                if c.max_abs is None:
                    continue
                after[node] = max(after.get(node, 0.0), c.max_abs)
                source = c.original.rsplit(":", 1)[0]
                before[source] = max(before.get(source, 0.0), c.max_abs)
        self.errors = {side: dict(sorted(v.items(), key=lambda item: item[1]))
                       for side, v in (("before", before), ("after", after)) if v}
        self._legend()
        self.apply()

    def set_mode(self, mode: str) -> None:
        """"time" (kernel time per step) or "error" (layerwise max abs error)."""
        self.mode = mode if mode in MODES else "time"
        self._legend()
        self.apply()

    def _legend(self) -> None:
        if self.mode == "error":
            self.legend.set_error_maxima({side: max(v.values()) for side, v in self.errors.items()})
        else:
            self.legend.set_maxima({side: max(v.values()) for side, v in self.values.items() if v})

    def set_enabled(self, on: bool) -> None:
        self.enabled = on
        self.legend.setVisible(on)
        self.apply()

    def apply(self) -> None:
        for side in ("before", "after"):
            self._apply(side)

    def _apply(self, side: str) -> None:
        if not self.enabled:
            values = None
        elif self.mode == "error":  # a log scale: the pane's largest error is the hottest
            values = {n: math.log10(max(v, ERROR_FLOOR) / ERROR_FLOOR) + 1e-3
                      for n, v in self.errors.get(side, {}).items()}
        else:
            values = self.values.get(side)
        self.views[side].set_heat(values, heat_colour)

    def on_layout(self, side: str) -> None:
        """A pane shows a new layout (its nodes were redrawn): colour them again."""
        if self.enabled:
            self._apply(side)
