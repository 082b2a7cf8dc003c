"""The run view's "Did each fusion pay?" tab on one real demo run: a bar per fusion in gain order, losses in red,
hover text naming what was compared, and a click on a bar selects its match in both panes."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF, Qt

from fuselens.core.runtime import RunResult
from tests.gui.helpers import open_and_wait, save_default_run

SAMPLE = "demo"


@pytest.fixture(scope="module")
def run_file(tmp_path_factory) -> str:
    """One real run of demo (child process, TensorFlow on CPU) with the window's default passes."""
    return save_default_run(SAMPLE, tmp_path_factory.mktemp("run"), steps=3)


@pytest.fixture
def shown(qtbot, window, run_file):
    """The window on demo with the run shown and the gain tab current."""
    open_and_wait(qtbot, window, SAMPLE)
    panel = window.run_panel
    panel.show_result(RunResult.load(run_file))
    window.resizeDocks([panel.parentWidget()], [460], Qt.Orientation.Vertical)
    panel.tabs.setCurrentWidget(panel.gains)
    qtbot.waitUntil(lambda: panel.gains.plot.width() > 300 and panel.gains.plot.height() > 150)
    return panel


def test_the_bars_are_the_reports_rows_in_gain_order_losses_red(shown):
    from fuselens.gui.plots import LOSS_COLOUR, WIN_COLOUR

    plot, report = shown.gains.plot, shown.gains.report
    assert shown.tabs.isTabVisible(shown.tabs.indexOf(shown.gains))
    assert [r.label for r in plot.rows] == [r.label for r in report.rows] and len(plot.rows) == 5
    gains = [r.gain_us for r in plot.rows]
    assert gains == sorted(gains, reverse=True)
    bars = plot._items[0]
    colours = [brush.color().name() for brush in bars.opts["brushes"]]
    assert colours == [WIN_COLOUR if g >= 0 else LOSS_COLOUR for g in gains]
    assert "5 of 5 fusions measured" in shown.gains.note.text()
    ticks = [label for _, label in plot.getAxis("left")._tickLevels[0]]
    assert "encoder/LayerNorm" in ticks and any(t.endswith(" +1") for t in ticks)  # a group of two matches
    layer_norm = next(i for i, r in enumerate(plot.rows) if r.label == "ScopeLayerNormPass:encoder/LayerNorm")
    assert "StopGradient" in plot.tooltip(layer_norm) and "baseline" in plot.tooltip(layer_norm)


def test_clicking_a_bar_selects_its_match_in_both_panes(qtbot, shown):
    window = shown.window()
    plot = shown.gains.plot
    index = next(i for i, r in enumerate(plot.rows) if r.label == "ScopeLayerNormPass:encoder/LayerNorm")
    row = plot.rows[index]
    qtbot.mouseClick(plot.viewport(), Qt.MouseButton.LeftButton, pos=plot.widget_pos(row.gain_us / 2, index))
    qtbot.waitUntil(lambda: window.selection.current.item is not None
                    and window.selection.current.item.id == row.matches[0])
    selection = window.selection.current
    assert selection.origin == "gains" and selection.after == {"encoder/LayerNorm"}
    assert "encoder/LayerNorm/batchnorm/add_1" in selection.before
    assert window.after.items_by_key["encoder/LayerNorm"].selected
    assert plot.hit(QPointF(row.gain_us / 2, index + 0.5)) is None

    group = next(i for i, r in enumerate(plot.rows) if len(r.matches) == 2)
    qtbot.mouseClick(plot.viewport(), Qt.MouseButton.LeftButton,
                     pos=plot.widget_pos(plot.rows[group].gain_us / 2, group))
    qtbot.waitUntil(lambda: window.selection.current.item.id == plot.rows[group].matches[0])


def test_a_result_with_one_side_hides_the_tab(shown, run_file):
    one = RunResult.load(run_file)
    del one.graphs["original"]
    shown.show_result(one)
    assert not shown.tabs.isTabVisible(shown.tabs.indexOf(shown.gains)) and shown.gains.report is None


def test_a_baseline_and_a_fused_profile_imported_as_a_pair(qtbot, window, run_file, tmp_path, monkeypatch):
    """Run > Import baseline and fused profiles…: two files, one side each, shown as one run whose gain tab has
    the same rows as the run both came from."""
    from PySide6.QtWidgets import QFileDialog

    open_and_wait(qtbot, window, SAMPLE)
    sides = {}
    for side in ("original", "fused"):
        one = RunResult.load(run_file)
        one.graphs = {side: one.graphs[side]}
        sides[side] = tmp_path / f"{side}_only.json"
        one.save(sides[side])
    answers = iter([str(sides["original"]), str(sides["fused"])])
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (next(answers), "")))
    panel = window.run_panel
    (pair,) = [a for a in window.findChildren(type(panel.files.result_actions[0]))
               if a.text() == "Import baseline and fused profiles…"]
    pair.trigger()
    qtbot.waitUntil(lambda: panel.result is not None and panel.gains.report is not None, timeout=60000)
    assert set(panel.result.graphs) == {"original", "fused"} and "two profiles" in panel.result.backend
    paired = [(r.label, round(r.gain_us, 3)) for r in panel.gains.report.rows]
    panel.show_result(RunResult.load(run_file))
    assert paired == [(r.label, round(r.gain_us, 3)) for r in panel.gains.report.rows] and len(paired) == 5
