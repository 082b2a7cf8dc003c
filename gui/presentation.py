"""Presentation mode (View > Presentation, F11; Esc leaves): the window as a teacher projects it.

Full screen, a plain high-contrast look with large node labels (the panes zoom in), the side panels
reduced to the current explanation shown large beside the panes, and keyboard-only stepping:
Right or Space the next match, Left the previous one, N the next near miss. Each step to a match
animates ghost copies of its before boxes gliding onto the fused node in the after pane and fading
(ANIMATION_MS), then shows its explanation. Leaving puts back exactly what was there: geometry and
window state, docks and toolbars, splitter sizes, fonts, the look, each pane's zoom, and the
shortcuts presentation took over.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QEasingCurve, QObject, QPointF, QRect, QRectF, Qt, QVariantAnimation, Signal
from PySide6.QtGui import QAction, QFont, QKeySequence, QPainter, QPixmap, QTransform
from PySide6.QtWidgets import QDockWidget, QSplitter, QTextBrowser, QToolBar, QWidget

from fuselens.gui.actions import make_action
from fuselens.gui.graph_view import NORMAL_LOOK, GraphView, Look
from fuselens.gui.guard import safe_override
from fuselens.passes.base import Match, NearMiss
from fuselens.passes.explain_render import explanation_html

if TYPE_CHECKING:
    from fuselens.gui.host import PanelHost
    from fuselens.gui.match_list import MatchList
    from fuselens.gui.overlay import WhyNotOverlay
    from fuselens.gui.pane import Pane

ANIMATION_MS = 600
PRESENTATION_ZOOM = 1.5  # node labels large enough for the back of the room
READABLE_ZOOM = 1.0  # a match too big for PRESENTATION_ZOOM is shown whole down to this
TEXT_POINTS = 15.0  # the explanation beside the panes
HEADER_POINTS = 14.0
REASON_POINTS = 15.0  # the why-not card on the graph
# Plain and high-contrast: white boxes with black borders, so the diff colours (removed red, new green,
# changed amber) are what stands out on a projector; fused nodes keep a strong fill.
PRESENTATION_LOOK = Look(
    fills={category: "#ffffff" for category in NORMAL_LOOK.fills} | {"fused": "#f3c1f7"},
    borders={category: "#000000" for category in NORMAL_LOOK.borders},
    border_width=2.4,
    background="#ffffff",
)
KEYS = {"next": ("Right", "Space"), "previous": ("Left",), "near miss": ("N",), "leave": ("Esc",)}


@dataclass
class _Saved:
    """What presentation changes, as it was."""

    geometry: QRect  # where the window was, when it was neither maximised nor full screen
    state: QByteArray  # docks and toolbars
    window_state: Qt.WindowState
    sizes: list[int]
    side: QWidget  # the properties area the explanation replaced
    left_visible: bool
    menu_visible: bool
    status_visible: bool
    header_fonts: dict[str, QFont]
    transforms: dict[str, QTransform]
    centres: dict[str, QPointF]  # the scene point each pane showed in its middle
    reason_points: float
    disabled: list[QAction]  # the window's actions whose shortcuts presentation keys would clash with


class Ghosts(QWidget):
    """Ghost copies of before boxes on top of the window, each moving from its box to the fused node."""

    def __init__(self, parent: QWidget):
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.pieces: list[tuple[QPixmap, QRectF]] = []  # the box's picture and where it starts
        self.target = QRectF()
        self.progress = 0.0

    def rect_at(self, start: QRectF, progress: float) -> QRectF:
        """Between the box and the fused node: the centre glides, the size shrinks to the node's."""
        centre = start.center() + (self.target.center() - start.center()) * progress
        width = start.width() + (min(self.target.width(), start.width()) - start.width()) * progress
        height = start.height() + (min(self.target.height(), start.height()) - start.height()) * progress
        return QRectF(centre.x() - width / 2, centre.y() - height / 2, width, height)

    @safe_override()
    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        painter.setOpacity(max(0.0, 0.95 * (1.0 - self.progress ** 2)))  # fades as it lands
        for pixmap, start in self.pieces:
            painter.drawPixmap(self.rect_at(start, self.progress), pixmap, QRectF(pixmap.rect()))
        painter.end()


class Presentation(QObject):
    stepped = Signal(object)  # Match | NearMiss: its explanation is shown (after the animation)

    def __init__(self, host: PanelHost, parts: PresentationParts):
        window = host.window
        super().__init__(window)
        self.window = window  # full screen, its docks, toolbars and splitter saved and restored
        self.before, self.after = host.views["before"], host.views["after"]
        self.selection = host.selection
        self.panes, self.match_list, self.why_not = parts.panes, parts.match_list, parts.why_not
        self.active = False
        self.animate = True  # tests switch it off, or wait for `animation` to finish
        self.saved: _Saved | None = None
        self.panel = QTextBrowser()
        self.panel.setOpenLinks(False)
        self.panel.setObjectName("presentation-explanation")
        font = QFont()
        font.setPointSizeF(TEXT_POINTS)
        self.panel.setFont(font)
        self.ghosts = Ghosts(window)
        self.ghosts.hide()
        self.animation = QVariantAnimation(self)
        self.animation.setStartValue(0.0)
        self.animation.setEndValue(1.0)
        self.animation.setDuration(ANIMATION_MS)
        self.animation.setEasingCurve(QEasingCurve.Type.InOutCubic)
        self.animation.valueChanged.connect(self._on_frame)
        self.animation.finished.connect(self._landed)
        self._landing: Match | NearMiss | None = None
        self.toggle_action = make_action(window, "Presentation", self.toggle, ["F11"],
                                         "Presentation mode: full screen, large, keyboard stepping "
                                         "(Right/Space next match, Left previous, N next near miss, Esc leaves)")
        self.toggle_action.setCheckable(True)
        window.addAction(self.toggle_action)  # F11 still works with the menu bar hidden
        self.keys = {
            "next": make_action(window, "Next match (presenting)", lambda: self.step(1, Match), list(KEYS["next"])),
            "previous": make_action(window, "Previous match (presenting)", lambda: self.step(-1, Match),
                                    list(KEYS["previous"])),
            "near miss": make_action(window, "Next near miss (presenting)", lambda: self.step(1, NearMiss),
                                     list(KEYS["near miss"])),
            "leave": make_action(window, "Leave presentation", self.leave, list(KEYS["leave"])),
        }
        for action in self.keys.values():
            action.setEnabled(False)
            window.addAction(action)

    # ---- entering and leaving ---------------------------------------------------------------------
    def toggle(self) -> None:
        if self.active:
            self.leave()
        else:
            self.enter()

    def enter(self) -> None:
        if self.active:
            return
        w = self.window
        main = self._splitter()
        ours = {*self.keys.values(), self.toggle_action}
        taken = {QKeySequence(k).toString() for keys in KEYS.values() for k in keys}
        clashing = [a for a in w.findChildren(QAction) if a not in ours and a.isEnabled()
                    and any(s.toString() in taken for s in a.shortcuts())]
        self.saved = _Saved(
            geometry=QRect(w.geometry()), state=w.saveState(), window_state=w.windowState(), sizes=main.sizes(),
            side=main.widget(2), left_visible=main.widget(0).isVisible(), menu_visible=w.menuBar().isVisible(),
            status_visible=w.statusBar().isVisible(),
            header_fonts={s: QFont(p.header.font()) for s, p in self.panes.items()},
            transforms={s: QTransform(p.view.transform()) for s, p in self.panes.items()},
            centres={s: p.view.mapToScene(p.view.viewport().rect().center()) for s, p in self.panes.items()},
            reason_points=self.why_not.label_points, disabled=clashing)
        self.active = True
        for action in clashing:
            action.setEnabled(False)
        for dock in w.findChildren(QDockWidget):
            dock.hide()
        for toolbar in w.findChildren(QToolBar):
            toolbar.hide()
        w.menuBar().hide()
        w.statusBar().hide()
        main.widget(0).hide()
        main.replaceWidget(2, self.panel)
        self.panel.show()
        header = QFont()
        header.setPointSizeF(HEADER_POINTS)
        header.setBold(True)
        for pane in self.panes.values():
            pane.header.setFont(header)
            pane.view.set_look(PRESENTATION_LOOK)
        self.why_not.label_points = REASON_POINTS
        self.why_not.redraw()
        for action in self.keys.values():
            action.setEnabled(True)
        self.toggle_action.setChecked(True)
        w.showFullScreen()
        width = max(w.width(), 1200)
        main.setSizes([0, int(width * 0.66), int(width * 0.34)])
        self._zoom_panes()
        self._show_explanation(self.match_list.current_record())
        self.before.setFocus()

    def leave(self) -> None:
        if not self.active or self.saved is None:
            return
        self.animation.stop()
        self.ghosts.hide()
        w, saved, main = self.window, self.saved, self._splitter()
        for action in self.keys.values():
            action.setEnabled(False)
        for action in saved.disabled:
            action.setEnabled(True)
        main.replaceWidget(2, saved.side)
        saved.side.show()
        self.panel.setParent(None)
        main.widget(0).setVisible(saved.left_visible)
        w.menuBar().setVisible(saved.menu_visible)
        w.statusBar().setVisible(saved.status_visible)
        w.setWindowState(saved.window_state)
        if not saved.window_state & (Qt.WindowState.WindowMaximized | Qt.WindowState.WindowFullScreen):
            w.setGeometry(saved.geometry)
        w.restoreState(saved.state)
        main.setSizes(saved.sizes)
        for side, pane in self.panes.items():
            pane.header.setFont(saved.header_fonts[side])
            pane.view.set_look(NORMAL_LOOK)
            pane.view.setTransform(saved.transforms[side])
            pane.view.centerOn(saved.centres[side])
        self.why_not.label_points = saved.reason_points
        self.toggle_action.setChecked(False)
        self.active, self.saved = False, None
        self.why_not.redraw()

    def _splitter(self) -> QSplitter:
        return self.window.centralWidget()

    # ---- stepping -----------------------------------------------------------------------------------
    def step(self, delta: int, kind: type[Match] | type[NearMiss]) -> None:
        """One step of the demo: select the next record of `kind`; a match's boxes collapse into its
        fused node before its explanation shows."""
        self.animation.stop()
        self.ghosts.hide()
        record = self.match_list.step(delta, kind)
        if record is None:
            self.panel.setHtml(f"<p>No {'matches' if kind is Match else 'near misses'} to step through.</p>")
            return
        self._zoom_panes()
        if isinstance(record, Match) and self.animate and self._start_collapse(record):
            return
        self._show_explanation(record)

    def _zoom_panes(self) -> None:
        """Large boxes: each pane at PRESENTATION_ZOOM centred on what is selected, or less when that
        takes more room (a 14-node LayerNorm), down to READABLE_ZOOM."""
        for view in (self.before, self.after):
            zoom = PRESENTATION_ZOOM
            selected = _union(view, view.selected_keys)
            if not selected.isNull():
                room = view.viewport().rect()
                fits = min(room.width() / (selected.width() + 80), room.height() / (selected.height() + 80))
                zoom = max(min(zoom, fits), READABLE_ZOOM)
            view.resetTransform()
            view.scale(zoom, zoom)
            if not selected.isNull():
                view.centerOn(selected.center())

    def _start_collapse(self, match: Match) -> bool:
        """Ghost copies of the match's before boxes, animated onto its node in the after pane; False
        when either side is not drawn (a pane still laying out), so the explanation shows at once."""
        w = self.window
        before_keys = self.before.keys_for(match.nodes)
        after_keys = self.after.keys_for(self.selection.current.after)
        if not before_keys or not after_keys:
            return False
        self.ghosts.setGeometry(w.rect())
        self.ghosts.pieces = [(self.before.viewport().grab(rect), QRectF(self._in_window(self.before, rect)))
                              for rect in (_viewport_rect(self.before, key) for key in before_keys)]
        self.ghosts.target = QRectF(self._in_window(self.after, _viewport_rect(self.after, *after_keys)))
        self.ghosts.progress = 0.0
        self.ghosts.raise_()
        self.ghosts.show()
        self._landing = match
        self.animation.start()
        return True

    def _in_window(self, view: GraphView, rect: QRect) -> QRect:
        return QRect(view.viewport().mapTo(self.window, rect.topLeft()), rect.size())

    def _on_frame(self, value: float) -> None:
        self.ghosts.progress = float(value)
        self.ghosts.update()

    def _landed(self) -> None:
        self.ghosts.hide()
        if self._landing is not None:
            self._show_explanation(self._landing)
            self._landing = None

    def refresh(self) -> None:
        """The current record's explanation again (the window explains its matches after drawing them)."""
        if self.active and self._landing is None:
            self.panel.setHtml(explanation_page(self.match_list.current_record()))

    def _show_explanation(self, record: Match | NearMiss | None) -> None:
        self.panel.setHtml(explanation_page(record))
        if record is not None:
            self.stepped.emit(record)


def explanation_page(record: Match | NearMiss | None) -> str:
    """What the room reads beside the panes: the match's explanation with its numbers, or why not."""
    esc = html.escape
    if record is None:
        return ("<h3>Presentation</h3><p>Right or Space: next match<br>Left: previous match<br>"
                "N: next near miss<br>Esc: leave</p>")
    if isinstance(record, NearMiss):
        at_fault = ", ".join(record.culprit.nodes) or "the structure as a whole"
        return (f"<h3 style='color:#b3261e'>✘ Why not: {esc(record.pass_id)}</h3>"
                f"<p><b>{esc(record.anchor)}</b></p><p>{esc(record.reason)}</p>"
                f"<p><i>At fault (red on the graph):</i> {esc(at_fault)}</p>")
    body = explanation_html(record.explanation) or f"<p>{esc(record.summary)}</p>"
    return (f"<h3 style='color:#137333'>✔ {esc(record.pass_id)} #{record.index}</h3>"
            f"<p>{esc(record.summary)}</p>{body}")


def _viewport_rect(view: GraphView, *keys: str) -> QRect:
    return view.mapFromScene(_union(view, keys)).boundingRect()


def _union(view: GraphView, keys) -> QRectF:
    rect = QRectF()
    for key in keys:
        rect = rect.united(view.items_by_key[key].sceneBoundingRect())
    return rect


@dataclass(frozen=True)
class PresentationParts:
    """What presenting drives beside the host's window: the panes it zooms and restyles, the match list it
    steps, the near-miss overlay whose labels it enlarges."""

    panes: Mapping[str, Pane]
    match_list: MatchList
    why_not: WhyNotOverlay


def install_presentation(host: PanelHost, parts: PresentationParts) -> Presentation:
    """The Presentation action in the View menu (F11) and its keys; returns the controller."""
    presentation = Presentation(host, parts)
    view_menu = host.menu("&View")
    view_menu.addSeparator()
    view_menu.addAction(presentation.toggle_action)
    return presentation
