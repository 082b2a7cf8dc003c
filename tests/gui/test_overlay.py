""""Why not" on the graph: selecting a near miss draws exactly its bound nodes and its culprit over the
before pane, with the reason beside them; selecting anything else clears it. One sample per family."""

from __future__ import annotations

from fuselens.passes.base import Match, NearMiss
from tests.gui.helpers import open_and_wait, wait_idle


def choose(qtbot, window, pass_id: str, anchor: str) -> NearMiss:
    """Select a near miss in the match list as a user would, and wait for the panes to settle."""
    result = window.session.pipeline.result(pass_id)
    miss = next(m for m in result.near_misses if m.anchor == anchor)
    window.match_list.setCurrentItem(window.match_list.item_for(miss))
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: window.why_not.label is not None)
    return miss


def drawn(window, names) -> set[str]:
    return set(window.before.keys_for(names))


def test_amct_leak_outlines_the_match_marks_the_intermediate_and_draws_the_leaking_edge(qtbot, window):
    open_and_wait(qtbot, window, "conv_shared")
    miss = choose(qtbot, window, "ConvBatchnormFusionPass", "bn1")
    overlay = window.why_not
    assert overlay.culprit_keys == ["conv1"] and overlay.bound_keys == ["bn1"]
    assert overlay.culprit_edge == ("conv1", "side_relu")  # the intermediate's read outside the match
    assert miss.reason in overlay.label.toPlainText()
    visible = window.before.mapToScene(window.before.viewport().rect()).boundingRect()
    assert visible.contains(overlay.label_scene_rect())  # the whole card is in view: nothing of the reason is cut
    # exactly the bound nodes and the culprit (one outline each), its edge, and the label with its leader line
    assert len(overlay.items()) == len(overlay.bound_keys) + len(overlay.culprit_keys) + 3
    assert "conv1 → side_relu" in window.properties.toPlainText()
    window.selection.clear()
    assert overlay.items() == [] and overlay.label is None


def test_amct_constant_drawn_inside_its_reader_marks_that_box(qtbot, window):
    open_and_wait(qtbot, window, "mul_vector")
    choose(qtbot, window, "OpBiasAddMulFusionPass", "mul")
    overlay = window.why_not
    assert overlay.culprit_keys == ["mul"]  # mul/y is drawn inside the Mul's box: the box is marked
    assert overlay.culprit_edge is None
    assert set(overlay.bound_keys) == drawn(window, ["conv1", "conv1/BiasAdd"])


def test_autofuse_switched_off_reduce_draws_the_edge_it_would_fuse_across(qtbot, window):
    open_and_wait(qtbot, window, "abs_reduce_sum")
    choose(qtbot, window, "AutoFusePass", "reduce_sum_0")
    overlay = window.why_not
    assert overlay.culprit_keys == ["reduce_sum_0"] and overlay.bound_keys == ["abs_0"]
    assert overlay.culprit_edge == ("abs_0", "reduce_sum_0")
    first = window.session.pipeline.result("AutoFusePass").matches
    assert not first  # nothing else to select in this pass: select a node instead, which clears the overlay
    window.select_key("before", "abs_0")
    assert overlay.items() == []


def test_scope_census_near_miss_opens_its_collapsed_scope_then_marks_the_counted_nodes(qtbot, window):
    open_and_wait(qtbot, window, "keras_bn_small_ops")
    window.session.set_collapsed("before", frozenset({"bn_no_scale"}))
    qtbot.waitUntil(lambda: window.panes["before"].shown.collapsed == frozenset({"bn_no_scale"}))
    wait_idle(qtbot, window)
    miss = choose(qtbot, window, "ScopeLayerNormPass", "bn_no_scale/batchnorm")
    overlay = window.why_not
    assert "bn_no_scale" not in window.panes["before"].shown.collapsed  # expanded through the pane's own path
    muls = {"bn_no_scale/batchnorm/mul", "bn_no_scale/batchnorm/mul_1"}
    assert set(overlay.culprit_keys) == drawn(window, muls)
    assert set(overlay.bound_keys) == drawn(window, miss.nodes) - set(overlay.culprit_keys)
    unpaired = choose(qtbot, window, "ScopeLayerNormPass", "bn_default/batchnorm")  # nothing to point at
    assert not overlay.culprit_keys and overlay.culprit_edge is None
    assert set(overlay.bound_keys) == drawn(window, unpaired.nodes)
    assert len(overlay.items()) == len(overlay.bound_keys) + 3  # + the red outline of the whole, the label, its leader
    assert "the structure as a whole" in window.properties.toPlainText()


def test_a_rebuilt_scene_draws_it_again_and_stepping_to_a_match_clears_it(qtbot, window):
    open_and_wait(qtbot, window, "conv_bias_bn")
    choose(qtbot, window, "AutoFusePass", "conv1/BiasAdd")
    old = window.why_not.items()
    window.relayout("before")  # a new scene (as when a scope opens): the overlay follows it
    wait_idle(qtbot, window)
    qtbot.waitUntil(lambda: bool(window.why_not.items()) and window.why_not.items()[0] not in old)
    assert window.why_not.culprit_keys == ["conv1/BiasAdd"]
    window.step_match(1, Match)
    assert isinstance(window.match_list.current_record(), Match)
    assert window.why_not.items() == [] and window.why_not.miss is None


def test_a_near_miss_on_a_node_an_earlier_pass_created_is_drawn_on_its_original_nodes(qtbot, window):
    open_and_wait(qtbot, window, "depthwise_bn")
    miss = next(m for m in window.session.pipeline.result("AutoFusePass").near_misses if m.anchor == "dw1/BiasAdd")
    assert "dw1/BiasAdd" not in window.session.graph("before")  # the depthwise fold made it
    choose(qtbot, window, "AutoFusePass", miss.anchor)
    origins = window.session.pipeline.provenance.origins("dw1/BiasAdd")
    assert origins and sorted(window.why_not.culprit_keys) == sorted(window.before.keys_for(origins))  # a set's order
