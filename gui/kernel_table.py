"""The kernel table: every kernel of both graphs with the chart's figures, sortable, exported as CSV by core."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractTableModel, QItemSelectionModel, QModelIndex, QSortFilterProxyModel, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QWidget

from fuselens.core.graph.opclass import PALETTE
from fuselens.core.measure.result import GraphRun, KernelStat, RunResult
from fuselens.core.runtime.run_view import SIDE_OF_LABEL, kernel_category, per_step_us
from fuselens.gui.guard import safe_override

SORT_ROLE = Qt.ItemDataRole.UserRole
COLUMNS = ["Graph", "Kernel", "Op type", "Node", "Pass", "Device", "Count", "µs / step", "Total µs", "Mean µs",
           "Min µs", "Max µs"]
NUMERIC_FROM = COLUMNS.index("Count")


class KernelTableModel(QAbstractTableModel):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.rows: list[tuple[str, GraphRun, KernelStat]] = []

    def set_result(self, result: RunResult | None) -> None:
        self.beginResetModel()
        self.rows = [(label, run, k) for label, run in (result.graphs.items() if result else ()) for k in run.kernels]
        self.endResetModel()

    @safe_override(0)
    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008 (Qt's signature)
        return 0 if parent.isValid() else len(self.rows)

    @safe_override(0)
    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    @safe_override()
    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def values(self, row: int) -> list[Any]:
        label, run, k = self.rows[row]
        return [label, k.kernel, k.op_type, k.node or "", k.pass_id or "", k.device, k.count,
                round(per_step_us(k, run), 3), k.total_us, k.mean_us, k.min_us, k.max_us]

    @safe_override()
    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        column = index.column()
        if role in (Qt.ItemDataRole.DisplayRole, SORT_ROLE):
            value = self.values(index.row())[column]
            if role == Qt.ItemDataRole.DisplayRole and isinstance(value, float):
                return f"{value:,.1f}"
            return value
        if role == Qt.ItemDataRole.TextAlignmentRole and column >= NUMERIC_FROM:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.BackgroundRole and column == COLUMNS.index("Op type"):
            _, _, k = self.rows[index.row()]
            return QColor(PALETTE[kernel_category(k.op_type, k.pass_id)])
        if role == Qt.ItemDataRole.ToolTipRole:
            return str(self.values(index.row())[column])
        return None


class KernelTable(QTableView):
    """Sortable by any column; a clicked row emits its side and kernel (the run panel selects its node)."""

    kernel_clicked = Signal(str, object)  # side, KernelStat

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.table_model = KernelTableModel(self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.table_model)
        self.proxy.setSortRole(SORT_ROLE)
        self.setModel(self.proxy)
        self.setSortingEnabled(True)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setAlternatingRowColors(True)
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.verticalHeader().hide()
        self.verticalHeader().setDefaultSectionSize(20)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(False)
        self.clicked.connect(self._on_clicked)

    def set_result(self, result: RunResult | None) -> None:
        self.table_model.set_result(result)
        self.sortByColumn(COLUMNS.index("µs / step"), Qt.SortOrder.DescendingOrder)
        self.resizeColumnsToContents()
        for column in (COLUMNS.index("Kernel"), COLUMNS.index("Node")):
            self.setColumnWidth(column, min(self.columnWidth(column), 320))

    def _on_clicked(self, index: QModelIndex) -> None:
        label, _, kernel = self.table_model.rows[self.proxy.mapToSource(index).row()]
        self.kernel_clicked.emit(SIDE_OF_LABEL.get(label, "after"), kernel)

    def highlight(self, before: frozenset[str], after: frozenset[str]) -> None:
        """Select the rows of the selected nodes (without emitting a click)."""
        selection = self.selectionModel()
        selection.clearSelection()
        for row, (label, _, kernel) in enumerate(self.table_model.rows):
            nodes = before if SIDE_OF_LABEL.get(label, "after") == "before" else after
            if kernel.node is not None and kernel.node in nodes:
                index = self.proxy.mapFromSource(self.table_model.index(row, 0))
                selection.select(index, QItemSelectionModel.SelectionFlag.Select
                                 | QItemSelectionModel.SelectionFlag.Rows)
