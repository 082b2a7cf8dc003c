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
