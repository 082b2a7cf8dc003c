"""The FuseLens main window: passes and matches | before and after panes | properties, plus a bottom dock area.

The window wires widgets to one shared SelectionModel and runs load, layout and fusion in
workers; it holds no fusion logic. Other panels (the run and profile dock) attach through
`add_bottom_dock`, read `selection`, and colour nodes through `set_heat`.
"""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QDockWidget,
    QFileDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from core.errors import FuseLensError
from core.fused import FUSION_PASS_ATTR
from core.graph import Graph
from core.io import write_bytes_atomic, write_json_atomic
from core.layout import SCOPE_PREFIX, Layout, LayoutCache, default_cache, layout_graph
from core.loaders import LoadedModel, load_model
from core.opclass import CATEGORY_TITLES, PALETTE
from core.samples import SAMPLES, is_built
from gui.graph_view import DIFF_COLOURS, GraphView
from gui.match_list import MatchList
from gui.pass_panel import PassPanel
from gui.properties import FusedBodyDialog, PropertiesPanel
from gui.run_panel import install_run_panel
from gui.selection import Selection, SelectionModel
from gui.workers import WorkerPool
from passes.registry import PipelineResult, run_pipeline

MAX_RECENT = 8
MODEL_FILTER = "TensorFlow models (*.pb *.pbtxt *.keras *.h5 saved_model.pb);;All files (*)"
SIDES = ("before", "after")


_frozen = False


def freeze_long_lived_objects() -> None:
    """Move everything alive now (TensorFlow's modules, once a pass imported them) out of the GC's view.

    A full collection over TensorFlow's millions of objects takes 100-200 ms and holds the GIL,
    freezing the window whichever thread triggers it. Done once: cyclic garbage that exists at
    that moment is never collected, which is bounded and small.
    """
    global _frozen
    if not _frozen and "tensorflow" in sys.modules:
        gc.freeze()
        _frozen = True


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


class SamplesDialog(QDialog):
    """The sample gallery: every built-in sample with its description."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Samples")
        self.resize(640, 480)
        self.list = QListWidget(self)
        self.list.setWordWrap(True)
        for sample in SAMPLES.values():
            note = "" if not sample.cached or is_built(sample.name) else "  (built on first use, about a minute)"
            item = QListWidgetItem(f"{sample.name}  [{', '.join(sample.families)}]{note}\n    {sample.description}")
            item.setData(Qt.ItemDataRole.UserRole, sample.name)
            self.list.addItem(item)
        self.list.setCurrentRow(0)
        self.list.itemDoubleClicked.connect(lambda _item: self.accept())
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.list)
        layout.addWidget(buttons)

    def chosen(self) -> str | None:
        item = self.list.currentItem()
        return item.data(Qt.ItemDataRole.UserRole) if item is not None else None


class MainWindow(QMainWindow):
    model_loaded = Signal(object)  # LoadedModel
    fusion_done = Signal(object)  # PipelineResult
    layout_done = Signal(str)  # side

    def __init__(self, *, settings: QSettings | None = None, layout_cache: LayoutCache | None = None):
        super().__init__()
        self.setWindowTitle("FuseLens")
        self.resize(1500, 900)
        self.setAcceptDrops(True)
        self.settings = settings if settings is not None else QSettings("FuseLens", "FuseLens")
        self.layout_cache = layout_cache if layout_cache is not None else default_cache()
        self.workers = WorkerPool(self)
        self.selection = SelectionModel(self)
        self.model: LoadedModel | None = None
        self.pipeline: PipelineResult | None = None
        self.layouts: dict[str, Layout | None] = dict.fromkeys(SIDES)
        self.collapsed: dict[str, frozenset[str]] = dict.fromkeys(SIDES, frozenset())
        self._fusion_deferred = False
        self._before_has_inferred_shapes = False
        self._search_hits: list[tuple[str, str]] = []
        self._search_index = -1

        self.pass_panel = PassPanel(self)
        self.match_list = MatchList(self)
        self.properties = PropertiesPanel(self)
        self.panes = {"before": Pane("Before (original)", self), "after": Pane("After (fused)", self)}
        self.before, self.after = self.panes["before"].view, self.panes["after"].view
        self._build_central()
        self._build_actions()
        self._build_status_bar()
        self._fuse_timer = QTimer(self, singleShot=True, interval=150)  # several quick toggles, one run
        self._fuse_timer.timeout.connect(self.run_fusion)
        self._connect()
        self.run_panel = install_run_panel(self)  # the Run & profile dock, Run menu and toolbar action

    # ---- construction ---------------------------------------------------------------------------
    def _build_central(self) -> None:
        left = QSplitter(Qt.Orientation.Vertical, self)
        left.addWidget(self._titled("Passes", self.pass_panel))
        left.addWidget(self._titled("Matches and near misses", self.match_list))
        left.setSizes([420, 420])
        graphs = QSplitter(Qt.Orientation.Horizontal, self)
        graphs.addWidget(self.panes["before"])
        graphs.addWidget(self.panes["after"])
        main = QSplitter(Qt.Orientation.Horizontal, self)
        main.addWidget(left)
        main.addWidget(graphs)
        main.addWidget(self._titled("Properties", self.properties))
        main.setStretchFactor(1, 1)
        main.setSizes([360, 900, 320])
        self.setCentralWidget(main)
        self.setDockOptions(QMainWindow.DockOption.AnimatedDocks | QMainWindow.DockOption.AllowTabbedDocks)

    @staticmethod
    def _titled(title: str, widget: QWidget) -> QWidget:
        box = QWidget()
        label = QLabel(title, box)
        label.setStyleSheet("font-weight: 600; padding: 2px 4px;")
        layout = QVBoxLayout(box)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.setSpacing(2)
        layout.addWidget(label)
        layout.addWidget(widget, 1)
        return box

    def _action(self, text: str, handler: Callable[[], Any], shortcut: Any = None, tip: str = "") -> QAction:
        action = QAction(text, self)
        action.triggered.connect(handler)
        if shortcut is not None:
            shortcuts = shortcut if isinstance(shortcut, list) else [shortcut]
            action.setShortcuts([QKeySequence(s) for s in shortcuts])
        if tip:
            action.setToolTip(tip)
        return action

    def _build_actions(self) -> None:
        self.open_action = self._action("Open…", self.open_dialog, QKeySequence.StandardKey.Open)
        self.samples_action = self._action("Samples…", self.samples_dialog, "Ctrl+Shift+O")
        self.next_action = self._action("Next match", lambda: self.step_match(1), ["N", "F3", "Alt+Down"],
                                        "Next match or near miss (N, F3, Alt+Down)")
        self.prev_action = self._action("Previous match", lambda: self.step_match(-1),
                                        ["Shift+N", "Shift+F3", "Alt+Up"],
                                        "Previous match or near miss (Shift+N, Shift+F3, Alt+Up)")
        self.fit_action = self._action("Fit", self.fit_both, tip="Fit both panes (F in a pane)")
        self.find_action = self._action("Find", self.focus_search, QKeySequence.StandardKey.Find)
        self.export_svg_action = self._action("Graph as SVG…", lambda: self._export_dialog("svg"))
        self.export_png_action = self._action("Graph as PNG…", lambda: self._export_dialog("png"))
        self.export_pb_action = self._action("Fused model (.pb)…", self._export_pb_dialog)
        self.export_report_action = self._action("Fuse report (JSON)…", self._export_report_dialog)

        file_menu = self.menuBar().addMenu("&File")
        file_menu.addActions([self.open_action, self.samples_action])
        self.recent_menu = file_menu.addMenu("Open recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        export_menu = file_menu.addMenu("Export")
        export_menu.addActions([self.export_svg_action, self.export_png_action, self.export_pb_action,
                                self.export_report_action])
        file_menu.addSeparator()
        file_menu.addAction(self._action("Quit", self.close, QKeySequence.StandardKey.Quit))
        view_menu = self.menuBar().addMenu("&View")
        view_menu.addActions([self.fit_action, self.find_action, self.prev_action, self.next_action])

        toolbar = self.addToolBar("Main")
        toolbar.setObjectName("main-toolbar")
        toolbar.addActions([self.open_action, self.samples_action])
        export_button = QToolButton(self)
        export_button.setText("Export")
        export_button.setMenu(export_menu)
        export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        toolbar.addWidget(export_button)
        toolbar.addSeparator()
        toolbar.addActions([self.prev_action, self.next_action, self.fit_action])
        toolbar.addSeparator()
        self.search = QLineEdit(self)
        self.search.setPlaceholderText("Find node or op type (Ctrl+F)")
        self.search.setClearButtonEnabled(True)
        self.search.setMaximumWidth(280)
        toolbar.addWidget(self.search)
        self.search_status = QLabel("", self)
        toolbar.addWidget(self.search_status)

    def _build_status_bar(self) -> None:
        self.progress = QProgressBar(self)
        self.progress.setRange(0, 0)
        self.progress.setMaximumWidth(160)
        self.progress.hide()
        self.cancel_button = QToolButton(self)
        self.cancel_button.setText("Cancel")
        self.cancel_button.hide()
        self.cancel_button.clicked.connect(self.cancel_work)
        self.statusBar().addPermanentWidget(QLabel(legend_html(), self))
        self.statusBar().addPermanentWidget(self.progress)
        self.statusBar().addPermanentWidget(self.cancel_button)
        self.statusBar().showMessage("Open a model (Ctrl+O) or a sample (Ctrl+Shift+O), or drop a file here")

    def _connect(self) -> None:
        self.workers.busy_changed.connect(self._on_busy)
        self.before.painted.connect(self._start_deferred_fusion)
        self.selection.changed.connect(self._on_selection)
        self.pass_panel.changed.connect(self._fuse_timer.start)
        self.match_list.item_chosen.connect(lambda item: self.selection.select_item(item))
        self.search.textChanged.connect(self._on_search_text)
        self.search.returnPressed.connect(self.next_search_hit)
        for side, view in (("before", self.before), ("after", self.after)):
            view.node_clicked.connect(lambda key, s=side: self.select_key(s, key))
            view.background_clicked.connect(self.selection.clear)
            view.node_activated.connect(lambda key, s=side: self._on_activated(s, key))
            view.collapse_requested.connect(lambda scopes, s=side: self.set_collapsed(s, scopes))
            view.built.connect(lambda s=side: self._on_built(s))

    # ---- public API for other panels --------------------------------------------------------------
    def add_bottom_dock(self, widget: QWidget, title: str) -> QDockWidget:
        """Attach a panel (e.g. run and profile) in the bottom dock area."""
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock-{title}")
        dock.setWidget(widget)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
        return dock

    def set_heat(self, side: str, values: dict[str, float] | None) -> None:
        """Colour one pane's nodes by an outside value per graph node (None: back to op classes)."""
        self.panes[side].view.set_heat(values)

    def is_idle(self) -> bool:
        """No work running or about to start (tests and benchmarks wait for this)."""
        return (not self.workers.busy() and not self._fuse_timer.isActive() and not self._fusion_deferred
                and not self.before.building and not self.after.building)

    def graph(self, side: str) -> Graph | None:
        if side == "before":
            return self.model.graph if self.model else None
        return self.pipeline.fused if self.pipeline else None

    # ---- opening ------------------------------------------------------------------------------------
    def open_model(self, spec: str) -> None:
        self.statusBar().showMessage(f"Loading {spec}…")
        self.workers.start("load", f"loading {spec}", lambda progress, cancelled: load_model(spec),
                           on_finished=lambda model: self._on_loaded(spec, model),
                           on_error=lambda text: self._error("Cannot open model", text))

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open model", "", MODEL_FILTER)
        if path:
            self.open_model(path)

    def samples_dialog(self) -> None:
        dialog = SamplesDialog(self)
        if dialog.exec() == QDialog.DialogCode.Accepted and dialog.chosen():
            self.open_model(dialog.chosen())

    def recent_files(self) -> list[str]:
        value = self.settings.value("recent", [])
        return [value] if isinstance(value, str) else list(value or [])

    def _remember_recent(self, spec: str) -> None:
        recent = [spec] + [r for r in self.recent_files() if r != spec]
        self.settings.setValue("recent", recent[:MAX_RECENT])

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        for spec in self.recent_files():
            self.recent_menu.addAction(spec, lambda s=spec: self.open_model(s))
        if not self.recent_files():
            self.recent_menu.addAction("(none)").setEnabled(False)

    def dragEnterEvent(self, event) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        for url in event.mimeData().urls():
            if url.isLocalFile():
                self.open_model(url.toLocalFile())
                return

    def _on_loaded(self, spec: str, model: LoadedModel) -> None:
        self.model = model
        self.pipeline = None
        self.layouts = dict.fromkeys(SIDES)
        self.collapsed = dict.fromkeys(SIDES, frozenset())
        self.selection.set_provenance(None)
        self.selection.clear()
        self.match_list.set_results([])
        self.setWindowTitle(f"FuseLens — {model.name}")
        self._remember_recent(spec)
        self.statusBar().showMessage(f"{model.name}: {len(model.graph)} nodes")
        self.model_loaded.emit(model)
        self._fusion_deferred = True  # the original graph is painted first, then fusion starts
        self._before_has_inferred_shapes = False
        self.relayout("before")

    def _error(self, title: str, text: str) -> None:
        self.statusBar().showMessage(text, 10000)
        QMessageBox.critical(self, title, text)

    # ---- fusion -------------------------------------------------------------------------------------
    def _start_deferred_fusion(self) -> None:
        """Fusion of a newly opened model starts once its original graph is on screen.

        Fusion may import TensorFlow, whose import holds the GIL for long stretches; running it
        next to the first layout and scene build would delay the first picture by seconds.
        """
        if self._fusion_deferred:
            self._fusion_deferred = False
            self.run_fusion()

    def run_fusion(self) -> None:
        if self.model is None:
            return
        graph, ids, options = self.model.graph, self.pass_panel.pass_ids(), self.pass_panel.options()

        def task(progress: Callable[[str], None], cancelled: Callable[[], bool]) -> PipelineResult:
            pipeline = run_pipeline(graph, ids, options, cancelled=cancelled,
                                    progress=lambda pid, i, n: progress(f"fusing: {pid} ({i + 1}/{n})"))
            progress("inferring tensor shapes for the edge labels")
            for shaped in (graph, pipeline.fused):  # off the GUI thread; labels go without when TF refuses
                with contextlib.suppress(FuseLensError):
                    shaped.ensure_shapes()
            return pipeline

        self.workers.start("fuse", "fusion", task, on_finished=self._on_fused,
                           on_error=lambda text: self._error("Fusion failed", text),
                           on_progress=self.statusBar().showMessage)

    def _on_fused(self, pipeline: PipelineResult) -> None:
        if self.model is None or pipeline.original is not self.model.graph:
            return  # a result for a model that is no longer open
        self.pipeline = pipeline
        freeze_long_lived_objects()
        self.selection.set_provenance(pipeline.provenance, pipeline.fused.nodes)
        self.match_list.set_results(pipeline.results)
        self.pass_panel.set_counts(pipeline.results)
        self._apply_diff("before")
        matches = sum(len(r.matches) for r in pipeline.results)
        misses = sum(len(r.near_misses) for r in pipeline.results)
        self.statusBar().showMessage(f"fused: {len(pipeline.original)} -> {len(pipeline.fused)} nodes, "
                                     f"{matches} matches, {misses} near misses ({pipeline.seconds * 1000:.0f} ms)")
        self.fusion_done.emit(pipeline)
        self.relayout("after")
        if not self._before_has_inferred_shapes and not pipeline.original.records_shapes:
            self._before_has_inferred_shapes = True  # a bare .pb: redraw once, now with edge shapes
            self.relayout("before")

    # ---- layout -------------------------------------------------------------------------------------
    def relayout(self, side: str) -> None:
        graph = self.graph(side)
        if graph is None:
            return
        collapsed, cache = self.collapsed[side], self.layout_cache

        def task(progress: Callable[[str], None], cancelled: Callable[[], bool]) -> Layout:
            return layout_graph(graph, collapsed, cache=cache, cancelled=cancelled,
                                progress=lambda text: progress(f"layout ({side}): {text}"))

        keep_view = self.layouts[side] is not None and self.layouts[side].collapsed != collapsed
        self.workers.start(f"layout-{side}", f"layout of the {side} graph", task,
                           on_finished=lambda layout: self._on_layout(side, graph, layout, keep_view),
                           on_error=self._on_layout_error,
                           on_progress=self.statusBar().showMessage)

    def _on_layout(self, side: str, graph: Graph, layout: Layout, keep_view: bool) -> None:
        if graph is not self.graph(side):
            return
        self.layouts[side] = layout
        pane = self.panes[side]
        pane.view.show_layout(layout, self._status_function(side), keep_view=keep_view)
        pane.describe(graph, layout)
        if layout.notice:
            self.statusBar().showMessage(layout.notice, 10000)

    def _on_built(self, side: str) -> None:
        """A pane's new scene is complete: re-apply diff, selection and search hits, then announce it."""
        view = self.panes[side].view
        self._apply_diff(side)  # fusion may have finished while the scene was being built
        current = self.selection.current
        view.set_selected(current.before if side == "before" else current.after, centre=False)
        if self.search.text():
            self._on_search_text(self.search.text())
        if side == "before" and self._fusion_deferred:
            QTimer.singleShot(500, self._start_deferred_fusion)  # in case the pane is not painted (hidden)
        self.layout_done.emit(side)

    def _on_layout_error(self, text: str) -> None:
        self._start_deferred_fusion()  # the fused graph is still worth computing
        self._error("Layout failed", text)

    def set_collapsed(self, side: str, scopes: frozenset[str]) -> None:
        self.collapsed[side] = frozenset(scopes)
        self.relayout(side)

    def _status_function(self, side: str) -> Callable[[str], str] | None:
        provenance = self.pipeline.provenance if self.pipeline else None
        if provenance is None:
            return None
        if side == "before":
            return lambda key: "unchanged" if key.startswith(SCOPE_PREFIX) else provenance.original_status(key)
        return lambda key: "unchanged" if key.startswith(SCOPE_PREFIX) else provenance.status(key)

    def _apply_diff(self, side: str) -> None:
        status = self._status_function(side)
        view = self.panes[side].view
        for key, item in view.items_by_key.items():
            item.status = status(key) if status else "unchanged"
        view.viewport().update()

    def fit_both(self) -> None:
        self.before.fit()
        self.after.fit()

    # ---- selection ----------------------------------------------------------------------------------
    def select_key(self, side: str, key: str) -> None:
        layout = self.layouts[side]
        if layout is None or key not in layout.nodes:
            return
        names = layout.nodes[key].members
        if side == "before":
            self.selection.select_original(names)
        else:
            self.selection.select_fused(names)

    def _on_selection(self, selection: Selection) -> None:
        centre_all = selection.origin not in SIDES
        self.before.set_selected(selection.before, centre=centre_all or selection.origin == "after")
        self.after.set_selected(selection.after, centre=centre_all or selection.origin == "before")
        self.properties.show_selection(selection, self.graph("before"), self.graph("after"),
                                       self.pipeline.provenance if self.pipeline else None)

    def step_match(self, delta: int) -> None:
        if self.match_list.step(delta) is None:
            self.statusBar().showMessage("No matches or near misses to step through", 3000)

    def _on_activated(self, side: str, key: str) -> None:
        if key.startswith(SCOPE_PREFIX):
            self.set_collapsed(side, self.collapsed[side] - {key[len(SCOPE_PREFIX):]})
            return
        graph = self.graph(side)
        if graph is not None and key in graph and FUSION_PASS_ATTR in graph.node(key).attr:
            FusedBodyDialog(graph, key, self).exec()

    # ---- search -------------------------------------------------------------------------------------
    def focus_search(self) -> None:
        self.search.setFocus()
        self.search.selectAll()

    def _on_search_text(self, text: str) -> None:
        self._search_hits = [(side, key) for side in SIDES for key in self.panes[side].view.find(text)]
        self._search_index = -1
        before_hits = sum(1 for s, _ in self._search_hits if s == "before")
        self.search_status.setText(f" {before_hits} before, {len(self._search_hits) - before_hits} after"
                                   if text.strip() else "")

    def next_search_hit(self) -> None:
        """Enter in the search box: select the next hit (before pane first), which centres both panes."""
        if not self._search_hits:
            return
        self._search_index = (self._search_index + 1) % len(self._search_hits)
        side, key = self._search_hits[self._search_index]
        self.select_key(side, key)
        self.panes[side].view.centre_on_keys([key])

    # ---- work status --------------------------------------------------------------------------------
    def _on_busy(self, busy: bool) -> None:
        self.progress.setVisible(busy)
        self.cancel_button.setVisible(busy)

    def cancel_work(self) -> None:
        self.workers.cancel_all()
        self.statusBar().showMessage("Cancelled", 3000)

    def closeEvent(self, event) -> None:
        self._fuse_timer.stop()
        self.workers.shutdown()
        super().closeEvent(event)

    # ---- exports ------------------------------------------------------------------------------------
    def export_graph(self, path: str, side: str = "before") -> None:
        view = self.panes[side].view
        if path.lower().endswith(".svg"):
            view.export_svg(path)
        elif not view.export_png(path):
            raise OSError(f"{path}: cannot write the image")

    def export_fused_pb(self, path: str) -> Path:
        protect = self.model.path if self.model and Path(self.model.path).exists() else None
        return write_bytes_atomic(path, self.pipeline.fused.graph_def.SerializeToString(deterministic=True),
                                  protect=protect)

    def export_report(self, path: str) -> Path:
        from passes.report import build_report

        return write_json_atomic(path, build_report(self.pipeline, model=self.model.name if self.model else ""))

    def _export_dialog(self, kind: str) -> None:
        if self.layouts["before"] is None:
            return
        side = "after" if self.after.hasFocus() and self.layouts["after"] else "before"
        path, _ = QFileDialog.getSaveFileName(self, f"Export the {side} graph", f"{side}.{kind}",
                                              f"{kind.upper()} (*.{kind})")
        if path:
            self._guarded("Export failed", lambda: self.export_graph(path, side))

    def _export_pb_dialog(self) -> None:
        if self.pipeline is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Export the fused model", "fused.pb", "GraphDef (*.pb)")
        if path:
            self._guarded("Export failed", lambda: self.export_fused_pb(path))

    def _export_report_dialog(self) -> None:
        if self.pipeline is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Export the fuse report", "report.json", "JSON (*.json)")
        if path:
            self._guarded("Export failed", lambda: self.export_report(path))

    def _guarded(self, title: str, action: Callable[[], Any]) -> None:
        try:
            action()
        except Exception as e:  # FuseLensError or OSError: tell the user, keep the window
            self._error(title, str(e))
