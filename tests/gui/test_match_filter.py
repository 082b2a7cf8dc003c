"""The match list's filter row and folded near misses, on the real catalog."""

from __future__ import annotations

from fuselens.gui.match_filter import GROUP_ROLE, MatchFilterBar, item_kind, record_lines
from fuselens.gui.match_list import ITEM_ROLE, MatchList
from fuselens.passes.base import Match, NearMiss, PassResult
from tests.gui.helpers import open_and_wait


def visible_records(window) -> list:
    lines = [item for i in range(window.match_list.topLevelItemCount())
             for item in record_lines(window.match_list.topLevelItem(i))]
    return [item.data(0, ITEM_ROLE) for item in lines
            if not item.isHidden() and item_kind(item) in ("match", "near miss")]


def test_near_misses_with_one_reason_fold_into_a_collapsed_line(qtbot):
    """Ten "not my pattern" near misses of a Keras BN scope: one line with the count, still stepped through."""
    reason = "a batchnorm scope without a sibling moments scope (a Keras BatchNormalization, not a LayerNorm)"
    misses = [NearMiss("ScopeLayerNormPass", f"block{i}/bn/batchnorm", (f"block{i}/bn/batchnorm/add",), reason)
              for i in range(10)]
    odd = NearMiss("ScopeLayerNormPass", "enc/LayerNorm/batchnorm", ("enc/LayerNorm/batchnorm/add",),
                   "batchnorm scope does not match the pattern: Mul: found 2, pattern needs 3")
    match = Match("ConvBatchnormFusionPass", "bn1", ("conv1", "bn1"), ("bn1",), "fold bn1 into conv1", index=0)
    match_list = MatchList()
    qtbot.addWidget(match_list)
    bar = MatchFilterBar(match_list)
    match_list.set_results([PassResult("ScopeLayerNormPass", near_misses=[*misses, odd]),
                            PassResult("ConvBatchnormFusionPass", matches=[match])])
    bar.refresh()
    group = match_list.topLevelItem(0)
    folded, alone = group.child(0), group.child(1)
    assert folded.data(0, GROUP_ROLE) and not folded.isExpanded() and folded.childCount() == 10
    assert folded.text(0).startswith("✘ 10 near misses: a batchnorm scope without a sibling moments scope")
    assert alone.data(0, ITEM_ROLE) is odd
    assert match_list.step(1, NearMiss) is misses[0] and match_list.step(-1, NearMiss) is odd  # still reached
    assert match_list.step(1, Match) is match
    bar.kind.setCurrentText("matches")
    assert group.isHidden() and bar.apply() == 1


def test_filters_choose_what_shows_and_what_next_match_steps_through(qtbot, window):
    open_and_wait(qtbot, window, "keras_bn_small_ops")
    results = window.session.pipeline.results
    bar = window.chrome.match_filter
    matches = [m for r in results for m in r.matches]
    bar.kind.setCurrentText("matches")
    assert all(isinstance(r, Match) for r in visible_records(window)) and len(visible_records(window)) == len(matches)
    layer_norm = window.match_list.topLevelItem(0)
    assert layer_norm.text(0).startswith("ScopeLayerNormPass ") and layer_norm.isHidden()  # nothing left to show
    bar.kind.setCurrentText("all")
    bar.pass_box.setCurrentText("AutoFusePass")
    autofuse = next(r for r in results if r.pass_id == "AutoFusePass")
    assert visible_records(window) == [*autofuse.matches, *autofuse.near_misses]
    for wanted in (*autofuse.matches, autofuse.matches[0]):  # Next match steps through the shown ones only
        window.chrome.next_action.trigger()
        assert window.match_list.current_record() is wanted
    bar.pass_box.setCurrentText("all passes")
    bar.text.setText("bn_plain")
    shown = visible_records(window)
    assert shown and all("bn_plain" in r.anchor or "bn_plain" in getattr(r, "summary", "") for r in shown)
    bar.text.clear()
    assert len(visible_records(window)) == sum(len(r.matches) + len(r.near_misses) for r in results)

