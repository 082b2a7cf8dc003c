"""Every match and near miss of the last fusion, grouped by pass, with next/previous stepping.

The list does not care which pass made a record: it reads PassResult.matches / near_misses,
and shows the matches the user skipped and any pass or match that failed (not stepped through).
Each match has a check box: unchecking it skips that match (its pass stays on), checking a
skipped one fuses it again; the window turns that into a new PassConfig. After a layerwise
compare a second column gives each match's error.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QHeaderView, QTreeWidget, QTreeWidgetItem, QWidget

from core.layout import short_name
from passes.base import Match, NearMiss, PassResult

if TYPE_CHECKING:
    from session.layerwise import LayerwiseReport

ITEM_ROLE = Qt.ItemDataRole.UserRole


class MatchList(QTreeWidget):
    """Column 0: the record, a match with a check box (unchecked = skipped, its pass stays on);
    column 1, once a layerwise compare ran: the match's max abs error against the original."""

    item_chosen = Signal(object)  # Match | NearMiss
    skip_toggled = Signal(str, bool)  # match id, skip it (True) or fuse it again (False)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setColumnCount(2)
        self.setHeaderLabels(["match", "max abs error"])
        self.setHeaderHidden(True)
        self.setColumnHidden(1, True)
        self.header().setStretchLastSection(False)
        self.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.header().setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        self.setUniformRowHeights(True)
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.setSelectionMode(QTreeWidget.SelectionMode.ExtendedSelection)  # Ctrl/Shift-click: a lesson's subset
        self.records: list[QTreeWidgetItem] = []  # in stepping order
        self.prefix = ""  # the model's root scope, left out of labels (`mobilenetv2_1.00_224_1/`)
        self.currentItemChanged.connect(self._on_current)
        self.itemChanged.connect(self._on_changed)

    def set_results(self, results: list[PassResult]) -> None:
        current = self.current_record()
        self.blockSignals(True)
        self.clear()
        self.records = []
        anchors = [r.anchor for result in results for r in (*result.matches, *result.near_misses)]
        common = posixpath.commonpath(anchors) if anchors else ""
        self.prefix = common + "/" if common and all(a.startswith(common + "/") for a in anchors) else ""
        for result in results:
            if not (result.matches or result.near_misses or result.skipped or result.errors):
                continue
            counts = [f"{len(result.matches)} ✔", f"{len(result.near_misses)} ✘"]
            counts += [f"{len(result.skipped)} skipped"] if result.skipped else []
            counts += [f"{len(result.errors)} failed"] if result.errors else []
            group = QTreeWidgetItem(self, [f"{result.pass_id}  ({', '.join(counts)})"])
            group.setFlags(Qt.ItemFlag.ItemIsEnabled)
            group.setFirstColumnSpanned(True)
            for error in result.errors:
                item = QTreeWidgetItem(group, [f"⚠ {error}"])
                item.setToolTip(0, error)
                item.setForeground(0, QBrush(QColor("#a15c00")))
            for skipped in result.skipped:
                item = QTreeWidgetItem(group, [f"⏸ skipped: {short_name(skipped.anchor)} ({skipped.summary})"])
                item.setData(0, ITEM_ROLE, skipped)
                item.setToolTip(0, f"{skipped.id}\nkept out of fusion (its pass stays on); check to fuse it again")
                item.setForeground(0, QBrush(QColor("#5f6368")))
                self._checkable(item, fused=False)
            for record in [*result.matches, *result.near_misses]:
                item = QTreeWidgetItem(group, [self.label(record).replace(self.prefix, "") if self.prefix
                                               else self.label(record)])
                item.setData(0, ITEM_ROLE, record)
                if isinstance(record, NearMiss):
                    item.setToolTip(0, self.label(record, short=False))
                    item.setForeground(0, QBrush(QColor("#b3261e")))
                else:
                    item.setToolTip(0, f"{record.id}\n{self.label(record, short=False)}\nuncheck to skip this match")
                    self._checkable(item, fused=True)
                self.records.append(item)
            group.setExpanded(True)
        if current is not None:
            found = self.item_for(current)
            if found is not None:
                self.setCurrentItem(found)
        self.blockSignals(False)
        self.set_errors(None)

    @staticmethod
    def _checkable(item: QTreeWidgetItem, *, fused: bool) -> None:
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
        item.setCheckState(0, Qt.CheckState.Checked if fused else Qt.CheckState.Unchecked)

    def _on_changed(self, item: QTreeWidgetItem, column: int) -> None:
        record = item.data(0, ITEM_ROLE)
        if column == 0 and isinstance(record, Match):
            self.skip_toggled.emit(record.id, item.checkState(0) == Qt.CheckState.Unchecked)

    def match_items(self) -> dict[str, QTreeWidgetItem]:
        """Match id -> its row, applied or skipped."""
        found = {}
        for i in range(self.topLevelItemCount()):
            group = self.topLevelItem(i)
            for j in range(group.childCount()):
                record = group.child(j).data(0, ITEM_ROLE)
                if isinstance(record, Match):
                    found[record.id] = group.child(j)
        return found

    def item_for(self, record: Match | NearMiss) -> QTreeWidgetItem | None:
        """The row of the same record in this (maybe newer) list: a match by id, a near miss by pass and anchor."""
        if isinstance(record, Match):
            return self.match_items().get(record.id)
        return next((item for item in self.records if isinstance(r := item.data(0, ITEM_ROLE), NearMiss)
                     and (r.pass_id, r.anchor) == (record.pass_id, record.anchor)), None)

    def selected_match_ids(self) -> list[str]:
        """Ids of the fused matches selected in the list (Ctrl/Shift-click), in list order; skipped ones are
        not fused, so they are left out."""
        return [match_id for match_id, item in self.match_items().items()
                if item.isSelected() and item.checkState(0) == Qt.CheckState.Checked]

    def select_match(self, match_id: str) -> bool:
        """Make a match current (its nodes are selected in both panes); False when it is not listed."""
        item = self.match_items().get(match_id)
        if item is None:
            return False
        self.setCurrentItem(item)
        self.scrollToItem(item)
        return True

    def set_errors(self, report: LayerwiseReport | None) -> None:
        """Show each match's layerwise max abs error; over the tolerance in red, the first divergent marked."""
        self.setColumnHidden(1, report is None)
        self.setHeaderHidden(report is None)
        self.blockSignals(True)
        for match_id, item in self.match_items().items():
            row = report.matches.get(match_id) if report is not None else None
            item.setText(1, "" if row is None else _error_text(row.max_abs, first=match_id == report.first_divergent,
                                                                 over=not row.allclose))
            item.setForeground(1, QBrush(QColor("#b3261e" if row is not None and not row.allclose else "#3c4043")))
            if row is not None:
                item.setToolTip(1, f"{match_id}: max abs {row.max_abs:.3g}, max rel {row.max_rel:.3g} over "
                                   f"{row.compared} tensor(s), in the graph right after its pass"
                                   + ("; the first divergent match in topological order"
                                      if match_id == report.first_divergent else ""))
        self.blockSignals(False)

    @staticmethod
    def label(record: Match | NearMiss, *, short: bool = True) -> str:
        """One line; `short` names a near miss by its last name parts so the reason stays visible."""
        if isinstance(record, Match):
            return f"✔ #{record.index} {record.summary}"
        return f"✘ {short_name(record.anchor) if short else record.anchor}: {record.reason}"

    def current_record(self) -> Match | NearMiss | None:
        item = self.currentItem()
        return item.data(0, ITEM_ROLE) if item is not None else None

    def step(self, delta: int, kind: type[Match] | type[NearMiss] | None = None) -> Match | NearMiss | None:
        """Move to the next (+1) or previous (-1) shown record of `kind` (any when None) in list order,
        wrapping around; returns it, or None when there is none. A demo steps through what fused,
        so matches and near misses each have their own stepping."""
        if not self.records:
            return None
        current = self.currentItem()
        index = self.records.index(current) if current in self.records else (-1 if delta > 0 else 0)
        for step in range(1, len(self.records) + 1):
            item = self.records[(index + step * delta) % len(self.records)]
            if (kind is None or isinstance(item.data(0, ITEM_ROLE), kind)) and not item.isHidden():
                self.setCurrentItem(item)
                self.scrollToItem(item)
                return item.data(0, ITEM_ROLE)
        return None

    def _on_current(self, current: QTreeWidgetItem | None, _previous: QTreeWidgetItem | None) -> None:
        if current is not None and current.data(0, ITEM_ROLE) is not None:
            self.item_chosen.emit(current.data(0, ITEM_ROLE))


def _error_text(value: float | None, *, first: bool, over: bool) -> str:
    text = "–" if value is None else f"{value:.1e}"
    return text + (" ✘ first" if first else " ✘" if over else "")
