"""The FuseLens main window: chrome and wiring around one Session.

Passes and matches | before and after panes | properties, plus a bottom dock area. The state
that matters (model, PassConfig, pipeline, collapsed scopes, last run, stage) lives in the
Qt-free `Session`; the window turns its jobs into workers and its changes into views. It holds
no fusion logic. Work that uses TensorFlow (fusion, shape inference) runs in ONE worker slot,
so two TensorFlow graph imports never overlap in this process.
"""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDockWidget,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from core.errors import FuseLensError
from core.graph import Graph
from core.layout import SCOPE_PREFIX, Layout, LayoutCache, default_cache, layout_graph
from core.loaders import LoadedModel, load_model
from gui.dialogs import MODEL_FILTER, SamplesDialog
from gui.match_list import MatchList
from gui.pane import Pane, legend_html
from gui.pass_panel import PassPanel
from gui.properties import FusedBodyDialog, PropertiesPanel
from gui.run_panel import install_run_panel
from gui.search import SearchHits, search_box
from gui.selection import Selection, SelectionModel
from gui.workers import WorkerPool
from passes.config import PassConfig
from passes.registry import PipelineResult, run_pipeline
from session import SIDES, FusionJob, Session, Stage

MAX_RECENT = 8
TF_SLOT = "tf"  # the one worker slot for work that uses TensorFlow

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


class MainWindow(QMainWindow):
    layout_done = Signal(str)  # side: a pane shows a new layout

    def __init__(self, *, settings: QSettings | None = None, layout_cache: LayoutCache | None = None,
                 config: PassConfig | None = None):
        super().__init__()
        self.setWindowTitle("FuseLens")
        self.resize(1500, 900)
        self.setAcceptDrops(True)
        self.settings = settings if settings is not None else QSettings("FuseLens", "FuseLens")
        self.layout_cache = layout_cache if layout_cache is not None else default_cache()
        self.session = Session(config)
        self.workers = WorkerPool(self)
        self.selection = SelectionModel(self)
        self.layouts: dict[str, Layout | None] = dict.fromkeys(SIDES)  # what each pane shows
        self._drawn_with_shapes: dict[str, bool] = dict.fromkeys(SIDES, False)

        self.pass_panel = PassPanel(self.session.config, self)
        self.match_list = MatchList(self)
        self.properties = PropertiesPanel(self)
        self.panes = {"before": Pane("Before (original)", self), "after": Pane("After (fused)", self)}
        self.before, self.after = self.panes["before"].view, self.panes["after"].view
        self._build_central()
        self._build_actions()
        self._build_status_bar()
        self.search_hits = SearchHits(self.search, self.search_status, {s: p.view for s, p in self.panes.items()},
                                      self.select_key)
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
        self.search, self.search_status = search_box(self)
        toolbar.addWidget(self.search)
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
        self.session.subscribe(self._on_session)
        self.workers.busy_changed.connect(self._on_busy)
        self.before.painted.connect(self._on_before_painted)
        self.selection.changed.connect(self._on_selection)
        self.pass_panel.config_edited.connect(self.set_config)
        self.match_list.item_chosen.connect(lambda item: self.selection.select_item(item))
        for side, view in (("before", self.before), ("after", self.after)):
            view.node_clicked.connect(lambda key, s=side: self.select_key(s, key))
            view.background_clicked.connect(self.selection.clear)
            view.node_activated.connect(lambda key, s=side: self._on_activated(s, key))
            view.collapse_requested.connect(lambda scopes, s=side: self.session.set_collapsed(s, scopes))
            view.built.connect(lambda s=side: self._on_built(s))

    # ---- public API for other panels --------------------------------------------------------------
    def add_bottom_dock(self, widget: QWidget, title: str) -> QDockWidget:
        """Attach a panel (e.g. run and profile) in the bottom dock area."""
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock-{title}")
        dock.setWidget(widget)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
        return dock

    def is_idle(self) -> bool:
        """No work running or about to start (tests and benchmarks wait for this)."""
        return (not self.workers.busy() and not self.session.busy
                and not self.before.building and not self.after.building)

    # ---- the session's changes become views -----------------------------------------------------
    def _on_session(self, what: str) -> None:
        if what == "model":
            self._show_model()
        elif what == "pipeline":
            self._show_pipeline()
        elif what == "config":
            self.pass_panel.show_config(self.session.config)
        elif what == "collapsed":
            for side in SIDES:
                if self.layouts[side] is not None and self.layouts[side].collapsed != self.session.collapsed[side]:
                    self.relayout(side)

    def _show_model(self) -> None:
        model = self.session.model
        self.layouts = dict.fromkeys(SIDES)
        self._drawn_with_shapes = dict.fromkeys(SIDES, False)
        self.selection.set_provenance(None)
        self.selection.clear()
        self.match_list.set_results([])
        self.pass_panel.set_counts([])
        self.setWindowTitle(f"FuseLens — {model.name}")
        self.statusBar().showMessage(f"{model.name}: {len(model.graph)} nodes")
        self.relayout("before")  # the original graph is drawn first; fusion starts once it is painted

    def _show_pipeline(self) -> None:
        pipeline = self.session.pipeline
        if pipeline is None:
            return
        freeze_long_lived_objects()
        self.selection.set_provenance(pipeline.provenance)
        self.match_list.set_results(pipeline.results)
        self.pass_panel.set_counts(pipeline.results)
        self._apply_diff("before")
        matches = sum(len(r.matches) for r in pipeline.results)
        misses = sum(len(r.near_misses) for r in pipeline.results)
        self.statusBar().showMessage(f"fused: {len(pipeline.original)} -> {len(pipeline.fused)} nodes, "
                                     f"{matches} matches, {misses} near misses ({pipeline.seconds * 1000:.0f} ms)")
        self.relayout("after")

    # ---- opening ------------------------------------------------------------------------------------
    def open_model(self, spec: str) -> None:
        self.statusBar().showMessage(f"Loading {spec}…")
        self.session.start_loading()
        self.workers.start("load", f"loading {spec}", lambda progress, cancelled: load_model(spec),
                           on_finished=lambda model: self._on_loaded(spec, model),
                           on_error=lambda text: self._load_failed("Cannot open model", text),
                           on_cancelled=self.session.load_failed)

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
        recent = [spec] + [r for r in self.recent_files() if r != spec]
        self.settings.setValue("recent", recent[:MAX_RECENT])
        self.session.set_model(model)

    def _load_failed(self, title: str, text: str) -> None:
        self.session.load_failed()
        self._error(title, text)

    def _error(self, title: str, text: str) -> None:
        self.statusBar().showMessage(text, 10000)
        QMessageBox.critical(self, title, text)

    # ---- fusion: the session's jobs, one at a time in the TensorFlow slot ---------------------------
    def set_config(self, config: PassConfig) -> None:
        """A new pass configuration (the pass panel, an import): fuse again with it."""
        job = self.session.set_config(config)
        if job is not None:
            self._run_job(job)

    def _on_before_painted(self) -> None:
        """Fusion of a newly opened model starts once its original graph is on screen.

        Fusion may import TensorFlow, whose import holds the GIL for long stretches; running it
        next to the first layout and scene build would delay the first picture by seconds.
        """
        job = self.session.drawn()
        if job is not None:
            self._run_job(job)

    def _run_job(self, job: FusionJob) -> None:
        def fuse(progress: Callable[[str], None], cancelled: Callable[[], bool]) -> PipelineResult:
            return run_pipeline(job.graph, job.config, cancelled=cancelled,
                                progress=lambda pid, i, n: progress(f"fusing: {pid} ({i + 1}/{n})"))

        self.workers.start(TF_SLOT, "fusion", fuse, on_finished=lambda pipeline: self._on_fused(job, pipeline),
                           on_error=lambda text: self._job_failed(job, "Fusion failed", text),
                           on_cancelled=lambda: self.session.job_failed(job),
                           on_progress=self.statusBar().showMessage)

    def _on_fused(self, job: FusionJob, pipeline: PipelineResult) -> None:
        if not self.session.fusion_done(job, pipeline):
            return  # superseded by a newer configuration or model

        def infer_shapes(progress: Callable[[str], None], cancelled: Callable[[], bool]) -> None:
            progress("inferring tensor shapes for the edge labels")
            for shaped in (pipeline.original, pipeline.fused):  # labels go without when TF refuses
                if not cancelled():
                    with contextlib.suppress(FuseLensError):
                        shaped.ensure_shapes()

        self.workers.start(TF_SLOT, "shape inference", infer_shapes, on_finished=lambda _: self._on_shapes(job),
                           on_error=lambda text: self._job_failed(job, "Shape inference failed", text),
                           on_cancelled=lambda: self.session.job_failed(job),
                           on_progress=self.statusBar().showMessage)

    def _on_shapes(self, job: FusionJob) -> None:
        if self.session.shapes_done(job):
            for side in SIDES:  # panes drawn (or being drawn) without shapes are drawn once more, with them
                if not self._drawn_with_shapes[side]:
                    self.relayout(side)

    def _job_failed(self, job: FusionJob, title: str, text: str) -> None:
        if self.session.job_failed(job):
            self._error(title, text)

    # ---- layout -------------------------------------------------------------------------------------
    def relayout(self, side: str) -> None:
        graph = self.session.graph(side)
        if graph is None:
            return
        collapsed, cache = self.session.collapsed[side], self.layout_cache

        def task(progress: Callable[[str], None], cancelled: Callable[[], bool]) -> Layout:
            return layout_graph(graph, collapsed, cache=cache, cancelled=cancelled,
                                progress=lambda text: progress(f"layout ({side}): {text}"))

        keep_view = self.layouts[side] is not None and self.layouts[side].collapsed != collapsed
        with_shapes = graph.shapes_ready or graph.records_shapes
        self.workers.start(f"layout-{side}", f"layout of the {side} graph", task,
                           on_finished=lambda layout: self._on_layout(side, graph, layout, keep_view, with_shapes),
                           on_error=self._on_layout_error,
                           on_progress=self.statusBar().showMessage)

    def _on_layout(self, side: str, graph: Graph, layout: Layout, keep_view: bool, with_shapes: bool) -> None:
        if graph is not self.session.graph(side):
            return
        self.layouts[side] = layout
        self._drawn_with_shapes[side] = with_shapes
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
            self.search_hits.refresh()
        if side == "before" and self.session.stage is Stage.DRAWING:
            QTimer.singleShot(500, self._on_before_painted)  # in case the pane is not painted (hidden)
        self.layout_done.emit(side)

    def _on_layout_error(self, text: str) -> None:
        self._on_before_painted()  # the fused graph is still worth computing
        self._error("Layout failed", text)

    def _status_function(self, side: str) -> Callable[[str], str] | None:
        pipeline = self.session.pipeline
        provenance = pipeline.provenance if pipeline else None
        if provenance is None:
            return None
        status = provenance.original_status if side == "before" else provenance.status
        return lambda key: "unchanged" if key.startswith(SCOPE_PREFIX) else status(key)

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
        pipeline = self.session.pipeline
        self.properties.show_selection(selection, self.session.graph("before"), self.session.graph("after"),
                                       pipeline.provenance if pipeline else None)

    def step_match(self, delta: int) -> None:
        if self.match_list.step(delta) is None:
            self.statusBar().showMessage("No matches or near misses to step through", 3000)

    def _on_activated(self, side: str, key: str) -> None:
        if key.startswith(SCOPE_PREFIX):
            self.session.set_collapsed(side, self.session.collapsed[side] - {key[len(SCOPE_PREFIX):]})
            return
        graph = self.session.graph(side)
        if graph is not None and key in graph and graph.fused_info(key) is not None:
            FusedBodyDialog(graph, key, self).exec()

    def focus_search(self) -> None:
        self.search.setFocus()
        self.search.selectAll()

    # ---- work status --------------------------------------------------------------------------------
    def _on_busy(self, busy: bool) -> None:
        self.progress.setVisible(busy)
        self.cancel_button.setVisible(busy)

    def cancel_work(self) -> None:
        self.workers.cancel_all()
        self.statusBar().showMessage("Cancelled", 3000)

    def closeEvent(self, event) -> None:
        self.workers.shutdown()
        super().closeEvent(event)

    # ---- exports ------------------------------------------------------------------------------------
    def export_graph(self, path: str, side: str = "before") -> None:
        view = self.panes[side].view
        if path.lower().endswith(".svg"):
            view.export_svg(path)
        elif not view.export_png(path):
            raise OSError(f"{path}: cannot write the image")

    def _export_dialog(self, kind: str) -> None:
        if self.layouts["before"] is None:
            return
        side = "after" if self.after.hasFocus() and self.layouts["after"] else "before"
        path, _ = QFileDialog.getSaveFileName(self, f"Export the {side} graph", f"{side}.{kind}",
                                              f"{kind.upper()} (*.{kind})")
        if path:
            self._guarded("Export failed", lambda: self.export_graph(path, side))

    def _export_pb_dialog(self) -> None:
        if self.session.pipeline is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Export the fused model", "fused.pb", "GraphDef (*.pb)")
        if path:
            self._guarded("Export failed", lambda: self.session.export_fused_pb(path))

    def _export_report_dialog(self) -> None:
        if self.session.pipeline is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Export the fuse report", "report.json", "JSON (*.json)")
        if path:
            self._guarded("Export failed", lambda: self.session.export_report(path))

    def _guarded(self, title: str, action: Callable[[], Any]) -> None:
        try:
            action()
        except Exception as e:  # FuseLensError or OSError: tell the user, keep the window
            self._error(title, str(e))
