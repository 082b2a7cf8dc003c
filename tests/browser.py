"""Debian's headless Chromium for the tests of the pages FuseLens writes (a lesson, an audit report)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

needs_chromium = pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium is not installed")


def chromium(page: Path, *options: str) -> str:
    """Open `page` in headless Chromium with `options` (--screenshot=F, --dump-dom ...); its standard output."""
    done = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-dev-shm-usage", *options, page.as_uri()],
                          check=True, capture_output=True, text=True, timeout=120)
    return done.stdout
