"""Find: every node whose name or op type contains the text, in both panes; Enter steps through the hits."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from PySide6.QtWidgets import QLabel, QLineEdit, QWidget

from fuselens.gui.graph_view import GraphView


class SearchHits:
    """The search box's hits over the panes, and stepping through them (before pane first)."""

    def __init__(self, box: QLineEdit, status: QLabel, views: Mapping[str, GraphView],
                 select: Callable[[str, str], None]):
        self.box, self.status, self.views, self.select = box, status, views, select
        self.hits: list[tuple[str, str]] = []
        self.index = -1
        box.textChanged.connect(self.refresh)
        box.returnPressed.connect(self.next_hit)

    def refresh(self, text: str | None = None) -> None:
        """Find again (the text changed, or a pane shows a new layout)."""
        text = self.box.text() if text is None else text
        self.hits = [(side, key) for side, view in self.views.items() for key in view.find(text)]
        self.index = -1
        before = sum(1 for side, _ in self.hits if side == "before")
        self.status.setText(f" {before} before, {len(self.hits) - before} after" if text.strip() else "")

    def next_hit(self) -> None:
        """Select the next hit, which centres both panes on it."""
        if not self.hits:
            return
        self.index = (self.index + 1) % len(self.hits)
        side, key = self.hits[self.index]
        self.select(side, key)
        self.views[side].centre_on_keys([key])


def search_box(parent: QWidget) -> tuple[QLineEdit, QLabel]:
    box = QLineEdit(parent)
    box.setPlaceholderText("Find node or op type (Ctrl+F)")
    box.setClearButtonEnabled(True)
    box.setMaximumWidth(280)
    return box, QLabel("", parent)
