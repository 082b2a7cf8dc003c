"""The main window end to end (offscreen): open, fuse, step, select, search, collapse, export."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from PySide6.QtCore import QPoint, Qt

from fuselens.core.formats.loaders import load_model
from fuselens.core.layout import SCOPE_PREFIX
from tests.gui.helpers import ToyDropActivation, open_and_wait, wait_idle

SAMPLE = "keras_bn_small_ops"  # 4 Relu after small-op BNs: 4 toy matches; scopes bn_default/batchnorm, ...


def ops_drawn(view) -> dict[str, str]:
    return {key: item.node.op for key, item in view.items_by_key.items()}


def click_node(qtbot, view, key: str, *, double: bool = False) -> None:
    """A real mouse click on a node: centre it, then click its centre in viewport coordinates."""
    item = view.items_by_key[key]
    view.centerOn(item)
    pos: QPoint = view.mapFromScene(item.sceneBoundingRect().center())
    click = qtbot.mouseDClick if double else qtbot.mouseClick
    click(view.viewport(), Qt.MouseButton.LeftButton, pos=pos)


def test_open_a_sample_draws_both_panes_with_constants_folded(qtbot, toy_window):
    open_and_wait(qtbot, toy_window, SAMPLE)
    graph = toy_window.session.model.graph
    before = toy_window.panes["before"].shown
    assert toy_window.windowTitle() == f"FuseLens — {SAMPLE}"
    assert set(toy_window.before.items_by_key) == set(before.nodes)
    assert "Const" not in ops_drawn(toy_window.before).values()
    # every constant is drawn inside the op that reads it
    conv = before.nodes["bn_default_conv"]
    assert conv.weights and all(graph.is_const(w) for w in conv.weights) and conv.weight_text
    assert toy_window.recent.list()[0] == SAMPLE
    assert "Relu" not in ops_drawn(toy_window.after).values()  # the toy pass dropped them
    assert "nodes" in toy_window.panes["before"].header.text()


def test_a_bad_file_shows_an_error_and_the_window_stays_usable(qtbot, toy_window, dialogs, tmp_path):
    bad = tmp_path / "broken.pb"
    bad.write_bytes(b"\x08\x96\x01 this is not a graph \xff\xfe")
    toy_window.open_model(str(bad))
    qtbot.waitUntil(lambda: bool(dialogs), timeout=10000)
    kind, _title, text = dialogs[0]
    assert kind == "critical" and "broken.pb" in text
    assert toy_window.session.model is None and toy_window.isVisible()
    open_and_wait(qtbot, toy_window, "conv_bn")  # still works afterwards
    assert toy_window.session.model.name == "conv_bn"


def test_toggling_a_pass_changes_the_after_pane(qtbot, toy_window):
    open_and_wait(qtbot, toy_window, SAMPLE)
    relus = [n.name for n in toy_window.session.model.graph if n.op == "Relu"]
    assert not set(relus) & set(toy_window.after.items_by_key)
    item = toy_window.pass_panel.pass_items[ToyDropActivation.id]
    assert item.text(1) == f"{len(relus)} ✔ 0 ✘"
    item.setCheckState(0, Qt.CheckState.Unchecked)  # what a click on the check box does
    wait_idle(qtbot, toy_window)
    assert set(relus) <= set(toy_window.after.items_by_key)
    assert toy_window.session.pipeline.result(ToyDropActivation.id) is None
    item.setCheckState(0, Qt.CheckState.Checked)
    wait_idle(qtbot, toy_window)
    assert not set(relus) & set(toy_window.after.items_by_key)


def statuses_match_the_fusion(window) -> None:
    """Every box of both panes coloured by the current fusion (a pane skips the walk when its items are)."""
    from fuselens.gui.pane import diff_status

    for side, pane in window.panes.items():
        status = diff_status(side, window.session.pipeline.provenance)
        assert {k: i.status for k, i in pane.view.items_by_key.items()} == \
            {k: status(k) for k in pane.view.items_by_key}, side


def test_each_fusion_colours_both_panes_by_what_it_did(qtbot, toy_window):
    open_and_wait(qtbot, toy_window, SAMPLE)
    statuses_match_the_fusion(toy_window)
    assert {i.status for i in toy_window.before.items_by_key.values()} > {"unchanged"}
    item = toy_window.pass_panel.pass_items[ToyDropActivation.id]
    for state in (Qt.CheckState.Unchecked, Qt.CheckState.Checked):  # fused again, the before pane not laid out
        item.setCheckState(0, state)
        wait_idle(qtbot, toy_window)
        statuses_match_the_fusion(toy_window)


def test_a_new_fusion_is_drawn_in_the_after_pane_after_the_window_shows_its_counts(qtbot, toy_window,
                                                                                      monkeypatch):
    """The fused graph's layout worker starts in the next event-loop turn, once the repaint of the new
    colours and counts is done (beside it, that repaint shared the interpreter lock); meanwhile the
    window is not idle."""
    open_and_wait(qtbot, toy_window, SAMPLE)
    laid_out = []
    relayout = toy_window.relayout
    monkeypatch.setattr(toy_window, "relayout", lambda side: laid_out.append(side) or relayout(side))
    toy_window._show_pipeline()
    assert laid_out == [] and not toy_window.is_idle()
    qtbot.waitUntil(lambda: laid_out == ["after"], timeout=5000)
    wait_idle(qtbot, toy_window)
    assert toy_window.panes["after"].shown_graph is toy_window.session.pipeline.fused


def test_the_fused_graph_is_drawn_first_and_the_match_list_filled_after_it(qtbot, toy_window, monkeypatch):
    """The picture first (the 20k-node graph's list is 1.2 s of slices of rows), and never the two side by side:
    the layout worker beside the list's slices shared the interpreter lock with them, and every slice waited."""
    import fuselens.gui.match_list

    open_and_wait(qtbot, toy_window, "demo")
    monkeypatch.setattr(fuselens.gui.match_list, "MIN_ROWS_PER_SLICE", 1)  # a row a slice: the list fills in turns
    monkeypatch.setattr(fuselens.gui.match_list, "FILL_SLICE_S", 0.0)
    events = []
    toy_window.match_list.filled.connect(lambda: events.append("filled"))
    toy_window.after.built.connect(lambda: events.append("built"))
    relayout = toy_window.relayout
    monkeypatch.setattr(toy_window, "relayout", lambda side: events.append(side) or relayout(side))
    toy_window._show_pipeline()
    assert not toy_window.match_list.filling and events == [] and not toy_window.is_idle()
    qtbot.waitUntil(lambda: "filled" in events, timeout=5000)
    assert events == ["after", "built", "filled"]
    wait_idle(qtbot, toy_window)
    assert toy_window.panes["after"].shown_graph is toy_window.session.pipeline.fused
    assert toy_window.match_list.topLevelItemCount() > 0


def test_the_model_named_on_the_command_line_opens_once_the_window_has_painted(qtbot, toy_window, monkeypatch):
    """Its loader beside the window's first paint made each widget's Python paint wait for the interpreter
    lock (a stall of 100-200 ms on a 20k-node graph)."""
    qtbot.waitExposed(toy_window)
    opened = []
    open_model = toy_window.open_model
    monkeypatch.setattr(toy_window, "open_model", lambda spec: opened.append(spec) or open_model(spec))
    toy_window.open_when_painted(SAMPLE)
    assert opened == []
    toy_window.update()  # as a new window's first paint
    wait_idle(qtbot, toy_window)
    assert opened == [SAMPLE] and toy_window.session.model.name == SAMPLE


def test_stepping_through_matches_selects_the_right_nodes_in_both_panes(qtbot, toy_window):
    open_and_wait(qtbot, toy_window, "demo")
    provenance = toy_window.session.pipeline.provenance
    results = toy_window.session.pipeline.results
    records = [r for result in results for r in (*result.matches, *result.near_misses)]
    assert sum(1 for r in records if r.pass_id == ToyDropActivation.id) == 4  # 3 drops + 1 Sigmoid near miss
    matches = [r for result in results for r in result.matches]
    misses = [r for result in results for r in result.near_misses]
    assert matches and misses
    for action, wanted in ((toy_window.chrome.next_action, matches), (toy_window.chrome.next_miss_action, misses)):
        seen = []
        for _ in wanted:
            action.trigger()
            record = toy_window.match_list.current_record()
            seen.append(record)
            after = {d for n in record.nodes for d in provenance.descendants(n)}
            assert toy_window.before.selected_keys == set(toy_window.before.keys_for(record.nodes))
            assert toy_window.after.selected_keys == set(toy_window.after.keys_for(after))
            assert toy_window.before.selected_keys
            text = toy_window.properties.toPlainText()
            assert (record.reason if hasattr(record, "reason") else record.summary) in text
        assert seen == wanted  # matches only, then near misses only, each in list order
    toy_window.chrome.next_action.trigger()  # from a near miss to the match after it, wrapping to the first
    assert toy_window.match_list.current_record() is matches[0]
    toy_window.chrome.prev_action.trigger()  # wraps around to the last match
    assert toy_window.match_list.current_record() is matches[-1]
    toy_window.chrome.prev_miss_action.trigger()  # the near miss before it in list order, wrapping round
    last = next(i for i, r in enumerate(records) if r is matches[-1])
    before = [records[(last - k) % len(records)] for k in range(1, len(records))]
    assert toy_window.match_list.current_record() is next(r for r in before if any(r is m for m in misses))
    assert "N" in [s.toString() for s in toy_window.chrome.next_action.shortcuts()]
    # a toy match: the Relu is removed (red) before, its producer modified (amber) after
    drop = next(r for r in records if r.pass_id == ToyDropActivation.id and hasattr(r, "summary"))
    relu, producer = drop.nodes
    assert toy_window.before.items_by_key[relu].status == "removed"
    assert toy_window.after.items_by_key[producer].status == "modified"


def test_selection_in_one_pane_selects_the_counterpart_in_the_other(qtbot, toy_window):
    open_and_wait(qtbot, toy_window, SAMPLE)
    click_node(qtbot, toy_window.before, "bn_default_relu")
    producer = "bn_default/batchnorm/add_1"
    assert toy_window.selection.current.before == {"bn_default_relu"}
    assert toy_window.after.selected_keys == {producer}  # the Relu now lives on in its producer
    visible = toy_window.after.mapToScene(toy_window.after.viewport().rect()).boundingRect()
    assert visible.contains(toy_window.after.items_by_key[producer].sceneBoundingRect().center())
    click_node(qtbot, toy_window.after, producer)
    assert toy_window.before.selected_keys == {"bn_default_relu", producer}
    assert producer in toy_window.properties.toPlainText()
    click_node(qtbot, toy_window.before, "input")
    assert toy_window.after.selected_keys == {"input"} and toy_window.before.selected_keys == {"input"}


def test_search_by_op_type_or_name_outlines_hits_and_enter_selects(qtbot, toy_window):
    open_and_wait(qtbot, toy_window, SAMPLE)
    toy_window.chrome.find_action.trigger()
    qtbot.keyClicks(toy_window.search, "rsqrt")
    rsqrt = {n.name for n in toy_window.session.model.graph if n.op == "Rsqrt"}
    assert set(toy_window.before.hit_keys) == rsqrt and len(rsqrt) == 4
    assert all(toy_window.before.items_by_key[k].hit for k in rsqrt)
    qtbot.keyClick(toy_window.search, Qt.Key.Key_Return)
    assert toy_window.selection.current.before and set(toy_window.selection.current.before) <= rsqrt
    toy_window.search.clear()
    current = toy_window.match_list.current_record()
    qtbot.keyClicks(toy_window.search, "bn_plain_conv")  # typing N in the box is text, not "next match"
    assert toy_window.before.hit_keys == ["bn_plain_conv"]
    assert toy_window.search.text() == "bn_plain_conv" and toy_window.match_list.current_record() is current
    toy_window.search.clear()
    assert not toy_window.before.hit_keys


def test_collapse_and_expand_a_scope(qtbot, toy_window):
    open_and_wait(qtbot, toy_window, SAMPLE)
    scope = "bn_default/batchnorm"
    assert scope in toy_window.panes["before"].shown.scopes
    members = [k for k in toy_window.before.items_by_key if k.startswith(scope + "/")]
    assert len(members) == 7
    toy_window.before.collapse_requested.emit(frozenset({scope}))  # what the context menu sends
    qtbot.waitUntil(lambda: toy_window.is_idle() and SCOPE_PREFIX + scope in toy_window.before.items_by_key)
    box = toy_window.before.items_by_key[SCOPE_PREFIX + scope]
    assert set(box.node.members) == set(members)
    assert not set(members) & set(toy_window.before.items_by_key)
    assert toy_window.before.keys_for(["bn_default/batchnorm/Rsqrt"]) == [SCOPE_PREFIX + scope]
    click_node(qtbot, toy_window.before, SCOPE_PREFIX + scope, double=True)  # double click expands
    qtbot.waitUntil(lambda: toy_window.is_idle() and "bn_default/batchnorm/Rsqrt" in toy_window.before.items_by_key)
    assert SCOPE_PREFIX + scope not in toy_window.before.items_by_key


def test_exports_svg_png_fused_model_and_report(qtbot, toy_window, tmp_path):
    open_and_wait(qtbot, toy_window, SAMPLE)
    svg = tmp_path / "before.svg"
    toy_window.before.export_image(str(svg))
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    assert "Rsqrt" in svg.read_text() and "bn_default_relu" in svg.read_text()
    png = tmp_path / "after.png"
    toy_window.after.export_image(str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    fused = tmp_path / "fused.pb"
    toy_window.session.export_fused_pb(str(fused))
    assert len(load_model(str(fused)).graph) == len(toy_window.session.pipeline.fused)
    report = tmp_path / "report.json"
    toy_window.session.export_report(str(report))
    data = json.loads(report.read_text())
    assert data["model"] == SAMPLE and data["op_diff"] == ["Relu -4 (4->0)"]


def test_heat_overlay_colours_nodes_from_outside_values(qtbot, toy_window):
    open_and_wait(qtbot, toy_window, SAMPLE)
    toy_window.before.set_heat({"bn_default_conv": 4.0, "bn_plain_conv": 1.0})
    hot, cool = (toy_window.before.items_by_key[k] for k in ("bn_default_conv", "bn_plain_conv"))
    assert hot.heat is not None and cool.heat is not None and hot.heat != cool.heat
    toy_window.before.set_heat(None)
    assert hot.heat is None


def test_recent_files_and_bottom_dock(qtbot, toy_window):
    from PySide6.QtWidgets import QLabel

    open_and_wait(qtbot, toy_window, "conv_bn")
    open_and_wait(qtbot, toy_window, SAMPLE)
    assert toy_window.recent.list()[:2] == [SAMPLE, "conv_bn"]
    toy_window.chrome.recent_menu.aboutToShow.emit()
    assert [a.text() for a in toy_window.chrome.recent_menu.actions()][:2] == [SAMPLE, "conv_bn"]
    dock = toy_window.host.add_bottom_dock(QLabel("run"), "Run & profile")
    assert toy_window.dockWidgetArea(dock) == Qt.DockWidgetArea.BottomDockWidgetArea


def test_real_scope_fusion_shows_a_green_fused_node_with_its_body(qtbot, window):
    """bert_layernorm through the real (general) LayerNorm scope pass: a new fused node per layer."""
    from fuselens.gui.properties import FusedBodyDialog
    from fuselens.passes.fused import FUSED_NODES_ATTR

    open_and_wait(qtbot, window, "bert_layernorm")
    fused = window.session.pipeline.fused
    new = [k for k, item in window.after.items_by_key.items() if item.status == "new"]
    layer_norms = [k for k in new if window.after.items_by_key[k].node.op == "LayerNorm"]
    assert len(layer_norms) == 2
    assert all(window.after.items_by_key[k].node.category == "fused" for k in layer_norms)
    body = FusedBodyDialog(fused, layer_norms[0], window)
    assert body.tree.topLevelItemCount() == len(fused.attr(layer_norms[0], FUSED_NODES_ATTR))
    body.close()
    assert any(item.status == "removed" for item in window.before.items_by_key.values())
    click_node(qtbot, window.after, layer_norms[0])
    assert window.before.selected_keys and all(
        window.before.items_by_key[k].status == "removed" for k in window.before.selected_keys)
    assert "ScopeLayerNormPass" in window.properties.toPlainText()


def test_dropping_a_model_file_opens_it(qtbot, toy_window, tmp_path):
    from PySide6.QtCore import QMimeData, QPointF, QUrl
    from PySide6.QtGui import QDropEvent

    path = tmp_path / "dropped.pb"
    path.write_bytes(load_model("conv_bn").graph.graph_def.SerializeToString())
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    event = QDropEvent(QPointF(20, 20), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    toy_window.dropEvent(event)
    wait_idle(qtbot, toy_window)
    assert toy_window.session.model.name == "dropped.pb" and toy_window.recent.list()[0] == str(path)


def test_a_bare_pb_gets_its_edge_shapes_once_fusion_has_inferred_them(qtbot, window, tmp_path, monkeypatch):
    """Derived without TensorFlow (the passes' own static shapes, which TensorFlow's inference would not add to):
    nothing is asked of the TensorFlow helper, neither the fusion nor the shapes."""
    from fuselens.core.graph import proto
    from tests.gui.helpers import WAIT_MS

    asked = []
    call = window.tensorflow.call
    monkeypatch.setattr(window.tensorflow, "call", lambda kind, *rest, **kw: asked.append(kind) or call(kind, *rest,
                                                                                                          **kw))

    bare = proto.GraphDef()
    bare.CopyFrom(load_model("conv_bn").graph.graph_def)
    for node in bare.node:
        del node.attr["_output_shapes"]
    path = tmp_path / "bare.pb"
    path.write_bytes(bare.SerializeToString())
    open_and_wait(qtbot, window, str(path))
    qtbot.waitUntil(lambda: window.is_idle() and any(e.label for e in window.panes["before"].shown.edges),
                    timeout=WAIT_MS)
    before = {e.tensor: e.label for e in window.before.layout_.edges}
    assert before["conv1"] == "1×16×16×16" and before["input"] == "1×16×16×8"
    assert any(e.label for e in window.after.layout_.edges)
    assert asked == []


def test_a_bare_pbs_before_pane_is_laid_out_with_shapes_once_the_after_pane_is_drawn(qtbot, window, tmp_path):
    """Its shapes come with the fusion; the before pane's second layout waits for the fused graph's picture and
    the explanations (_on_shapes): beside the after pane's layout worker, both took the interpreter lock in turn."""
    from fuselens.core.graph import proto
    from tests.gui.helpers import WAIT_MS

    laid_out = []
    relayout = window.relayout

    def recorded(side):
        pipeline = window.session.pipeline
        laid_out.append((side, pipeline is not None and window.panes["after"].shown_graph is pipeline.fused,
                         window._explaining is None and window._results_pending is None))
        relayout(side)

    window.relayout = recorded
    bare = proto.GraphDef()
    bare.CopyFrom(load_model("mobilenet_v2").graph.graph_def)
    for node in bare.node:
        node.attr.pop("_output_shapes", None)
    path = tmp_path / "bare.pb"
    path.write_bytes(bare.SerializeToString())
    open_and_wait(qtbot, window, str(path))
    qtbot.waitUntil(lambda: window.is_idle() and window.panes["before"].drawn_with_shapes, timeout=WAIT_MS)
    before = [entry for entry in laid_out if entry[0] == "before"]
    assert len(before) == 2 and before[1][1:] == (True, True), laid_out
    assert window.session.pipeline.explained


def test_a_failing_pass_shows_in_the_match_list_and_the_window_goes_on(qtbot, tmp_path, dialogs, layout_cache,
                                                                       monkeypatch):
    from fuselens.passes import registry
    from fuselens.passes.config import PassConfig
    from tests.gui.helpers import close_window, make_window
    from tests.passes.test_failing_pass import BrokenEverywhere

    for cls in (BrokenEverywhere, ToyDropActivation):
        monkeypatch.setitem(registry._REGISTRY, cls.id, cls)
    window = make_window(qtbot, tmp_path, layout_cache,
                         PassConfig.from_ids([BrokenEverywhere.id, ToyDropActivation.id]))
    try:
        open_and_wait(qtbot, window, SAMPLE)
        texts = [window.match_list.topLevelItem(i).child(j).text(0)
                 for i in range(window.match_list.topLevelItemCount())
                 for j in range(window.match_list.topLevelItem(i).childCount())]
        assert any(t.startswith("⚠ BrokenEverywherePass failed: RuntimeError") for t in texts)
        assert "Relu" not in ops_drawn(window.after).values()  # the passes after it still ran
        assert not dialogs
    finally:
        close_window(window)


def test_a_conv_bn_match_is_explained_with_its_numbers_in_the_properties(qtbot, window):
    open_and_wait(qtbot, window, "conv_bn")
    fold = window.session.pipeline.result("ConvBatchnormFusionPass").matches[0]
    while window.match_list.current_record() is not fold:
        window.chrome.next_action.trigger()
    text = window.properties.toPlainText()
    example = fold.explanation["example"]
    folded = window.session.pipeline.fused.const_value(example["folded_filter"])[tuple(example["weight_index"])]
    assert "√" in text and "Output channel 0, with this model's numbers" in text
    assert f"= {example['w_folded']}" in text and example["w_folded"] == pytest.approx(folded, rel=1e-6)
    assert "weights read per inference" in text


def test_the_matches_are_explained_once_the_fused_graph_is_drawn_and_the_properties_follow(qtbot, window,
                                                                                             monkeypatch):
    """Explanations are 15-20 % of a fusion: the after pane does not wait for them, and they are made in slices of
    the window's own thread (a worker beside the panes' painting made each paint wait). A match selected before
    they are in shows its explanation as soon as they are."""
    import fuselens.gui.main_window

    events, explain = [], window._explain

    def explain_when_drawn(pipeline):
        fold = pipeline.result("ConvBatchnormFusionPass").matches[0]
        drawn = window.panes["after"].shown_graph is pipeline.fused
        events.append(("explain", drawn, pipeline.explained, fold.explanation))
        window.selection.select_item(fold)
        events.append("Output channel 0" in window.properties.toPlainText())
        explain(pipeline)
        events.append(("sliced", pipeline.explained, window.is_idle()))

    monkeypatch.setattr(fuselens.gui.main_window, "EXPLAIN_SLICE_S", 0.0)  # a match a slice
    monkeypatch.setattr(window, "_explain", explain_when_drawn)
    open_and_wait(qtbot, window, "conv_bn")
    assert events == [("explain", True, False, None), False, ("sliced", False, False)]
    fold = window.session.pipeline.result("ConvBatchnormFusionPass").matches[0]
    assert window.session.pipeline.explained and fold.explanation["example"]
    assert "Output channel 0, with this model's numbers" in window.properties.toPlainText()


def test_file_export_lesson_writes_the_page_of_every_match(qtbot, window, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    open_and_wait(qtbot, window, "demo")
    target = tmp_path / "lesson.html"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(target), ""))
    action = next(a for a in window.menuBar().actions()[0].menu().actions() if a.text() == "Export lesson…")
    action.trigger()  # what File > Export lesson… does
    qtbot.waitUntil(target.exists, timeout=30000)
    text = target.read_text(encoding="utf-8")
    matches = [m for r in window.session.pipeline.results for m in r.matches]
    assert text.count("<h2 id='m") == len(matches) == 7 and text.count("<svg") == 2 * len(matches)
