"""A titled graph pane and the status bar's colour legend."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from core.graph import Graph
from core.layout import Layout
from core.opclass import CATEGORY_TITLES, PALETTE
from gui.graph_view import DIFF_COLOURS, GraphView


def legend_html() -> str:
    """One line of coloured squares: op classes, then the diff colours."""
    swatch = "<span style='background:{}'>&nbsp;&nbsp;&nbsp;</span>&nbsp;{}&nbsp;&nbsp;"
    classes = "".join(swatch.format(PALETTE[c], t) for c, t in CATEGORY_TITLES.items())
    diff = "".join(swatch.format(fill, name) for name, (fill, _border) in DIFF_COLOURS.items())
    return f"{classes}&nbsp;|&nbsp;&nbsp;{diff}"


class Pane(QWidget):
    """A titled GraphView (title, node count and any layout notice above the view)."""

    def __init__(self, title: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.title = title
        self.header = QLabel(title, self)
        self.header.setStyleSheet("font-weight: 600; padding: 2px 4px;")
        self.view = GraphView(self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.header)
        layout.addWidget(self.view, 1)

    def describe(self, graph: Graph, layout: Layout) -> None:
        notice = f"  ⚠ {layout.notice}" if layout.notice else ""
        self.header.setText(f"{self.title}: {len(graph)} nodes, {len(layout.nodes)} drawn{notice}")
