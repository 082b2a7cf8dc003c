"""The "Run & profile" dock: its fields, compile and run both graphs, show the results.

A run is session/run_workflow.py's (the one `fuselens run` makes): a child process that TensorFlow
may crash without harming the window, started from a worker of the window's pool so the status
bar's Cancel stops it too. Results (a run, or an imported profile / PROF_* folder / run file:
gui/run_files.py) fill the summary cards, the bar charts, the timeline, the kernel table, each
fusion's gain (did it pay?) and the heat overlay; an op_statistic's per-type totals fill the
"Time per op type" tab.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QAction, QStandardItemModel
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QStatusBar,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from fuselens.core.devices.backends import BackendStatus
from fuselens.core.errors import FuseLensError
from fuselens.core.graph import Graph
from fuselens.core.runtime.run_view import open_inputs, parse_input_shapes
from fuselens.gui.actions import make_action
from fuselens.gui.charts import GainChart, KernelCharts, OpTypeView, SummaryCards, Timeline
from fuselens.gui.dialogs import show_error
from fuselens.gui.graph_view import GraphView
from fuselens.gui.heat import HeatLegend, HeatOverlay
from fuselens.gui.kernel_table import KernelTable
from fuselens.gui.predicted_rows import CheckRow
from fuselens.gui.predicted_view import PredictedView
from fuselens.gui.selection import Selection, SelectionModel
from fuselens.gui.workers import Task, Worker, WorkerPool
from fuselens.session import FusionJob, Session
from fuselens.session.fusion_gain import FusionGain, run_gains, toolchain_records
from fuselens.session.run_workflow import RunOutcome, RunSettings, run_both, run_request

if TYPE_CHECKING:
    from fuselens.core.runtime import Progress, RunHandle, RunRequest, RunResult
    from fuselens.gui.host import PanelHost
    from fuselens.gui.remote_run import RemoteRuns
    from fuselens.gui.run_files import RunFiles
    from fuselens.passes.config import PassConfig
    from fuselens.passes.pipeline import PipelineResult
    from fuselens.session.layerwise import LayerwiseReport
    from fuselens.session.npu_check import CheckReport

HelperFuse = Callable[[FusionJob, Callable[[str], None], Callable[[], bool]], "PipelineResult"]

BACKEND_TITLES = {"cpu": "CPU", "gpu": "GPU", "npu": "Ascend NPU"}
DEFAULT_STEPS = 20
DEFAULT_WARMUP = 3
DEFAULT_TOP_N = 12
DOCK_TITLE = "Run and profile"


class _BackendProbe:
    """Backend availability, asked once per process of a child (it imports TensorFlow) off the GUI thread."""

    def __init__(self) -> None:
        self.statuses: list[BackendStatus] | None = None
        self._waiting: list[Callable[[list[BackendStatus]], None]] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def request(self, deliver: Callable[[list[BackendStatus]], None], *, start: bool = True) -> None:
        """`deliver(statuses)` now if known, else from the probe's thread when it finishes; with `start=False` the
        probe waits for `start()` (the window's, once its first model is on screen: the probe's child imports
        TensorFlow, ~3 s of a core the first load, fusion and layout would otherwise share)."""
        with self._lock:
            if self.statuses is None:
                self._waiting.append(deliver)
                if start:
                    self._start()
                return
        deliver(self.statuses)

    def start(self) -> None:
        """Start the probe if it has not started (asked once per process)."""
        with self._lock:
            if self.statuses is None:
                self._start()

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._probe, name="fuselens-backends", daemon=True)
            self._thread.start()

    def wait(self, timeout_s: float) -> None:
        """Block until a started probe has ended (it ends on its own, within the probe's timeout): the
        chaos check counts what outlives a window, and the probe is the process's, not a window's."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout_s)

    def _probe(self) -> None:
        from fuselens.core.runtime.backend_probe import probe_backends

        statuses = probe_backends()
        with self._lock:
            self.statuses, waiting, self._waiting = statuses, self._waiting, []
        for deliver in waiting:
            with contextlib.suppress(RuntimeError):  # its panel was closed meanwhile
                deliver(statuses)


BACKEND_PROBE = _BackendProbe()


class RunPanel(QWidget):
    run_progress = Signal(object)  # Progress, emitted from the run's thread
    backends_known = Signal(object)  # list[BackendStatus], emitted from the probe's thread
    result_shown = Signal(object)  # RunResult | None
    run_failed = Signal(str)

    def __init__(self, session: Session, selection: SelectionModel, workers: WorkerPool, status: QStatusBar,
                 views: Mapping[str, GraphView], parent: QWidget | None = None, *, fuse: HelperFuse | None = None):
        super().__init__(parent)
        self.session, self.selection, self.workers, self.status = session, selection, workers, status
        self.fuse = fuse  # fusion in the TensorFlow helper: a layerwise compare re-fuses up to each pass
        self.result: RunResult | None = None
        self.handle: RunHandle | None = None
        self.timeout_s: float | None = 600.0
        self._running = False
        self._worker: Worker | None = None
        self.remote: RemoteRuns | None = None  # the "Ascend NPU (host)" backend (gui/remote_run.py)
        self.files: RunFiles | None = None  # imports and exports (gui/run_files.py)
        self._build_controls()
        self._build_results()
        self.heat = HeatOverlay(session, views, self.heat_legend, self)
        self.heat.set_enabled(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.setSpacing(4)
        layout.addLayout(self.controls)
        layout.addWidget(self.results, 1)
        self._connect()
        self.set_running(False)
        self._on_model()
        self.show_result(None)
        self.show_check(None)
        BACKEND_PROBE.request(self.backends_known.emit, start=False)  # started by the window (MainWindow)

    # ---- construction ---------------------------------------------------------------------------
    def _build_controls(self) -> None:
        self.backend = QComboBox(self)
        for name, title in BACKEND_TITLES.items():
            self.backend.addItem(title, name)
        self.set_backends([BackendStatus(n, n == "cpu", "checking…" if n != "cpu" else "TensorFlow on the host")
                           for n in BACKEND_TITLES])
        self.steps = self._spin(1, 100000, DEFAULT_STEPS, "timed steps per graph (kernel statistics over these)")
        self.warmup = self._spin(0, 10000, DEFAULT_WARMUP, "untimed steps first (XLA compiles in the first one)")
        self.shapes = QLineEdit(self)
        self.shapes.setMinimumWidth(180)
        self.shapes.setToolTip("Shapes for inputs with unknown dimensions: NAME=D1,D2,...; separated by ';'")
        self.layerwise_box = QCheckBox("Layerwise", self)
        self.layerwise_box.setToolTip("Also compare every fused node's outputs with the original tensors they "
                                      "replace, per match in the graph right after its pass: an error column in "
                                      "the match list and an error heat overlay")
        self.run_button = QPushButton("Compile and run", self)
        self.run_button.setToolTip("Run the original and the fused graph in a child process (Ctrl+R)")
        self.run_button.setStyleSheet("font-weight: 600;")
        self.cancel_button = QPushButton("Cancel", self)
        self.progress = QProgressBar(self)
        self.progress.setFixedWidth(140)
        self.progress.setFormat("%v/%m")
        self.progress_label = QLabel("no run yet: Compile and run (Ctrl+R), or Import profile", self)
        self.progress_label.setMinimumWidth(160)
        self.top_n = self._spin(3, 200, DEFAULT_TOP_N, "how many kernels the bar charts show (slowest first)")
        self.heat_box = QCheckBox("Heat overlay", self)
        self.heat_box.setToolTip("Colour the graph nodes by their kernel time per step")
        self.heat_legend = HeatLegend(self)
        self.heat_mode = QComboBox(self)
        self.heat_mode.addItem("kernel time", "time")
        self.heat_mode.addItem("layerwise error", "error")
        self.heat_mode.setToolTip("What the heat overlay colours: kernel time per step, or each node's layerwise "
                                  "max abs error (log scale; run with Layerwise on)")
        self.import_button = QPushButton("Import profile…", self)
        self.import_button.setToolTip("A profile file msprof or torch_npu wrote (op_summary, kernel_details, "
                                      "op_statistic, task_time, a timeline; any name) or a FuseLens run file; "
                                      "Run menu: a PROF_* or ASCEND_PROFILER_OUTPUT folder")
        self.export_button = QToolButton(self)
        self.export_button.setText("Export")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        row = QHBoxLayout()
        row.setSpacing(6)
        for label, widget in (("Backend", self.backend), ("Steps", self.steps), ("Warm-up", self.warmup),
                              ("Input shapes", self.shapes)):
            row.addWidget(QLabel(label, self))
            row.addWidget(widget)
        for widget in (self.layerwise_box, self.run_button, self.cancel_button, self.progress, self.progress_label):
            row.addWidget(widget)
        row.addStretch(1)
        row.addWidget(self.import_button)
        row.addWidget(self.export_button)
        self.controls = row

    def _spin(self, low: int, high: int, value: int, tip: str) -> QSpinBox:
        spin = QSpinBox(self)
        spin.setRange(low, high)
        spin.setValue(value)
        spin.setToolTip(tip)
        return spin

    def _build_results(self) -> None:
        self.cards = SummaryCards(self)
        self.charts = KernelCharts(self)
        self.timeline = Timeline(self)
        self.gains = GainChart(self)
        self.table = KernelTable(self)
        self.check_view = PredictedView(self)
        self.tabs = QTabWidget(self)
        self.tabs.addTab(self.charts, "Kernels before / after")
        self.tabs.addTab(self.timeline, "Timeline (one step)")
        self.tabs.addTab(self.gains, "Did each fusion pay?")
        self.tabs.addTab(self.table, "Kernel table")
        self.tabs.addTab(self.check_view, "Predicted vs actual")
        self.op_types = OpTypeView(self)
        self.tabs.addTab(self.op_types, "Time per op type")  # shown for a result with per-type totals
        self.tabs.setTabVisible(self.tabs.indexOf(self.op_types), False)
        corner = QWidget(self)
        corner_row = QHBoxLayout(corner)
        corner_row.setContentsMargins(0, 0, 4, 0)
        for widget in (self.heat_legend, self.heat_box, self.heat_mode, QLabel("Top", self), self.top_n):
            corner_row.addWidget(widget)
        self.tabs.setCornerWidget(corner)
        self.results = QWidget(self)
        layout = QVBoxLayout(self.results)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self.cards)
        layout.addWidget(self.tabs, 1)

    def _connect(self) -> None:
        self.run_button.clicked.connect(self.start_run)
        self.cancel_button.clicked.connect(self.cancel_run)
        self.import_button.clicked.connect(lambda: self.files.import_file_dialog() if self.files else None)
        self.run_progress.connect(self._on_progress)
        self.backends_known.connect(self.set_backends)
        self.top_n.valueChanged.connect(self._on_top_n)
        self.heat_box.toggled.connect(self.heat.set_enabled)
        self.heat_mode.currentIndexChanged.connect(lambda _i: self.heat.set_mode(self.heat_mode.currentData()))
        self.session.subscribe(lambda what: self.heat.set_errors(self.session.layerwise)
                               if what in ("layerwise", "pipeline") else None)
        for view in (self.charts, self.timeline, self.table):
            view.kernel_clicked.connect(self.select_kernel)
        self.check_view.row_clicked.connect(self.select_check_row)
        self.gains.gain_clicked.connect(self.select_gain)
        self.selection.changed.connect(self._on_selection)
        self.session.subscribe(lambda what: self._on_model() if what == "model" else None)

    # ---- backends ---------------------------------------------------------------------------------
    def set_backends(self, statuses: list[BackendStatus]) -> None:
        """Unavailable backends are greyed out with the reason as their tooltip."""
        model = self.backend.model()
        assert isinstance(model, QStandardItemModel)
        for status in statuses:
            row = self.backend.findData(status.name)
            item = model.item(row)
            item.setEnabled(status.available)
            item.setToolTip(status.reason if status.available else f"not available: {status.reason}")
        if not model.item(self.backend.currentIndex()).isEnabled():
            self.backend.setCurrentIndex(self.backend.findData("cpu"))

    def backend_status(self, name: str) -> tuple[bool, str]:
        item = self.backend.model().item(self.backend.findData(name))
        return item.isEnabled(), item.toolTip()

    # ---- running ----------------------------------------------------------------------------------
    def running(self) -> bool:
        return self._running

    def settings(self) -> RunSettings:
        """The run the fields describe (bad input shapes raise FuseLensError)."""
        return RunSettings(backend=self.backend.currentData(), steps=self.steps.value(), warmup=self.warmup.value(),
                           input_shapes=parse_input_shapes(self.shapes.text()), timeout=self.timeout_s)

    def build_request(self) -> RunRequest:
        model, pipeline = self.session.model, self.session.pipeline
        if model is None or pipeline is None:
            raise FuseLensError("open a model first (and let the passes run): there is nothing to run yet")
        from fuselens.core.ascend.ge.open import GE_DUMP_FORMAT  # the Ascend readers load when first used

        if model.format == GE_DUMP_FORMAT:
            raise FuseLensError(f"{model.name} is a GE graph dump: it runs on the Ascend host, not in TensorFlow "
                                "(open the TensorFlow model to compile and run both graphs)")
        return run_request(model.graph, pipeline, model.name, self.settings())

    def start_run(self) -> None:
        """Compile and run both graphs; a problem shows as an error message, the window stays."""
        if self._running:
            return
        BACKEND_PROBE.start()  # a run before the window started the probe: the backend list follows
        if self.remote is not None and self.remote.active():
            self.remote.start()
            return
        try:
            request = self.build_request()
        except FuseLensError as e:
            self.fail(str(e))
            return

        pipeline = self.session.pipeline
        layered = self.layerwise_box.isChecked()
        if layered and self.fuse is None:
            self.fail("a layerwise compare needs the TensorFlow helper, which this panel was not given")
            return

        files = self.session.pass_files  # a layerwise compare re-fuses with the user's passes too

        def task(progress: Callable[[str], None], cancelled: Callable[[], bool]) -> RunOutcome:
            def fuse(graph: Graph, config: PassConfig) -> PipelineResult:
                return self.fuse(FusionJob(0, graph, config, files), progress, cancelled)

            def started(handle: RunHandle) -> None:
                self.handle = handle

            return run_both(request, pipeline, layerwise=fuse if layered else None, on_progress=self.run_progress.emit,
                            on_stage=progress, on_started=started, cancelled=cancelled)

        self.progress_label.setText(f"starting ({request.backend})…")
        self.launch("the run", task, self._on_finished)

    def launch(self, name: str, task: Task, on_finished: Callable[[Any], None],
               on_progress: Callable[[str], None] | None = None) -> None:
        """Run `task` as the dock's run (its Cancel, progress bar and failure dialog), in a worker."""
        self.set_running(True)
        self._worker = self.workers.start("run", name, task, on_finished=on_finished, on_error=self.fail,
                                          on_cancelled=self._on_cancelled, on_progress=on_progress)

    def cancel_run(self) -> None:
        """Stop the run: its child process is killed."""
        if self._worker is not None and self._running:
            self._worker.cancel()

    def set_running(self, running: bool) -> None:
        self._running = running
        self.run_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        self.progress.setVisible(running)
        if running:
            self.progress.setRange(0, 0)

    def _on_progress(self, progress: Progress) -> None:
        if not self._running:
            return
        if progress.total:
            self.progress.setRange(0, progress.total)
            self.progress.setValue(progress.step)
        else:
            self.progress.setRange(0, 0)
        self.progress_label.setText(str(progress))
        self.status.showMessage(f"Run: {progress}")

    def _on_finished(self, outcome: RunOutcome) -> None:
        result, report = outcome.result, outcome.layerwise
        self.set_running(False)
        self.progress_label.setText(f"done in {result.seconds:.1f} s")
        self.status.showMessage(f"Run finished in {result.seconds:.1f} s", 10000)
        self.show_result(result)
        self.show_check(None)
        if report is not None:
            self.session.set_layerwise(report)
            self.heat_mode.setCurrentIndex(self.heat_mode.findData("error"))
            self.status.showMessage(_layerwise_message(report), 15000)

    def _on_cancelled(self) -> None:
        self.set_running(False)
        self.progress_label.setText("cancelled")
        self.status.showMessage("Run cancelled; its child process was stopped", 5000)

    def fail(self, text: str) -> None:
        """The run failed: say so in the dock, the status bar and a dialog."""
        self.set_running(False)
        self.progress_label.setText("failed")
        self.progress_label.setToolTip(text)
        self.run_failed.emit(text)
        show_error(self, "Run failed", text, self.status)

    # ---- results ----------------------------------------------------------------------------------
    def show_result(self, result: RunResult | None) -> None:
        """Show a run (the cards, charts and table appear), or none (the dock shrinks to its controls)."""
        self.result = result
        self.session.set_run(result)
        self.results.setVisible(result is not None)
        self.cards.set_result(result)
        self.charts.set_result(result, self.top_n.value())
        self.timeline.set_result(result)
        self.show_gains(result)
        self.table.set_result(result)
        self._show_op_types(result)
        self.heat.set_result(result)
        self._on_selection(self.selection.current)
        self.result_shown.emit(result)

    def _show_op_types(self, result: RunResult | None) -> None:
        """The per-type tab, shown while the result has per-type totals (an op_statistic import); brought to
        the front when that is all the result has."""
        self.op_types.set_result(result, self.top_n.value())
        index = self.tabs.indexOf(self.op_types)
        self.tabs.setTabVisible(index, bool(self.op_types.rows))
        if self.op_types.rows and result is not None and not any(run.kernels for run in result.graphs.values()):
            self.tabs.setCurrentIndex(index)

    def show_check(self, report: CheckReport | None, note: str = "") -> None:
        """The predicted-vs-actual tab of an NPU run (session/npu_check/'s report), or no such tab."""
        self.check_view.set_report(report, note)
        self.tabs.setTabVisible(self.tabs.indexOf(self.check_view), report is not None)
        folder = report.sources.get("profile") if report is not None else None
        model = self.session.model
        if folder and self.result is not None and "original" in self.result.graphs:
            try:  # the results of an NPU bundle: the fused side's fusion_op and dumps name the toolchain's fusions
                self.show_gains(self.result, toolchain_records(folder, model.graph if model is not None else None))
            except FuseLensError as e:
                self.status.showMessage(f"Did each fusion pay: the toolchain's records: {e}", 10000)

    def select_check_row(self, row: CheckRow) -> None:
        """A predicted-vs-actual row was clicked: its original nodes (else FuseLens's node) become the selection."""
        original, fused = self.session.graph("before"), self.session.graph("after")
        before = [n for n in row.originals if original is not None and n in original]
        if before:
            self.selection.select_original(before, origin="predicted")
        elif fused is not None and row.node in fused:
            self.selection.select_fused([row.node], origin="predicted")
        else:
            self.status.showMessage(f"{row.toolchain or row.pass_id}: no node of the open graphs to select", 5000)

    def show_gains(self, result: RunResult | None, toolchain: Mapping[str, Sequence[str]] | None = None) -> None:
        """Did each fusion pay? Its tab shows when the result has both graphs (a run, an NPU bundle's two sides);
        `toolchain` adds the fused ops the toolchain's records name (fusion_op)."""
        report = run_gains(result, self.session.pipeline, toolchain=toolchain) if result is not None else None
        self.gains.set_report(report, self.top_n.value())
        self.tabs.setTabVisible(self.tabs.indexOf(self.gains), report is not None)

    def _on_top_n(self, shown: int) -> None:
        self.charts.set_result(self.result, shown)
        self.gains.set_report(self.gains.report, shown)
        self.op_types.set_result(self.result, shown)

    def select_gain(self, row: FusionGain) -> None:
        """A gain bar was clicked: its match is selected in both panes, as the match list selects it (a toolchain
        fused op with no FuseLens match: its original nodes)."""
        pipeline = self.session.pipeline
        matches = {m.id: m for r in pipeline.results for m in r.matches} if pipeline is not None else {}
        match = next((matches[m] for m in row.matches if m in matches), None)
        original = self.session.graph("before")
        if match is not None:
            self.selection.select_item(match, origin="gains")
        elif original is not None and (found := [n for n in row.originals if n in original]):
            self.selection.select_original(found, origin="gains")
        else:
            self.status.showMessage(f"{row.label}: no match or node of the open graphs to select", 5000)

    def select_kernel(self, side: str, kernel: Any) -> None:
        """A bar, block or row was clicked: its graph node becomes the shared selection."""
        if kernel.node is None:
            self.status.showMessage(f"kernel {kernel.kernel} is not mapped to a graph node", 5000)
            return
        if side == "before":
            self.selection.select_original([kernel.node], origin="kernels")
        else:
            self.selection.select_fused([kernel.node], origin="kernels")

    def _on_selection(self, selection: Selection) -> None:
        self.charts.highlight(selection.before, selection.after)
        self.table.highlight(selection.before, selection.after)

    def _on_model(self) -> None:
        """A new model: the old results are of other graphs; offer shapes for its open input dims."""
        model = self.session.model
        if model is not None:
            self.show_result(None)
            self.show_check(None)
        offered = open_inputs(model.graph) if model is not None else {}
        self.shapes.setText("; ".join(f"{name}={dims}" for name, dims in offered.items()))
        self.shapes.setEnabled(bool(offered))
        self.shapes.setPlaceholderText("all input shapes are known" if model is not None else "")

    def build_actions(self) -> list[QAction]:
        """The panel's own actions: Compile and run, Cancel run, Heat overlay (the Run menu holds them)."""
        self.run_action = make_action(self, "Compile and run", self.start_run, "Ctrl+R")
        self.cancel_action = make_action(self, "Cancel run", self.cancel_run)
        self.heat_action = make_action(self, "Heat overlay", lambda: self.heat_box.setChecked(
            self.heat_action.isChecked()))
        self.heat_action.setCheckable(True)
        self.heat_box.toggled.connect(self.heat_action.setChecked)
        return [self.run_action, self.cancel_action, self.heat_action]


def _layerwise_message(report: LayerwiseReport) -> str:
    found = len(report.divergent())
    if report.first_divergent is None:
        return f"Layerwise: all {len(report.matches)} matches agree with the original tensors they replace"
    return f"Layerwise: {found} of {len(report.matches)} matches over the tolerance; first: {report.first_divergent}"


RESULTS_HEIGHT = 430  # the dock's height once a run is shown: cards, a readable chart, and the tabs


def install_run_panel(host: PanelHost) -> RunPanel:
    """Add the run panel as a bottom dock, a Run menu, and Compile and run on the toolbar."""
    panel = RunPanel(host.session, host.selection, host.workers, host.status, host.views, host.window,
                     fuse=host.tensorflow.fuse)
    from fuselens.gui.remote_run import install_remote_runs
    from fuselens.gui.run_files import RunFiles
    from fuselens.gui.toolchain_records import install_toolchain_records

    panel.remote = install_remote_runs(panel)
    panel.files = RunFiles(panel, host.tensorflow)
    install_toolchain_records(panel, host.menu("&File"))
    dock = host.add_bottom_dock(panel, DOCK_TITLE)
    host.layout_done.connect(panel.heat.on_layout)

    shown: list[RunResult | None] = [None]

    def grow_for_results(result: RunResult | None) -> None:
        """The dock was just its control row: give the first result shown room to read."""
        if result is not None and shown[0] is None:
            host.resize_dock(dock, RESULTS_HEIGHT)
        shown[0] = result

    panel.result_shown.connect(grow_for_results)
    run, cancel, heat = panel.build_actions()
    imports, exports, npu = panel.files.build_actions()
    menu = host.menu("&Run")
    for action in [run, cancel, None, *imports, None, *exports, npu, None, heat]:
        if action is None:
            menu.addSeparator()
        else:
            menu.addAction(action)
    host.toolbar.addSeparator()
    host.toolbar.addAction(panel.run_action)
    return panel
