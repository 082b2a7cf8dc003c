"""Small dialogs of the main window: the sample gallery."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from core.samples import SAMPLES, is_built

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
