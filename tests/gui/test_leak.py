"""Memory over a session: a model opened again does not keep the last one alive (benchmarks/bench_leak.py
measures the RSS over 20 models)."""

from __future__ import annotations

import gc

from fuselens.core.graph import Graph
from tests.gui.helpers import open_and_wait


def live_graphs() -> int:
    """Graphs alive in this process: the panes' graphs are frozen out of the collector's view (Pane._show),
    so they are let back in first."""
    gc.unfreeze()
    gc.collect()
    return sum(isinstance(o, Graph) for o in gc.get_objects())


def test_reopening_a_sample_keeps_the_count_of_live_graphs_flat(qtbot, window):
    counts = []
    for _ in range(5):
        open_and_wait(qtbot, window, "demo")
        qtbot.wait(50)
        counts.append(live_graphs())
    assert counts[-1] == counts[1], f"graphs alive after each open: {counts}"


def test_each_model_opened_gives_the_last_ones_memory_back_once_the_window_is_idle(qtbot, window, monkeypatch):
    """The allocator kept the pages a replaced model was freed from (20 models in one window grew 1.16-1.20x):
    once the new model is drawn, the window asks for them to go back, and counts as busy until it has."""
    from fuselens.gui import main_window

    calls = []
    monkeypatch.setattr(main_window, "give_back_freed_memory", lambda: calls.append(window._work_done()))
    for sample in ("demo", "conv_bn"):
        open_and_wait(qtbot, window, sample)  # waits for is_idle()
        assert calls and calls[-1], "given back only once every other piece of work was done"
    assert len(calls) == 2

