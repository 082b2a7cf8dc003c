"""Toggling passes while fusion and shape inference are running never races two fusions (it used to
segfault: two TensorFlow graph imports at once), and the window ends on the last configuration."""

from __future__ import annotations

import random
import time

import pytest

from fuselens.session import Stage
from tests.gui.helpers import WAIT_MS, wait_idle

SWITCHES = ["ConvBatchnormFusionPass", "SmallOpBatchnormFusionPass", "AutoFusePass", "DepthwiseConvBatchnormFusionPass"]


def toggle(window, pass_id: str) -> None:
    """A click on the pass's box in the pass panel."""
    window.pass_panel.set_enabled(pass_id, not window.session.config.is_enabled(pass_id))


@pytest.mark.slow
def test_toggling_passes_during_fusion_and_shape_inference_keeps_the_window(qtbot, window, monkeypatch):
    rng = random.Random(7)
    infer_shapes = window.tensorflow.infer_shapes

    def slow_shapes(graphs, progress, cancelled):
        """Fused graphs that record their shapes are inferred in a few ms: long enough to toggle in."""
        time.sleep(0.3)
        return infer_shapes(graphs, progress, cancelled)

    monkeypatch.setattr(window.tensorflow, "infer_shapes", slow_shapes)
    window.open_model("mobilenet_v2")
    qtbot.waitUntil(lambda: window.session.stage is Stage.FUSING, timeout=WAIT_MS)
    for _ in range(4):  # during the first fusion
        toggle(window, rng.choice(SWITCHES))
        qtbot.wait(rng.randint(0, 40))
    qtbot.waitUntil(lambda: window.session.stage is Stage.SHAPES, timeout=WAIT_MS)
    toggle(window, "AutoFusePass")  # during shape inference
    for _ in range(12):  # during re-fusions, at random moments
        qtbot.waitUntil(lambda: window.session.stage in (Stage.FUSING, Stage.SHAPES, Stage.READY), timeout=WAIT_MS)
        toggle(window, rng.choice(SWITCHES))
        qtbot.wait(rng.choice([0, 5, 50, 300]))
    last = window.session.config
    wait_idle(qtbot, window)
    pipeline = window.session.pipeline
    assert window.isVisible() and window.session.stage is Stage.READY
    assert pipeline.config is last and [r.pass_id for r in pipeline.results] == last.pass_ids()
    assert window.after.layout_ is window.panes["after"].shown
    drawn = {m for node in window.panes["after"].shown.nodes.values() for m in node.members}
    assert drawn <= set(pipeline.fused.nodes) and drawn & set(pipeline.fused.nodes)
