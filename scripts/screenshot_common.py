"""What the screenshot scripts share: where the pictures go, a window of their own, and waiting on it."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "screenshots"


def wait(app, condition: Callable[[], object], seconds: float) -> None:
    """Process events until `condition()` holds; give up (exit) after `seconds`."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit("timed out")
        app.processEvents()
        time.sleep(0.05)


def shown_window(width: int, height: int):
    """(the application, a shown MainWindow of `width` x `height`, a fresh temporary folder holding its settings
    and data): a screenshot never shows (or changes) the user's own recent files and hosts."""
    tmp = Path(tempfile.mkdtemp(prefix="fuselens-shots-"))
    os.environ["FUSELENS_CONFIG_DIR"] = str(tmp / "config")
    os.environ["FUSELENS_DATA_DIR"] = str(tmp / "data")
    from PySide6.QtWidgets import QApplication

    from fuselens.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    window = MainWindow()
    window.resize(width, height)
    window.show()
    return app, window, tmp
