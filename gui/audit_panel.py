"""File > Audit folder…: `fuselens audit` of a folder in the background, its zoo table in a dock.

The audit runs on a pool thread (gui/workers.py) with the same session/audit code as the command line:
each model in a worker process. A model row opens that model with the audit's pass configuration; a
near-miss reason row opens the first model that has it and selects that near miss once it is fused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from fuselens.gui.actions import make_action
from fuselens.gui.host import PanelHost
from fuselens.passes.base import NearMiss
from fuselens.passes.config import PassConfig

if TYPE_CHECKING:  # the audit's modules load when an audit starts, not with the window
    from fuselens.session.audit.audit import AuditProgress

MODEL_COLUMNS = ("model", "status", "nodes", "matches", "near misses", "inside a fusion")
REASON_COLUMNS = ("#", "reason (its kind)", "matches lost", "models", "first model", "passes")
ROW_ROLE = Qt.ItemDataRole.UserRole


def _item(text: Any, data: Any = None) -> QTableWidgetItem:
    item = QTableWidgetItem()
    item.setData(Qt.ItemDataRole.DisplayRole, text)  # a number sorts as a number
    item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
    if data is not None:
        item.setData(ROW_ROLE, data)
    return item


class AuditPanel(QWidget):
    """The zoo table and the ranked near-miss reasons of the last audit, with its progress while it runs."""

    progressed = Signal(int, int, str)  # done, total, what is in flight: emitted from the audit's thread
    open_requested = Signal(str, object, object)  # spec, PassConfig, near miss to select ((pass, anchor) or None)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.report: dict[str, Any] | None = None
        self.config: PassConfig | None = None
        self.status = QLabel("File > Audit folder… audits every model in a folder", self)
        self.bar = QProgressBar(self)
        self.bar.hide()
        self.models = self._table(MODEL_COLUMNS)
        self.reasons = self._table(REASON_COLUMNS)
        self.tabs = QTabWidget(self)
        self.tabs.addTab(self.models, "Models")
        self.tabs.addTab(self.reasons, "Near-miss reasons")
        top = QHBoxLayout()
        top.addWidget(self.status, 1)
        top.addWidget(self.bar)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addWidget(self.tabs)
        self.progressed.connect(self._show_progress)
        self.models.cellActivated.connect(lambda row, _col: self._open_model_row(row))
        self.reasons.cellActivated.connect(lambda row, _col: self._open_reason_row(row))

    def _table(self, columns: tuple[str, ...]) -> QTableWidget:
        table = QTableWidget(0, len(columns), self)
        table.setHorizontalHeaderLabels(list(columns))
        table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        table.verticalHeader().hide()
        table.horizontalHeader().setStretchLastSection(True)
        return table

    # ---- running -----------------------------------------------------------------------------------
    def task(self, folder: str, config: PassConfig) -> Callable[[Callable[[str], None], Callable[[], bool]], Any]:
        """The pool task auditing `folder` (progress through `progressed`, cancel through the pool)."""
        from fuselens.session.audit.audit import AuditOptions, build_tasks, run_audit

        def audit(_progress: Callable[[str], None], cancelled: Callable[[], bool]) -> dict[str, Any]:
            options = AuditOptions()
            tasks = build_tasks([folder], config, options)
            self.progressed.emit(0, len(tasks), "starting")
            return run_audit(tasks, config, options, progress=self._report_progress, cancelled=cancelled)
        return audit

    def _report_progress(self, progress: AuditProgress) -> None:
        flying = ", ".join(f"{name} ({stage})" for name, stage in list(progress.in_flight.items())[:2])
        eta = f", about {progress.eta:.0f} s left" if progress.eta is not None else ""
        self.progressed.emit(progress.done, progress.total, f"{flying}{eta}")

    def _show_progress(self, done: int, total: int, text: str) -> None:
        self.bar.show()
        self.bar.setRange(0, max(total, 1))
        self.bar.setValue(done)
        self.status.setText(f"Auditing: {done}/{total} models. {text}")

    def started(self, config: PassConfig) -> None:
        self.config = config
        self._show_progress(0, 0, "finding the models")

    def failed(self, text: str) -> None:
        self.bar.hide()
        self.status.setText(f"The audit stopped: {text}")

    # ---- the report ------------------------------------------------------------------------------
    def show_report(self, report: dict[str, Any]) -> None:
        self.report = report
        self.bar.hide()
        summary = report["summary"]
        statuses = ", ".join(f"{n} {s}" for s, n in summary["statuses"].items())
        self.status.setText(f"{len(report['models'])} models ({statuses}), {summary['matches']} matches. "
                            "Double-click a row to open it.")
        self._fill(self.models, [
            [_item(row["model"], row), _item(row["status"] if row["status"] == "ok" else
                                             f"{row['status']}: {row['reason']}"),
             _item(f"{row['nodes_before']} -> {row['nodes_after']}" if "nodes_before" in row else ""),
             _item(sum(p["matches"] for p in row.get("passes", {}).values())),
             _item(len(row.get("near_misses", []))), _item(f"{row.get('fused_share', 0.0):.0%}")]
            for row in report["models"]])
        self._fill(self.reasons, [
            [_item(rank, entry), _item(entry["title"]), _item(entry["matches"]), _item(len(entry["models"])),
             _item(entry["first"]["model"]), _item(", ".join(entry["passes"]))]
            for rank, entry in enumerate(summary["reasons"], 1)])

    @staticmethod
    def _fill(table: QTableWidget, rows: list[list[QTableWidgetItem]]) -> None:
        table.setSortingEnabled(False)
        table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # the report's order first
        table.setRowCount(len(rows))
        for r, items in enumerate(rows):
            for c, item in enumerate(items):
                table.setItem(r, c, item)
        table.resizeColumnsToContents()
        table.setSortingEnabled(True)

    def _open_model_row(self, row: int) -> None:
        data = self.models.item(row, 0).data(ROW_ROLE)
        if data and data["status"] != "unreadable":
            self.open_requested.emit(data["spec"], self.config, None)

    def _open_reason_row(self, row: int) -> None:
        entry = self.reasons.item(row, 0).data(ROW_ROLE)
        assert self.report is not None
        first = entry["first"]
        spec = next(r["spec"] for r in self.report["models"] if r["model"] == first["model"])
        self.open_requested.emit(spec, self.config, (first["pass"], first["anchor"]))


class AuditOpener:
    """Opens a model of the audit with its configuration and, once fused, selects the near miss asked for."""

    def __init__(self, host: PanelHost, open_model: Callable[[str], None]):
        self.host = host
        self.open_model = open_model
        self.pending: tuple[str, str] | None = None
        host.session.subscribe(self._on_session)

    def open(self, spec: str, config: PassConfig | None, near_miss: tuple[str, str] | None) -> None:
        self.pending = near_miss
        self.open_model(spec)
        if config is not None:
            self.host.set_config(config)  # while it loads: its first fusion uses this configuration

    def _on_session(self, what: str) -> None:
        pipeline = self.host.session.pipeline
        if what != "pipeline" or pipeline is None or self.pending is None:
            return
        pass_id, anchor = self.pending
        result = pipeline.result(pass_id)
        found = next((n for n in result.near_misses if n.anchor == anchor), None) if result else None
        self.pending = None
        if isinstance(found, NearMiss):
            self.host.selection.select_item(found)
        else:
            self.host.status.showMessage(f"the near miss {pass_id}:{anchor} is not in this fusion", 10000)


class AuditTool:
    """The audit dock, its File menu action and the opener of its rows."""

    def __init__(self, host: PanelHost, open_model: Callable[[str], None]):
        self.host = host
        self.panel = AuditPanel(host.window)
        self.dock = host.add_bottom_dock(self.panel, "Audit")
        self.dock.hide()  # until an audit starts
        self.opener = AuditOpener(host, open_model)
        self.panel.open_requested.connect(self.opener.open)
        self.action = make_action(host.window, "Audit folder…", self.choose,
                                  tip="Fuse and check every model in a folder: the zoo table and its near-miss "
                                      "reasons")

    def choose(self) -> None:
        folder = QFileDialog.getExistingDirectory(self.host.window, "Audit every model in a folder")
        if folder:
            self.start(folder)

    def start(self, folder: str) -> None:
        """Audit `folder` with the window's pass configuration, in the background."""
        config = self.host.session.config
        self.panel.started(config)
        self.dock.show()
        self.dock.raise_()
        self.host.workers.start("audit", f"Audit {folder}", self.panel.task(folder, config),
                                on_finished=self.panel.show_report, on_error=self.panel.failed,
                                on_cancelled=lambda: self.panel.failed("cancelled"))


def install_audit_panel(host: PanelHost, open_model: Callable[[str], None]) -> AuditTool:
    """The "Audit" dock and File > Audit folder… (after the other Open actions)."""
    tool = AuditTool(host, open_model)
    file_menu = host.menu("&File")
    recent = next((a for a in file_menu.actions() if a.text() == "Open recent"), None)
    if recent is not None:
        file_menu.insertAction(recent, tool.action)
    else:
        file_menu.addAction(tool.action)
    return tool
