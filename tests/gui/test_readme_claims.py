"""What docs/guide/window.md and docs/guide/run-and-profile.md ("In the window") promise, done as a user does it.

Real key events on the window (shortcuts), real mouse clicks, drags and wheel turns on the panes, the
right-click menu the pane builds, the file dialogs answered by a patched QFileDialog; every check is
on what the user sees (items drawn, pixels painted, texts, selection, bars).
"""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt, QTimer
from PySide6.QtGui import QContextMenuEvent, QImage, QWheelEvent
from PySide6.QtWidgets import QApplication, QDialog, QFileDialog, QMenu

from fuselens.core.formats.loaders import load_model
from fuselens.core.formats.samples import SAMPLES
from fuselens.core.layout import SCOPE_PREFIX, LayoutCache
from fuselens.gui.dialogs import SamplesDialog
from fuselens.gui.graph_view import LABEL_LOD
from tests.gui.helpers import close_window, make_window, open_and_wait, wait_idle

SAMPLE = "keras_bn_small_ops"  # scopes bn_default/batchnorm, ...; 4 Relu after small-op BNs
KEY = Qt.Key
MOD = Qt.KeyboardModifier


def activate(qtbot, window) -> None:
    """Window shortcuts need the window to be the active one, as it is for a user typing in it."""
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)


def menu_action(window, menu_title: str, text: str):
    menus = {a.text(): a.menu() for a in window.menuBar().actions()}
    return next(a for a in menus[menu_title].actions() if a.text() == text)


# ---- opening: the sample gallery and the Open dialog --------------------------------------------------
def test_the_sample_gallery_lists_every_sample_with_its_description_and_opens_the_chosen_one(
        qtbot, toy_window, monkeypatch):
    listed: list[str] = []

    def choose_conv_bn(dialog: SamplesDialog) -> QDialog.DialogCode:
        """The user reads the list and double-clicks conv_bn (the dialog accepts itself)."""
        dialog.show()
        listed.extend(dialog.list.item(i).text() for i in range(dialog.list.count()))
        row = next(i for i, text in enumerate(listed) if text.split()[0] == "conv_bn")
        item = dialog.list.item(row)
        dialog.list.scrollToItem(item)
        pos = dialog.list.visualItemRect(item).center()
        qtbot.mouseClick(dialog.list.viewport(), Qt.MouseButton.LeftButton, pos=pos)
        qtbot.mouseDClick(dialog.list.viewport(), Qt.MouseButton.LeftButton, pos=pos)
        assert dialog.isHidden()
        return QDialog.DialogCode(dialog.result())

    monkeypatch.setattr(SamplesDialog, "exec", choose_conv_bn)
    activate(qtbot, toy_window)
    qtbot.keyClick(toy_window, KEY.Key_O, MOD.ControlModifier | MOD.ShiftModifier)
    assert len(listed) == len(SAMPLES)
    for sample in SAMPLES.values():
        (text,) = [t for t in listed if t.split()[0] == sample.name]
        assert sample.description in text and all(f in text for f in sample.families)
    wait_idle(qtbot, toy_window)
    assert toy_window.session.model.name == "conv_bn" and toy_window.windowTitle() == "FuseLens — conv_bn"
    assert toy_window.before.items_by_key and toy_window.after.items_by_key


def test_a_cancelled_gallery_opens_nothing(qtbot, toy_window, monkeypatch):
    monkeypatch.setattr(SamplesDialog, "exec", lambda dialog: QDialog.DialogCode.Rejected)
    toy_window.chrome.samples_action.trigger()
    assert toy_window.session.model is None and toy_window.windowTitle() == "FuseLens"


def test_file_open_opens_the_chosen_file(qtbot, toy_window, monkeypatch, tmp_path):
    path = tmp_path / "picked.pb"
    path.write_bytes(load_model("conv_bn").graph.graph_def.SerializeToString())
    asked: list[tuple[str, str]] = []

    def answer(parent, caption, directory, file_filter, *args, **kwargs):
        asked.append((caption, file_filter))
        return (str(path) if len(asked) == 2 else "", file_filter.split(";;")[0])

    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(answer))
    activate(qtbot, toy_window)
    qtbot.keyClick(toy_window, KEY.Key_O, MOD.ControlModifier)  # the first time the user cancels
    assert len(asked) == 1 and toy_window.session.model is None
    qtbot.keyClick(toy_window, KEY.Key_O, MOD.ControlModifier)
    assert "*.pb" in asked[-1][1] and "*.keras" in asked[-1][1]
    wait_idle(qtbot, toy_window)
    assert toy_window.session.model.name == "picked.pb" and toy_window.recent.list()[0] == str(path)
    assert set(toy_window.before.items_by_key) == set(toy_window.panes["before"].shown.nodes)


# ---- a pane: zoom, pan, fit, level of detail --------------------------------------------------------------
def on_screen(view, key: str):
    """The rectangle a node occupies in the viewport, in pixels."""
    return view.mapFromScene(view.items_by_key[key].sceneBoundingRect()).boundingRect()


def dark_pixels(view, key: str) -> int:
    """Near-black pixels inside a node's box (away from its border): its label's text."""
    view.viewport().repaint()
    image: QImage = view.viewport().grab().toImage()
    inner = on_screen(view, key)
    inner.adjust(inner.width() // 5, inner.height() // 5, -inner.width() // 5, -inner.height() // 5)
    count = 0
    for x in range(max(0, inner.left()), min(image.width(), inner.right())):
        for y in range(max(0, inner.top()), min(image.height(), inner.bottom())):
            colour = image.pixelColor(x, y)
            count += max(colour.red(), colour.green(), colour.blue()) < 90
    return count


def wheel(view, steps: int) -> None:
    centre = QPointF(view.viewport().rect().center())
    event = QWheelEvent(centre, QPointF(view.viewport().mapToGlobal(centre.toPoint())), QPoint(0, 0),
                        QPoint(0, 120 * steps), Qt.MouseButton.NoButton, MOD.NoModifier,
                        Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(view.viewport(), event)


def test_wheel_and_ctrl_plus_minus_zoom_drag_pans_f_fits_and_far_out_hides_labels(qtbot, toy_window):
    open_and_wait(qtbot, toy_window, SAMPLE)
    activate(qtbot, toy_window)
    view, key = toy_window.before, "bn_default_conv"
    view.setFocus()
    view.resetTransform()
    view.centerOn(view.items_by_key[key])
    width = on_screen(view, key).width()

    wheel(view, 2)  # two notches away from the user: bigger
    assert on_screen(view, key).width() > width * 1.3
    wheel(view, -2)
    assert on_screen(view, key).width() == pytest.approx(width, abs=2)
    qtbot.keyClick(view, KEY.Key_Plus, MOD.ControlModifier)
    assert on_screen(view, key).width() == pytest.approx(width * 1.25, abs=2)
    qtbot.keyClick(view, KEY.Key_Minus, MOD.ControlModifier)
    qtbot.keyClick(view, KEY.Key_Minus, MOD.ControlModifier)
    assert on_screen(view, key).width() == pytest.approx(width * 0.8, abs=2)

    view.resetTransform()  # readable: the label is drawn
    view.centerOn(view.items_by_key[key])
    assert dark_pixels(view, key) > 20
    view.scale(3, 3)  # room to pan both ways, however tall the pane is
    view.centerOn(view.items_by_key[key])
    start = on_screen(view, key).topLeft()
    press = view.viewport().rect().center()
    qtbot.mousePress(view.viewport(), Qt.MouseButton.LeftButton, pos=press)
    for step in range(1, 6):
        qtbot.mouseMove(view.viewport(), press + QPoint(-12 * step, -9 * step))
    qtbot.mouseRelease(view.viewport(), Qt.MouseButton.LeftButton, pos=press + QPoint(-60, -45))
    moved = on_screen(view, key).topLeft() - start
    assert (moved.x(), moved.y()) == (pytest.approx(-60, abs=2), pytest.approx(-45, abs=2))
    assert toy_window.selection.current.before == frozenset()  # a drag is not a click

    view.resetTransform()
    while view.zoom_level() >= LABEL_LOD:  # just past the limit: boxes only
        qtbot.keyClick(view, KEY.Key_Minus, MOD.ControlModifier)
    assert view.zoom_level() > LABEL_LOD * 0.75
    view.centerOn(view.items_by_key[key])
    assert on_screen(view, key).width() > 20  # the box is still there, big enough to hold a label
    assert dark_pixels(view, key) == 0

    qtbot.keyClick(view, KEY.Key_F)  # F: the whole graph in view
    visible = view.mapToScene(view.viewport().rect()).boundingRect()
    assert all(visible.contains(item.sceneBoundingRect()) for item in view.items_by_key.values())
    assert min(visible.width() / view.sceneRect().width(), visible.height() / view.sceneRect().height()) \
        == pytest.approx(1.0, abs=0.02)


# ---- stepping through matches from the keyboard -----------------------------------------------------------
def test_f3_shift_f3_alt_down_alt_up_and_n_step_through_the_matches(qtbot, toy_window):
    open_and_wait(qtbot, toy_window, "demo")
    records = [r for result in toy_window.session.pipeline.results for r in result.matches]
    misses = [r for result in toy_window.session.pipeline.results for r in result.near_misses]
    assert len(records) >= 3 and misses
    activate(qtbot, toy_window)
    toy_window.before.setFocus()
    provenance = toy_window.session.pipeline.provenance

    def shown() -> int:
        record = toy_window.match_list.current_record()
        index = next(i for i, r in enumerate(records) if r is record)
        assert toy_window.match_list.currentItem().isSelected()
        assert toy_window.before.selected_keys == set(toy_window.before.keys_for(record.nodes))
        after = {d for n in record.nodes for d in provenance.descendants(n)}
        assert toy_window.after.selected_keys == set(toy_window.after.keys_for(after))
        text = toy_window.properties.toPlainText()
        assert record.pass_id in text and (getattr(record, "reason", None) or record.summary) in text
        return index

    steps = [(KEY.Key_F3, MOD.NoModifier, 0), (KEY.Key_F3, MOD.NoModifier, 1), (KEY.Key_F3, MOD.NoModifier, 2),
             (KEY.Key_F3, MOD.ShiftModifier, 1), (KEY.Key_Down, MOD.AltModifier, 2),
             (KEY.Key_Up, MOD.AltModifier, 1), (KEY.Key_Up, MOD.AltModifier, 0),
             (KEY.Key_Up, MOD.AltModifier, len(records) - 1),  # wraps round to the last
             (KEY.Key_N, MOD.NoModifier, 0), (KEY.Key_N, MOD.NoModifier, 1), (KEY.Key_N, MOD.ShiftModifier, 0)]
    for key, modifier, wanted in steps:
        qtbot.keyClick(toy_window.before, key, modifier)
        assert shown() == wanted, (key, modifier)
    qtbot.keyClick(toy_window.before, KEY.Key_F3, MOD.ControlModifier)  # near misses have their own key
    assert toy_window.match_list.current_record() in misses
    assert toy_window.match_list.current_record().reason in toy_window.properties.toPlainText()


# ---- the right-click menu on a node -----------------------------------------------------------------------
def choose_from_context_menu(qtbot, view, key: str, text: str) -> list[str]:
    """Right-click a drawn node, click the menu entry `text` in the menu that pops up; the entries seen."""
    seen: list[str] = []
    view.centerOn(view.items_by_key[key])
    pos = view.mapFromScene(view.items_by_key[key].sceneBoundingRect().center())

    def pick() -> None:
        menu = QApplication.activePopupWidget()
        if not isinstance(menu, QMenu):
            QTimer.singleShot(20, pick)
            return
        seen.extend(a.text() for a in menu.actions() if a.text())
        wanted = next((a for a in menu.actions() if a.text() == text), None)
        if wanted is None:
            menu.close()
            return
        qtbot.mouseClick(menu, Qt.MouseButton.LeftButton, pos=menu.actionGeometry(wanted).center())

    QTimer.singleShot(0, pick)
    # what the window system sends on a right press (QTest's mouse events do not make one)
    event = QContextMenuEvent(QContextMenuEvent.Reason.Mouse, pos, view.viewport().mapToGlobal(pos))
    QApplication.sendEvent(view.viewport(), event)
    qtbot.waitUntil(lambda: QApplication.activePopupWidget() is None)
    return seen


def test_right_click_collapses_a_scope_into_one_box_and_expands_it_again(qtbot, toy_window):
    open_and_wait(qtbot, toy_window, SAMPLE)
    view, scope = toy_window.before, "bn_default/batchnorm"
    members = {k for k in view.items_by_key if k.startswith(scope + "/")}
    assert len(members) == 7
    drawn = len(view.items_by_key)
    seen = choose_from_context_menu(qtbot, view, f"{scope}/Rsqrt", f"Collapse scope {scope}")
    assert seen[:2] == [f"Collapse scope {scope}", "Collapse scope bn_default"]  # innermost first
    qtbot.waitUntil(lambda: toy_window.is_idle() and SCOPE_PREFIX + scope in view.items_by_key)
    assert not members & set(view.items_by_key) and len(view.items_by_key) == drawn - 6
    box = view.items_by_key[SCOPE_PREFIX + scope]
    assert set(box.node.members) == members and box.isVisible()
    assert f"{drawn - 6} drawn" in toy_window.panes["before"].header.text()

    seen = choose_from_context_menu(qtbot, view, SCOPE_PREFIX + scope, f"Expand scope {scope}")
    assert "Expand all scopes" in seen
    qtbot.waitUntil(lambda: toy_window.is_idle() and members <= set(view.items_by_key))
    assert SCOPE_PREFIX + scope not in view.items_by_key and len(view.items_by_key) == drawn


def test_right_click_in_the_after_pane_and_expand_all_scopes(qtbot, toy_window):
    open_and_wait(qtbot, toy_window, SAMPLE)
    view = toy_window.after
    drawn = set(view.items_by_key)
    for scope in ("bn_plain/batchnorm", "bn_no_scale"):
        node = next(k for k in view.items_by_key if k.startswith(scope + "/"))
        choose_from_context_menu(qtbot, view, node, f"Collapse scope {scope}")
        qtbot.waitUntil(lambda s=scope: toy_window.is_idle() and SCOPE_PREFIX + s in view.items_by_key)
    assert not any(k.startswith(("bn_plain/batchnorm/", "bn_no_scale/")) for k in view.items_by_key)
    assert set(toy_window.before.items_by_key) >= {"bn_plain/batchnorm/Rsqrt"}  # the other pane keeps its own
    seen = choose_from_context_menu(qtbot, view, "input", "Expand all scopes")
    assert not any(t.startswith("Collapse scope") for t in seen)  # input is in no scope
    qtbot.waitUntil(lambda: toy_window.is_idle() and set(view.items_by_key) == drawn)
    qtbot.waitUntil(lambda: not view.findChildren(QMenu))  # three menus shown, none kept


# ---- properties: a folded constant's value ----------------------------------------------------------------
def test_selecting_a_node_with_a_folded_constant_shows_a_numpy_summary_of_it(qtbot, toy_window):
    open_and_wait(qtbot, toy_window, SAMPLE)
    graph = toy_window.session.model.graph
    view, key = toy_window.before, "bn_default_conv"
    (weight,) = [r.node for r in graph.inputs(key) if graph.is_const(r.node)]
    value = graph.const_value(weight)
    view.centerOn(view.items_by_key[key])
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                     pos=view.mapFromScene(view.items_by_key[key].sceneBoundingRect().center()))
    text = toy_window.properties.toPlainText()
    assert "folded constants" in text and weight in text
    assert f"float32 {'×'.join(map(str, value.shape))}" in text
    assert f"min {value.min():.4g} max {value.max():.4g} mean {value.mean():.4g}" in text
    first = np.array2string(value.reshape(-1)[:6], precision=4, separator=", ", suppress_small=True)
    assert " ".join(first.split()) + " …" in text  # the first values (HTML folds numpy's padding)


# ---- the run dock: imports and the Top-N control ----------------------------------------------------------
RUN_SAMPLE = "abs_relu_exp"
FUSED = "autofuse_pointwise_0_Abs_Relu_Exp"


@pytest.fixture
def run_window(qtbot, window):
    open_and_wait(qtbot, window, RUN_SAMPLE)
    assert FUSED in window.session.pipeline.fused
    return window


def bars_shown(panel, side: str) -> list[str]:
    """The kernel names on a bar chart's axis, top to bottom, after checking a bar is drawn for each."""
    import pyqtgraph as pg

    chart = panel.charts.bars[side]
    bars = [item for item in chart.getPlotItem().items if isinstance(item, pg.BarGraphItem)]
    widths = list(bars[0].opts["width"]) if bars else []
    ticks = [label for _, label in chart.getAxis("left")._tickLevels[0]] if chart.getAxis("left")._tickLevels else []
    assert len(widths) == len(ticks)
    return ticks


def test_a_prof_folder_of_the_fused_model_shows_on_the_after_side(qtbot, run_window, monkeypatch, tmp_path):
    from tests.npu_artifacts import npu_kernels, write_prof_folder

    panel = run_window.run_panel
    prof = write_prof_folder(tmp_path, npu_kernels(run_window.session.pipeline.fused, dur=7.0), steps=3)
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *a, **k: str(prof)))
    menu_action(run_window, "&Run", "Import PROF_* folder…").trigger()
    qtbot.waitUntil(lambda: panel.result is not None)
    assert not panel.results.isHidden()
    assert bars_shown(panel, "before") == [] and FUSED in bars_shown(panel, "after")
    fused = next(k for k in panel.charts.shown_kernels("after") if k.kernel == FUSED)
    assert fused.node == FUSED and fused.count == 3
    panel.select_kernel("after", fused)  # what a click on its bar does (tested in test_charts)
    assert run_window.after.selected_keys == {FUSED}
    assert run_window.before.selected_keys == set(run_window.before.keys_for(["abs_0", "relu_0", "exp_0"]))


def test_a_prof_folder_of_the_original_model_shows_on_the_before_side(qtbot, run_window, monkeypatch, tmp_path):
    from tests.npu_artifacts import npu_kernels, write_prof_folder

    panel = run_window.run_panel
    prof = write_prof_folder(tmp_path, npu_kernels(run_window.session.pipeline.original, dur=7.0))
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *a, **k: str(prof)))
    menu_action(run_window, "&Run", "Import PROF_* folder…").trigger()
    qtbot.waitUntil(lambda: panel.result is not None)
    assert set(bars_shown(panel, "before")) == {"abs_0", "relu_0", "exp_0"} and bars_shown(panel, "after") == []


def test_a_folder_with_original_and_fused_runs_fills_both_sides(qtbot, run_window, monkeypatch, tmp_path):
    from tests.npu_artifacts import npu_kernels, write_prof_folder

    pipeline = run_window.session.pipeline
    write_prof_folder(tmp_path / "original", npu_kernels(pipeline.original, dur=5.0))
    write_prof_folder(tmp_path / "fused", npu_kernels(pipeline.fused, dur=6.0))
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *a, **k: str(tmp_path)))
    menu_action(run_window, "&Run", "Import PROF_* folder…").trigger()
    panel = run_window.run_panel
    qtbot.waitUntil(lambda: panel.result is not None)
    assert set(bars_shown(panel, "before")) >= {"abs_0", "relu_0", "exp_0"}
    assert FUSED in bars_shown(panel, "after")


def test_a_saved_run_file_imports_back(qtbot, run_window, monkeypatch, tmp_path):
    from tests.npu_artifacts import npu_kernels, write_prof_folder

    panel = run_window.run_panel
    prof = write_prof_folder(tmp_path, npu_kernels(run_window.session.pipeline.fused, dur=7.0), steps=3)
    panel.files.import_profile(str(prof))
    qtbot.waitUntil(lambda: panel.result is not None)
    before = bars_shown(panel, "after")
    saved = tmp_path / "run.json"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(saved), "")))
    menu_action(run_window, "&Run", "Save run file (JSON)…").trigger()
    assert saved.exists()
    panel.show_result(None)  # what a newly opened model does
    assert bars_shown(panel, "after") == [] and panel.results.isHidden()
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (str(saved), "")))
    qtbot.mouseClick(panel.import_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.result is not None)
    assert bars_shown(panel, "after") == before and not panel.results.isHidden()
    assert next(k for k in panel.charts.shown_kernels("after") if k.kernel == FUSED).node == FUSED


def test_the_top_n_control_sets_how_many_bars_are_drawn(qtbot, toy_window, tmp_path):
    from tests.npu_artifacts import write_prof_folder

    open_and_wait(qtbot, toy_window, SAMPLE)
    graph = toy_window.session.model.graph
    kernels = [(n.name, n.op, 1.0 + i) for i, n in enumerate(graph) if n.op not in ("Const", "Identity", "Placeholder")]
    assert len(kernels) > 20
    panel = toy_window.run_panel
    panel.files.import_profile(str(write_prof_folder(tmp_path, kernels)))
    qtbot.waitUntil(lambda: panel.result is not None)
    side = next(s for s in ("before", "after") if bars_shown(panel, s))
    assert panel.top_n.value() == 12 and len(bars_shown(panel, side)) == 12
    slowest = [name for name, _, _ in sorted(kernels, key=lambda k: -k[2])]
    assert [k.kernel for k in panel.charts.shown_kernels(side)] == slowest[:12]  # slowest first
    panel.top_n.setFocus()
    panel.top_n.selectAll()
    qtbot.keyClicks(panel.top_n, "5")
    assert len(bars_shown(panel, side)) == 5
    panel.top_n.selectAll()
    qtbot.keyClicks(panel.top_n, "20")
    assert len(bars_shown(panel, side)) == 20


# ---- the layout fallback notice -----------------------------------------------------------------------------
@pytest.mark.parametrize("why", ["timeout", "no graphviz"])
def test_without_a_dot_layout_the_pane_title_says_it_shows_a_simpler_layout(qtbot, tmp_path, dialogs, monkeypatch,
                                                                             why):
    from fuselens.core.layout import dot

    if why == "timeout":  # dot really runs, with a limit it cannot meet
        real = dot.run_dot
        monkeypatch.setattr(dot, "run_dot", lambda source, timeout, cancelled=None: real(source, 1e-4, cancelled))
        reason = "dot took longer than 8 s"  # the limit the user has, not the one forced here
    else:
        monkeypatch.setattr(dot.shutil, "which", lambda name: None)
        reason = "Graphviz `dot` is not installed"
    window = make_window(qtbot, tmp_path, LayoutCache(directory=None))  # nothing cached from other tests
    try:
        open_and_wait(qtbot, window, "conv_bn")
        for side, pane in window.panes.items():
            assert pane.shown.engine == "layered", side
            assert f"{reason}; showing a simpler layout" in pane.header.text()
            assert set(pane.view.items_by_key) == set(pane.shown.nodes)  # still drawn, every node
        assert not dialogs
    finally:
        close_window(window)
