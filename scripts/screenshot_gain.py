"""The run guide's "did each fusion pay?" screenshot docs/screenshots/gain_mobilenet_v2.png: mobilenet_v2 with
the default passes run on CPU (30 steps), the gain tab shown; its biggest win is then selected (as a click does) and
the whole window saved beside it in a temporary folder, to look at the selection in both panes.

    QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/screenshot_gain.py   (or under Xvfb, DISPLAY=:99)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from screenshot_common import OUT, shown_window, wait

MODEL, STEPS = "mobilenet_v2", 30


def main() -> int:
    from PySide6.QtCore import Qt

    app, window, tmp = shown_window(1600, 1000)
    window.open_model(MODEL)
    wait(app, lambda: window.is_idle() and window.session.model.name == MODEL
         and window.panes["after"].shown is not None, 300)
    panel = window.run_panel
    panel.steps.setValue(STEPS)
    panel.start_run()
    wait(app, lambda: not panel.running(), 600)
    wait(app, lambda: panel.result is not None, 10)
    window.resizeDocks([panel.parentWidget()], [560], Qt.Orientation.Vertical)
    panel.tabs.setCurrentWidget(panel.gains)
    for _ in range(40):
        app.processEvents()
    panel.select_gain(panel.gains.plot.rows[0])
    for _ in range(80):
        app.processEvents()
    out = OUT / f"gain_{MODEL}.png"
    panel.grab().save(str(out))
    window.grab().save(str(tmp / "window.png"))
    window.close()
    print(f"wrote {out} (the whole window: {tmp / 'window.png'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
