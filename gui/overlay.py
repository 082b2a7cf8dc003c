""""Why not" drawn on the graph: a near miss's pattern over the before pane.

The nodes the pattern bound are outlined (dashed violet), the culprit the pass recorded is marked in
red (its nodes outlined, its edge drawn thick), and the reason stands next to it on a wrapped card
(readable at the zoom it was drawn at) with a leader line to the culprit. When nothing in
particular is at fault (something is missing: a count of none, an absent sibling scope), the whole
bound group is outlined red. The overlay only reads the near miss (passes record the culprit) and
the view's items; it holds no pass logic.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable

import shiboken6
from PySide6.QtCore import QLineF, QPointF, QRectF, QSizeF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QPainterPath, QPen
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsLineItem,
    QGraphicsPathItem,
    QGraphicsRectItem,
    QGraphicsTextItem,
)

from fuselens.gui.graph_view import EdgeItem, GraphView, edge_path
from fuselens.passes.base import NearMiss

BOUND = QColor("#7b3fbf")  # the pattern it tried: apart from selection blue, search orange and diff colours
CULPRIT = QColor("#d50000")
LABEL_WIDTH = 340.0  # pixels: the reason wraps to this width at any zoom
Z = 20  # above nodes (1) and the selection


class WhyNotOverlay:
    """Draws one near miss over a GraphView; redrawn when the view builds a new scene (a scope opened)."""

    def __init__(self, view: GraphView):
        self.view = view
        self.miss: NearMiss | None = None
        self.to_drawn: Callable[[Iterable[str]], Iterable[str]] = lambda names: names
        self.bound_keys: list[str] = []  # what is drawn now, for tests and the caller
        self.culprit_keys: list[str] = []
        self.culprit_edge: tuple[str, str] | None = None  # layout keys of the thick red edge
        self.label: QGraphicsTextItem | None = None
        self.label_points = 10.5  # presentation mode sets it larger
        self._items: list[QGraphicsItem] = []
        self._reveal_pending = False  # shown while the pane was being rebuilt: scroll to it once drawn
        view.built.connect(self.redraw)

    def show(self, miss: NearMiss, to_drawn: Callable[[Iterable[str]], Iterable[str]] | None = None) -> None:
        """Draw `miss`; `to_drawn` maps the names its pass saw to names the view's graph has (an earlier
        pass may have created them: the view shows the original graph)."""
        self.miss = miss
        self.to_drawn = to_drawn or (lambda names: names)
        self._reveal_pending = True
        self.redraw()

    def clear(self) -> None:
        self.miss = None
        self._remove()

    def items(self) -> list[QGraphicsItem]:
        return [item for item in self._items if shiboken6.isValid(item)]

    # ---- drawing --------------------------------------------------------------------------------
    def _keys(self, names: Iterable[str]) -> list[str]:
        return self.view.keys_for(self.to_drawn(names))

    def _remove(self) -> None:
        scene = self.view.scene()
        for item in self.items():  # a rebuilt scene already deleted the old ones
            scene.removeItem(item)
        self._items, self.label = [], None
        self.bound_keys, self.culprit_keys, self.culprit_edge = [], [], None

    def redraw(self) -> None:
        """Draw the near miss again (a new scene, a new label size); nothing when none is shown."""
        self._remove()
        miss = self.miss
        if miss is None or self.view.building or not self.view.items_by_key:
            return
        culprit = miss.culprit
        self.culprit_keys = self._keys(culprit.nodes)
        self.bound_keys = [k for k in self._keys(miss.nodes) if k not in self.culprit_keys]
        for key in self.bound_keys:
            self._outline(self._box(key), BOUND, Qt.PenStyle.DashLine, 3.0)
        for key in self.culprit_keys:
            self._outline(self._box(key), CULPRIT, Qt.PenStyle.SolidLine, 4.5)
        if culprit.edge is not None:
            self._draw_edge(culprit.edge)
        group = self._rect(self.bound_keys + self.culprit_keys)
        if group.isNull():
            return  # nothing of it is drawn in this pane
        at_fault = self._rect(self.culprit_keys)
        if at_fault.isNull() and self.culprit_edge is None:
            self._outline(group.adjusted(-8, -8, 8, 8), CULPRIT, Qt.PenStyle.DashLine, 3.0)  # the whole is at fault
        self._add_label(miss, group, at_fault if not at_fault.isNull() else group)
        if self._reveal_pending:
            self._reveal_pending = False
            self.reveal()

    def _box(self, key: str) -> QRectF:
        return self.view.items_by_key[key].sceneBoundingRect().adjusted(-2, -2, 2, 2)

    def _rect(self, keys: Iterable[str]) -> QRectF:
        rect = QRectF()
        for key in keys:
            rect = rect.united(self._box(key))
        return rect

    def _add(self, item: QGraphicsItem) -> None:
        item.setZValue(Z)
        item.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
        self.view.scene().addItem(item)
        self._items.append(item)

    def _outline(self, rect: QRectF, colour: QColor, style: Qt.PenStyle, width: float) -> None:
        pen = QPen(colour, width, style)
        pen.setCosmetic(True)  # stays visible when zoomed far out
        item = QGraphicsRectItem(rect)
        item.setPen(pen)
        item.setBrush(Qt.BrushStyle.NoBrush)
        self._add(item)

    def _draw_edge(self, edge: tuple[str, str]) -> None:
        """The edge as the view draws it, thick red; a straight line when the view does not draw it (an
        edge into a scope box, say). A constant drawn inside its reader's box has no edge: its box is marked."""
        source, target = (next(iter(self._keys([name])), None) for name in edge)
        if source is None or target is None:
            return
        if source == target:
            if source not in self.culprit_keys:
                self.culprit_keys.append(source)
                self._outline(self._box(source), CULPRIT, Qt.PenStyle.SolidLine, 4.5)
            return
        drawn = next((item for item in self.view.scene().items() if isinstance(item, EdgeItem)
                      and (item.edge.source, item.edge.target) == (source, target)), None)
        if drawn is not None:
            path = edge_path(drawn.edge)
        else:
            path = QPainterPath(self._box(source).center())
            path.lineTo(self._box(target).center())
        pen = QPen(CULPRIT, 5.0)
        pen.setCapStyle(Qt.PenCapStyle.RoundCap)
        item = QGraphicsPathItem(path)
        item.setPen(pen)
        self._add(item)
        self.culprit_edge = (source, target)

    def _add_label(self, miss: NearMiss, group: QRectF, at_fault: QRectF) -> None:
        """The reason, wrapped, on a white card as near the culprit as the visible part of the pane has room
        (covering no box), with a leader line to the culprit. It is sized for the zoom it is drawn at
        (label_points on screen) and then zooms with the graph."""
        zoom = self.view.zoom_level() or 1.0
        label = QGraphicsTextItem()
        font = QFont()
        font.setPointSizeF(self.label_points / zoom)
        label.setFont(font)
        label.setDefaultTextColor(QColor("#202124"))
        label.setHtml(f"<b style='color:{CULPRIT.name()}'>✘ why not ({html.escape(miss.pass_id)})</b><br>"
                      f"{html.escape(miss.reason)}")
        label.setTextWidth(LABEL_WIDTH * self.label_points / 10.5 / zoom)
        margin = 4 / zoom
        backing = QGraphicsRectItem(label.boundingRect().adjusted(-margin, -margin, margin, margin), label)
        pen = QPen(CULPRIT, 1.5)
        pen.setCosmetic(True)
        backing.setPen(pen)
        backing.setBrush(QBrush(QColor(255, 255, 255, 240)))
        backing.setFlag(QGraphicsItem.GraphicsItemFlag.ItemStacksBehindParent)
        size = label.boundingRect().size()
        gap = 14 / zoom
        visible = self.view.mapToScene(self.view.viewport().rect()).boundingRect()
        card = self._free_place(size, visible.adjusted(gap, gap, -gap, -gap), at_fault)
        if card is None:  # no room in view: on the right of the group, the scene grows to hold it
            card = QRectF(QPointF(group.right() + gap, at_fault.top()), size)
        label.setPos(card.topLeft())
        leader = QGraphicsLineItem(_leader(card, at_fault))
        pen = QPen(CULPRIT, 1.5, Qt.PenStyle.DashLine)
        pen.setCosmetic(True)
        leader.setPen(pen)
        self._add(leader)  # ties the card to what it explains, wherever it had room
        self._add(label)
        self.label = label
        scene = self.view.scene()  # the scene grows to hold the card, so the view can scroll to it
        scene.setSceneRect(scene.sceneRect().united(card.adjusted(-gap, -gap, gap, gap)))

    def _free_place(self, size: QSizeF, room: QRectF, at_fault: QRectF) -> QRectF | None:
        """The card's place in `room` nearest to the culprit where it covers no box and its leader line
        crosses none (so it cannot seem to point at another box); else the nearest covering none."""
        boxes = [r for item in self.view.items_by_key.values() if (r := item.sceneBoundingRect()).intersects(room)]
        passable = [r for r in boxes if not r.intersects(at_fault)]
        step = max(size.height() / 2, 1e-6)
        cards = [QRectF(QPointF(room.left() + i * step, room.top() + j * step), size)
                 for i in range(int(max(room.width() - size.width(), 0) / step) + 1)
                 for j in range(int(max(room.height() - size.height(), 0) / step) + 1)]
        cards = [c for c in cards if room.contains(c) and not any(r.intersects(c) for r in boxes)]
        cards.sort(key=lambda c: _leader(c, at_fault).length())
        clear = (c for c in cards if not any(r.contains(_leader(c, at_fault).pointAt(t / 10))
                                             for t in range(1, 10) for r in passable))
        return next(clear, cards[0] if cards else None)

    def label_scene_rect(self) -> QRectF:
        return self.label.sceneBoundingRect() if self.label is not None and shiboken6.isValid(self.label) \
            else QRectF()

    def reveal(self) -> None:
        """Scroll so the culprit and its label are in view (the label wraps, it is never cut)."""
        rect = self._rect(self.bound_keys + self.culprit_keys).united(self.label_scene_rect())
        if not rect.isNull():
            self.view.ensureVisible(rect, 20, 20)


def _leader(card: QRectF, at_fault: QRectF) -> QLineF:
    """From the card's corner nearest the culprit to the culprit's nearest point."""
    corner = _nearest_corner(card, at_fault.center())
    return QLineF(corner, _clamped(corner, at_fault))


def _nearest_corner(rect: QRectF, point: QPointF) -> QPointF:
    corners = (rect.topLeft(), rect.topRight(), rect.bottomLeft(), rect.bottomRight())
    return min(corners, key=lambda c: (c - point).manhattanLength())


def _clamped(point: QPointF, rect: QRectF) -> QPointF:
    """The point of `rect` nearest to `point` (on its border when outside)."""
    return QPointF(min(max(point.x(), rect.left()), rect.right()), min(max(point.y(), rect.top()), rect.bottom()))
