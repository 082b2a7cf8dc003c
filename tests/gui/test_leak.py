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
