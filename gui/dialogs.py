"""Dialogs the panels share: the sample gallery, error dialogs, save-as, the recent-files list."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QMessageBox,
    QStatusBar,
    QVBoxLayout,
    QWidget,
)

from fuselens.core.errors import FuseLensError
from fuselens.core.formats.samples import SAMPLES, is_built

T = TypeVar("T")

MODEL_FILTER = "TensorFlow models (*.pb *.pbtxt *.keras *.h5 saved_model.pb);;All files (*)"


class SamplesDialog(QDialog):
    """The sample gallery: every built-in sample with its description."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Samples")
        self.resize(640, 480)
        self.list = QListWidget(self)
        self.list.setWordWrap(True)
        for sample in SAMPLES.values():
            note = "" if not sample.cached or is_built(sample.name) else "  (built on first use, about a minute)"
            item = QListWidgetItem(f"{sample.name}  [{', '.join(sample.families)}]{note}\n    {sample.description}")
            item.setData(Qt.ItemDataRole.UserRole, sample.name)
            self.list.addItem(item)
        self.list.setCurrentRow(0)
        self.list.itemDoubleClicked.connect(lambda _item: self.accept())
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.list)
        layout.addWidget(buttons)

    def chosen(self) -> str | None:
        item = self.list.currentItem()
        return item.data(Qt.ItemDataRole.UserRole) if item is not None else None


def show_error(parent: QWidget, title: str, text: str, status: QStatusBar | None = None) -> None:
    """An error the user caused or met: in the status bar (if given) and in a dialog."""
    if status is not None:
        status.showMessage(text, 10000)
    QMessageBox.critical(parent, title, text)


def guarded(parent: QWidget, title: str, action: Callable[[], T], status: QStatusBar | None = None) -> T | None:
    """Run `action`; bad input or a file problem becomes an error dialog (None), never a traceback."""
    try:
        return action()
    except (FuseLensError, OSError) as e:
        show_error(parent, title, str(e), status)
        return None


def save_dialog(parent: QWidget, title: str, name: str, file_filter: str, write: Callable[[str], object],
                status: QStatusBar | None = None) -> None:
    """Ask where to save, then write there (errors as dialogs)."""
    path, _ = QFileDialog.getSaveFileName(parent, title, name, file_filter)
    if path:
        guarded(parent, f"{title} failed", lambda: write(path), status)


class RecentFiles:
    """The models opened last (newest first), kept in the settings."""

    def __init__(self, settings: QSettings, limit: int = 8):
        self.settings, self.limit = settings, limit

    def list(self) -> list[str]:
        value = self.settings.value("recent", [])
        return [value] if isinstance(value, str) else list(value or [])

    def remember(self, spec: str) -> None:
        self.settings.setValue("recent", ([spec] + [r for r in self.list() if r != spec])[:self.limit])

    def fill(self, menu: QMenu, open_model: Callable[[str], None]) -> None:
        menu.clear()
        for spec in self.list():
            menu.addAction(spec, lambda s=spec: open_model(s))
        if not self.list():
            menu.addAction("(none)").setEnabled(False)
