"""Finding the fusion that broke it, in the window: skip check boxes, layerwise errors, bisect, compare.

* The match list's check boxes skip a match (its pass stays on): each toggle is a new PassConfig
  for `MainWindow.set_config`, so counts and both panes follow.
* A layerwise compare (the run dock's Layerwise box) fills the match list's error column.
* Run > Bisect… opens the Bisect dock: the search (session/bisect.py) runs in a worker, fusing in
  the TensorFlow helper and running in one child process, with progress and Cancel; the culprit is
  selected in the match list and both panes; the skip list can be applied or exported.
* Run > Compare with current… sets another configuration against the current one.
* File > Save / Open pass configuration: the PassConfig as JSON, skipped matches included.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDockWidget,
    QDoubleSpinBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from fuselens.core.errors import FuseLensError
from fuselens.core.formats.io import write_json_atomic
from fuselens.core.graph import Graph
from fuselens.core.runtime.run_view import parse_input_shapes
from fuselens.gui.actions import make_action
from fuselens.gui.dialogs import guarded, save_dialog, show_error
from fuselens.gui.workers import Worker
from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import PipelineResult
from fuselens.session import FusionJob
from fuselens.session.pass_files import config_json, load_config

if TYPE_CHECKING:
    from fuselens.gui.host import PanelHost
    from fuselens.gui.match_list import MatchList
    from fuselens.gui.run_panel import RunPanel
    from fuselens.session.bisect import BisectOptions, BisectResult

BISECT_SLOT = "bisect"
COMPARE_SLOT = "compare"
CONFIG_FILTER = "FuseLens pass configuration (*.json);;All files (*)"
BISECT_HEIGHT = 260  # the result is a dozen lines; the graph panes keep the rest


def helper_fuse(host: PanelHost, cancelled: Callable[[], bool]) -> Callable[[Graph, PassConfig], PipelineResult]:
    """Fusion for a worker, with the user's pass files the window fuses with (their code runs in the helper)."""
    files = host.session.pass_files
    return lambda graph, config: host.tensorflow.fuse(FusionJob(0, graph, config, files), lambda _text: None,
                                                      cancelled)


def _monospace(widget: QPlainTextEdit) -> QPlainTextEdit:
    widget.setReadOnly(True)
    widget.setFont(QFont("monospace", 9))
    widget.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
    return widget


class BisectPanel(QWidget):
    """Options, Start / Cancel with progress, the result as text, and what to do with it."""

    def __init__(self, host: PanelHost, input_shapes: Callable[[], str], match_list: MatchList):
        super().__init__(host.window)
        self.host, self.input_shapes, self.match_list = host, input_shapes, match_list
        self.worker: Worker | None = None
        self.by = QComboBox(self)
        self.by.addItem("numeric: outputs not allclose", "numeric")
        self.by.addItem("time: slower than the original", "time")
        self.rtol = self._tolerance("rtol")
        self.atol = self._tolerance("atol")
        self.slowdown = QDoubleSpinBox(self)
        self.slowdown.setRange(0.1, 10000)
        self.slowdown.setValue(10)
        self.slowdown.setSuffix(" %")
        self.slowdown.setToolTip("time: a fused step time more than this above the original's counts")
        self.steps = QSpinBox(self)
        self.steps.setRange(1, 100000)
        self.steps.setValue(20)
        self.steps.setToolTip("time: timed steps per block (3 blocks; the median of their slowdowns counts)")
        self.start_button = QPushButton("Bisect", self)
        self.start_button.setStyleSheet("font-weight: 600;")
        self.cancel_button = QPushButton("Cancel", self)
        self.progress = QProgressBar(self)
        self.progress.setRange(0, 0)
        self.progress.setFixedWidth(120)
        self.label = QLabel("Which matches break the outputs (or the speed)? Delta debugging over the matches.", self)
        self.text = _monospace(QPlainTextEdit(self))
        self.select_button = QPushButton("Select culprit", self)
        self.apply_button = QPushButton("Apply skip list", self)
        self.apply_button.setToolTip("Skip the culprit matches (their passes stay on) and fuse again")
        self.export_button = QPushButton("Export reproduction…", self)
        self.export_button.setToolTip("skip.txt (--skip-file), autofuse_skip.ini (--skip_node_names_cfg), "
                                      "fusion_switch.json (the pass switches that avoid it)")
        row = QHBoxLayout()
        for label, widget in (("By", self.by), ("rtol", self.rtol), ("atol", self.atol),
                              ("Slowdown", self.slowdown), ("Steps", self.steps)):
            row.addWidget(QLabel(label, self))
            row.addWidget(widget)
        for widget in (self.start_button, self.cancel_button, self.progress, self.label):
            row.addWidget(widget)
        row.addStretch(1)
        actions = QHBoxLayout()
        for widget in (self.select_button, self.apply_button, self.export_button):
            actions.addWidget(widget)
        actions.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.addLayout(row)
        layout.addWidget(self.text, 1)
        layout.addLayout(actions)
        self.start_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.cancel)
        self.select_button.clicked.connect(self.select_culprit)
        self.apply_button.clicked.connect(self.apply_skip_list)
        self.export_button.clicked.connect(self.export_dialog)
        self._set_running(False)
        self.show_result(None)

    def _tolerance(self, name: str) -> QLineEdit:
        edit = QLineEdit(self)
        edit.setPlaceholderText("by dtype")
        edit.setFixedWidth(70)
        edit.setToolTip(f"{name} for every comparison (empty: the dtype's, float32 1e-4)")
        return edit

    def options(self) -> BisectOptions:
        def number(edit: QLineEdit, name: str) -> float | None:
            text = edit.text().strip()
            try:
                return float(text) if text else None
            except ValueError:
                raise FuseLensError(f"{name}: not a number: {text!r}") from None

        from fuselens.session.bisect import BisectOptions  # the bisect brings the runner: imported when first used

        shapes = parse_input_shapes(self.input_shapes())
        return BisectOptions(by=self.by.currentData(), rtol=number(self.rtol, "rtol"), atol=number(self.atol, "atol"),
                             slowdown=self.slowdown.value(), steps=self.steps.value(), input_shapes=shapes)

    def start(self) -> None:
        host = self.host
        session = host.session
        if self.running():
            return
        try:
            if session.model is None or session.pipeline is None:
                raise FuseLensError("open a model first (and let the passes run): there is nothing to bisect")
            options = self.options()
        except FuseLensError as e:
            show_error(self, "Bisect", str(e), host.status)
            return
        graph, config, name = session.model.graph, session.config, session.model.name

        def task(progress: Callable[[str], None], cancelled: Callable[[], bool]) -> BisectResult:
            from fuselens.session.bisect import Bisector

            return Bisector(graph, config, options, helper_fuse(host, cancelled), model=name, progress=progress,
                            cancelled=cancelled).run()

        self._set_running(True)
        self.label.setText("bisect: starting…")
        self.worker = host.workers.start(BISECT_SLOT, "the bisect", task, on_finished=self._finished,
                                           on_error=self._failed, on_progress=self._progress,
                                           on_cancelled=self._cancelled)

    def running(self) -> bool:
        return self.worker is not None

    def cancel(self) -> None:
        if self.worker is not None:
            self.worker.cancel()

    def _set_running(self, running: bool) -> None:
        self.start_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        self.progress.setVisible(running)

    def _progress(self, text: str) -> None:
        self.label.setText(text)
        self.host.status.showMessage(text)

    def _finished(self, result: BisectResult) -> None:
        self.worker = None
        self._set_running(False)
        self.host.session.set_bisect(result)
        self.show_result(result)
        self.select_culprit()

    def _failed(self, text: str) -> None:
        self.worker = None
        self._set_running(False)
        self.label.setText("bisect failed")
        show_error(self, "Bisect failed", text, self.host.status)

    def _cancelled(self) -> None:
        self.worker = None
        self._set_running(False)
        self.label.setText("bisect cancelled")
        self.host.status.showMessage("Bisect cancelled; its child process was stopped", 5000)

    def show_result(self, result: BisectResult | None) -> None:
        if result is None:
            self.text.setPlainText("")
        else:
            from fuselens.session.bisect import format_result

            self.text.setPlainText(format_result(result))
        found = result is not None and result.found
        for button in (self.select_button, self.apply_button, self.export_button):
            button.setEnabled(found)
        if result is not None:
            verdict = (f"{len(result.culprits)} culprit(s) in {result.runs} runs" if found
                       else f"nothing wrong ({result.runs} runs)")
            self.label.setText(f"bisect done: {verdict}")
            self.host.status.showMessage(f"Bisect: {verdict}", 15000)

    def select_culprit(self) -> None:
        """The first culprit, in the match list and (through it) both panes."""
        result = self.host.session.bisect
        if result is not None and result.found and not self.match_list.select_match(result.culprits[0].id):
            self.host.status.showMessage(f"{result.culprits[0].id} is not in the match list now "
                                                 "(skipped, or the configuration changed)", 8000)

    def apply_skip_list(self) -> None:
        result = self.host.session.bisect
        if result is not None and result.found:
            self.host.set_config(self.host.session.config.with_skipped(result.skip_ids()))

    def export_dialog(self) -> None:
        result = self.host.session.bisect
        folder = QFileDialog.getExistingDirectory(self, "Export the reproduction into a folder")
        if folder and result is not None:
            written = guarded(self, "Export failed", lambda: result.write_reproduction(folder),
                              self.host.status)
            if written:
                self.host.status.showMessage("wrote " + ", ".join(p.name for p in written), 8000)


class CompareDialog(QDialog):
    """The current configuration (A) against another (B): matches gained and lost, nodes, and a run."""

    CHOICES = (("the defaults", "defaults"), ("the current one without its skipped matches", "unskipped"),
               ("a saved configuration…", "file"))

    def __init__(self, host: PanelHost, input_shapes: Callable[[], str]):
        super().__init__(host.window)
        self.host, self.input_shapes = host, input_shapes
        self.setWindowTitle("Compare with current")
        self.resize(760, 480)
        self.other = QComboBox(self)
        for title, key in self.CHOICES:
            self.other.addItem(title, key)
        self.run_box = QCheckBox("Run both (step times, kernels, outputs)", self)
        self.compare_button = QPushButton("Compare", self)
        self.label = QLabel("", self)
        self.text = _monospace(QPlainTextEdit(self))
        row = QHBoxLayout()
        for widget in (QLabel("B:", self), self.other, self.run_box, self.compare_button):
            row.addWidget(widget)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.label)
        layout.addWidget(self.text, 1)
        self.compare_button.clicked.connect(self.compare)

    def other_config(self) -> tuple[PassConfig, str] | None:
        current = self.host.session.config
        key = self.other.currentData()
        if key == "defaults":
            return PassConfig.default(), "defaults"
        if key == "unskipped":
            return current.without_skipped(current.skipped_matches), "current without skipped matches"
        path, _ = QFileDialog.getOpenFileName(self, "Pass configuration B", "", CONFIG_FILTER)
        if not path:
            return None
        loaded = guarded(self, "Cannot read the configuration", lambda: load_config(path))
        if loaded is not None and loaded[1]:
            show_error(self, "Compare", f"{Path(path).name} has GE Python pass files: their code runs only in the "
                                        "TensorFlow helper, which this compare does not use; compare it with "
                                        "`fuselens diff-config`")
            return None
        return (loaded[0], Path(path).name) if loaded is not None else None

    def compare(self) -> None:
        host, session = self.host, self.host.session
        if session.model is None or session.pipeline is None:
            show_error(self, "Compare", "open a model first (and let the passes run)")
            return
        other = self.other_config()
        if other is None:
            return
        b, b_label = other
        graph, a, running = session.model.graph, session.config, self.run_box.isChecked()
        shapes = parse_input_shapes(self.input_shapes())

        def task(progress: Callable[[str], None], cancelled: Callable[[], bool]) -> str:
            from fuselens.session.config_diff import diff_configs, format_diff, run_both  # brings the runner

            progress("compare: fusing both configurations")
            diff, first, second = diff_configs(graph, a, b, helper_fuse(host, cancelled), "current", b_label)
            if running and not cancelled():
                progress("compare: running both")
                run_both(diff, first, second, input_shapes=shapes)
            return format_diff(diff)

        self.compare_button.setEnabled(False)
        self.label.setText("comparing…")
        host.workers.start(COMPARE_SLOT, "the comparison", task, on_finished=self._show,
                             on_error=lambda text: self._show_error(text), on_progress=self.label.setText,
                             on_cancelled=lambda: self._show_error("cancelled"))

    def _show(self, text: str) -> None:
        self.compare_button.setEnabled(True)
        self.label.setText("A = the current configuration")
        self.text.setPlainText(text)

    def _show_error(self, text: str) -> None:
        self.compare_button.setEnabled(True)
        self.label.setText(text)


class DebugTools:
    """What install_debug_tools adds to a window (kept for tests)."""

    def __init__(self, host: PanelHost, match_list: MatchList, run_panel: RunPanel):
        self.host, self.match_list = host, match_list
        self.input_shapes = run_panel.shapes.text  # the run dock's input shapes serve the bisect and compare too
        self.bisect = BisectPanel(host, self.input_shapes, match_list)
        self.bisect_dock: QDockWidget = host.add_bottom_dock(self.bisect, "Bisect")  # a tab beside Run and profile
        self.bisect_dock.hide()
        self.compare: CompareDialog | None = None
        match_list.skip_toggled.connect(self.toggle_skip)
        host.session.subscribe(self._on_session)

    def toggle_skip(self, match_id: str, skip: bool) -> None:
        """A check box in the match list: skip the match (or fuse it again); the pass stays on."""
        config = self.host.session.config
        self.host.set_config(config.with_skipped([match_id]) if skip else config.without_skipped([match_id]))

    def _on_session(self, what: str) -> None:
        if what in ("layerwise", "pipeline"):
            self.match_list.set_errors(self.host.session.layerwise)

    def show_bisect(self) -> None:
        self.bisect_dock.show()
        self.bisect_dock.raise_()
        self.host.resize_dock(self.bisect_dock, BISECT_HEIGHT)

    def show_compare(self) -> None:
        if self.compare is None:
            self.compare = CompareDialog(self.host, self.input_shapes)
        self.compare.show()
        self.compare.raise_()

    def save_config(self, path: str) -> Path:
        session = self.host.session
        return write_json_atomic(path, config_json(session.config, session.pass_files, session.pass_run))

    def open_config(self, path: str) -> None:
        """The configuration, and its GE Python pass files as the window's pass files (run in the helper)."""
        config, files = load_config(path)
        if files:  # watched from now on (gui/py_passes.py follows the session's pass files)
            self.host.session.set_pass_files(replace(self.host.session.pass_files, paths=files.paths))
        self.host.set_config(config)  # one fusion, with both


def install_debug_tools(host: PanelHost, match_list: MatchList, run_panel: RunPanel) -> DebugTools:
    """The skip check boxes' wiring, the Bisect dock, Run > Bisect… and Compare with current…, and
    File > Save / Open pass configuration."""
    tools = DebugTools(host, match_list, run_panel)
    window, status = host.window, host.status
    run_menu = host.menu("&Run")
    run_menu.addSeparator()
    run_menu.addAction(make_action(window, "Bisect…", tools.show_bisect,
                                   tip="Find the matches that make the outputs differ, or the model slower"))
    run_menu.addAction(make_action(window, "Compare with current…", tools.show_compare,
                                   tip="Matches gained and lost against another pass configuration"))
    file_menu = host.menu("&File")
    actions = file_menu.actions()
    quit_at = next((i for i, a in enumerate(actions) if a.text() == "Quit"), len(actions))
    before = actions[quit_at - 1] if 0 < quit_at <= len(actions) else None  # the separator above Quit
    save = make_action(window, "Save pass configuration…", lambda: save_dialog(
        window, "Save the pass configuration", "passes.json", CONFIG_FILTER, tools.save_config, status))
    load = make_action(window, "Open pass configuration…", lambda: _open_config(host, tools))
    file_menu.insertActions(before, [save, load]) if before is not None else file_menu.addActions([save, load])
    return tools


def _open_config(host: PanelHost, tools: DebugTools) -> None:
    path, _ = QFileDialog.getOpenFileName(host.window, "Open a pass configuration", "", CONFIG_FILTER)
    if path:
        guarded(host.window, "Cannot open the configuration", lambda: tools.open_config(path), host.status)
