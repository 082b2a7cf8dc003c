"""The NPU run history (Runs… in the run dock): open a run's results, re-attach a run whose connection was lost,
or fetch the results of one that ended on its host meanwhile, as `fuselens runs show|attach|fetch` do."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from fuselens.core.errors import FuseLensError
from fuselens.session.remote_run import RunHistory, RunRecord

if TYPE_CHECKING:
    from fuselens.gui.remote_run import RemoteRuns

COLUMNS = ("Started", "Model", "Host", "Status", "Note", "Run")


class RunHistoryDialog(QDialog):
    """The runs, newest first, and what can be done with the chosen one."""

    def __init__(self, runs: RemoteRuns, parent: QWidget | None = None):
        super().__init__(parent)
        self.runs = runs
        self.records: list[RunRecord] = []
        self.setWindowTitle("NPU runs")
        self.table = QTableWidget(0, len(COLUMNS), self)
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)
        self.hint = QLabel(self)
        self.hint.setWordWrap(True)
        self.open_button = QPushButton("Open", self)
        self.open_button.setToolTip("Show the run's results on the open model's graphs, with predicted vs actual")
        self.attach_button = QPushButton("Re-attach", self)
        self.attach_button.setToolTip("Follow a run whose connection was lost to its end (it kept going on the "
                                      "host), then fetch and show its results")
        self.fetch_button = QPushButton("Fetch results", self)
        self.fetch_button.setToolTip("Bring back and show the results of a run that ended on the host meanwhile")
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        row = QHBoxLayout()
        for button in (self.open_button, self.attach_button, self.fetch_button):
            row.addWidget(button)
        row.addStretch(1)
        row.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.hint)
        layout.addLayout(row)
        self.resize(980, 360)
        self.table.itemSelectionChanged.connect(self._update)
        self.table.doubleClicked.connect(lambda _index: self.open_button.click())
        self.open_button.clicked.connect(lambda: self._act(self.runs.reopen))
        self.attach_button.clicked.connect(lambda: self._act(self.runs.reattach))
        self.fetch_button.clicked.connect(lambda: self._act(self.runs.fetch))
        close.rejected.connect(self.reject)
        self.reload()

    def reload(self, select: str | None = None) -> None:
        try:
            self.records = list(reversed(RunHistory().all()))
        except FuseLensError as e:
            self.records = []
            self.hint.setText(str(e))
        self.table.setRowCount(len(self.records))
        for row, record in enumerate(self.records):
            note = record.message.splitlines()[0] if record.message else ""
            for column, text in enumerate((record.started, record.model, record.host, record.status, note, record.id)):
                item = QTableWidgetItem(text)
                item.setToolTip(record.message or record.folder)
                self.table.setItem(row, column, item)
        ids = [r.id for r in self.records]
        if self.records:
            self.table.selectRow(ids.index(select) if select in ids else 0)
        self._update()

    def selected(self) -> RunRecord | None:
        rows = self.table.selectionModel().selectedRows()
        return self.records[rows[0].row()] if rows else None

    def select(self, run_id: str) -> None:
        self.reload(run_id)

    def _update(self) -> None:
        record = self.selected()
        busy = self.runs.panel.running()
        self.open_button.setEnabled(record is not None and record.results.is_dir())
        self.attach_button.setEnabled(record is not None and record.can_reattach and not busy)
        self.fetch_button.setEnabled(record is not None and record.can_fetch and not busy)
        if not self.records:
            self.hint.setText("no NPU run yet: Compile and run with the backend Ascend NPU (host)")
        elif record is not None:
            where = "results here" if record.results.is_dir() else "no results here yet"
            self.hint.setText(f"{record.id}: {record.status}, {where} ({record.folder})"
                              + (" — a run is going on in the dock" if busy else ""))

    def _act(self, action: Callable[[RunRecord], None]) -> None:
        record = self.selected()
        if record is not None:
            self.accept()
            action(record)
