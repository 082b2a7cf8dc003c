"""The GUI entry point: `run_gui(model)` creates the QApplication and the main window."""

from __future__ import annotations

import sys

from PySide6.QtWidgets import QApplication

from gui.main_window import MainWindow


def run_gui(model: str | None = None) -> int:
    """Open the window (on `model`, a path or sample name, when given) and run the event loop."""
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("FuseLens")
    app.setOrganizationName("FuseLens")
    window = MainWindow()
    window.show()
    if model:
        window.open_model(model)
    return app.exec()
