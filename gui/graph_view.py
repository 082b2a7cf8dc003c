"""One graph pane: draws a core.layout.Layout with Qt, coloured by op class and by the fusion diff.

Nodes and edges are light custom items that paint themselves with a level of detail (labels
only when they are readable), so thousands of nodes stay smooth. The view knows nothing about
passes: the window hands it a layout, a diff status per node and the names to light up.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain, pairwise

import numpy as np
import shiboken6
from PySide6.QtCore import QEvent, QLineF, QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import (
    QAction,
    QColor,
    QFont,
    QFontMetricsF,
    QImage,
    QKeySequence,
    QPainter,
    QPainterPath,
    QPen,
    QPolygonF,
)
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsPathItem,
    QGraphicsRectItem,
    QGraphicsScene,
    QGraphicsView,
    QMenu,
    QStyleOptionGraphicsItem,
    QToolTip,
    QWidget,
)

from fuselens.core.formats.io import write_bytes_atomic
from fuselens.core.graph.opclass import BORDER, DIFF_COLOURS, PALETTE
from fuselens.core.layout import Layout, LayoutEdge, LayoutNode
from fuselens.core.layout.change import LayoutChange, edge_key, layout_change
from fuselens.core.layout.expand import FRAME_HEADER
from fuselens.core.layout.svg import layout_svg, standalone_svg
from fuselens.gui.guard import safe_override
from fuselens.gui.workers import frozen_as_made, run_in_slices

SELECTED = QColor("#1a73e8")
SEARCH_HIT = QColor("#ff6d00")
LABEL_LOD = 0.45  # below this zoom a label is unreadable: draw boxes only
EDGE_LABEL_LOD = 0.8
BUILD_SLICE_S = 0.015  # GUI-thread time per slice of scene items
FROZEN_EVERY = 2_000  # scene items made between two gc.freeze() calls (see workers.frozen_as_made)
READABLE_ZOOM = 0.85  # the first view of a big graph: labels and shapes legible
MIN_FOCUS_ZOOM = 0.7  # centring on a selection never zooms out further than this
EDGE_COLOURS = {False: "#5f6368", True: "#9aa0a6"}  # data and control edges, by `edge.control`
FRAME_Z = -100  # open boxes lie under the edges (z 0) and boxes (z 1); deeper ones above outer ones
# Below this zoom boxes are a few pixels: the view draws one picture of the layout instead of its
# items (a Python paint call per item in view made one repaint of the fitted 20k graph ~110 ms).
PICTURE_LOD = 0.12
PICTURE_MAX_PIXELS = 8_000_000  # a bigger picture (a huge graph near PICTURE_LOD): items are drawn
# A picture is drawn in the paint that wants it if it takes no longer than this, else the rest in slices of
# BUILD_SLICE_S between which the event loop runs (the last picture, or none, shown meanwhile): the expanded
# 100k graph's picture took 170-270 ms, all of it in one paint, a GUI-thread stall.
PICTURE_INLINE_S = 0.025
PICTURE_CHUNK = 4096  # edges drawn per step of a picture (one drawLines call each)
# Boxes per step: grouped by colour in Python first, 4,096 took 15-45 ms a step beside a busy worker (9,000 boxes,
# the 100k graph's overview), 1,024 took 11-19 ms
PICTURE_BOX_CHUNK = 1024
PICTURE_BAND_ROWS = 256  # rows of a picture filled with the background per step (a 32 MB picture's fill: 86 ms)


@dataclass(frozen=True)
class Look:
    """How boxes are painted: fill and border per op category, border width, background. Presentation
    mode sets a plain high-contrast one (GraphView.set_look); both panes share it."""

    fills: Mapping[str, str]
    borders: Mapping[str, str]
    border_width: float
    background: str


NORMAL_LOOK = Look(PALETTE, BORDER, 1.2, "#fbfbfa")


class _Fonts:
    """Fonts built once, after the QApplication exists."""

    op: QFont | None = None
    name: QFont
    small: QFont

    @classmethod
    def ensure(cls) -> None:
        if cls.op is None:
            cls.op = QFont()
            cls.op.setPointSizeF(8.5)
            cls.op.setBold(True)
            cls.name = QFont()
            cls.name.setPointSizeF(7.5)
            cls.small = QFont()
            cls.small.setPointSizeF(6.5)


class NodeItem(QGraphicsRectItem):
    """A box; an open one (opened in place) is a frame under its content, deeper frames above outer ones.

    A rect item without a pen whose rect is the box's bounds, so that Qt reads the bounds in C++: a
    Python boundingRect() was called ~4k times per paint after boxes moved (the scene's index asks
    each moved item), each call waiting for the interpreter lock while a layout worker ran.
    """

    def __init__(self, node: LayoutNode, depth: int = 0):
        super().__init__()
        self.node = node
        # A category the palette does not know (a layout cached by another version) is drawn as "other":
        # a KeyError inside paint() takes the whole process down under PySide.
        self.category = node.category if node.category in PALETTE else "other"
        self.box = QRectF(-node.width / 2, -node.height / 2, node.width, node.height)
        self.setRect(self.box.adjusted(-4, -4, 4, 4))
        self.setPen(Qt.PenStyle.NoPen)
        self.setPos(node.x, node.y)
        self.setAcceptedMouseButtons(Qt.MouseButton.NoButton)  # clicks and drags go to the view
        name = node.scope or node.original or node.key
        hint = "\n(double-click or Enter to close)" if node.open else ""
        self.setToolTip(f"{node.op}\n{name}{hint}")
        self.setZValue(FRAME_Z + depth if node.open else 1)
        self._status = "unchanged"
        self.selected = False
        self.hit = False
        self.heat: QColor | None = None

    look = NORMAL_LOOK

    @property
    def status(self) -> str:
        return self._status

    @status.setter
    def status(self, value: str) -> None:
        if value != self._status:
            self._status = value
            if isinstance(layer := self.parentItem(), _Layer):  # its view's picture follows the change
                layer.colour_changes += 1

    def colours(self) -> tuple[QColor, QColor]:
        """Fill and border of the box (heat, else its diff status, else its op class)."""
        if self.heat is not None:
            return self.heat, QColor(BORDER[self.category])
        if self.status in DIFF_COLOURS:
            fill, border = DIFF_COLOURS[self.status]
            return QColor(fill), QColor(border)
        return QColor(self.look.fills[self.category]), QColor(self.look.borders[self.category])

    @safe_override()
    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        lod = option.levelOfDetailFromTransform(painter.worldTransform())
        fill, border = self.colours()
        width = self.look.border_width
        if self.selected:
            border, width = SELECTED, 3.5
        elif self.hit:
            border, width = SEARCH_HIT, 3.0
        pen = QPen(border, width)
        if self.node.scope:
            pen.setStyle(Qt.PenStyle.DashLine)
        painter.setPen(pen)
        painter.setBrush(fill)
        if self.node.open:
            self._paint_frame(painter, fill, lod)
            return
        if lod < LABEL_LOD:
            if self.selected or self.hit:  # keep a selection visible from far away
                pen.setCosmetic(True)
                pen.setWidthF(3)
                painter.setPen(pen)
            painter.drawRect(self.box)
            return
        painter.drawRoundedRect(self.box, 5, 5)
        if self.status != "unchanged" or self.heat is not None:  # keep the op class visible as a stripe
            painter.fillRect(QRectF(self.box.left() + 2, self.box.top() + 4, 4, self.box.height() - 8),
                             QColor(BORDER[self.category]))
        _Fonts.ensure()
        text_rect = self.box.adjusted(8, 3, -6, -3)
        lines = [(_Fonts.op, "#1f1f1f", self.node.op), (_Fonts.name, "#303030", self.node.title)]
        if self.node.weight_text:
            lines.append((_Fonts.small, "#5f6368", self.node.weight_text))
        y = text_rect.top()
        line_height = text_rect.height() / len(lines)
        for font, colour, text in lines:
            painter.setFont(font)
            painter.setPen(QColor(colour))
            elided = QFontMetricsF(font).elidedText(text, Qt.TextElideMode.ElideLeft, text_rect.width())
            painter.drawText(QRectF(text_rect.left(), y, text_rect.width(), line_height),
                             Qt.AlignmentFlag.AlignCenter, elided)
            y += line_height


    def _paint_frame(self, painter: QPainter, fill: QColor, lod: float) -> None:
        """An open box: a pale frame with its op and name on a header line; its content draws itself."""
        fill.setAlpha(70)
        painter.setBrush(fill)
        painter.drawRoundedRect(self.box, 8, 8)
        if lod < LABEL_LOD:
            return
        _Fonts.ensure()
        header = QRectF(self.box.left() + 10, self.box.top() + 4, self.box.width() - 20, FRAME_HEADER - 8)
        painter.setPen(QColor("#1f1f1f"))
        painter.setFont(_Fonts.op)
        text = f"{self.node.op}  {self.node.title}"
        elided = QFontMetricsF(_Fonts.op).elidedText(text, Qt.TextElideMode.ElideLeft, header.width())
        painter.drawText(header, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, elided)


class EdgeItem(QGraphicsPathItem):
    """An edge: its route, arrow head and shape label drawn by paint(); the item's own path (no pen)
    is only the rectangle around them, so that Qt reads the bounds in C++ (see NodeItem)."""

    def __init__(self, edge: LayoutEdge):
        super().__init__()
        self.edge = edge
        self.lines = edge_lines(edge)
        self.route = edge_path(edge)
        self.head = arrow_head(edge)
        bounds = QPainterPath()
        bounds.addRect(self.route.boundingRect().united(self.head.boundingRect()).adjusted(-4, -4, 60, 4))
        self.setPath(bounds)
        self.setPen(Qt.PenStyle.NoPen)
        self.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
        self.label_at = self.route.pointAtPercent(0.5) if edge.label else None

    @safe_override()
    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        lod = option.levelOfDetailFromTransform(painter.worldTransform())
        colour = QColor(EDGE_COLOURS[self.edge.control])
        pen = QPen(colour, 1.1)
        pen.setCosmetic(lod < LABEL_LOD)
        if self.edge.control:
            pen.setStyle(Qt.PenStyle.DashLine)
        painter.setPen(pen)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawPath(self.route)
        if lod < LABEL_LOD:
            return
        painter.setBrush(colour)
        painter.drawPolygon(self.head)
        if self.label_at is not None and lod >= EDGE_LABEL_LOD:
            _Fonts.ensure()
            painter.setFont(_Fonts.small)
            painter.setPen(QColor("#3c4043"))
            painter.drawText(self.label_at + QPointF(4, 3), self.edge.label)


def edge_lines(edge: LayoutEdge) -> list[QLineF]:
    """The edge as straight segments in scene coordinates, for the picture of a far zoom (made with the
    item, in its build slice: making them for 10k edges at once took 70 ms)."""
    return [QLineF(x0, y0, x1, y1) for (x0, y0), (x1, y1) in pairwise(edge.points)]


def edge_path(edge: LayoutEdge) -> QPainterPath:
    points = [QPointF(x, y) for x, y in edge.points]
    path = QPainterPath()
    if not points:
        return path
    path.moveTo(points[0])
    if edge.spline and len(points) >= 4 and (len(points) - 1) % 3 == 0:
        for i in range(1, len(points), 3):
            path.cubicTo(points[i], points[i + 1], points[i + 2])
    else:
        for point in points[1:]:
            path.lineTo(point)
    return path


def arrow_head(edge: LayoutEdge, size: float = 7.0) -> QPolygonF:
    if len(edge.points) < 2:
        return QPolygonF()
    (x0, y0), (x1, y1) = edge.points[-2], edge.points[-1]
    if not edge.spline:  # a straight fallback edge ends at the node centre: stop at its top
        y1 -= 22
    angle = math.atan2(y1 - y0, x1 - x0)
    tip = QPointF(x1 + math.cos(angle) * size, y1 + math.sin(angle) * size)
    left = QPointF(x1 + math.cos(angle + math.pi / 2) * size / 2, y1 + math.sin(angle + math.pi / 2) * size / 2)
    right = QPointF(x1 + math.cos(angle - math.pi / 2) * size / 2, y1 + math.sin(angle - math.pi / 2) * size / 2)
    return QPolygonF([tip, left, right])


class _Layer(QGraphicsItem):
    """The parent of every box and edge item: hiding it hides them all in one call."""

    def __init__(self) -> None:
        super().__init__()
        self.colour_changes = 0  # diff-status and heat changes of its boxes (the far-zoom picture's key)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemHasNoContents, True)

    @safe_override(QRectF())
    def boundingRect(self) -> QRectF:
        return QRectF()

    @safe_override()
    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        pass


class GraphView(QGraphicsView):
    """A pane. Emits layout keys; the window maps them to graph names through `layout.owner`."""

    node_clicked = Signal(str)  # layout key
    node_toggled = Signal(str)  # layout key, Ctrl+clicked: into the selection or out of it
    node_activated = Signal(str)  # double click or Enter: open a box in place (a scope, a fused node) or close it
    body_table_requested = Signal(str)  # context menu: a fused node's body as a table
    collapse_requested = Signal(object)  # the wanted collapsed-scope set (frozenset[str])
    background_clicked = Signal()
    built = Signal()  # every item of the new layout is in the scene
    painted = Signal()  # the first paint after a new layout is built

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        scene = QGraphicsScene(self)
        # No BSP index: a paint walks the one top-level item (the layer) and its children in C++ anyway, and
        # the index, made lazily for every item a build added, held the GUI thread after each build (in a test
        # scene, the event loop's work after adding 100k items: 0.49 s with it, 0.24 s without).
        scene.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.NoIndex)
        self.setScene(scene)
        self.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        # One dirty rectangle, their bounding one: the smart (and minimal) mode adds every changed item's rect to a
        # QRegion first, which costs quadratic time for rects scattered as a layout's boxes are (a stack dump of the
        # 100k graph's Collapse scope caught QRegion::operator+= in the stall); bench_viewport_updates.py measures it.
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.BoundingRectViewportUpdate)
        self.setOptimizationFlag(QGraphicsView.OptimizationFlag.DontSavePainterState, True)
        self.setBackgroundBrush(QColor(NodeItem.look.background))
        self.layout_: Layout | None = None
        self.items_by_key: dict[str, NodeItem] = {}  # boxes that draw graph nodes
        self.frame_items: dict[str, NodeItem] = {}  # frames of scopes opened in place (they draw no node)
        self.edge_items: dict[tuple[str, str, bool], EdgeItem] = {}  # by (source, target, control)
        self.selected_keys: set[str] = set()
        self.hit_keys: list[str] = []
        self.building = False  # items of a new layout are still being added
        self.layer = _Layer()  # parent of the layout's items, hidden while the picture is drawn instead
        self.scene().addItem(self.layer)
        self._picture: QImage | None = None
        self._picture_key: tuple = ()  # (zoom, look, colour changes) the picture was drawn for
        self._picture_drawing: tuple = ()  # the key of the picture being drawn in slices, if any
        self._picture_parts: _PictureParts | None = None  # what every picture of the shown items reuses
        self._retiring: Iterator[None] = iter(())  # old items still to delete (show_layout)
        self._build_generation = 0
        self._paint_pending = False
        self._press: QPointF | None = None
        for keys, handler in ((QKeySequence.StandardKey.ZoomIn, lambda: self.zoom(1.25)),
                              (QKeySequence.StandardKey.ZoomOut, lambda: self.zoom(0.8)),
                              (QKeySequence("Ctrl+="), lambda: self.zoom(1.25)),
                              (QKeySequence("F"), self.fit)):
            action = QAction(self)
            action.setShortcut(keys)
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            action.triggered.connect(handler)
            self.addAction(action)

    # ---- content --------------------------------------------------------------------------------
    def show_layout(self, layout: Layout, status: Callable[[str], str] | None = None, *,
                    keep_view: bool = False) -> None:
        """Replace the drawing; `status(key)` gives each box's diff status (removed/new/modified).

        Items are added in slices of about BUILD_SLICE_S, between which the event loop runs, so
        a large graph never freezes the window; `built` is emitted when the last slice is in. The
        viewport is not repainted until then: each paint of a big graph zoomed out makes a Python
        call per item in view (10k items, 110 ms), and paints between slices made the whole-graph
        rebuilds of the 20k graph 0.2-0.6 s slower.
        """
        scene = self.scene()
        centre = self.mapToScene(self.viewport().rect().center())
        # The old items are deleted in slices, ahead of the new items in the same slices, not by scene.clear():
        # Qt takes about 10 us to delete an item (the scene's index, its Python wrapper), and clearing the
        # 20k graph's whole picture (Expand all, then Collapse scope) held the GUI thread 90 ms. Hidden meanwhile.
        self.layer.setVisible(False)
        wrappers: list[list] = []
        if self._picture_parts is not None:  # it holds the old edges' lines: the last references to most
            wrappers = [self._picture_parts.boxes, *self._picture_parts.edge_lines.values()]
            self._picture_parts = None
        # after what an abandoned build (a newer layout came first) had left of its own retiring
        self._retiring = chain(self._retiring, _retired(self.layer, [self.items_by_key, self.frame_items,
                                                                     self.edge_items], wrappers))
        self.layer = _Layer()
        scene.addItem(self.layer)
        self.layout_ = layout
        self.items_by_key = {}
        self.frame_items = {}
        self.edge_items = {}
        self.hit_keys = []
        scene.setSceneRect(_scene_rect(layout))
        if keep_view:
            self.centerOn(centre)
        else:
            self.overview()
        # Hidden before its items come when the picture will stand in for them: hiding them once built (at the
        # first paint) was one Qt call over every item, 81 ms on the expanded 100k graph.
        self.layer.setVisible(not self._picture_fits())
        self._build_generation += 1
        self.building = True
        self.viewport().setUpdatesEnabled(False)  # until _finish_build
        generation = self._build_generation
        steps = chain(self._retiring, (self._add_edge(e) for e in layout.edges),
                      (self._add_node(n, status) for n in layout.nodes.values()), self._gather_picture_parts())
        run_in_slices(self, frozen_as_made(steps, FROZEN_EVERY), seconds=BUILD_SLICE_S, at_least=50,
                      current=lambda: generation == self._build_generation,  # else a newer layout replaced it
                      done=self._finish_build)

    def _add_edge(self, edge: LayoutEdge) -> None:
        item = EdgeItem(edge)
        item.setParentItem(self.layer)
        self.edge_items[edge_key(edge)] = item

    def _add_node(self, node: LayoutNode, status: Callable[[str], str] | None) -> NodeItem:
        depth, parent = 0, node.parent
        while parent and self.layout_ is not None and parent in self.layout_.nodes:
            depth, parent = depth + 1, self.layout_.nodes[parent].parent
        item = NodeItem(node, depth)
        if status is not None:
            item.status = status(node.key)
        item.setParentItem(self.layer)
        (self.frame_items if node.open and node.scope else self.items_by_key)[node.key] = item
        return item

    def _finish_build(self) -> None:
        self._retiring = iter(())
        self.selected_keys = {k for k in self.selected_keys if k in self.items_by_key}
        for key in self.selected_keys:
            self.items_by_key[key].selected = True
        self.building = False
        self._drop_picture()
        self._paint_pending = True
        self.viewport().setUpdatesEnabled(True)
        self.viewport().update()
        self.built.emit()

    def update_layout(self, layout: Layout, status: Callable[[str], str] | None = None,
                      change: LayoutChange | None = None) -> None:
        """Show a layout made from the shown one by opening or closing boxes in place: the view stays
        where it is, items of unchanged boxes and edges stay, moved ones move, the rest come and go.

        A box opened in a 20k-node overview moves a thousand boxes below it; moving their items
        costs a fraction of building the scene again, and the user keeps their place. `change`, the
        comparison of the two layouts, comes from the layout worker (made here when it is missing or
        was made against another layout than the one shown). It is applied in slices, as a scene is
        built (show_layout), and the viewport is repainted once it is all in.
        """
        if self.layout_ is None or self.building:
            self.show_layout(layout, status, keep_view=True)
            return
        if change is None or change.old is not self.layout_ or change.new is not layout:
            change = layout_change(self.layout_, layout)
        self.layout_ = layout
        self._build_generation += 1
        self.building = True
        self.viewport().setUpdatesEnabled(False)  # until _finish_build
        generation = self._build_generation
        self.scene().setSceneRect(_scene_rect(layout))
        self._picture_parts = None
        run_in_slices(self, frozen_as_made(chain(self._change_steps(change, status), self._gather_picture_parts()),
                                          FROZEN_EVERY),
                      seconds=BUILD_SLICE_S, at_least=50,
                      current=lambda: generation == self._build_generation, done=self._finish_build)

    def _change_steps(self, change: LayoutChange, status: Callable[[str], str] | None) -> Iterator[None]:
        """`change` applied to the items, one box or edge per step."""
        scene = self.scene()
        for key in change.dropped_edges:
            scene.removeItem(self.edge_items.pop(key))
            yield
        for edge in change.retagged_edges:
            self.edge_items[edge_key(edge)].edge = edge
        for edge, dx, dy in change.moved_edges:
            item = self.edge_items[edge_key(edge)]
            item.moveBy(dx, dy)
            item.edge, item.lines = edge, edge_lines(edge)
            yield
        for edge in change.added_edges:
            self._add_edge(edge)
            yield
        for key in change.dropped_nodes:
            scene.removeItem(self.items_by_key.pop(key, None) or self.frame_items.pop(key))
            if key in self.hit_keys:
                self.hit_keys.remove(key)
            yield
        for node in change.retagged_nodes:
            (self.items_by_key.get(node.key) or self.frame_items[node.key]).node = node
        for node in change.moved_nodes:
            item = self.items_by_key.get(node.key) or self.frame_items[node.key]
            item.node = node
            item.setPos(node.x, node.y)
            yield
        for node in change.added_nodes:
            self._add_node(node, status)
            yield

    def _gather_picture_parts(self) -> Iterator[None]:
        """The far-zoom picture's parts of the items now shown, gathered in the build's slices: made at
        the first paint after a build of the expanded 20k graph, they took 25 ms more of that paint."""
        edge_lines: dict[bool, list[QLineF]] = {control: [] for control in EDGE_COLOURS}
        for item in self.edge_items.values():
            edge_lines[item.edge.control].extend(item.lines)
            yield
        boxes, geometry, dashed = list(self.items_by_key.values()), [], []
        for item in boxes:
            node = item.node
            geometry.append((node.x, node.y, node.width, node.height))
            dashed.append(node.is_scope)
            yield
        self._picture_parts = _PictureParts(boxes, dashed, np.array(geometry, dtype=float).reshape(-1, 4), edge_lines)

    def keys_for(self, names: Iterable[str]) -> list[str]:
        """Layout keys drawing these graph nodes (a folded constant maps to its consumer)."""
        if self.layout_ is None:
            return []
        return list(dict.fromkeys(k for n in names if (k := self.layout_.owner.get(n)) in self.items_by_key))

    def set_selected(self, names: Iterable[str], *, centre: bool = True) -> list[str]:
        keys = self.keys_for(names)
        for key in self.selected_keys - set(keys):
            self.items_by_key[key].selected = False
            self.items_by_key[key].update()
        for key in keys:
            self.items_by_key[key].selected = True
            self.items_by_key[key].update()
        self.selected_keys = set(keys)
        if not self.layer.isVisible():  # hidden items do not repaint: the picture's marks need a paint
            self.viewport().update()
        if centre and keys:
            self.centre_on_keys(keys)
        return keys

    def centre_on_keys(self, keys: Iterable[str]) -> None:
        rect = QRectF()
        for key in keys:
            item = self.items_by_key[key]
            rect = rect.united(item.sceneBoundingRect())
        if rect.isNull():
            return
        visible = self.mapToScene(self.viewport().rect()).boundingRect()
        if rect.width() > visible.width() or rect.height() > visible.height():
            self.fitInView(rect.adjusted(-60, -60, 60, 60), Qt.AspectRatioMode.KeepAspectRatio)
            if self.zoom_level() < MIN_FOCUS_ZOOM:  # never so far out that the labels cannot be read
                self.resetTransform()
                self.scale(MIN_FOCUS_ZOOM, MIN_FOCUS_ZOOM)
        self.centerOn(rect.center())

    def set_heat(self, values: dict[str, float] | None, colour: Callable[[float], QColor] | None = None) -> None:
        """Colour boxes by an outside value per graph node (e.g. kernel time); None switches it off."""
        for item in self.items_by_key.values():
            item.heat = None
        if values:
            top = max(values.values()) or 1.0
            pick = colour or _heat_colour
            for name, value in values.items():
                key = self.layout_.owner.get(name) if self.layout_ else None
                if key in self.items_by_key:
                    self.items_by_key[key].heat = pick(value / top)
        self.layer.colour_changes += 1
        self.viewport().update()

    def find(self, text: str) -> list[str]:
        """Keys whose graph name or op type contains `text` (case-insensitive); hits are outlined."""
        for key in self.hit_keys:
            self.items_by_key[key].hit = False
        needle = text.strip().lower()
        self.hit_keys = []
        if needle and self.layout_ is not None:
            for key, item in self.items_by_key.items():
                node = item.node
                if needle in node.op.lower() or any(needle in m.lower() for m in node.members):
                    self.hit_keys.append(key)
                    item.hit = True
        self.viewport().update()
        return self.hit_keys

    # ---- viewport -------------------------------------------------------------------------------
    def fit(self) -> None:
        """The whole layout in view; its scene rect is known before its items are built in slices."""
        if self.layout_ is not None:
            self.fitInView(self.scene().sceneRect(), Qt.AspectRatioMode.KeepAspectRatio)

    def overview(self) -> None:
        """Fit the graph when labels stay readable; otherwise a readable zoom on the top (the inputs),
        centred on the middle box of that band (a chain beside wide constants or a wide part below)."""
        self.fit()
        if self.zoom_level() >= READABLE_ZOOM or self.layout_ is None:
            return
        self.resetTransform()
        self.scale(READABLE_ZOOM, READABLE_ZOOM)
        band = self.mapToScene(self.viewport().rect()).boundingRect().height()
        xs = sorted(node.x for node in self.layout_.nodes.values() if node.y < band) or [self.layout_.width / 2]
        self.centerOn(xs[len(xs) // 2], band / 2 - 40)

    def zoom(self, factor: float) -> None:
        """Zoom in up to 8, out down to 0.01 (a big graph fitted is further out: it can still zoom in)."""
        scale = self.transform().m11() * factor
        if (factor > 1 and scale < 8) or (factor < 1 and scale > 0.01):
            self.scale(factor, factor)

    def zoom_level(self) -> float:
        return self.transform().m11()

    def set_look(self, look: Look) -> None:
        """Paint boxes (in every view: both panes share the look) and this view's background this way."""
        NodeItem.look = look
        self.setBackgroundBrush(QColor(look.background))
        self.viewport().update()

    @safe_override()
    def wheelEvent(self, event) -> None:
        self.zoom(1.0015 ** event.angleDelta().y())

    @safe_override()
    def paintEvent(self, event) -> None:
        shown = not self.picture_wanted()
        if self.layer.isVisible() != shown:
            self.layer.setVisible(shown)
        super().paintEvent(event)  # beside a busy worker: see gui.app.SWITCH_INTERVAL_S
        if self._paint_pending and self.layout_ is not None and not self._picture_drawing:
            self._paint_pending = False
            self.painted.emit()

    # ---- the picture drawn instead of the items when zoomed far out --------------------------
    def picture_wanted(self) -> bool:
        """Whether boxes are so small that one picture of the layout stands in for its items."""
        return (self.layout_ is not None and not self.building and self._picture_parts is not None
                and self._picture_fits())

    def _picture_fits(self) -> bool:
        zoom = self.zoom_level()
        rect = self.sceneRect()
        return zoom < PICTURE_LOD and rect.width() * rect.height() * zoom * zoom <= PICTURE_MAX_PIXELS

    def drawBackground(self, painter: QPainter, rect: QRectF) -> None:
        super().drawBackground(painter, rect)
        if self.layer.isVisible():
            return
        zoom = self.zoom_level()
        key = (zoom, id(NodeItem.look), self.layer.colour_changes)
        if key != self._picture_key and key != self._picture_drawing:
            self._draw_picture(key)
        if self._picture is not None:  # meanwhile the last one, at its own zoom
            drawn_at = self._picture_key[0]
            scene = self.sceneRect()
            painter.drawImage(QRectF(scene.left(), scene.top(), self._picture.width() / drawn_at,
                                     self._picture.height() / drawn_at), self._picture)
        self._draw_marks(painter, zoom)

    def _draw_picture(self, key: tuple) -> None:
        """The picture for `key` drawn now if it takes no longer than PICTURE_INLINE_S, else finished in slices
        (a newer key or layout drops it), the view repainted when it is in."""
        steps = self._picture_steps(key)
        self._picture_drawing = key
        deadline = time.perf_counter() + PICTURE_INLINE_S
        for _ in steps:
            if time.perf_counter() > deadline:
                QTimer.singleShot(1, self, lambda: run_in_slices(
                    self, steps, seconds=BUILD_SLICE_S, at_least=1, current=lambda: self._picture_drawing == key,
                    done=self.viewport().update))
                return

    def _drop_picture(self) -> None:
        self._picture, self._picture_key, self._picture_drawing = None, (), ()

    def _picture_steps(self, key: tuple) -> Iterator[None]:
        """The whole layout at the key's zoom, one pixel per screen pixel, drawn a band or chunk per step:
        frames, edges as lines, boxes filled with their colours (at least 2 px wide, 1 px tall), one drawRects
        call per colour pair and chunk. The last step makes it the view's picture."""
        zoom = key[0]
        parts = self._picture_parts
        scene = self.sceneRect()
        image = QImage(max(1, math.ceil(scene.width() * zoom)), max(1, math.ceil(scene.height() * zoom)),
                       QImage.Format.Format_ARGB32_Premultiplied)
        painter = QPainter(image)
        try:  # a drawing dropped half-way (a newer zoom, a new layout) ends its painter before its image goes
            background = QColor(NodeItem.look.background)
            for top in range(0, image.height(), PICTURE_BAND_ROWS):
                painter.fillRect(0, top, image.width(), PICTURE_BAND_ROWS, background)
                yield
            painter.scale(zoom, zoom)
            painter.translate(-scene.left(), -scene.top())
            for frame in sorted(self.frame_items.values(), key=lambda item: item.zValue()):
                fill, border = frame.colours()
                fill.setAlpha(70)
                painter.setPen(QPen(border, 0))
                painter.setBrush(fill)
                painter.drawRect(frame.sceneBoundingRect().adjusted(4, 4, -4, -4))
            for control, colour in EDGE_COLOURS.items():
                painter.setPen(QPen(QColor(colour), 0))
                lines = parts.edge_lines[control]
                for start in range(0, len(lines), PICTURE_CHUNK):
                    painter.drawLines(lines[start:start + PICTURE_CHUNK])
                    yield
            for start in range(0, len(parts.boxes), PICTURE_BOX_CHUNK):
                stop = start + PICTURE_BOX_CHUNK
                groups: dict[tuple, tuple[NodeItem, list[QRectF]]] = {}  # by what decides a box's colours and border
                for item, rect, dashed in zip(parts.boxes[start:stop], parts.rects(2 / zoom, 1 / zoom, start, stop),
                                              parts.dashed[start:stop], strict=True):
                    look = (item.heat.rgba() if item.heat is not None else None, item.status, item.category, dashed)
                    groups.setdefault(look, (item, []))[1].append(rect)
                for (*_, dashed), (item, group) in groups.items():
                    fill, border = item.colours()
                    pen = QPen(border, 0)
                    if dashed:  # a collapsed scope's box is dashed, as its item draws it
                        pen.setStyle(Qt.PenStyle.DashLine)
                    painter.setPen(pen)
                    painter.setBrush(fill)
                    painter.drawRects(group)
                yield
        finally:
            painter.end()
        self._picture, self._picture_key, self._picture_drawing = image, key, ()

    def _draw_marks(self, painter: QPainter, zoom: float) -> None:
        """Selection and search hits over the picture, at least 6 px across so they show from afar."""
        painter.setBrush(Qt.BrushStyle.NoBrush)
        side = 6 / zoom
        for keys, colour in ((self.hit_keys, SEARCH_HIT), (self.selected_keys, SELECTED)):
            pen = QPen(colour, 3)
            pen.setCosmetic(True)
            painter.setPen(pen)
            painter.drawRects([_box_rect(self.items_by_key[key].node, side, side) for key in keys])

    # ---- mouse ----------------------------------------------------------------------------------
    def node_at(self, pos) -> NodeItem | None:
        if not self.layer.isVisible():
            return self._box_at(self.mapToScene(pos))
        for item in self.items(pos):
            if isinstance(item, NodeItem):
                return item
        return None

    def _box_at(self, point: QPointF) -> NodeItem | None:
        """The box under a scene point in the layout data (items are hidden under the picture): the
        nearest box within 3 px on screen, else the innermost open frame around it."""
        slack = 3 / self.zoom_level()

        def near(item: NodeItem) -> bool:
            node = item.node
            return (abs(node.x - point.x()) <= node.width / 2 + slack
                    and abs(node.y - point.y()) <= node.height / 2 + slack)

        boxes = [item for item in self.items_by_key.values() if near(item)]
        if boxes:
            return min(boxes, key=lambda item: (item.node.x - point.x()) ** 2 + (item.node.y - point.y()) ** 2)
        return max((item for item in self.frame_items.values() if near(item)), key=lambda item: item.zValue(),
                   default=None)

    @safe_override(False)
    def viewportEvent(self, event: QEvent) -> bool:
        """Under the far-zoom picture the items are hidden, so a box's tooltip comes from the layout."""
        if event.type() == QEvent.Type.ToolTip and not self.layer.isVisible():
            item = self._box_at(self.mapToScene(event.pos()))
            if item is None:
                QToolTip.hideText()
            else:
                QToolTip.showText(event.globalPos(), item.toolTip(), self.viewport())
            return True
        return super().viewportEvent(event)

    @safe_override()
    def mousePressEvent(self, event) -> None:
        self._press = event.position()
        super().mousePressEvent(event)

    @safe_override()
    def mouseReleaseEvent(self, event) -> None:
        super().mouseReleaseEvent(event)
        if self._press is not None and (event.position() - self._press).manhattanLength() < 5 \
                and event.button() == Qt.MouseButton.LeftButton:
            item = self.node_at(event.position().toPoint())
            if item is None:
                self.background_clicked.emit()
            elif event.modifiers() & Qt.KeyboardModifier.ControlModifier:
                self.node_toggled.emit(item.node.key)
            else:
                self.node_clicked.emit(item.node.key)
        self._press = None

    @safe_override()
    def mouseDoubleClickEvent(self, event) -> None:
        item = self.node_at(event.position().toPoint())
        if item is not None:
            self.node_activated.emit(item.node.key)

    @safe_override()
    def keyPressEvent(self, event) -> None:
        """Enter opens (or closes) the one selected box in place, like a double-click."""
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and len(self.selected_keys) == 1:
            self.node_activated.emit(next(iter(self.selected_keys)))
            return
        super().keyPressEvent(event)

    @safe_override()
    def contextMenuEvent(self, event) -> None:
        item = self.node_at(event.pos())
        if self.layout_ is None:
            return
        menu = QMenu(self)
        collapsed = self.layout_.collapsed
        if item is not None and item.node.scope:
            menu.addAction(f"{'Collapse' if item.node.open else 'Expand'} scope {item.node.scope}",
                           lambda: self.node_activated.emit(item.node.key))
        elif item is not None and item.node.category == "fused" and not item.node.original:
            key = item.node.key
            menu.addAction("Close the body (Enter)" if item.node.open else "Open the body in place (Enter)",
                           lambda: self.node_activated.emit(key))
            menu.addAction("Show body as table", lambda: self.body_table_requested.emit(key))
        if item is not None and not item.node.scope:
            for scope in self.scopes_of(item.node.key):
                menu.addAction(f"Collapse scope {scope}",
                               lambda s=scope: self.collapse_requested.emit(collapsed | {s}))
        if collapsed:
            menu.addAction("Expand all scopes", lambda: self.collapse_requested.emit(frozenset()))
        menu.addSeparator()
        menu.addAction("Fit (F)", self.fit)
        menu.exec(event.globalPos())
        menu.deleteLater()  # a child of the view: without this every right-click kept its menu

    def scopes_of(self, name: str) -> list[str]:
        """Collapsible scopes containing graph node `name`, innermost first."""
        if self.layout_ is None:
            return []
        return [s for s in reversed(self.layout_.scopes) if name.startswith(s + "/")]

    # ---- export ---------------------------------------------------------------------------------
    def export_image(self, path: str) -> None:
        """The whole graph as SVG (by the file's suffix) or PNG."""
        if path.lower().endswith(".svg"):
            self.export_svg(path)
        elif not self.export_png(path):
            raise OSError(f"{path}: cannot write the image")

    def export_svg(self, path: str) -> None:
        """The shown layout with its boxes' diff outlines, by core's one SVG writer (the lesson page's):
        text stays text, and the file is the same whatever Qt's paint engine would make of the scene."""
        if self.layout_ is None:
            raise OSError(f"{path}: no graph is shown to export")
        status = {key: item.status for key, item in self.items_by_key.items() if item.status != "unchanged"}
        write_bytes_atomic(path, standalone_svg(layout_svg(self.layout_, status, title="FuseLens graph")).encode())

    def export_png(self, path: str, max_side: int = 8000) -> bool:
        rect = self.scene().sceneRect()
        scale = min(1.0, max_side / max(rect.width(), rect.height(), 1.0))
        image = QImage(max(1, int(rect.width() * scale)), max(1, int(rect.height() * scale)),
                       QImage.Format.Format_ARGB32)
        image.fill(QColor("white"))
        painter = QPainter(image)
        painter.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        self._render_items(painter, QRectF(image.rect()))
        painter.end()
        return image.save(path)

    def _render_items(self, painter: QPainter, target: QRectF) -> None:
        """The scene's items onto `target`, shown for it when the view draws its picture instead."""
        shown = self.layer.isVisible()
        self.layer.setVisible(True)
        self.scene().render(painter, target, self.scene().sceneRect())
        self.layer.setVisible(shown)


@dataclass
class _PictureParts:
    """What every far-zoom picture of the same items reuses, whatever the zoom or colours: the edges as
    lines and the boxes' centres and sizes as an array. Made for each picture, they took half of its
    40 ms on the expanded 20k graph, and the picture is made again at each zoom step and colour change."""

    boxes: list[NodeItem]
    dashed: list[bool]  # collapsed scope boxes (drawn dashed)
    geometry: np.ndarray  # per box: centre x, centre y, width, height
    edge_lines: dict[bool, list[QLineF]]  # by `edge.control`

    def rects(self, min_width: float, min_height: float, start: int, stop: int) -> list[QRectF]:
        """The scene rects of boxes[start:stop], at least this big (so they show in a far-out picture)."""
        geometry = self.geometry[start:stop]
        x, y = geometry[:, 0], geometry[:, 1]
        width, height = np.maximum(geometry[:, 2], min_width), np.maximum(geometry[:, 3], min_height)
        return [QRectF(*row) for row in np.stack([x - width / 2, y - height / 2, width, height], axis=1).tolist()]


def _box_rect(node: LayoutNode, min_width: float, min_height: float) -> QRectF:
    """A box's scene rect, at least this big (so it shows in a far-out picture)."""
    width, height = max(node.width, min_width), max(node.height, min_height)
    return QRectF(node.x - width / 2, node.y - height / 2, width, height)


def _retired(layer: _Layer, items: list[dict], wrappers: list[list]) -> Iterator[None]:
    """The scene items these dicts hold deleted one per step, then the wrappers these lists hold (of items
    deleted already, or no scene items: the edges' lines) let go a hundred a step, then `layer` with
    whatever else it still holds."""
    for held in items:
        while held:
            shiboken6.delete(held.popitem()[1])
            yield
    for held in wrappers:
        while held:
            del held[-100:]
            yield
    shiboken6.delete(layer)


def _scene_rect(layout: Layout) -> QRectF:
    """The scene a layout is drawn in: the layout with a margin."""
    return QRectF(-40, -40, layout.width + 80, layout.height + 80)


def _heat_colour(fraction: float) -> QColor:
    """Pale yellow (cold) to deep red (hot)."""
    fraction = min(1.0, max(0.0, fraction))
    return QColor.fromHsvF(0.15 * (1 - fraction), 0.25 + 0.7 * fraction, 1.0 - 0.25 * fraction)
