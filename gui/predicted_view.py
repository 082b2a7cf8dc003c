"""The run dock's "Predicted vs actual" tab: FuseLens's predictions set against what the NPU toolchain did,
each row saying the kinds of record it rests on (its "From" column: profile, dump, OM JSON, log, ...).

The rows come from gui/predicted_rows.py (`check_rows` of session/npu_check's report): this view shows
them, filters them by status and hands a clicked row to the dock, which turns it into the window's shared selection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QModelIndex, QRegularExpression, QSortFilterProxyModel, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QHeaderView, QLabel, QTableView, QVBoxLayout, QWidget

from fuselens.gui.predicted_rows import AGREED, DIFFERENT, EXTRA, MISSING, NO_EVIDENCE, STATUSES, CheckRow, check_rows
from fuselens.session.npu_check.finding import source_label

if TYPE_CHECKING:
    from fuselens.session.npu_check import CheckReport

COLUMNS = ("Status", "Pass", "FuseLens node", "Original nodes", "Toolchain", "NPU µs/step", "From", "Evidence")
FROM_COLUMN = COLUMNS.index("From")
STATUS_COLOURS = {AGREED: "#d7f0d2", MISSING: "#f6d0cc", DIFFERENT: "#fbe3bf", EXTRA: "#d6e4f5",
                  NO_EVIDENCE: "#e6e6e6"}
ROW = Qt.ItemDataRole.UserRole + 1  # the CheckRow's index, kept on the status cell


class PredictedView(QWidget):
    """A summary line, a status filter and the table of rows."""

    row_clicked = Signal(object)  # CheckRow

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.report: CheckReport | None = None
        self.check: list[CheckRow] = []
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.status_filter = QComboBox(self)
        self.status_filter.setToolTip("Show the rows of one status only")
        self.model = QStandardItemModel(0, len(COLUMNS), self)
        self.model.setHorizontalHeaderLabels(list(COLUMNS))
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setFilterKeyColumn(0)
        self.table = QTableView(self)
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QTableView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        top = QHBoxLayout()
        top.addWidget(self.summary, 1)
        top.addWidget(QLabel("Show", self))
        top.addWidget(self.status_filter)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.table, 1)
        self.status_filter.currentIndexChanged.connect(lambda _i: self.set_status_filter(
            self.status_filter.currentData()))
        self.table.clicked.connect(self._clicked)
        self.set_report(None)

    def set_report(self, report: CheckReport | None, note: str = "") -> None:
        """Show a predicted-vs-actual report (session/npu_check/), or none; `note` is said above the table."""
        self.report = report
        self.check = check_rows(report) if report is not None else []
        self.model.removeRows(0, self.model.rowCount())
        for index, row in enumerate(self.check):
            self.model.appendRow(self._items(index, row))
        self.table.resizeColumnsToContents()
        for column in (3, 4):
            self.table.setColumnWidth(column, min(self.table.columnWidth(column), 260))
        counts = {status: sum(r.status == status for r in self.check) for status in STATUSES}
        self.status_filter.blockSignals(True)
        self.status_filter.clear()
        self.status_filter.addItem(f"all ({len(self.check)})", None)
        for status in STATUSES:
            if counts[status]:
                self.status_filter.addItem(f"{status} ({counts[status]})", status)
        self.status_filter.blockSignals(False)
        self.set_status_filter(None)
        if report is None:
            self.summary.setText("no NPU run shown")
            return
        s = report.summary
        evidence = ", ".join(source_label(kind) for kind in s.evidence) or "none"
        text = (f"{report.model}: {s.predicted} predicted fusions set against the NPU's records ({evidence}); "
                f"{len(self.check)} rows: " + ", ".join(f"{counts[status]} {status}" for status in STATUSES
                                                        if counts[status]))
        lines = [text] + [f"note: {n}" for n in [note, *report.notes] if n]
        self.summary.setText("\n".join(lines))

    def _items(self, index: int, row: CheckRow) -> list[QStandardItem]:
        time = QStandardItem()  # a number, so the column sorts by time
        if row.time_us is not None:
            time.setData(round(row.time_us, 1), Qt.ItemDataRole.DisplayRole)
        node = row.node or {"pass count": "(pass counts)", "toolchain": "(none)", "log": "(the log)"}.get(row.kind, "")
        texts = (row.status, row.pass_id, node, ", ".join(row.originals), row.toolchain)
        items = [QStandardItem(text) for text in texts] + [time, QStandardItem(", ".join(row.kinds)),
                                                             QStandardItem(row.detail)]
        items[0].setData(index, ROW)
        items[0].setBackground(QBrush(QColor(STATUS_COLOURS[row.status])))
        for item in items:
            item.setToolTip(row.detail)
        return items

    def set_status_filter(self, status: str | None) -> None:
        """Only the rows of `status` (None: all)."""
        pattern = f"^{QRegularExpression.escape(status)}$" if status else ""
        self.proxy.setFilterRegularExpression(QRegularExpression(pattern))
        index = self.status_filter.findData(status)
        if index >= 0 and index != self.status_filter.currentIndex():
            self.status_filter.setCurrentIndex(index)

    def evidence_kind(self, position: int) -> str:
        """The "From" cell of the shown row at `position`: the kinds of record it rests on."""
        return str(self.proxy.index(position, FROM_COLUMN).data() or "")

    def shown_rows(self) -> list[CheckRow]:
        """The rows the filter lets through, in the table's order."""
        return [self.check[self.proxy.index(i, 0).data(ROW)] for i in range(self.proxy.rowCount())]

    def click_row(self, position: int) -> None:
        """Act as a click on the shown row at `position`."""
        self._clicked(self.proxy.index(position, 0))

    def _clicked(self, index: QModelIndex) -> None:
        if index.isValid():
            self.table.selectRow(index.row())
            self.row_clicked.emit(self.check[self.proxy.index(index.row(), 0).data(ROW)])
