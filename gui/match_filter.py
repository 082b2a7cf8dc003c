"""The match list with a filter row above it: kind (matches / near misses / skipped), pass and text.

A demo wants the list to show what fused; a Keras ResNet50 gives 53 LayerNorm near misses that
only say "a Keras BatchNormalization, not a LayerNorm" (the list folds those into one line). This
widget owns no state a test needs: `refresh()` offers the passes of a new list, each filter change
calls `apply()`, and each pass's lines are filtered as they join the list (it fills in slices).
"""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLineEdit, QTreeWidgetItem, QVBoxLayout, QWidget

from fuselens.gui.match_list import GROUP_ROLE, ITEM_ROLE, MatchList
from fuselens.passes.base import NearMiss

ALL_PASSES = "all passes"
# What each kind choice keeps (item_kind of each line).
KINDS = {"all": {"match", "near miss", "skipped", "failed"}, "matches": {"match"},
         "near misses": {"near miss"}, "skipped": {"skipped"}}


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
        match_list.group_added.connect(self._filter_group)
        self.refresh()

    def pass_ids(self) -> list[str]:
        return list(self.match_list.pass_ids)

    def refresh(self) -> None:
        """After the list was given new results: offer its passes, apply the filter to what is in it."""
        chosen = self.pass_box.currentText()
        self.pass_box.blockSignals(True)
        self.pass_box.clear()
        self.pass_box.addItems([ALL_PASSES, *self.pass_ids()])
        self.pass_box.setCurrentText(chosen if chosen in self.pass_ids() else ALL_PASSES)
        self.pass_box.blockSignals(False)
        self.apply()

    def shows_everything(self) -> bool:
        return self.kind.currentText() == "all" and self.pass_box.currentText() == ALL_PASSES \
            and not self.text.text()

    def apply(self) -> int:
        """Hide the lines the filter leaves out; returns how many matches and near misses show."""
        return sum(self._apply_to(self.match_list.topLevelItem(i)) for i in range(self.match_list.topLevelItemCount()))

    def _filter_group(self, group: QTreeWidgetItem) -> None:
        """A pass's lines just joined the list, all shown: hide what the filter leaves out."""
        if not self.shows_everything():
            self._apply_to(group)

    def _apply_to(self, group: QTreeWidgetItem) -> int:
        """Filter one pass's lines; returns how many of its matches and near misses show."""
        kind, chosen, needle = self.kind.currentText(), self.pass_box.currentText(), self.text.text().lower()
        in_pass = chosen == ALL_PASSES or group.text(0).split()[0] == chosen
        visible = shown = 0
        for item in record_lines(group):
            what = item_kind(item)
            ok = in_pass and what in KINDS[kind] and (
                not needle or needle in item.text(0).lower() or needle in item.toolTip(0).lower())
            if item.isHidden() == ok:
                item.setHidden(not ok)
            visible += ok
            shown += ok and what in ("match", "near miss")
        for sub in range(group.childCount()):
            folded = group.child(sub)
            if folded.data(0, GROUP_ROLE):
                folded.setHidden(all(folded.child(k).isHidden() for k in range(folded.childCount())))
        group.setHidden(not visible)
        return shown
