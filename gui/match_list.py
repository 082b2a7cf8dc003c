"""Every match and near miss of the last fusion, grouped by pass, with next/previous stepping.

The list does not care which pass made a record: it reads PassResult.matches / near_misses,
and shows the matches the user skipped and any pass or match that failed (not stepped through).
"""

from __future__ import annotations

import posixpath

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QTreeWidget, QTreeWidgetItem, QWidget

from core.layout import short_name
from passes.base import Match, NearMiss, PassResult

ITEM_ROLE = Qt.ItemDataRole.UserRole


class MatchList(QTreeWidget):
    item_chosen = Signal(object)  # Match | NearMiss

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setHeaderHidden(True)
        self.setUniformRowHeights(True)
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.records: list[QTreeWidgetItem] = []  # in stepping order
        self.prefix = ""  # the model's root scope, left out of labels (`mobilenetv2_1.00_224_1/`)
        self.currentItemChanged.connect(self._on_current)

    def set_results(self, results: list[PassResult]) -> None:
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
            for error in result.errors:
                item = QTreeWidgetItem(group, [f"⚠ {error}"])
                item.setToolTip(0, error)
                item.setForeground(0, QBrush(QColor("#a15c00")))
            for skipped in result.skipped:
                item = QTreeWidgetItem(group, [f"⏸ skipped: {short_name(skipped.anchor)} ({skipped.summary})"])
                item.setToolTip(0, f"{skipped.id}: kept out of fusion by the skip list")
                item.setForeground(0, QBrush(QColor("#5f6368")))
            for record in [*result.matches, *result.near_misses]:
                item = QTreeWidgetItem(group, [self.label(record).replace(self.prefix, "") if self.prefix
                                               else self.label(record)])
                item.setData(0, ITEM_ROLE, record)
                item.setToolTip(0, self.label(record, short=False))
                if isinstance(record, NearMiss):
                    item.setForeground(0, QBrush(QColor("#b3261e")))
                self.records.append(item)
            group.setExpanded(True)
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
