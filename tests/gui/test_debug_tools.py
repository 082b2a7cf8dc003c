"""Finding the fusion that broke it, in the window: a match's check box skips it (its pass stays on) and
both panes follow; a layerwise run fills the match list's error column and the error heat overlay;
Run > Bisect names an injected fault and selects it in the list and both panes, and can be cancelled;
Compare with current… lists what another configuration gains and loses."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from fuselens.passes import registry
from fuselens.passes.amct.conv_bn import ConvBatchnormFusionPass
from fuselens.passes.config import PassConfig
from tests.gui.helpers import close_window, make_window, open_and_wait, wait_idle
from tests.sessions.fault_models import BLOCKS, MisfoldingConvBn, conv_bn_chain

RUN_MS = 180000


def test_unchecking_a_match_skips_it_and_checking_fuses_it_again(qtbot, window):
    open_and_wait(qtbot, window, "keras_bn_small_ops")
    items = window.match_list.match_items()
    match_id = next(i for i in items if i.startswith(ConvBatchnormFusionPass.id))
    match = items[match_id].data(0, Qt.ItemDataRole.UserRole)
    assert match_id in items[match_id].toolTip(0)  # the stable id is in the tooltip
    before = len(window.session.pipeline.result(ConvBatchnormFusionPass.id).matches)

    items[match_id].setCheckState(0, Qt.CheckState.Unchecked)
    wait_idle(qtbot, window)
    assert match_id in window.session.config.skipped_matches
    result = window.session.pipeline.result(ConvBatchnormFusionPass.id)
    assert [m.id for m in result.skipped] == [match_id] and len(result.matches) == before - 1  # the pass stays on
    fused = window.session.pipeline.fused
    assert all(node in fused for node in match.nodes)  # its nodes stay as they were in the after pane
    assert all(node in window.panes["after"].graph for node in match.nodes)
    row = window.match_list.match_items()[match_id]
    assert row.text(0).startswith("⏸ skipped") and row.checkState(0) == Qt.CheckState.Unchecked

    row.setCheckState(0, Qt.CheckState.Checked)
    wait_idle(qtbot, window)
    assert not window.session.config.skipped_matches
    assert len(window.session.pipeline.result(ConvBatchnormFusionPass.id).matches) == before


def test_layerwise_run_fills_the_error_column_and_the_error_heat(qtbot, window):
    open_and_wait(qtbot, window, "conv_bn")
    panel = window.run_panel
    panel.steps.setValue(2)
    panel.warmup.setValue(0)
    panel.layerwise_box.setChecked(True)
    panel.start_run()
    qtbot.waitUntil(lambda: not panel.running(), timeout=RUN_MS)
    report = window.session.layerwise
    assert report is not None and set(report.matches) == set(window.match_list.match_items())
    assert not window.match_list.isColumnHidden(1)
    assert all(item.text(1) for item in window.match_list.match_items().values())
    assert panel.heat.mode == "error" and panel.heat.errors["after"]
    panel.heat_box.setChecked(True)
    assert any(item.heat is not None for item in window.after.items_by_key.values())


@pytest.fixture
def fault_window(qtbot, tmp_path, dialogs, layout_cache, monkeypatch):
    monkeypatch.setitem(registry._REGISTRY, MisfoldingConvBn.id, MisfoldingConvBn)
    model = tmp_path / "chain.pb"
    model.write_bytes(conv_bn_chain().graph_def.SerializeToString())
    window = make_window(qtbot, tmp_path, layout_cache, PassConfig.from_ids([MisfoldingConvBn.id]))
    open_and_wait(qtbot, window, str(model))
    yield window
    close_window(window)


@pytest.mark.slow
def test_bisect_in_the_window_selects_the_culprit_and_can_be_cancelled(qtbot, fault_window):
    window = fault_window
    tools = window.debug_tools
    run_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Run")
    next(a for a in run_menu.actions() if a.text() == "Bisect…").trigger()
    assert tools.bisect_dock.isVisible()
    panel = tools.bisect

    panel.start()
    qtbot.waitUntil(lambda: "run 2" in panel.label.text(), timeout=RUN_MS)
    qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not panel.running(), timeout=RUN_MS)
    assert panel.label.text() == "bisect cancelled" and window.session.bisect is None

    panel.start()
    qtbot.waitUntil(lambda: not panel.running(), timeout=RUN_MS)
    victim = f"{MisfoldingConvBn.id}:block_23/bn"
    result = window.session.bisect
    assert result is not None and result.skip_ids() == [victim] and result.runs < BLOCKS
    assert window.match_list.current_record().id == victim
    assert {"block_23/conv", "block_23/bn"} <= window.selection.current.before  # both panes through the selection
    assert "block_23/conv" in window.selection.current.after
    assert victim in panel.text.toPlainText() and panel.apply_button.isEnabled()

    panel.apply_skip_list()
    wait_idle(qtbot, window)
    assert window.session.config.skipped_matches == {victim}


def test_compare_with_current_lists_what_the_defaults_gain_and_lose(qtbot, window):
    open_and_wait(qtbot, window, "conv_bn")
    window.set_config(window.session.config.with_pass(ConvBatchnormFusionPass.id, False))
    wait_idle(qtbot, window)
    window.debug_tools.show_compare()
    dialog = window.debug_tools.compare
    dialog.compare()
    qtbot.waitUntil(lambda: dialog.compare_button.isEnabled(), timeout=RUN_MS)
    text = dialog.text.toPlainText()
    assert f"gained {ConvBatchnormFusionPass.id}:bn1" in text and "B = defaults" in text
    dialog.close()
