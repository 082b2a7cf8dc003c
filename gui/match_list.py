"""Every match and near miss of the last fusion, grouped by pass, with next/previous stepping.

The list does not care which pass made a record: it reads PassResult.matches / near_misses,
and shows the matches the user skipped and any pass or match that failed (not stepped through).
Each match has a check box: unchecking it skips that match (its pass stays on), checking a
skipped one fuses it again; the window turns that into a new PassConfig. After a layerwise
compare a second column gives each match's error. Near misses of one pass that repeat one reason
REPEATED times or more sit under one collapsed line with the count.

A 20k-node graph's fusion has some 5,000 records: their rows are built in slices of FILL_SLICE_S
between event-loop turns (`filling` until `filled`), a pass's rows detached from the view and
added to it at once, so the GUI thread never stalls on the list.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from itertools import chain
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QHeaderView, QTreeWidget, QTreeWidgetItem, QWidget

from fuselens.core.layout import short_name
from fuselens.gui.workers import run_in_slices
from fuselens.passes.base import Match, NearMiss, PassResult

if TYPE_CHECKING:
    from fuselens.session.layerwise import LayerwiseReport

ITEM_ROLE = Qt.ItemDataRole.UserRole
GROUP_ROLE = Qt.ItemDataRole.UserRole + 7  # marks a folded line of repeated near misses
REPEATED = 3  # near misses of one pass with the same reason this many times fold into one line
FILL_SLICE_S = 0.015  # GUI-thread time per slice of rows
MIN_ROWS_PER_SLICE = 100  # a slice builds at least this many rows: a small list fills at once
RED, GREY, AMBER, DARK = (QBrush(QColor(c)) for c in ("#b3261e", "#5f6368", "#a15c00", "#3c4043"))


def reason_key(miss: NearMiss) -> str:
    """The reason with the near miss's own node names taken out, so the same refusal reads the same."""
    text = miss.reason
    for name in sorted({miss.anchor, *miss.nodes}, key=len, reverse=True):
        if len(name) > 2:
            text = text.replace(name, "…")
    return text


def root_scope(names: list[str]) -> str:
    """The scope every name is inside ("model/" for "model/a" and "model/b/c"), or "". From the smallest and
    the largest name (what they share, all share): posixpath.commonpath splits every name, 10 ms on the 20k
    graph's 5,000 records in the GUI thread."""
    if not names:
        return ""
    shared = os.path.commonprefix([min(names), max(names)])  # noqa: RUF071 (by characters, cut at a "/" next)
    scope = shared[:shared.rfind("/") + 1]
    return scope if scope != "/" and all(name.startswith(scope) and len(name) > len(scope) for name in names) else ""


def _deleted(rows: list[QTreeWidgetItem]) -> Iterator[None]:
    """Rows taken out of the list deleted one per step, children first: each holds its record, and clear() on
    the 20k graph's 5,000 rows (the records freed with them) held the GUI thread 40 ms in one go."""
    while rows:
        row = rows.pop()
        rows += row.takeChildren()
        del row
        yield


class MatchList(QTreeWidget):
    """Column 0: the record, a match with a check box (unchecked = skipped, its pass stays on);
    column 1, once a layerwise compare ran: the match's max abs error against the original."""

    item_chosen = Signal(object)  # Match | NearMiss
    skip_toggled = Signal(str, bool)  # match id, skip it (True) or fuse it again (False)
    group_added = Signal(object)  # QTreeWidgetItem: a pass's line and all its lines are now in the list
    filled = Signal()  # every line of the last results is in the list

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
        self.records: list[QTreeWidgetItem] = []  # in stepping order (rows in the list so far)
        self.prefix = ""  # the model's root scope, left out of labels (`mobilenetv2_1.00_224_1/`)
        self.pass_ids: list[str] = []  # passes with a line in the list, in order
        self.filling = False  # rows of the last results are still being added
        self._match_rows: dict[str, QTreeWidgetItem] = {}
        self._generation = 0  # a newer set_results abandons an older fill
        self.currentItemChanged.connect(self._on_current)
        self.itemChanged.connect(self._on_changed)

    def set_results(self, results: list[PassResult]) -> None:
        """Show these results: the first rows now, the rest in later event-loop turns (see `filling`)."""
        current = self.current_record()
        self._generation += 1
        self.blockSignals(True)
        retired = self.invisibleRootItem().takeChildren()  # deleted in the fill's slices (_deleted)
        self.blockSignals(False)
        self.records, self._match_rows = [], {}
        self.setColumnHidden(1, True)  # a layerwise compare's errors were for the last results
        self.setHeaderHidden(True)
        shown = [r for r in results if r.matches or r.near_misses or r.skipped or r.errors]
        self.pass_ids = [r.pass_id for r in shown]
        anchors = [r.anchor for result in shown for r in (*result.matches, *result.near_misses)]
        self.prefix = root_scope(anchors)
        self.filling = True
        generation = self._generation
        run_in_slices(self, chain(_deleted(retired), self._build(shown)), seconds=FILL_SLICE_S,
                      at_least=MIN_ROWS_PER_SLICE,
                      current=lambda: generation == self._generation,  # else newer results replaced these
                      done=lambda: self._filled(current))

    def _filled(self, current: Match | NearMiss | None) -> None:
        self.filling = False
        found = self.item_for(current) if current is not None and self.currentItem() is None else None
        if found is not None:
            self.blockSignals(True)  # the same record, not a new choice
            self.setCurrentItem(found)
            self.blockSignals(False)
        self.filled.emit()

    def _build(self, results: list[PassResult]) -> Iterator[None]:
        """Build rows one per step; each pass's group joins the list once complete."""
        for result in results:
            counts = [f"{len(result.matches)} ✔", f"{len(result.near_misses)} ✘"]
            counts += [f"{len(result.skipped)} skipped"] if result.skipped else []
            counts += [f"{len(result.errors)} failed"] if result.errors else []
            group = QTreeWidgetItem([f"{result.pass_id}  ({', '.join(counts)})"])
            group.setFlags(Qt.ItemFlag.ItemIsEnabled)
            checkable: list[QTreeWidgetItem] = []  # skipped and fused matches
            for error in result.errors:
                item = QTreeWidgetItem(group, [f"⚠ {error}"])
                item.setToolTip(0, error)
                item.setForeground(0, AMBER)
            for skipped in result.skipped:
                item = QTreeWidgetItem(group, [f"⏸ skipped: {short_name(skipped.anchor)} ({skipped.summary})"])
                item.setData(0, ITEM_ROLE, skipped)
                item.setToolTip(0, f"{skipped.id}\nkept out of fusion (its pass stays on); check to fuse it again")
                item.setForeground(0, GREY)
                self._checkable(item, fused=False)
                checkable.append(item)
                yield
            records, folds = [], {}
            reasons = [reason_key(miss) for miss in result.near_misses]
            repeated = {reason: n for reason, n in Counter(reasons).items() if n >= REPEATED}
            for record, reason in zip([*result.matches, *result.near_misses],
                                      [None] * len(result.matches) + reasons, strict=True):
                parent = group
                if reason in repeated:
                    parent = folds.get(reason)
                    if parent is None:
                        parent = folds[reason] = self._folded(group, reason, repeated[reason])
                records.append(self._record_row(parent, record))
                yield
            self.addTopLevelItem(group)
            group.setFirstColumnSpanned(True)
            group.setExpanded(True)
            self.records += records
            checkable += records[:len(result.matches)]
            self._match_rows.update((item.data(0, ITEM_ROLE).id, item) for item in checkable)
            self.group_added.emit(group)
            yield

    def _record_row(self, parent: QTreeWidgetItem, record: Match | NearMiss) -> QTreeWidgetItem:
        label = self.label(record)
        item = QTreeWidgetItem(parent, [label.replace(self.prefix, "") if self.prefix else label])
        item.setData(0, ITEM_ROLE, record)
        if isinstance(record, NearMiss):
            item.setToolTip(0, self.label(record, short=False))
            item.setForeground(0, RED)
        else:
            item.setToolTip(0, f"{record.id}\n{self.label(record, short=False)}\nuncheck to skip this match")
            self._checkable(item, fused=True)
        return item

    @staticmethod
    def _folded(group: QTreeWidgetItem, reason: str, count: int) -> QTreeWidgetItem:
        """The collapsed line over near misses sharing a reason (the same rows: stepping still reaches them,
        and opens the line)."""
        folded = QTreeWidgetItem(group, [f"✘ {count} near misses: {reason}"])
        folded.setData(0, GROUP_ROLE, True)
        folded.setFlags(Qt.ItemFlag.ItemIsEnabled)
        folded.setToolTip(0, "the same reason each time, often a pass saying a structure is not its "
                             "pattern at all; expand to see them")
        return folded

    @staticmethod
    def _checkable(item: QTreeWidgetItem, *, fused: bool) -> None:
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
        item.setCheckState(0, Qt.CheckState.Checked if fused else Qt.CheckState.Unchecked)

    def _on_changed(self, item: QTreeWidgetItem, column: int) -> None:
        record = item.data(0, ITEM_ROLE)
        if column == 0 and isinstance(record, Match):
            self.skip_toggled.emit(record.id, item.checkState(0) == Qt.CheckState.Unchecked)

    def match_items(self) -> dict[str, QTreeWidgetItem]:
        """Match id -> its row, applied or skipped, in list order."""
        return dict(self._match_rows)

    def item_for(self, record: Match | NearMiss) -> QTreeWidgetItem | None:
        """The row of the same record in this (maybe newer) list: a match by id, a near miss by pass and anchor."""
        if isinstance(record, Match):
            return self._match_rows.get(record.id)
        return next((item for item in self.records if isinstance(r := item.data(0, ITEM_ROLE), NearMiss)
                     and (r.pass_id, r.anchor) == (record.pass_id, record.anchor)), None)

    def selected_match_ids(self) -> list[str]:
        """Ids of the fused matches selected in the list (Ctrl/Shift-click), in list order; skipped ones are
        not fused, so they are left out."""
        return [match_id for match_id, item in self._match_rows.items()
                if item.isSelected() and item.checkState(0) == Qt.CheckState.Checked]

    def select_match(self, match_id: str) -> bool:
        """Make a match current (its nodes are selected in both panes); False when it is not listed."""
        item = self._match_rows.get(match_id)
        if item is None:
            return False
        self.setCurrentItem(item)
        self.scrollToItem(item)
        return True

    def set_errors(self, report: LayerwiseReport | None) -> None:
        """Show each match's layerwise max abs error; over the tolerance in red, the first divergent marked."""
        if report is None and self.isColumnHidden(1):  # no errors shown (a hidden column's are cleared or never set):
            return  # a walk of every row, 25 ms on the 100k graph's, at each fusion
        self.setColumnHidden(1, report is None)
        self.setHeaderHidden(report is None)
        self.blockSignals(True)
        for match_id, item in self._match_rows.items():
            row = report.matches.get(match_id) if report is not None else None
            item.setText(1, "" if row is None else _error_text(row.max_abs, first=match_id == report.first_divergent,
                                                                 over=not row.allclose))
            item.setForeground(1, RED if row is not None and not row.allclose else DARK)
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
