"""The window survives its own actions in random order (tests/gui/chaos.py): 200 per seed here, 5,000
in benchmarks/bench_chaos.py. No exception may reach sys.excepthook or Qt's message handler, no
thread or child process may outlive the window. A failure prints the seed's replay command."""

from __future__ import annotations

import threading

import pytest

from tests.gui.chaos import Chaos, ChaosFiles, leftovers
from tests.gui.helpers import close_window, make_window


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_the_window_survives_200_random_actions(qtbot, tmp_path, layout_cache, seed):
    threads = {t.ident for t in threading.enumerate()}
    window = make_window(qtbot, tmp_path, layout_cache)
    report = Chaos(window, seed, ChaosFiles.make(tmp_path / "files")).run(200)
    close_window(window)
    left = leftovers(threads)
    print(report.summary())
    failure = f"{report.summary()}\nreplay: {report.replay}\n" + "\n".join(report.log[-20:])
    assert report.exceptions == [], failure + "\n" + "\n".join(report.exceptions)
    assert report.qt_warnings == [], failure + "\n" + "\n".join(report.qt_warnings)
    assert report.stuck == [], failure + "\n" + "\n".join(report.stuck)
    assert left == [], failure + f"\nleft running: {left}"
