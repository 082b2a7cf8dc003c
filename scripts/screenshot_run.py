"""The README's CPU-run screenshot docs/screenshots/run_mobilenet_v2.png: mobilenet_v2 with the
default passes, 30 steps, the first match selected.

    Xvfb :99 -screen 0 1600x1000x24 &  DISPLAY=:99 .venv/bin/python scripts/screenshot_run.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from screenshot_common import OUT, shown_window, wait


def run_and_shoot(app, window, model: str, steps: int, out: Path) -> None:
    """Open `model`, step to its first match, run it on CPU and save the window."""
    window.open_model(model)
    wait(app, lambda: window.is_idle() and window.session.model.name == model
         and window.panes["after"].shown is not None, 300)
    window.step_match(1)
    panel = window.run_panel
    panel.steps.setValue(steps)
    panel.start_run()
    wait(app, lambda: not panel.running(), 600)
    wait(app, lambda: panel.result is not None, 10)
    panel.tabs.setCurrentWidget(panel.charts)
    for _ in range(40):
        app.processEvents()
    window.grab().save(str(out))


def main() -> int:
    app, window, _ = shown_window(1600, 1000)
    run_and_shoot(app, window, "mobilenet_v2", 30, OUT / "run_mobilenet_v2.png")
    window.close()
    print(f"wrote {OUT / 'run_mobilenet_v2.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
