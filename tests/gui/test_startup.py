"""Start-up on a budget: by the window's first paint, nothing heavy is imported.

The window's first paint took 1.6-1.9 s from process start, before any model work, most of it imports
that nothing on screen needs yet: ml_dtypes alone 0.87 s (core.graph.proto's table of bfloat16 / float8
types), pyqtgraph 0.3 s (the run dock's charts), the runner, the Ascend readers (core.ascend.ge, msprof, the
NPU bundle and check) through the run and debug docks' modules. Each now loads when first used.
The list of what must stay out is benchmarks/bench_startup.py's HEAVY_AT_START (why each is there is
said beside it); this test runs the real entry point (`python main.py`, offscreen) in a child process
and lists the modules imported by the time the window is painted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.bench_startup import HEAVY_AT_START, first_paint, heavy_imported

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("model", [None, "demo"], ids=["no model", "a model named"])
def test_nothing_heavy_is_imported_before_the_first_paint(model):
    painted = first_paint(ROOT, model)
    assert painted["shown"] > 0
    assert "fuselens.gui.main_window" in painted["modules"]  # the window really was built and painted
    assert heavy_imported(painted["modules"]) == []


def test_the_heavy_list_names_modules_that_exist():
    """A renamed module would make the check above pass for nothing: every entry must be importable by name."""
    from importlib.util import find_spec

    missing = [name for name in HEAVY_AT_START if name != "scipy" and find_spec(name) is None]
    assert missing == []


class _Probe:
    """Stands in for the process's backend probe: counts the window's start calls (the real one is asked once
    per process, and its child imports TensorFlow)."""

    def __init__(self) -> None:
        self.starts = 0

    def start(self) -> None:
        self.starts += 1


@pytest.fixture
def background(monkeypatch):
    """A helper of the test's own and a counting probe; the window's delays long, so only what a test shortens
    starts them."""
    from fuselens.gui import main_window
    from fuselens.session.tensorflow_helper import TensorFlowHelper

    probe, helper = _Probe(), TensorFlowHelper()
    monkeypatch.setattr(main_window, "BACKEND_PROBE", probe)
    monkeypatch.setattr(main_window, "BACKGROUND_IDLE_S", 60.0)
    monkeypatch.setattr(main_window, "BACKGROUND_LATEST_S", 60.0)
    yield main_window, helper, probe
    helper.stop()


def test_the_helper_and_the_probe_start_once_the_first_models_after_pane_is_painted(qtbot, tmp_path, layout_cache,
                                                                                   dialogs, background):
    """They import TensorFlow (~3 s of a core each): not while the first model loads, fuses and is laid out."""
    from tests.gui.helpers import close_window, make_window, wait_idle

    _, helper, probe = background
    window = make_window(qtbot, tmp_path, layout_cache, tensorflow=helper)
    window.open_model("mobilenet_v2")
    qtbot.waitUntil(lambda: window.panes["before"].shown is not None, timeout=60_000)
    assert helper.pid is None and probe.starts == 0  # the before pane is drawn, the fusion under way
    wait_idle(qtbot, window, 60_000)
    qtbot.waitUntil(lambda: probe.starts == 1, timeout=10_000)  # the after pane's first paint
    assert helper.pid is not None
    window.open_model("demo")
    wait_idle(qtbot, window, 60_000)
    assert probe.starts == 1  # once
    close_window(window)


def test_with_no_model_opening_they_start_after_a_second_of_idle(qtbot, tmp_path, layout_cache, dialogs, background):
    from tests.gui.helpers import close_window, make_window

    main_window, helper, probe = background
    main_window.BACKGROUND_IDLE_S = 0.5
    window = make_window(qtbot, tmp_path, layout_cache, tensorflow=helper)
    assert helper.pid is None and probe.starts == 0
    qtbot.waitUntil(lambda: probe.starts == 1, timeout=10_000)
    assert helper.pid is not None
    close_window(window)


def test_a_window_that_never_goes_idle_starts_them_at_the_latest_delay(qtbot, tmp_path, layout_cache, dialogs,
                                                                       background, monkeypatch):
    """A model that never finishes opening (a huge graph, a layout that fails to paint) must not keep the backend
    list empty and the helper cold for ever."""
    from tests.gui.helpers import close_window, make_window

    main_window, helper, probe = background
    main_window.BACKGROUND_LATEST_S = 0.5
    monkeypatch.setattr(main_window.MainWindow, "is_idle", lambda _self: False)
    window = make_window(qtbot, tmp_path, layout_cache, tensorflow=helper)
    assert helper.pid is None and probe.starts == 0
    qtbot.waitUntil(lambda: probe.starts == 1, timeout=10_000)
    assert helper.pid is not None
    close_window(window)
