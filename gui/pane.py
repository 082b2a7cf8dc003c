"""A graph pane: its title, its view, and the layout it shows, laid out off the GUI thread."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from core.graph import Graph
from core.layout import SCOPE_PREFIX, Layout, LayoutCache, layout_graph
from core.layout.drawn import collapsible_scopes, drawn_names
from core.layout.overview import overview_scopes
from core.opclass import CATEGORY_TITLES, PALETTE
from core.provenance import Provenance
from gui.graph_view import DIFF_COLOURS, GraphView
from gui.workers import WorkerPool


def legend_html() -> str:
    """One line of coloured squares: op classes, then the diff colours."""
    swatch = "<span style='background:{}'>&nbsp;&nbsp;&nbsp;</span>&nbsp;{}&nbsp;&nbsp;"
    classes = "".join(swatch.format(PALETTE[c], t) for c, t in CATEGORY_TITLES.items())
    diff = "".join(swatch.format(fill, name) for name, (fill, _border) in DIFF_COLOURS.items())
    return f"{classes}&nbsp;|&nbsp;&nbsp;{diff}"


def titled(title: str, widget: QWidget) -> QWidget:
    """A bold caption above a widget."""
    box = QWidget()
    label = QLabel(title, box)
    label.setStyleSheet("font-weight: 600; padding: 2px 4px;")
    layout = QVBoxLayout(box)
    layout.setContentsMargins(2, 2, 2, 2)
    layout.setSpacing(2)
    layout.addWidget(label)
    layout.addWidget(widget, 1)
    return box


class Pane(QWidget):
    """One side ("before" or "after"): a titled GraphView and the layout it shows.

    `relayout` lays a graph out in the side's worker slot (a newer request supersedes an older
    one) and shows the result unless the graph was replaced meanwhile.
    """

    laid_out = Signal(object)  # Layout: shown in the view
    failed = Signal(str)  # a layout error, worded for the user
    message = Signal(str)  # progress and notices for the status bar

    def __init__(self, side: str, title: str, workers: WorkerPool, cache: LayoutCache,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.side, self.title, self.default_title, self.workers, self.cache = side, title, title, workers, cache
        self.shown: Layout | None = None  # the layout the view shows
        self.graph: Graph | None = None  # the graph it should show
        self.drawn_with_shapes = False  # the layout had every edge's tensor shape
        self.header = QLabel(title, self)
        self.header.setStyleSheet("font-weight: 600; padding: 2px 4px;")
        self.view = GraphView(self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.header)
        layout.addWidget(self.view, 1)

    def clear(self, title: str | None = None) -> None:
        """Forget the graph shown (a new model); `title` names what this pane will show."""
        self.shown, self.graph, self.drawn_with_shapes = None, None, False
        self.title = title or self.default_title
        self.header.setText(self.title)

    def relayout(self, graph: Graph, collapsed: frozenset[str] | None, status: Callable[[str], str] | None,
                 like: frozenset[str] | None = None) -> None:
        """Lay `graph` out with these scopes collapsed (None: a big graph's overview, or the scopes of
        `like` that this graph has); `status` gives the diff colour per drawn key."""
        self.graph = graph
        side, cache = self.side, self.cache

        def task(progress: Callable[[str], None], cancelled: Callable[[], bool]) -> Layout:
            scopes = collapsed
            if scopes is None:
                names = drawn_names(graph)
                scopes = like & frozenset(collapsible_scopes(names)) if like is not None else overview_scopes(names)
            return layout_graph(graph, scopes, cache=cache, cancelled=cancelled,
                                progress=lambda text: progress(f"layout ({side}): {text}"))

        keep_view = self.shown is not None and collapsed is not None and self.shown.collapsed != collapsed
        with_shapes = graph.shapes_ready or graph.records_shapes
        self.workers.start(f"layout-{side}", f"layout of the {side} graph", task,
                           on_finished=lambda layout: self._show(graph, layout, status, keep_view, with_shapes),
                           on_error=self.failed.emit, on_progress=self.message.emit)

    def _show(self, graph: Graph, layout: Layout, status: Callable[[str], str] | None, keep_view: bool,
              with_shapes: bool) -> None:
        if graph is not self.graph:
            return  # the pane was given another graph meanwhile
        self.shown, self.drawn_with_shapes = layout, with_shapes
        self.view.show_layout(layout, status, keep_view=keep_view)
        notice = f"  ⚠ {layout.notice}" if layout.notice else ""
        self.header.setText(f"{self.title}: {len(graph)} nodes, {len(layout.nodes)} drawn{notice}")
        if layout.notice:
            self.message.emit(layout.notice)
        self.laid_out.emit(layout)

    def apply_diff(self, provenance: Provenance | None) -> None:
        """Colour drawn nodes by what fusion did to them (removed, new, rewritten); none without a fusion."""
        status = diff_status(self.side, provenance)
        for key, item in self.view.items_by_key.items():
            item.status = status(key) if status else "unchanged"
        self.view.viewport().update()


def diff_status(side: str, provenance: Provenance | None) -> Callable[[str], str] | None:
    """Per drawn key, its diff status on this side (a collapsed scope box stays unchanged)."""
    if provenance is None:
        return None
    status = provenance.original_status if side == "before" else provenance.status
    return lambda key: "unchanged" if key.startswith(SCOPE_PREFIX) else status(key)
