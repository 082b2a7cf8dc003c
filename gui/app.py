"""The GUI entry point: `run_gui(model)` creates the QApplication and the main window."""

from __future__ import annotations

import os
import sys

from PySide6.QtWidgets import QApplication

from gui.main_window import MainWindow

# How long a thread may hold the interpreter lock while another waits for it (Python's default: 5 ms).
# The GUI thread paints through a Python call per visible item; each call waits for the lock while a
# worker thread (layout, fusion result) computes, up to this long: a 29 ms paint took 105-1557 ms
# beside one busy thread at 5 ms and 62-68 ms at 1 ms (benchmarks/bench_paint_convoy.py).
GUI_SWITCH_INTERVAL_S = 0.001

NO_DISPLAY = ("fuselens: error: no display to open the window on (DISPLAY and WAYLAND_DISPLAY are unset); "
              "run it on a desktop, over `ssh -X`, or under `xvfb-run`, or use the command line "
              "(`fuselens inspect|fuse|run MODEL`)")


def missing_display() -> bool:
    """On Linux without X11 or Wayland (and no explicit QT_QPA_PLATFORM), Qt can only abort."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return False
    return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def run_gui(model: str | None = None) -> int:
    """Open the window (on `model`, a path or sample name, when given) and run the event loop."""
    if QApplication.instance() is None and missing_display():
        print(NO_DISPLAY, file=sys.stderr)
        return 2
    sys.setswitchinterval(GUI_SWITCH_INTERVAL_S)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("FuseLens")
    app.setOrganizationName("FuseLens")
    window = MainWindow()
    window.show()
    if model:
        window.open_model(model)
    return app.exec()
