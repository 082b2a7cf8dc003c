"""A graph pane: its title, its view, and the layout it shows, laid out off the GUI thread."""

from __future__ import annotations

import gc
from collections.abc import Callable
from functools import partial

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from fuselens.core.graph import Graph
from fuselens.core.graph.opclass import CATEGORY_TITLES, DIFF_COLOURS, PALETTE
from fuselens.core.graph.provenance import Provenance
from fuselens.core.layout import FRAME_PREFIX, SCOPE_PREFIX, Layout, LayoutCache, layout_graph
from fuselens.core.layout.change import LayoutChange, layout_change
from fuselens.core.layout.drawn import collapsible_scopes, drawn_names
from fuselens.core.layout.expand import close_box, follow_collapsed, is_body_key, open_box, outermost
from fuselens.core.layout.overview import overview_scopes
from fuselens.gui.graph_view import GraphView
from fuselens.gui.workers import WorkerPool, collection_paused


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
    dropped = Signal(object)  # a layout for these collapsed scopes (or None) was cancelled or is not shown
    message = Signal(str)  # progress and notices for the status bar

    def __init__(self, side: str, title: str, workers: WorkerPool, cache: LayoutCache,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.side, self.title, self.default_title, self.workers, self.cache = side, title, title, workers, cache
        self.shown: Layout | None = None  # the layout the view shows
        self.shown_graph: Graph | None = None  # the graph `shown` was made for
        self.graph: Graph | None = None  # the graph it should show
        self.drawn_with_shapes = False  # the layout had every edge's tensor shape
        self.asked_with_shapes = False  # so had the last layout asked for (maybe still in the worker)
        self._coloured_by: object = None  # the fusion every item's diff status is from
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
        gc.unfreeze()  # the last model's objects can be collected again (see _show)
        self._coloured_by = MIXED
        self.shown, self.shown_graph, self.graph, self.drawn_with_shapes = None, None, None, False
        self.asked_with_shapes = False
        self.title = title or self.default_title
        self.header.setText(self.title)

    def relayout(self, graph: Graph, collapsed: frozenset[str] | None, status: Callable[[str], str] | None,
                 like: frozenset[str] | None = None) -> None:
        """Lay `graph` out with these scopes collapsed (None: a big graph's overview, or the scopes of
        `like` that this graph has); `status` gives the diff colour per drawn key.

        When only the collapsed scopes changed, the shown layout follows in place (scope boxes opened
        or closed, `core.layout.expand`); otherwise the graph is laid out again, with the fused
        nodes that were open opened again.
        """
        self.graph = graph
        side, cache, shown = self.side, self.cache, self.shown
        with_shapes = self.asked_with_shapes = graph.shapes_ready or graph.records_shapes
        same = shown is not None and graph is self.shown_graph and with_shapes == self.drawn_with_shapes
        in_place = same and collapsed is not None and outermost(collapsed) != outermost(shown.collapsed)
        reopen = [key for key, _ in shown.opened if not key.startswith(SCOPE_PREFIX)] if same else []

        def task(progress: Callable[[str], None], cancelled: Callable[[], bool]) -> tuple[Layout, LayoutChange | None]:
            with collection_paused():
                if in_place:
                    progress(f"layout ({side}): opening in place")
                    layout = follow_collapsed(graph, shown, collapsed, cache=cache, cancelled=cancelled)
                    if layout is not None:
                        return layout, layout_change(shown, layout)
                scopes = collapsed
                if scopes is None:
                    names = drawn_names(graph)
                    scopes = like & frozenset(collapsible_scopes(names)) if like is not None \
                        else overview_scopes(names)
                layout = layout_graph(graph, scopes, cache=cache, cancelled=cancelled,
                                      progress=lambda text: progress(f"layout ({side}): {text}"))
                for key in reopen:
                    if key in layout.nodes and not layout.nodes[key].open:
                        layout = open_box(graph, layout, key, cache=cache, cancelled=cancelled)
                return layout, None

        keep_view = shown is not None and collapsed is not None and shown.collapsed != collapsed
        self.workers.start(f"layout-{side}", f"layout of the {side} graph", task,
                           on_finished=lambda result: self._show(graph, *result, status, keep_view, with_shapes),
                           on_error=self.failed.emit, on_progress=self.message.emit,
                           on_cancelled=lambda: self.dropped.emit(collapsed))

    def toggle_open(self, key: str, status: Callable[[str], str] | None) -> bool:
        """Open a fused node's body in place, or close a box opened in place (in the layout worker).

        False when `key` is neither (a plain node, or a fused node whose function is missing).
        """
        shown, graph, side, cache = self.shown, self.shown_graph, self.side, self.cache
        node = shown.nodes.get(key) if shown is not None else None
        if node is None or graph is None:
            return False
        if node.open:
            if key not in {k for k, _ in shown.opened}:
                return False
            edit = partial(close_box, graph, shown, key)
        elif not node.is_scope and key in graph and graph.fused_info(key) is not None \
                and graph.fused_info(key).function in graph.functions:
            edit = partial(open_box, graph, shown, key)
        else:
            return False

        def task(progress: Callable[[str], None], cancelled: Callable[[], bool]) -> tuple[Layout, LayoutChange | None]:
            with collection_paused():
                layout = edit(cache=cache, cancelled=cancelled)
                return layout, layout_change(shown, layout)

        with_shapes = self.drawn_with_shapes
        self.workers.start(f"layout-{side}", f"{'closing' if node.open else 'opening'} {key}", task,
                           on_finished=lambda result: self._show(graph, *result, status, True, with_shapes),
                           on_error=self.failed.emit, on_progress=self.message.emit)
        return True

    def _show(self, graph: Graph, layout: Layout, in_place: LayoutChange | None, status: Callable[[str], str] | None,
              keep_view: bool, with_shapes: bool) -> None:
        """Draw `layout`; `in_place`, when the worker opened or closed boxes of the shown layout, is how
        it differs from that one (the view moves its items instead of building them again)."""
        if graph is not self.graph:
            self.dropped.emit(layout.collapsed)
            return  # the pane was given another graph meanwhile
        # what this replaces, freed in pieces (freed whole, each was a stall on a big graph); a layout of the graph
        # shown already (a box opened, Expand all) replaces the layout only
        self.workers.releaser.release(self.shown, self.shown_graph if self.shown_graph is not graph else None)
        self.shown, self.shown_graph, self.drawn_with_shapes = layout, graph, with_shapes
        # set first: a small scene is built at once, and the built signal's apply_diff reads it
        made_by = status.provenance if isinstance(status, DiffStatus) else None
        if in_place is None:
            self._coloured_by = made_by
            self.view.show_layout(layout, status, keep_view=keep_view)
        else:
            if made_by is not self._coloured_by:  # new items of this fusion beside the kept ones of another
                self._coloured_by = MIXED
            self.view.update_layout(layout, status, in_place)
        # The graph and its layouts live until the next model: out of the garbage collector's view.
        # With a 20k-node graph and its fused graph (hundreds of thousands of objects) each full
        # collection held the interpreter lock 60-100 ms, a stall of the GUI thread whichever thread
        # started it; the boxes and edges of each box opened in place (thousands a step) made them
        # 25-79 ms again within 20 match steps. Objects without reference cycles (layouts have none)
        # are still freed when dropped.
        gc.freeze()
        notice = f"  ⚠ {layout.notice}" if layout.notice else ""
        self.header.setText(f"{self.title}: {len(graph)} nodes, {len(layout.nodes)} drawn{notice}")
        if layout.notice:
            self.message.emit(layout.notice)
        self.laid_out.emit(layout)

    def apply_diff(self, provenance: Provenance | None) -> None:
        """Colour drawn nodes by what fusion did to them (removed, new, rewritten); none without a fusion.
        Nothing to do when every item already is (a scene built with this fusion's statuses: a walk of every
        item, 70 ms on the expanded 100k graph, in the GUI thread once each build is complete)."""
        if provenance is self._coloured_by:
            return
        status = diff_status(self.side, provenance)
        for key, item in self.view.items_by_key.items():
            item.status = status(key) if status else "unchanged"
        self._coloured_by = MIXED if self.view.building else provenance  # a build's later items: its own status
        self.view.viewport().update()


MIXED = object()  # Pane._coloured_by when the items' statuses are of more than one fusion


class DiffStatus:
    """Per drawn key, its diff status on this side (a collapsed scope box and the inside of an opened fused
    node stay unchanged: they show their op classes); it knows its fusion (Pane.apply_diff)."""

    def __init__(self, side: str, provenance: Provenance):
        self.provenance = provenance
        self._status = provenance.original_status if side == "before" else provenance.status

    def __call__(self, key: str) -> str:
        if key.startswith((SCOPE_PREFIX, FRAME_PREFIX)) or is_body_key(key):
            return "unchanged"
        return self._status(key)


def diff_status(side: str, provenance: Provenance | None) -> DiffStatus | None:
    """The diff status of every drawn key on this side, None without a fusion."""
    return None if provenance is None else DiffStatus(side, provenance)
