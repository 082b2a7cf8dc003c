"""File > Export lesson of the selected matches: the page explains exactly the matches chosen in the list."""

from __future__ import annotations

import re

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from tests.gui.helpers import open_and_wait


def test_lesson_of_the_selected_matches_explains_only_those(qtbot, window, tmp_path, monkeypatch):
    open_and_wait(qtbot, window, "demo")
    action = window.chrome.export_lesson_selected_action
    assert not action.isEnabled()  # nothing chosen yet
    rows = window.match_list.match_items()
    chosen = [m.id for r in window.session.pipeline.results for m in r.matches][1::3]  # every third, from the 2nd
    assert len(chosen) >= 2
    first = rows[chosen[0]]
    qtbot.mouseClick(window.match_list.viewport(), Qt.MouseButton.LeftButton,
                     pos=window.match_list.visualItemRect(first).center())
    for match_id in chosen[1:]:
        window.match_list.scrollToItem(rows[match_id])
        qtbot.mouseClick(window.match_list.viewport(), Qt.MouseButton.LeftButton,
                         Qt.KeyboardModifier.ControlModifier, window.match_list.visualItemRect(rows[match_id]).center())
    assert window.match_list.selected_match_ids() == chosen and action.isEnabled()
    target = tmp_path / "subset.html"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(target), ""))
    assert action in window.menuBar().actions()[0].menu().actions()  # offered in the File menu
    action.trigger()
    qtbot.waitUntil(target.exists, timeout=30000)
    text = target.read_text(encoding="utf-8")
    anchors = [match_id.split(":", 1)[1] for match_id in chosen]
    assert text.count("<h2 id='m") == len(chosen)
    assert re.findall(r"<h2 id='m\d+'>\d+\. [^:]+: <tt>([^<]+)</tt>", text) == anchors


def test_a_skipped_match_is_not_part_of_the_selection(qtbot, window):
    open_and_wait(qtbot, window, "demo")
    rows = window.match_list.match_items()
    first, second = list(rows)[:2]
    rows[first].setSelected(True)
    rows[second].setSelected(True)
    rows[second].setCheckState(0, Qt.CheckState.Unchecked)  # skip it: it is not fused, so not explained
    assert window.match_list.selected_match_ids() == [first]
