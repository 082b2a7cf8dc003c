"""Presentation mode on the demo sample: entering makes everything large and plain, the keys step
matches and near misses, a step's collapse animation runs to its end, and leaving restores the window."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QToolBar

from fuselens.gui.graph_view import NORMAL_LOOK, NodeItem
from fuselens.gui.presentation import PRESENTATION_LOOK, PRESENTATION_ZOOM, TEXT_POINTS
from fuselens.passes.base import Match, NearMiss
from tests.gui.helpers import open_and_wait


def window_state(window) -> dict:
    """What presentation mode must give back."""
    main = window.centralWidget()
    return {
        "geometry": window.geometry().getRect(), "full screen": window.isFullScreen(), "sizes": main.sizes(),
        "side": main.widget(2), "left": main.widget(0).isVisible(), "menu": window.menuBar().isVisible(),
        "status": window.statusBar().isVisible(),
        "docks": {d.objectName(): d.isVisible() for d in window.findChildren(QDockWidget)},
        "toolbars": {t.objectName(): t.isVisible() for t in window.findChildren(QToolBar)},
        "header points": [p.header.font().pointSizeF() for p in window.panes.values()],
        "zoom": [p.view.zoom_level() for p in window.panes.values()], "look": NodeItem.look,
        "next enabled": window.chrome.next_action.isEnabled(),
    }


def press(qtbot, window, key) -> None:
    qtbot.keyClick(window.before, key)


def test_entering_makes_it_large_and_plain_and_leaving_restores_the_window(qtbot, window):
    open_and_wait(qtbot, window, "demo")
    before = window_state(window)
    window.presentation.toggle_action.trigger()  # View > Presentation (F11)
    shown = window_state(window)
    assert window.presentation.active and shown["full screen"]
    assert not shown["left"] and not shown["menu"] and not shown["status"]
    assert not any(shown["docks"].values()) and not any(shown["toolbars"].values())
    assert shown["side"] is window.presentation.panel and window.presentation.panel.isVisible()
    assert all(p > q for p, q in zip(shown["header points"], before["header points"]))  # the fonts grow
    assert window.presentation.panel.font().pointSizeF() == TEXT_POINTS
    assert window.presentation.panel.font().pointSizeF() > window.properties.font().pointSizeF()
    assert shown["zoom"] == [PRESENTATION_ZOOM, PRESENTATION_ZOOM] and shown["look"] is PRESENTATION_LOOK
    assert not shown["next enabled"]  # its N would clash with "next near miss"
    press(qtbot, window, Qt.Key.Key_Escape)
    assert not window.presentation.active
    try:
        qtbot.waitUntil(lambda: window_state(window) == before)
    except qtbot.TimeoutError:
        after = window_state(window)
        raise AssertionError({k: (before[k], after[k]) for k in before if before[k] != after[k]}) from None
    assert NodeItem.look is NORMAL_LOOK


def test_keys_step_matches_and_near_misses_and_each_shows_its_explanation(qtbot, window):
    open_and_wait(qtbot, window, "demo")
    presentation = window.presentation
    presentation.animate = False
    presentation.enter()
    matches = [m for r in window.session.pipeline.results for m in r.matches]
    misses = [m for r in window.session.pipeline.results for m in r.near_misses]
    press(qtbot, window, Qt.Key.Key_Right)
    assert window.match_list.current_record() is matches[0]
    press(qtbot, window, Qt.Key.Key_Space)
    assert window.match_list.current_record() is matches[1]
    assert matches[1].explanation["title"] in presentation.panel.toPlainText()
    press(qtbot, window, Qt.Key.Key_Left)
    assert window.match_list.current_record() is matches[0]
    press(qtbot, window, Qt.Key.Key_N)
    assert window.match_list.current_record() is misses[0]
    assert isinstance(misses[0], NearMiss) and misses[0].reason in presentation.panel.toPlainText()
    assert window.why_not.label is not None  # the near miss is drawn on the graph too
    assert window.why_not.label.font().pointSizeF() * window.before.zoom_level() > 14  # large on screen
    presentation.leave()


def test_a_step_animates_the_before_boxes_onto_the_fused_node_to_the_end(qtbot, window):
    open_and_wait(qtbot, window, "demo")
    presentation = window.presentation
    presentation.enter()
    with qtbot.waitSignal(presentation.stepped, timeout=5000) as landed:
        press(qtbot, window, Qt.Key.Key_Right)
        assert presentation.ghosts.isVisible() and presentation.ghosts.pieces  # one ghost per before box
    match = window.match_list.current_record()
    assert isinstance(match, Match) and landed.args == [match]
    assert len(presentation.ghosts.pieces) == len(window.before.keys_for(match.nodes))
    qtbot.waitUntil(lambda: presentation.animation.state() == presentation.animation.State.Stopped)
    assert presentation.ghosts.progress == 1.0 and not presentation.ghosts.isVisible()
    end = presentation.ghosts.rect_at(presentation.ghosts.pieces[0][1], 1.0)
    assert presentation.ghosts.target.contains(end.center())  # they landed on the fused node
    assert match.summary in presentation.panel.toPlainText()
    presentation.leave()


def test_presenting_an_empty_window_says_what_the_keys_do_and_steps_to_nothing(qtbot, window):
    window.presentation.enter()
    assert "Right or Space: next match" in window.presentation.panel.toPlainText()
    press(qtbot, window, Qt.Key.Key_Right)
    assert "No matches to step through" in window.presentation.panel.toPlainText()
    press(qtbot, window, Qt.Key.Key_Escape)
    assert not window.presentation.active and NodeItem.look is NORMAL_LOOK


def test_a_window_closed_while_presenting_leaves_the_normal_look(qtbot, tmp_path, layout_cache):
    """Found by the chaos test: the boxes' look is shared by every view, so a window closed in presentation
    mode left the next window painting with the presentation look."""
    from fuselens.gui.graph_view import NORMAL_LOOK, NodeItem
    from tests.gui.helpers import close_window, make_window

    window = make_window(qtbot, tmp_path, layout_cache)
    window.presentation.enter()
    assert NodeItem.look is not NORMAL_LOOK
    close_window(window)
    assert NodeItem.look is NORMAL_LOOK
