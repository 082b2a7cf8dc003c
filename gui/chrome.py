"""The main window's chrome: the splitters around the panes, the actions with their menus and
toolbar, and the status bar. Built once; the window itself only wires things together."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QLabel, QMainWindow, QSplitter, QToolButton

from gui.actions import make_action
from gui.dialogs import save_dialog
from gui.match_filter import MatchFilterBar
from gui.pane import legend_html, titled
from gui.search import search_box
from gui.workers import WorkIndicator
from passes.base import NearMiss

if TYPE_CHECKING:
    from gui.main_window import MainWindow


def build_chrome(window: MainWindow) -> None:
    _build_central(window)
    _build_menus(window)
    _build_status_bar(window)


def _build_central(window: MainWindow) -> None:
    left = QSplitter(Qt.Orientation.Vertical, window)
    left.addWidget(titled("Passes", window.pass_panel))
    window.match_filter = MatchFilterBar(window.match_list, window)
    left.addWidget(titled("Matches and near misses", window.match_filter))
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


def _build_status_bar(window: MainWindow) -> None:
    window.work = WorkIndicator(window.workers, window)
    window.statusBar().addPermanentWidget(QLabel(legend_html(), window))
    window.statusBar().addPermanentWidget(window.work)
    window.statusBar().showMessage("Open a model (Ctrl+O) or a sample (Ctrl+Shift+O), or drop a file here")


def _build_menus(window: MainWindow) -> None:
    """The window's actions (`window.open_action`, `window.next_action`, ...), menus and toolbar."""
    window.open_action = make_action(window, "Open…", window.open_dialog, QKeySequence.StandardKey.Open)
    window.samples_action = make_action(window, "Samples…", window.samples_dialog, "Ctrl+Shift+O")
    window.next_action = make_action(window, "Next match", lambda: window.step_match(1), ["N", "F3", "Alt+Down"],
                                    "Next match (N, F3, Alt+Down); near misses have their own stepping")
    window.prev_action = make_action(window, "Previous match", lambda: window.step_match(-1),
                                    ["Shift+N", "Shift+F3", "Alt+Up"], "Previous match (Shift+N, Shift+F3, Alt+Up)")
    window.next_miss_action = make_action(window, "Next near miss", lambda: window.step_match(1, NearMiss),
                                        ["Ctrl+F3"], "Next near miss: why something did not fuse (Ctrl+F3)")
    window.prev_miss_action = make_action(window, "Previous near miss", lambda: window.step_match(-1, NearMiss),
                                        ["Ctrl+Shift+F3"], "Previous near miss (Ctrl+Shift+F3)")
    window.fit_action = make_action(window, "Fit", window.fit_both, tip="Fit both panes (F in a pane)")
    window.find_action = make_action(window, "Find", window.focus_search, QKeySequence.StandardKey.Find)
    window.export_svg_action = make_action(window, "Graph as SVG…", lambda: window.export_graph_dialog("svg"))
    window.export_png_action = make_action(window, "Graph as PNG…", lambda: window.export_graph_dialog("png"))
    status = window.statusBar()
    window.export_pb_action = make_action(window, "Fused model (.pb)…", lambda: save_dialog(
        window, "Export the fused model", "fused.pb", "GraphDef (*.pb)", window.session.export_fused_pb, status))
    window.export_report_action = make_action(window, "Fuse report (JSON)…", lambda: save_dialog(
        window, "Export the fuse report", "report.json", "JSON (*.json)", window.session.export_report, status))
    window.export_lesson_action = make_action(window, "Export lesson…", lambda: save_dialog(
        window, "Export a lesson", "lesson.html", "Lesson (*.html *.md)", window.export_lesson, status),
        tip="Every match drawn before/after and explained with its numbers, in one page that opens offline")
    window.export_lesson_selected_action = make_action(
        window, "Export lesson of the selected matches…", lambda: _export_selected_lesson(window),
        tip="Only the matches selected in the match list (Ctrl+click or Shift+click to choose several)")
    window.export_lesson_selected_action.setEnabled(False)
    window.match_list.itemSelectionChanged.connect(lambda: window.export_lesson_selected_action.setEnabled(
        bool(window.match_list.selected_match_ids())))

    file_menu = window.menuBar().addMenu("&File")
    window.open_dumps_action = make_action(window, "Open GE dump folder…", lambda: window.stages_panel.open_dialog(),
                                         "Ctrl+Shift+D", "the toolchain's graph dumps (DUMP_GE_GRAPH), by stage")
    file_menu.addActions([window.open_action, window.samples_action, window.open_dumps_action])
    window.recent_menu = file_menu.addMenu("Open recent")
    window.recent_menu.aboutToShow.connect(lambda: window.recent.fill(window.recent_menu, window.open_model))
    export_menu = file_menu.addMenu("Export")
    export_menu.addActions([window.export_svg_action, window.export_png_action, window.export_pb_action,
                            window.export_report_action])
    file_menu.addActions([window.export_lesson_action, window.export_lesson_selected_action])
    file_menu.addSeparator()
    file_menu.addAction(make_action(window, "Quit", window.close, QKeySequence.StandardKey.Quit))
    window.view_menu = view_menu = window.menuBar().addMenu("&View")
    view_menu.addActions([window.fit_action, window.find_action, window.prev_action, window.next_action,
                          window.prev_miss_action, window.next_miss_action])

    toolbar = window.addToolBar("Main")
    toolbar.setObjectName("main-toolbar")
    toolbar.addActions([window.open_action, window.samples_action])
    export_button = QToolButton(window)
    export_button.setText("Export")
    export_button.setMenu(export_menu)
    export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
    toolbar.addWidget(export_button)
    toolbar.addSeparator()
    toolbar.addActions([window.prev_action, window.next_action, window.fit_action])
    toolbar.addSeparator()
    window.search, window.search_status = search_box(window)
    toolbar.addWidget(window.search)
    toolbar.addWidget(window.search_status)


def _export_selected_lesson(window: MainWindow) -> None:
    """A lesson of the matches selected in the match list (the list may have changed since the menu was built)."""
    chosen = window.match_list.selected_match_ids()
    if not chosen:
        window.statusBar().showMessage("Select matches in the match list first (Ctrl+click, Shift+click)", 5000)
        return
    save_dialog(window, f"Export a lesson of {len(chosen)} matches", "lesson.html", "Lesson (*.html *.md)",
                lambda path: window.export_lesson(path, chosen), window.statusBar())
