"""The main window's chrome: the splitters around the panes, the actions with their menus and
toolbar, and the status bar. Built once into a `Chrome` the window keeps; the window itself only
wires things together, and panels add their menus and docks through gui/host.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMenu,
    QSplitter,
    QToolBar,
    QToolButton,
)

from fuselens.gui.actions import make_action
from fuselens.gui.dialogs import MODEL_FILTER, SamplesDialog, save_dialog, show_error
from fuselens.gui.match_filter import MatchFilterBar
from fuselens.gui.pane import legend_html, titled
from fuselens.gui.search import search_box
from fuselens.gui.workers import WorkIndicator
from fuselens.passes.base import NearMiss

if TYPE_CHECKING:
    from fuselens.gui.main_window import MainWindow


@dataclass
class Chrome:
    """The window's actions, menus, toolbar and the widgets of its frame."""

    open_action: QAction
    samples_action: QAction
    open_dumps_action: QAction  # the stages panel connects it (gui/stages_panel.py)
    next_action: QAction
    prev_action: QAction
    next_miss_action: QAction
    prev_miss_action: QAction
    fit_action: QAction
    find_action: QAction
    export_svg_action: QAction
    export_png_action: QAction
    export_pb_action: QAction
    export_report_action: QAction
    export_lesson_action: QAction
    export_lesson_selected_action: QAction
    file_menu: QMenu
    recent_menu: QMenu
    export_menu: QMenu
    view_menu: QMenu
    toolbar: QToolBar
    search: QLineEdit
    search_status: QLabel
    match_filter: MatchFilterBar
    work: WorkIndicator


def build_chrome(window: MainWindow) -> Chrome:
    match_filter = _build_central(window)
    work = _build_status_bar(window)
    return _build_menus(window, match_filter, work)


def _build_central(window: MainWindow) -> MatchFilterBar:
    left = QSplitter(Qt.Orientation.Vertical, window)
    left.addWidget(titled("Passes", window.pass_panel))
    match_filter = MatchFilterBar(window.match_list, window)
    left.addWidget(titled("Matches and near misses", match_filter))
    left.setSizes([420, 420])
    graphs = QSplitter(Qt.Orientation.Horizontal, window)
    graphs.addWidget(window.panes["before"])
    graphs.addWidget(window.panes["after"])
    main = QSplitter(Qt.Orientation.Horizontal, window)
    main.addWidget(left)
    main.addWidget(graphs)
    main.addWidget(titled("Properties", window.properties))
    main.setStretchFactor(1, 1)
    main.setSizes([360, 900, 320])
    window.setCentralWidget(main)
    window.setDockOptions(QMainWindow.DockOption.AnimatedDocks | QMainWindow.DockOption.AllowTabbedDocks)
    return match_filter


def _build_status_bar(window: MainWindow) -> WorkIndicator:
    work = WorkIndicator(window.workers, window)
    window.statusBar().addPermanentWidget(QLabel(legend_html(), window))
    window.statusBar().addPermanentWidget(work)
    window.statusBar().showMessage("Open a model (Ctrl+O) or a sample (Ctrl+Shift+O), or drop a file here")
    return work


def _build_menus(window: MainWindow, match_filter: MatchFilterBar, work: WorkIndicator) -> Chrome:
    """The window's actions, menus and toolbar."""
    def action(*args, **kwargs) -> QAction:
        return make_action(window, *args, **kwargs)

    status, session = window.statusBar(), window.session
    open_action = action("Open…", lambda: _open_dialog(window), QKeySequence.StandardKey.Open)
    samples_action = action("Samples…", lambda: _samples_dialog(window), "Ctrl+Shift+O")
    next_action = action("Next match", lambda: window.step_match(1), ["N", "F3", "Alt+Down"],
                         "Next match (N, F3, Alt+Down); near misses have their own stepping")
    prev_action = action("Previous match", lambda: window.step_match(-1), ["Shift+N", "Shift+F3", "Alt+Up"],
                         "Previous match (Shift+N, Shift+F3, Alt+Up)")
    next_miss_action = action("Next near miss", lambda: window.step_match(1, NearMiss), ["Ctrl+F3"],
                              "Next near miss: why something did not fuse (Ctrl+F3)")
    prev_miss_action = action("Previous near miss", lambda: window.step_match(-1, NearMiss), ["Ctrl+Shift+F3"],
                              "Previous near miss (Ctrl+Shift+F3)")
    fit_action = action("Fit", window.fit_both, tip="Fit both panes (F in a pane)")
    find_action = action("Find", lambda: _focus_search(search), QKeySequence.StandardKey.Find)
    export_svg_action = action("Graph as SVG…", lambda: _export_graph_dialog(window, "svg"))
    export_png_action = action("Graph as PNG…", lambda: _export_graph_dialog(window, "png"))
    export_pb_action = action("Fused model (.pb)…", lambda: save_dialog(
        window, "Export the fused model", "fused.pb", "GraphDef (*.pb)", session.export_fused_pb, status))
    export_report_action = action("Fuse report (JSON)…", lambda: save_dialog(
        window, "Export the fuse report", "report.json", "JSON (*.json)", session.export_report, status))
    export_lesson_action = action("Export lesson…", lambda: save_dialog(
        window, "Export a lesson", "lesson.html", "Lesson (*.html *.md)", lambda path: export_lesson(window, path),
        status), tip="Every match drawn before/after and explained with its numbers, in one page that opens offline")
    export_lesson_selected_action = action(
        "Export lesson of the selected matches…", lambda: _export_selected_lesson(window),
        tip="Only the matches selected in the match list (Ctrl+click or Shift+click to choose several)")
    export_lesson_selected_action.setEnabled(False)
    window.match_list.itemSelectionChanged.connect(lambda: export_lesson_selected_action.setEnabled(
        bool(window.match_list.selected_match_ids())))

    file_menu = window.menuBar().addMenu("&File")
    open_dumps_action = action("Open GE dump folder…", None, "Ctrl+Shift+D",
                               "the toolchain's graph dumps (DUMP_GE_GRAPH), by stage")
    file_menu.addActions([open_action, samples_action, open_dumps_action])
    recent_menu = file_menu.addMenu("Open recent")
    recent_menu.aboutToShow.connect(lambda: window.recent.fill(recent_menu, window.open_model))
    export_menu = file_menu.addMenu("Export")
    export_menu.addActions([export_svg_action, export_png_action, export_pb_action, export_report_action])
    file_menu.addActions([export_lesson_action, export_lesson_selected_action])
    file_menu.addSeparator()
    file_menu.addAction(action("Quit", window.close, QKeySequence.StandardKey.Quit))
    view_menu = window.menuBar().addMenu("&View")
    view_menu.addActions([fit_action, find_action, prev_action, next_action, prev_miss_action, next_miss_action])

    toolbar = window.addToolBar("Main")
    toolbar.setObjectName("main-toolbar")
    toolbar.addActions([open_action, samples_action])
    export_button = QToolButton(window)
    export_button.setText("Export")
    export_button.setMenu(export_menu)
    export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
    toolbar.addWidget(export_button)
    toolbar.addSeparator()
    toolbar.addActions([prev_action, next_action, fit_action])
    toolbar.addSeparator()
    search, search_status = search_box(window)
    toolbar.addWidget(search)
    toolbar.addWidget(search_status)
    return Chrome(open_action, samples_action, open_dumps_action, next_action, prev_action, next_miss_action,
                  prev_miss_action, fit_action, find_action, export_svg_action, export_png_action, export_pb_action,
                  export_report_action, export_lesson_action, export_lesson_selected_action, file_menu, recent_menu,
                  export_menu, view_menu, toolbar, search, search_status, match_filter, work)


# ---- what the actions do --------------------------------------------------------------------------
def _open_dialog(window: MainWindow) -> None:
    path, _ = QFileDialog.getOpenFileName(window, "Open model", "", MODEL_FILTER)
    if path:
        window.open_model(path)


def _samples_dialog(window: MainWindow) -> None:
    dialog = SamplesDialog(window)
    if dialog.exec() == QDialog.DialogCode.Accepted and dialog.chosen():
        window.open_model(dialog.chosen())


def _focus_search(search: QLineEdit) -> None:
    search.setFocus()
    search.selectAll()


def export_lesson(window: MainWindow, path: str, match_ids: list[str] | None = None) -> None:
    """In a worker: each match's neighbourhood is laid out with dot, seconds on a big model. Every match,
    or those of `match_ids` (the ones selected in the match list)."""
    window.workers.start(
        "lesson", "lesson export", lambda _progress, _cancelled: window.session.export_lesson(path, match_ids),
        on_finished=lambda written: window.statusBar().showMessage(f"Lesson written to {written}", 10000),
        on_error=lambda text: show_error(window, "Export a lesson failed", text, window.statusBar()))


def _export_selected_lesson(window: MainWindow) -> None:
    """A lesson of the matches selected in the match list (the list may have changed since the menu was built)."""
    chosen = window.match_list.selected_match_ids()
    if not chosen:
        window.statusBar().showMessage("Select matches in the match list first (Ctrl+click, Shift+click)", 5000)
        return
    save_dialog(window, f"Export a lesson of {len(chosen)} matches", "lesson.html", "Lesson (*.html *.md)",
                lambda path: export_lesson(window, path, chosen), window.statusBar())


def _export_graph_dialog(window: MainWindow, kind: str) -> None:
    side = "after" if window.after.hasFocus() and window.panes["after"].shown else "before"
    if window.panes[side].shown is not None:
        save_dialog(window, f"Export the {side} graph", f"{side}.{kind}", f"{kind.upper()} (*.{kind})",
                    window.panes[side].view.export_image, window.statusBar())
