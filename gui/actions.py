"""QAction construction shared by the window and its panels."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence

Shortcut = str | QKeySequence.StandardKey


def make_action(parent: QObject, text: str, handler: Callable[[], object] | None,
                shortcut: Shortcut | Sequence[Shortcut] | None = None, tip: str = "") -> QAction:
    """An action with its handler (None: connected by whoever owns what it does), one or several shortcuts
    and a tooltip."""
    action = QAction(text, parent)
    if handler is not None:
        action.triggered.connect(handler)
    if shortcut is not None:
        shortcuts = [shortcut] if isinstance(shortcut, str | QKeySequence.StandardKey) else list(shortcut)
        action.setShortcuts([QKeySequence(s) for s in shortcuts])
    if tip:
        action.setToolTip(tip)
    return action
