"""The run dock's "Ascend NPU (host)" backend: choose a host, Compile and run, the charts appear.

The run itself is `fuselens run MODEL --backend npu --host NAME` in a child process (writing the bundle
needs TensorFlow, which the window never imports): its streamed lines fill the progress bar and the run
log, Cancel sends it SIGTERM (it then kills the host's processes), and the run file it saves is shown
with the same cards, charts, timeline, table and heat as a CPU run, and its results folder as the
Predicted vs actual tab. Runs… lists the history (gui/run_history.py): a run is reopened from its results
folder, and one whose connection was lost is re-attached or its results fetched, in a worker (no
TensorFlow needed). Hosts are edited in a dialog with "Test connection" (session/remote_run.py's store).
"""

from __future__ import annotations

import contextlib
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from fuselens.core.ascend.remote import ADAPTERS, Check, Host, progress_of, transport_for
from fuselens.core.errors import Cancelled, FuseLensError
from fuselens.core.package_data import child_environ
from fuselens.core.runtime import RunResult
from fuselens.gui.dialogs import show_error
from fuselens.gui.run_history import RunHistoryDialog
from fuselens.session.remote_run import (
    HostStore,
    RunHistory,
    RunRecord,
    announced_run,
    configuration_note,
    describe_checks,
    fetch_finished,
    follow_again,
    host_from_fields,
)

if TYPE_CHECKING:
    from fuselens.core.formats.loaders import LoadedModel
    from fuselens.core.graph import Graph
    from fuselens.core.runtime import RunResult
    from fuselens.gui.run_panel import RunPanel
    from fuselens.passes.pipeline import PipelineResult

REMOTE = "npu-host"
TITLE = "Ascend NPU (host)"
CLI = (sys.executable, "-m", "fuselens")  # the CLI of this same install, in a child
FIELDS = (("name", "Name"), ("address", "user@host[:port]"), ("identity_file", "Identity file"),
          ("work_dir", "Remote work dir"), ("setup", "Set-up line"), ("python", "Remote Python"))


class HostDialog(QDialog):
    """Add, edit or remove an Ascend host; "Test connection" checks it in one round trip, off the GUI thread."""

    def __init__(self, runs: RemoteRuns, parent: QWidget | None = None):
        super().__init__(parent)
        self.runs = runs
        self.setWindowTitle("Ascend hosts")
        self.hosts = QComboBox(self)
        self.edits: dict[str, QLineEdit] = {key: QLineEdit(self) for key, _ in FIELDS}
        self.edits["address"].setToolTip("SSH in BatchMode: a key from your agent, ~/.ssh/config or the identity "
                                         "file; no password is stored. `local` runs on this machine")
        self.mode = QComboBox(self)
        for mode, adapter in ADAPTERS.items():
            self.mode.addItem(f"{mode} ({adapter})", mode)
        self.checks = QPlainTextEdit(self)
        self.checks.setReadOnly(True)
        self.checks.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))  # the checks are columns
        self.checks.setMinimumHeight(140)
        self.test_button = QPushButton("Test connection", self)
        save, remove = QPushButton("Save", self), QPushButton("Remove", self)
        form = QFormLayout()
        form.addRow("Host", self.hosts)
        for key, label in FIELDS:
            form.addRow(label, self.edits[key])
        form.addRow("TF adapter", self.mode)
        row = QHBoxLayout()
        for button in (self.test_button, save, remove):
            row.addWidget(button)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addLayout(row)
        layout.addWidget(self.checks)
        layout.addWidget(close)
        self.resize(640, 520)
        self.hosts.currentIndexChanged.connect(self._show_host)
        self.test_button.clicked.connect(self.test_connection)
        save.clicked.connect(self.save)
        remove.clicked.connect(self.remove)
        close.rejected.connect(self.reject)
        self.reload()

    def reload(self, select: str | None = None) -> None:
        self.hosts.blockSignals(True)
        self.hosts.clear()
        self.hosts.addItem("(new host)", None)
        for host in self.runs.store.all():
            self.hosts.addItem(host.name, host.name)
        self.hosts.blockSignals(False)
        index = self.hosts.findData(select) if select else -1
        self.hosts.setCurrentIndex(max(index, 0))
        self._show_host()

    def _show_host(self) -> None:
        name = self.hosts.currentData()
        host = next((h for h in self.runs.store.all() if h.name == name), None)
        for key, _ in FIELDS:
            self.edits[key].setText(str(getattr(host, key)) if host else "")
            self.edits[key].setPlaceholderText(str(Host.__dataclass_fields__[key].default)
                                               if key not in ("name", "address") else "")
        self.mode.setCurrentIndex(max(self.mode.findData(host.mode if host else "tf1"), 0))
        self.checks.clear()

    def host(self) -> Host:
        """The host as the form says (raises FuseLensError naming what is wrong)."""
        fields = {key: edit.text().strip() for key, edit in self.edits.items()}
        current = next((h for h in self.runs.store.all() if h.name == fields["name"]), None)
        return host_from_fields({**fields, "mode": self.mode.currentData(),
                                 "ssh_options": current.ssh_options if current else None})

    def save(self) -> Host | None:
        try:
            host = self.host()
            self.runs.store.put(host)
        except FuseLensError as e:
            show_error(self, "Host not saved", str(e))
            return None
        self.reload(host.name)
        self.runs.reload_hosts(host.name)
        return host

    def remove(self) -> None:
        name = self.hosts.currentData()
        if name:
            self.runs.store.remove(name)
            self.reload()
            self.runs.reload_hosts()

    def test_connection(self) -> None:
        try:
            host = self.host()
        except FuseLensError as e:
            self.checks.setPlainText(str(e))
            return
        self.test_button.setEnabled(False)
        self.checks.setPlainText(f"testing {host.address} …")
        self.runs.panel.workers.start("host-test", f"testing {host.name}",
                                      lambda progress, cancelled: transport_for(host).test(),
                                      on_finished=self._tested, on_error=self._test_failed,
                                      on_cancelled=lambda: self.test_button.setEnabled(True))

    def _tested(self, checks: list[Check]) -> None:
        self.test_button.setEnabled(True)
        verdict = "ready for runs" if all(c.ok for c in checks) else "NOT ready"
        self.checks.setPlainText(f"{self.hosts.currentText()}: {verdict}\n{describe_checks(checks)}")

    def _test_failed(self, text: str) -> None:
        self.test_button.setEnabled(True)
        self.checks.setPlainText(text)


class RemoteRuns:
    """The host picker in the run dock's controls, the run on a host, and its log."""

    def __init__(self, panel: RunPanel):
        self.panel = panel
        self.store = HostStore()
        self.host = QComboBox(panel)
        self.host.setToolTip("The Ascend host the bundle runs on (Hosts… to add one and test it)")
        self.hosts_button = QPushButton("Hosts…", panel)
        self.runs_button = QPushButton("Runs…", panel)
        self.runs_button.setToolTip("The NPU run history: reopen a run (mapped to the open model), re-attach one "
                                    "whose connection was lost, fetch a finished one's results")
        self.log = QPlainTextEdit()
        self.log.setReadOnly(True)
        self.log.setWindowTitle("Remote run log")
        self.log.resize(900, 520)
        panel.backend.addItem(TITLE, REMOTE)
        index = panel.controls.indexOf(panel.backend) + 1
        panel.controls.insertWidget(index, self.host)
        panel.controls.insertWidget(index + 1, self.hosts_button)
        panel.controls.insertWidget(index + 2, self.runs_button)
        panel.backend.currentIndexChanged.connect(self._backend_changed)
        self.hosts_button.clicked.connect(self.edit_hosts)
        self.runs_button.clicked.connect(self.choose_run)
        self.reload_hosts()
        self._backend_changed()

    def active(self) -> bool:
        return self.panel.backend.currentData() == REMOTE

    def _backend_changed(self) -> None:
        for widget in (self.host, self.hosts_button, self.runs_button):
            widget.setVisible(self.active())

    def reload_hosts(self, select: str | None = None) -> None:
        current = select or self.host.currentData()
        self.host.clear()
        try:
            hosts = self.store.all()
        except FuseLensError as e:
            self.panel.status.showMessage(str(e), 10000)
            hosts = []
        for host in hosts:
            self.host.addItem(f"{host.name} ({host.address})", host.name)
        self.host.setCurrentIndex(max(self.host.findData(current), 0))

    def edit_hosts(self) -> HostDialog:
        dialog = HostDialog(self, self.panel)
        dialog.show()
        return dialog

    def choose_run(self) -> RunHistoryDialog:
        """The run history: open, re-attach or fetch a run."""
        dialog = RunHistoryDialog(self, self.panel)
        dialog.show()
        return dialog

    def reopen(self, record: RunRecord) -> None:
        """A run's results folder on the open model's graphs, with its predicted vs actual."""
        self.panel.files.import_profile(str(record.results), note=self._notes(record))
        self.panel.progress_label.setText(f"run {record.id} ({record.model} on {record.host})")

    def reattach(self, record: RunRecord) -> None:
        """Follow a run whose connection was lost to its end, then fetch and show its results (the dock's run:
        its progress, Cancel, which kills the host's run, and its failure dialog)."""
        self._on_host(record, "re-attaching", lambda host, progress, cancelled: follow_again(
            record, host, on_line=progress, cancelled=cancelled))

    def fetch(self, record: RunRecord) -> None:
        """Bring back and show the results of a run that ended on its host while nobody followed it."""
        self._on_host(record, "fetching the results of", lambda host, progress, cancelled: fetch_finished(
            record, host, on_line=progress))

    def _on_host(self, record: RunRecord, doing: str,
                 work: Callable[[Host, Callable[[str], None], Callable[[], bool]], RunRecord]) -> None:
        panel = self.panel
        try:
            host = self.store.get(record.host)
        except FuseLensError as e:
            panel.fail(str(e))
            return
        pipeline, model = panel.session.pipeline, panel.session.model
        original, fused = panel.session.graph("before"), panel.session.graph("after")

        def task(progress: Callable[[str], None], cancelled: Callable[[], bool]) -> tuple[RunResult, Any, RunRecord]:
            done = work(host, progress, cancelled)
            return *_imported(done.results, original, fused, pipeline, model), done

        self.log.clear()
        self.log.appendPlainText(f"{doing} run {record.id} on {host.name} ({record.remote_folder})")
        panel.launch(f"{doing} run {record.id}", task, self._fetched, self._line)
        panel.progress.setRange(0, 100)
        panel.progress.setValue(0)
        panel.progress_label.setText(f"{doing} {record.id} on {host.name}…")

    def _fetched(self, outcome: tuple[RunResult, Any, RunRecord]) -> None:
        """A run that came back: its charts and its predicted vs actual; what is missing is said, not hidden."""
        result, report, record = outcome
        panel = self.panel
        panel.set_running(False)
        panel.show_result(result)
        panel.show_check(report, self._notes(record))
        if record.missing:
            missing = "; ".join(record.missing)
            panel.progress_label.setText(f"done on {record.host}: results incomplete, see Predicted vs actual")
            panel.progress_label.setToolTip(f"results incomplete: {missing}")
            panel.status.showMessage(f"NPU run on {record.host}: results incomplete ({missing}); shown: what arrived",
                                     20000)
        else:
            panel.progress_label.setText(f"done on {record.host}: see Predicted vs actual")
            panel.status.showMessage(f"NPU run on {record.host} imported", 10000)
        if report is not None:
            panel.tabs.setCurrentWidget(panel.check_view)

    def _notes(self, record: RunRecord) -> str:
        """What the predicted-vs-actual tab should say about this run: missing results, another configuration."""
        notes = [f"results incomplete: {'; '.join(record.missing)}; shown: what arrived"] if record.missing else []
        model, pipeline = self.panel.session.model, self.panel.session.pipeline
        if model is not None and pipeline is not None:
            notes.append(configuration_note(record, self._spec(), self._selection()))
        return "\n".join(n for n in notes if n)

    def _spec(self) -> str:
        """The open model as the command line names it (its file, or the sample's name)."""
        model = self.panel.session.model
        assert model is not None
        return model.path if Path(model.path).exists() else model.name

    def _selection(self) -> list[str]:
        """The open pass selection as `fuselens` options (what a run records as its configuration)."""
        from fuselens.session.npu_export import import_command  # brings the NPU bundle writer: imported when first used

        pipeline = self.panel.session.pipeline
        assert pipeline is not None
        return shlex.split(import_command(self._spec(), pipeline.config))[5:]

    def command(self) -> list[str]:
        """`fuselens run MODEL <the pass selection> --backend npu --host NAME --steps N --warmup N`."""
        model, pipeline = self.panel.session.model, self.panel.session.pipeline
        if model is None or pipeline is None:
            raise FuseLensError("open a model first (and let the passes run): there is nothing to run yet")
        name = self.host.currentData()
        if not name:
            raise FuseLensError("no Ascend host yet: Hosts… adds one (and tests it)")
        shapes = self.panel.shapes.text().strip()
        words = [*CLI, "run", self._spec(), *self._selection(), "--backend", "npu", "--host", name,
                 "--steps", str(self.panel.steps.value()), "--warmup", str(self.panel.warmup.value())]
        for shape in filter(None, (s.strip() for s in shapes.split(";"))) if self.panel.shapes.isEnabled() else ():
            words += ["--input-shape", shape]
        return words

    def start(self) -> None:
        """The run on the chosen host, in a worker; nothing blocks the window."""
        panel = self.panel
        try:
            words = self.command()
        except FuseLensError as e:
            panel.fail(str(e))
            return
        pipeline, model = panel.session.pipeline, panel.session.model
        original, fused = panel.session.graph("before"), panel.session.graph("after")
        self.log.clear()
        self.log.appendPlainText(f"$ fuselens {' '.join(shlex.quote(w) for w in words[len(CLI):])}")

        def task(progress: Callable[[str], None], cancelled: Callable[[], bool]) -> tuple[RunResult, Any, RunRecord]:
            record, code, errors = self._run_child(words, progress, cancelled)
            if code not in (0, 3) or record is None or not record.results.is_dir():
                raise FuseLensError("\n".join(errors) or f"the run on the host failed (exit {code}); see the run log")
            return *_imported(record.results, original, fused, pipeline, model), record

        panel.launch("the run on the Ascend host", task, self._fetched, self._line)
        panel.progress.setRange(0, 100)
        panel.progress.setValue(0)
        panel.progress_label.setText(f"on {self.host.currentData()}: starting…")

    def _run_child(self, words: list[str], progress: Callable[[str], None],
                   cancelled: Callable[[], bool]) -> tuple[RunRecord | None, int, list[str]]:
        """`fuselens run --host` in a child, its stderr streamed as progress, then its report (stdout) too;
        SIGTERM on cancel (the child then kills the host's run). Its run record (from the history, by the id the
        child announced), exit code and error lines."""
        with tempfile.TemporaryFile("w+") as report:
            process = subprocess.Popen(words, stdout=report, stderr=subprocess.PIPE, text=True,
                                       stdin=subprocess.DEVNULL, env=child_environ(PYTHONUNBUFFERED="1"))
            assert process.stderr is not None

            def watch() -> None:
                while process.poll() is None:
                    if cancelled():
                        with contextlib.suppress(ProcessLookupError):
                            process.send_signal(signal.SIGTERM)
                        return
                    threading.Event().wait(0.1)

            threading.Thread(target=watch, daemon=True).start()
            run_id, errors = None, []
            for line in process.stderr:
                line = line.rstrip("\n")
                run_id = run_id or announced_run(line)
                if errors or line.startswith("fuselens: error: "):  # an error's later lines belong to it
                    errors.append(line.removeprefix("fuselens: error: "))
                progress(line)
            code = process.wait()
            if cancelled():
                raise Cancelled()
            report.seek(0)
            for line in report.read().splitlines():
                progress(line)
        return (RunHistory().get(run_id) if run_id else None), code, errors

    def _line(self, line: str) -> None:
        self.log.appendPlainText(line)
        value = progress_of(line)
        if value is not None and self.panel.running():
            self.panel.progress.setValue(int(value * 100))
        if line.strip():
            self.panel.progress_label.setText(line[:90])


def _imported(folder: Path, original: Graph | None, fused: Graph | None, pipeline: PipelineResult | None,
              model: LoadedModel | None) -> tuple[RunResult, Any]:
    """A run's results folder read onto the open graphs, with its predicted vs actual (the Ascend readers are
    imported here, when a run comes back, not with the window)."""
    from fuselens.core.ascend.profile_import import import_run_file
    from fuselens.session.npu_check import check_npu_result

    result = import_run_file(folder, original, fused)
    return result, check_npu_result(pipeline, folder, result, model=model.name if model else "")


def install_remote_runs(panel: RunPanel) -> RemoteRuns:
    return RemoteRuns(panel)
