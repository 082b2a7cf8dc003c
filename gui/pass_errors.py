"""The user's pass errors: each exception raised in the user's own pass code as their own traceback (their
file and line, FuseLens's frames left out by the loader), a frame a click away from their editor.

One line per error (what was raised, where), its frames under it, innermost last as Python prints them;
a double-click or Enter on a frame (or on the error: its innermost frame) starts $EDITOR at that line
(session/editor.py). A pass that ran too long, or a file that did not load, is an error without frames
when the loader had none to give. The panel only shows: the last good result stays in the other views.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QLabel, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from fuselens.core.errors import FuseLensError
from fuselens.session.editor import open_in_editor

FRAME_ROLE = Qt.ItemDataRole.UserRole  # (file, line) of a row
RED = QBrush(QColor("#b3261e"))


class Frame(Protocol):
    file: str
    line: int
    function: str
    text: str


class UserError(Protocol):
    message: str  # "ZeroDivisionError: division by zero"
    frames: Sequence[Frame]  # the user's own frames, outermost first


class PassErrorPanel(QWidget):
    """The errors of the last run of the user's passes; `report(text)` tells the user what a click did."""

    def __init__(self, report: Callable[[str], None], parent: QWidget | None = None,
                 open_file: Callable[[str, int], object] = open_in_editor):
        super().__init__(parent)
        self.report, self.open_file = report, open_file
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.tree = QTreeWidget(self)
        self.tree.setHeaderHidden(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setToolTip("double-click a frame (or press Enter) to open it in $EDITOR")
        self.tree.itemActivated.connect(lambda item, _column: self.open_item(item))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.addWidget(self.summary)
        layout.addWidget(self.tree, 1)

    def show_errors(self, summary: str, errors: Sequence[UserError]) -> None:
        """Show these errors (none: the summary alone, e.g. "2 passes loaded from my_pass.py")."""
        self.summary.setText(summary)
        self.tree.clear()
        for error in errors:
            innermost = error.frames[-1] if error.frames else None
            where = f"  ({innermost.file}:{innermost.line})" if innermost is not None else ""
            top = QTreeWidgetItem(self.tree, [f"✘ {error.message}{where}"])
            top.setForeground(0, RED)
            top.setToolTip(0, error.message)
            if innermost is not None:
                top.setData(0, FRAME_ROLE, (innermost.file, innermost.line))
            for frame in error.frames:
                row = QTreeWidgetItem(top, [f"{frame.file}:{frame.line} in {frame.function}:  {frame.text.strip()}"])
                row.setData(0, FRAME_ROLE, (frame.file, frame.line))
                row.setToolTip(0, f"open {frame.file} at line {frame.line} in $EDITOR")
            top.setExpanded(True)

    def frame_rows(self) -> list[tuple[str, tuple[str, int] | None]]:
        """Every row's text and (file, line): what the panel shows (tests)."""
        rows = []
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            for item in (top, *(top.child(j) for j in range(top.childCount()))):
                rows.append((item.text(0), item.data(0, FRAME_ROLE)))
        return rows

    def open_item(self, item: QTreeWidgetItem) -> None:
        where = item.data(0, FRAME_ROLE)
        if not where:
            return
        path, line = where
        try:
            self.open_file(path, line)
        except FuseLensError as e:
            self.report(str(e))
            return
        self.report(f"opened {path}:{line} in $EDITOR")
