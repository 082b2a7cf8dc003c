"""A big fusion's match list fills in slices between event-loop turns (a 20k-node graph gives some 5,000
records): the GUI thread keeps running timers, and the list behaves as before once filled."""

from __future__ import annotations

import itertools
import time

from PySide6.QtCore import QTimer

from fuselens.gui.match_filter import GROUP_ROLE, MatchFilterBar, record_lines
from fuselens.gui.match_list import ITEM_ROLE, MatchList
from fuselens.passes.base import Match, NearMiss, PassResult

REFUSED = "the conv output has 2 consumers"


def big_results(matches: int = 2000, repeated: int = 600, distinct: int = 400) -> list[PassResult]:
    """~3,000 records: matches of one pass, near misses of another (most with one reason, so they fold)."""
    fused = [Match("ConvBatchnormFusionPass", f"model/block{i}/bn", (f"model/block{i}/conv", f"model/block{i}/bn"),
                   (f"model/block{i}/bn",), f"fold block{i}/bn into block{i}/conv", index=i) for i in range(matches)]
    misses = [NearMiss("AutoFusePass", f"model/tail{i}/add", (f"model/tail{i}/add",), REFUSED) for i in range(repeated)]
    misses += [NearMiss("AutoFusePass", f"model/odd{i}/mul", (f"model/odd{i}/mul",), f"odd reason number {i}")
               for i in range(distinct)]
    return [PassResult("ConvBatchnormFusionPass", matches=fused), PassResult("AutoFusePass", near_misses=misses)]


def test_a_3000_record_list_fills_over_several_event_loop_turns_and_timers_keep_firing(qtbot):
    match_list = MatchList()
    bar = MatchFilterBar(match_list)
    qtbot.addWidget(bar)
    bar.show()
    results = big_results()
    total = sum(len(r.matches) + len(r.near_misses) for r in results)
    ticks: list[float] = []
    heartbeat = QTimer(interval=20)
    heartbeat.timeout.connect(lambda: ticks.append(time.perf_counter()))
    heartbeat.start()
    turns: list[int] = []  # event-loop turns taken while the list fills

    def probe() -> None:
        if match_list.filling:
            turns.append(len(match_list.records))
            QTimer.singleShot(0, probe)

    qtbot.wait(60)

    with qtbot.waitSignal(match_list.filled, timeout=20000):
        match_list.set_results(results)
        bar.refresh()
        assert match_list.filling and len(match_list.records) < total  # control went back to the event loop
        probe()
    heartbeat.stop()

    assert not match_list.filling and len(match_list.records) == total
    assert len(turns) >= 2 and turns == sorted(turns)  # other events ran between slices
    assert max(b - a for a, b in itertools.pairwise(ticks)) < 1.0  # a generous bound: the turns above are the check
    conv, autofuse = match_list.topLevelItem(0), match_list.topLevelItem(1)
    assert conv.childCount() == 2000 and conv.isExpanded() and bar.apply() == total
    folded = autofuse.child(0)
    assert folded.data(0, GROUP_ROLE) and folded.childCount() == 600 and not folded.isExpanded()
    assert folded.text(0) == f"✘ 600 near misses: {REFUSED}" and autofuse.childCount() == 1 + 400
    assert conv.child(0).text(0) == "✔ #0 fold block0/bn into block0/conv"  # the model's root scope left out
    assert len(match_list.match_items()) == 2000


def test_the_filter_applies_to_what_joins_the_list_and_a_newer_fill_replaces_an_older_one(qtbot):
    match_list = MatchList()
    bar = MatchFilterBar(match_list)
    qtbot.addWidget(bar)
    bar.text.setText("tail1")  # set before the results arrive: lines are filtered as their pass joins
    match_list.set_results(big_results())
    assert match_list.filling
    match_list.set_results(big_results(matches=5, repeated=3, distinct=2))  # a re-fusion before the fill ended
    assert not match_list.filling  # ten records fill at once
    qtbot.wait(50)  # the abandoned fill's next slice, if any, must not add its rows
    assert len(match_list.records) == 10 and match_list.topLevelItem(0).childCount() == 5
    shown = [line for i in range(match_list.topLevelItemCount())
             for line in record_lines(match_list.topLevelItem(i)) if not line.isHidden()]
    assert [line.data(0, ITEM_ROLE).anchor for line in shown] == ["model/tail1/add"]
    assert match_list.topLevelItem(0).isHidden() and bar.apply() == 1


def test_the_current_record_survives_a_refill_and_stepping_during_a_fill_is_safe(qtbot):
    match_list = MatchList()
    qtbot.addWidget(match_list)
    match_list.set_results(big_results())
    first = match_list.step(1, Match)  # steps over the passes already in the list (none, or the first)
    assert first is None or first.anchor == "model/block0/bn"
    qtbot.waitUntil(lambda: not match_list.filling, timeout=20000)
    chosen = match_list.step(-1, NearMiss)
    assert chosen.anchor == "model/odd399/mul"
    match_list.set_results(big_results())  # fused again: new records, the same one stays current
    qtbot.waitUntil(lambda: not match_list.filling, timeout=20000)
    current = match_list.current_record()
    assert current is not chosen and (current.pass_id, current.anchor) == (chosen.pass_id, chosen.anchor)


def test_new_results_replace_every_row_of_the_old_ones_once_filled(qtbot):
    """The old rows are taken out at once and deleted in the fill's slices (clear() on 5,000 rows was one stall)."""
    match_list = MatchList()
    match_list.set_results(big_results())
    qtbot.waitUntil(lambda: not match_list.filling, timeout=20000)
    small = big_results(matches=3, repeated=0, distinct=2)
    match_list.set_results(small)
    qtbot.waitUntil(lambda: not match_list.filling, timeout=20000)
    shown = [item.data(0, ITEM_ROLE) for group in range(match_list.topLevelItemCount())
             for item in record_lines(match_list.topLevelItem(group))]
    assert shown == [*small[0].matches, *small[1].near_misses]
    assert match_list.topLevelItemCount() == 2


def test_the_root_scope_left_out_of_labels_is_the_scope_every_anchor_is_inside():
    from fuselens.gui.match_list import root_scope

    assert root_scope(["model/a", "model/b/c"]) == "model/"
    assert root_scope(["model/ab/x", "model/ac/y"]) == "model/"  # not "model/a": a name's start is no scope
    assert root_scope(["m/s/a", "m/s/b", "m/s/c/d"]) == "m/s/"
    assert root_scope(["model", "model/x"]) == ""  # one anchor is the scope itself
    assert root_scope(["a/x", "b/x"]) == root_scope([]) == root_scope(["plain"]) == ""
