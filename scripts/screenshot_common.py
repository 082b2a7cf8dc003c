"""What the screenshot scripts share: where the pictures go, and waiting on the window."""

from __future__ import annotations

import sys
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
