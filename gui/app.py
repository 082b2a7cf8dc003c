"""The GUI entry point: `run_gui(model, py_passes)` creates the QApplication and the main window."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from fuselens.core.package_data import resource
from fuselens.gui.main_window import MainWindow
from fuselens.passes.ge_python import ENV_PASS_PATH, pass_path_entries

# A thread holding the interpreter lock gives it up after this long when another wants it (Python's default
# is 5 ms). Each Qt call the GUI thread makes lets a computing worker (fusion, layout) take the lock, and the
# GUI thread then waited up to the interval to get it back: a paint (a Python call per item in view), a scene
# slice, a timer. On the 20k-node graph the longest stall while opening was 115-124 ms at 5 ms and 31-80 ms at
# 0.5 ms (benchmarks/bench_gui.py); an idle GUI thread asks for no lock, so a lone worker is not slowed.
SWITCH_INTERVAL_S = 0.0005

NO_DISPLAY = ("fuselens: error: no display to open the window on (DISPLAY and WAYLAND_DISPLAY are unset); "
              "run it on a desktop, over `ssh -X`, or under `xvfb-run`, or use the command line "
              "(`fuselens inspect|fuse|run MODEL`)")


def missing_display() -> bool:
    """On Linux without X11 or Wayland (and no explicit QT_QPA_PLATFORM), Qt can only abort."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return False
    return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def tune_interpreter() -> None:
    """The window's interpreter settings (SWITCH_INTERVAL_S): run_gui's, and those of a benchmark that makes a
    window of its own."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)


def run_gui(model: str | None = None, py_passes: Sequence[str] = ()) -> int:
    """Open the window (on `model`, a path or sample name, when given; with the user's `ge.passes` files open
    and watched: ASCEND_GE_PY_PASS_PATH's entries, then `py_passes`) and run the event loop."""
    if QApplication.instance() is None and missing_display():
        print(NO_DISPLAY, file=sys.stderr)
        return 2
    app = QApplication.instance() or QApplication(sys.argv[:1])
    tune_interpreter()
    app.setApplicationName("FuseLens")
    app.setOrganizationName("FuseLens")
    app.setDesktopFileName("fuselens")  # the menu entry `make install-desktop` writes, and its icon
    app.setWindowIcon(QIcon(str(resource("desktop", "fuselens.svg"))))
    window = MainWindow()
    for path in [*pass_path_entries(os.environ.get(ENV_PASS_PATH, "")), *py_passes]:  # as GE reads them
        window.py_passes.open_file(path)
    if model:
        window.open_when_painted(model)
    window.show()
    return app.exec()
