"""Charts, table and heat overlay on one real abs_relu_exp run (made once for the module, then shown
in each test's window): fused kernel after, elementwise kernels before, clicking a bar selects its
node in both panes, hover text, heat on and off, exports."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import QPointF, Qt

from fuselens.core.graph.opclass import PALETTE
from fuselens.core.runtime import RunResult
from tests.gui.helpers import open_and_wait, save_default_run

SAMPLE = "abs_relu_exp"
FUSED = "autofuse_pointwise_0_Abs_Relu_Exp"


@pytest.fixture(scope="module")
def run_file(tmp_path_factory) -> str:
    """One real run (child process, TensorFlow on CPU) with the window's default passes, saved as a run file."""
    return save_default_run(SAMPLE, tmp_path_factory.mktemp("run"), steps=4)


@pytest.fixture
def shown(qtbot, window, run_file):
    """The window on abs_relu_exp with the module's run shown in the run panel."""
    open_and_wait(qtbot, window, SAMPLE)
    panel = window.run_panel
    panel.show_result(RunResult.load(run_file))
    window.resizeDocks([panel.parentWidget()], [420], Qt.Orientation.Vertical)
    qtbot.waitUntil(lambda: panel.charts.bars["after"].width() > 300 and panel.charts.bars["after"].height() > 150)
    return panel


def test_after_chart_shows_the_one_fused_kernel_and_before_the_elementwise_ones(shown):
    after = shown.charts.shown_kernels("after")
    assert [(k.kernel, k.op_type, k.node, k.pass_id) for k in after] == [(FUSED, "AscBackend", FUSED, "AutoFusePass")]
    assert shown.charts.bars["after"].categories() == ["fused"]
    before = shown.charts.shown_kernels("before")
    assert 2 <= len(before) <= 3  # Abs, Relu, Exp; or Grappler's _UnaryOpsComposition(Abs, Relu) and Exp
    assert {k.node for k in before} <= {"abs_0", "relu_0", "exp_0"} and "exp_0" in {k.node for k in before}
    assert set(shown.charts.bars["before"].categories()) == {"elementwise"}
    assert all(k.pass_id is None for k in before)
    assert "made by a fusion pass" in shown.charts.legend.text() and PALETTE["fused"] in shown.charts.legend.text()
    cards = {c.title: c for c in shown.cards.cards}
    assert cards["Before"].detail.startswith(f"{len(before)} kernels") and cards["After"].detail.startswith("1 kernels")
    assert cards["Output exp_0"].value.startswith("allclose") and "max abs 0" in cards["Output exp_0"].detail
    assert "Speedup" in cards


def test_clicking_a_bar_selects_its_node_in_both_panes(qtbot, shown):
    window = shown.window()
    chart = shown.charts.bars["after"]
    point = chart.widget_pos(chart.values[0] / 2, 0)
    qtbot.mouseClick(chart.viewport(), Qt.MouseButton.LeftButton, pos=point)
    qtbot.waitUntil(lambda: window.selection.current.after == frozenset({FUSED}))
    assert window.selection.current.before == {"abs_0", "relu_0", "exp_0"}  # through the provenance
    assert window.after.items_by_key[FUSED].selected and window.before.items_by_key["exp_0"].selected
    assert chart.hit(QPointF(chart.values[0] / 2, 0)) == 0 and chart.hit(QPointF(chart.values[0] / 2, 1.5)) is None

    before = shown.charts.bars["before"]
    exp_row = next(i for i, k in enumerate(before.kernels) if k.node == "exp_0")
    qtbot.mouseClick(before.viewport(), Qt.MouseButton.LeftButton,
                     pos=before.widget_pos(before.values[exp_row] / 2, exp_row))
    qtbot.waitUntil(lambda: window.selection.current.before == frozenset({"exp_0"}))
    assert window.selection.current.after == {FUSED}
    assert window.before.items_by_key["exp_0"].selected and not window.before.items_by_key["abs_0"].selected


def test_hover_text_has_count_mean_min_max(shown):
    chart = shown.charts.bars["after"]
    kernel = chart.kernels[0]
    text = chart.tooltip(0)
    for figure in (f"{kernel.count} launches", "mean", "min", "max", "AutoFusePass", FUSED):
        assert figure in text


def test_timeline_has_one_step_of_each_graph_and_selects_on_click(qtbot, shown):
    timeline = shown.timeline.plot
    sides = [side for side, _, _ in timeline.rows]
    assert sides.count("after") == 1 and 2 <= sides.count("before") <= 3
    shown.tabs.setCurrentWidget(shown.timeline)
    qtbot.waitUntil(lambda: timeline.width() > 300)
    index = sides.index("after")
    _, event, row = timeline.rows[index]
    assert event.kernel == FUSED and timeline.hit(QPointF(event.start_us + event.dur_us / 2, row)) == index
    qtbot.mouseClick(timeline.viewport(), Qt.MouseButton.LeftButton,
                     pos=timeline.widget_pos(event.start_us + event.dur_us / 2, row))
    qtbot.waitUntil(lambda: shown.window().selection.current.after == frozenset({FUSED}))


def test_kernel_table_sorts_selects_and_follows_the_selection(qtbot, shown):
    table = shown.table
    model = table.proxy
    assert model.rowCount() == len(shown.result.graphs["original"].kernels) + 1
    per_step = [model.index(r, 7).data(Qt.ItemDataRole.UserRole) for r in range(model.rowCount())]
    assert per_step == sorted(per_step, reverse=True)
    table.sortByColumn(1, Qt.SortOrder.AscendingOrder)
    names = [model.index(r, 1).data() for r in range(model.rowCount())]
    assert names == sorted(names)
    table.clicked.emit(model.index(names.index("exp_0"), 1))
    assert shown.window().selection.current.before == {"exp_0"} and shown.window().selection.current.after == {FUSED}
    selected = sorted(i.row() for i in table.selectionModel().selectedRows())
    assert selected == sorted([names.index("exp_0"), names.index(FUSED)])  # the rows of the selection, both sides


def test_heat_overlay_colours_nodes_and_switches_off(qtbot, shown):
    window = shown.window()
    hot, other = window.after.items_by_key[FUSED], window.before.items_by_key["exp_0"]
    assert hot.heat is None
    shown.heat_box.setChecked(True)
    assert hot.heat is not None and other.heat is not None
    assert window.before.items_by_key["data1"].heat is not None  # no kernel: the cold end of the scale
    assert shown.heat_legend.isVisible() and "slowest node" in shown.heat_legend.scale.text()
    assert shown.heat_action.isChecked()
    shown.heat_box.setChecked(False)
    assert hot.heat is None and other.heat is None and not shown.heat_legend.isVisible()


def test_exports_chrome_trace_csv_png_and_run_file(tmp_path, shown):
    trace = json.loads(shown.files.export_chrome_trace(str(tmp_path / "t.json")).read_text())
    assert any(e["ph"] == "X" and e["name"] == FUSED for e in trace["traceEvents"])
    csv_text = shown.files.export_kernel_csv(str(tmp_path / "k.csv")).read_text()
    assert csv_text.splitlines()[0].startswith("graph,kernel") and FUSED in csv_text
    png = shown.files.export_charts_png(str(tmp_path / "charts.png"))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    again = RunResult.load(shown.files.save_run(str(tmp_path / "run.json")))
    assert again.graphs["fused"].kernels == shown.result.graphs["fused"].kernels
