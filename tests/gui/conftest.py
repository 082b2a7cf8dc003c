"""GUI fixtures: an offscreen main window with test-only settings, recorded dialogs and a toy pass.

Every window is closed after its test and must leave no worker thread running.
"""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QMessageBox

from fuselens.core.layout import LayoutCache
from fuselens.passes import registry
from fuselens.passes.config import PassConfig
from tests.gui.helpers import ToyDropActivation, close_window, make_window


@pytest.fixture
def dialogs(monkeypatch):
    """QMessageBox calls recorded as (kind, title, text) instead of blocking the test."""
    shown: list[tuple[str, str, str]] = []
    for kind in ("critical", "warning", "information"):
        def record(parent, title, text, *args, _kind=kind, **kwargs):
            shown.append((_kind, title, text))
            return QMessageBox.StandardButton.Ok
        monkeypatch.setattr(QMessageBox, kind, staticmethod(record))
    return shown


@pytest.fixture(scope="session")
def layout_cache():
    """One in-memory layout cache for the GUI tests (no files in the user's cache)."""
    return LayoutCache(directory=None)


@pytest.fixture
def window(qtbot, tmp_path, dialogs, layout_cache):
    """The main window with the real catalog (default switches)."""
    window = make_window(qtbot, tmp_path, layout_cache)
    yield window
    close_window(window)


@pytest.fixture
def toy_window(qtbot, tmp_path, dialogs, layout_cache, monkeypatch):
    """The main window with the toy pass on and every other switchable pass off."""
    monkeypatch.setitem(registry._REGISTRY, ToyDropActivation.id, ToyDropActivation)
    window = make_window(qtbot, tmp_path, layout_cache, PassConfig.from_ids([ToyDropActivation.id]))
    yield window
    close_window(window)
