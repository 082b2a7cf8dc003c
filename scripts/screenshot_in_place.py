"""The README's in-place screenshot, under Xvfb: docs/screenshots/layernorm_in_place.png, the
bert_layernorm sample with its first fused LayerNorm opened in place in the after pane (its body's
nodes inside its box, the argument and result boxes wired to the outer edges) and the 14 original
nodes it replaced lit in the before pane.

    Xvfb :99 -screen 0 1600x1000x24 &  DISPLAY=:99 .venv/bin/python scripts/screenshot_in_place.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from screenshot_common import OUT, wait

LAYER_NORM = "bert/encoder/layer_0/attention/output/LayerNorm"


def main() -> int:
    from PySide6.QtWidgets import QApplication, QDockWidget

    from fuselens.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    OUT.mkdir(parents=True, exist_ok=True)
    window = MainWindow()
    window.resize(1600, 1000)
    window.show()
    for dock in window.findChildren(QDockWidget):  # the graphs are the subject: the run docks are empty here
        dock.hide()
    window.open_model("bert_layernorm")

    def ready() -> bool:
        return (window.is_idle() and window.session.pipeline is not None and window.panes["after"].shown is not None
                and window.after.layout_ is window.panes["after"].shown)

    wait(app, ready, 120)
    window.after.setFocus()
    window._on_activated("after", LAYER_NORM)  # what a double-click on it does
    wait(app, lambda: ready() and window.panes["after"].shown.nodes[LAYER_NORM].open, 60)
    for view in (window.before, window.after):  # each pane on the LayerNorm, at a zoom its labels can be read
        view.resetTransform()
        view.scale(0.8, 0.8)
        view.centre_on_keys(view.selected_keys)
    end = time.monotonic() + 0.5
    wait(app, lambda: time.monotonic() > end, 5)
    window.grab().save(str(OUT / "layernorm_in_place.png"))
    window.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
