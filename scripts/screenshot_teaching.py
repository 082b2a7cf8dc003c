"""The README's teaching screenshots, under Xvfb:

* docs/screenshots/near_miss_on_graph.png: the conv_shared sample's Conv+BN near miss drawn over the
  before pane (the bound nodes outlined, the leaking edge thick red, the reason beside it);
* docs/screenshots/presentation.png: presentation mode mid-demo on the demo sample (one step in:
  the LayerNorm's 14 nodes collapsed into one, its explanation large beside the panes).

    Xvfb :99 -screen 0 1600x1000x24 &  DISPLAY=:99 .venv/bin/python scripts/screenshot_teaching.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from screenshot_common import OUT, wait


def main() -> int:
    from PySide6.QtWidgets import QApplication, QDockWidget

    from fuselens.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    OUT.mkdir(parents=True, exist_ok=True)

    def settle(seconds: float) -> None:
        end = time.monotonic() + seconds
        wait(app, lambda: time.monotonic() > end, seconds + 5)

    def opened(spec: str, size: tuple[int, int]) -> MainWindow:
        window = MainWindow()
        window.resize(*size)
        window.show()
        for dock in window.findChildren(QDockWidget):  # the graph is the subject: the run docks are empty here
            dock.hide()
        window.open_model(spec)
        wait(app, lambda: ready(window), 120)
        return window

    def ready(window: MainWindow) -> bool:
        return (window.is_idle() and window.session.pipeline is not None and window.panes["after"].shown is not None
                and window.before.layout_ is window.panes["before"].shown)

    window = opened("conv_shared", (1560, 960))
    window.before.zoom(1.3)
    miss = window.session.pipeline.result("ConvBatchnormFusionPass").near_misses[0]
    window.match_list.setCurrentItem(window.match_list.item_for(miss))
    wait(app, lambda: ready(window) and window.why_not.label is not None, 60)
    settle(0.5)
    window.grab().save(str(OUT / "near_miss_on_graph.png"))
    window.close()

    window = opened("demo", (1600, 1000))
    presentation = window.presentation
    presentation.enter()
    for _ in range(1):
        presentation.keys["next"].trigger()
        wait(app, lambda: presentation.animation.state() != presentation.animation.State.Running, 10)
    settle(0.5)
    window.grab().save(str(OUT / "presentation.png"))
    presentation.leave()
    window.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
