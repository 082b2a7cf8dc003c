"""Every sample opens in the main window (default passes) and the window closes cleanly."""

from __future__ import annotations

import pytest

from fuselens.core.formats.samples import SAMPLES
from tests.gui.helpers import close_window, make_window, open_and_wait
from tests.zoo.models import ZOO, zoo_model

COMMITTED = [name for name, sample in SAMPLES.items() if not sample.cached]


@pytest.mark.parametrize("name", COMMITTED)
def test_every_committed_sample_opens_and_closes(qtbot, tmp_path, dialogs, layout_cache, name):
    window = make_window(qtbot, tmp_path, layout_cache)
    open_and_wait(qtbot, window, name)
    assert not dialogs, dialogs
    assert window.before.items_by_key and window.after.items_by_key
    assert len(window.before.items_by_key) == len(window.panes["before"].shown.nodes)
    close_window(window)


@pytest.mark.slow
def test_mobilenet_v2_opens_fuses_and_closes(qtbot, tmp_path, dialogs, layout_cache):
    window = make_window(qtbot, tmp_path, layout_cache)
    open_and_wait(qtbot, window, "mobilenet_v2", timeout=300000)
    assert not dialogs, dialogs
    drawn_ops = {item.node.op for item in window.before.items_by_key.values()}
    assert "Const" not in drawn_ops and "Conv2D" in drawn_ops
    assert window.panes["before"].shown.engine == "dot"
    assert sum(len(r.matches) for r in window.session.pipeline.results) > 50  # the 52 small-op BNs at least
    window.chrome.next_action.trigger()
    assert window.before.selected_keys and window.after.selected_keys
    close_window(window)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ZOO))
def test_every_zoo_model_opens_and_closes(qtbot, tmp_path, dialogs, layout_cache, name):
    window = make_window(qtbot, tmp_path, layout_cache)
    open_and_wait(qtbot, window, str(zoo_model(name)), timeout=300000)
    assert not dialogs, dialogs
    assert window.before.items_by_key and window.after.items_by_key
    close_window(window)
