"""The match list with a filter row above it: kind (matches / near misses / skipped), pass and text,
and near misses that repeat one reason folded into one collapsed line with a count.

A demo wants the list to show what fused; a Keras ResNet50 gives 53 LayerNorm near misses that
only say "a Keras BatchNormalization, not a LayerNorm". This widget owns no state a test needs:
`refresh()` regroups and re-filters the list after each fusion, each filter change calls `apply()`.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLineEdit, QTreeWidgetItem, QVBoxLayout, QWidget

from gui.match_list import ITEM_ROLE, MatchList
from passes.base import NearMiss

ALL_PASSES = "all passes"
REPEATED = 3  # near misses of one pass with the same reason this many times fold into one line
# What each kind choice keeps (item_kind of each line).
KINDS = {"all": {"match", "near miss", "skipped", "failed"}, "matches": {"match"},
         "near misses": {"near miss"}, "skipped": {"skipped"}}
GROUP_ROLE = Qt.ItemDataRole.UserRole + 7  # marks a folded line of repeated near misses


def reason_key(miss: NearMiss) -> str:
    """The reason with the near miss's own node names taken out, so the same refusal reads the same."""
    text = miss.reason
    for name in sorted({miss.anchor, *miss.nodes}, key=len, reverse=True):
        if len(name) > 2:
            text = text.replace(name, "…")
    return text


def item_kind(item: QTreeWidgetItem) -> str:
    """What one line of the list is: match, near miss, skipped (a match kept out) or failed."""
    if item.text(0).startswith("⚠"):
        return "failed"
    if item.text(0).startswith("⏸"):
        return "skipped"
    return "near miss" if isinstance(item.data(0, ITEM_ROLE), NearMiss) else "match"


def record_lines(group: QTreeWidgetItem) -> list[QTreeWidgetItem]:
    """The lines under a pass's line, inside folded groups too."""
    found = []
    for index in range(group.childCount()):
        child = group.child(index)
        found += record_lines(child) if child.data(0, GROUP_ROLE) else [child]
    return found


class MatchFilterBar(QWidget):
    def __init__(self, match_list: MatchList, parent: QWidget | None = None):
        super().__init__(parent)
        self.match_list = match_list
        self.kind = QComboBox(self)
        self.kind.addItems(list(KINDS))
        self.kind.setToolTip("Show every line, only matches, only near misses, or only skipped matches")
        self.pass_box = QComboBox(self)
        self.pass_box.setToolTip("Show one pass's lines")
        self.text = QLineEdit(self)
        self.text.setPlaceholderText("filter")
        self.text.setClearButtonEnabled(True)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.kind)
        row.addWidget(self.pass_box, 1)
        row.addWidget(self.text, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(row)
        layout.addWidget(match_list, 1)
        self.kind.currentTextChanged.connect(self.apply)
        self.pass_box.currentTextChanged.connect(self.apply)
        self.text.textChanged.connect(self.apply)
        self.refresh()

    def pass_ids(self) -> list[str]:
        return [self.match_list.topLevelItem(i).text(0).split()[0] for i in range(self.match_list.topLevelItemCount())]

    def refresh(self) -> None:
        """After the list was refilled: fold repeated near misses, offer its passes, apply the filter."""
        for index in range(self.match_list.topLevelItemCount()):
            self._fold_repeated(self.match_list.topLevelItem(index))
        chosen = self.pass_box.currentText()
        self.pass_box.blockSignals(True)
        self.pass_box.clear()
        self.pass_box.addItems([ALL_PASSES, *self.pass_ids()])
        self.pass_box.setCurrentText(chosen if chosen in self.pass_ids() else ALL_PASSES)
        self.pass_box.blockSignals(False)
        self.apply()

    @staticmethod
    def _fold_repeated(group: QTreeWidgetItem) -> None:
        """Near misses sharing a reason REPEATED times or more move under one collapsed line with the count
        (the same items: stepping still reaches them, and opens the line)."""
        by_reason: dict[str, list[QTreeWidgetItem]] = {}
        for index in range(group.childCount()):
            record = group.child(index).data(0, ITEM_ROLE)
            if isinstance(record, NearMiss):
                by_reason.setdefault(reason_key(record), []).append(group.child(index))
        for reason, items in by_reason.items():
            if len(items) < REPEATED:
                continue
            folded = QTreeWidgetItem([f"✘ {len(items)} near misses: {reason}"])
            folded.setData(0, GROUP_ROLE, True)
            folded.setFlags(Qt.ItemFlag.ItemIsEnabled)
            folded.setToolTip(0, "the same reason each time, often a pass saying a structure is not its "
                                 "pattern at all; expand to see them")
            group.insertChild(group.indexOfChild(items[0]), folded)
            for item in items:
                folded.addChild(group.takeChild(group.indexOfChild(item)))
            folded.setExpanded(False)

    def apply(self) -> int:
        """Hide the lines the filter leaves out; returns how many matches and near misses show."""
        kind, chosen, needle = self.kind.currentText(), self.pass_box.currentText(), self.text.text().lower()
        shown = 0
        for index in range(self.match_list.topLevelItemCount()):
            group = self.match_list.topLevelItem(index)
            in_pass = chosen == ALL_PASSES or group.text(0).split()[0] == chosen
            visible = 0
            for item in record_lines(group):
                ok = in_pass and item_kind(item) in KINDS[kind] and (
                    not needle or needle in item.text(0).lower() or needle in item.toolTip(0).lower())
                item.setHidden(not ok)
                visible += ok
                shown += ok and item_kind(item) in ("match", "near miss")
            for sub in range(group.childCount()):
                folded = group.child(sub)
                if folded.data(0, GROUP_ROLE):
                    folded.setHidden(all(folded.child(k).isHidden() for k in range(folded.childCount())))
            group.setHidden(not visible)
        return shown
