"""The "Your passes" panel: the user's traceback as rows of their own file and line, each opening $EDITOR there;
the pass panel lists the user's passes by registered name and stage, switchable."""

from __future__ import annotations

from PySide6.QtCore import Qt

from fuselens.core.package_data import resource
from fuselens.gui.pass_errors import PassErrorPanel
from fuselens.gui.pass_panel import USER_PASSES_TITLE, PassPanel
from fuselens.passes.config import PassConfig
from fuselens.session.pass_files import CodeError, CodeFrame, UserPass

ERROR = CodeError("ZeroDivisionError: division by zero",
                  (CodeFrame("/home/u/my_pass.py", 14, "meet_requirements", "return helper(x)"),
                   CodeFrame("/home/u/util.py", 3, "helper", "return 1 / 0")))


def test_the_error_panel_shows_the_users_frames_and_opens_them(qtbot, monkeypatch):
    opened, said = [], []
    panel = PassErrorPanel(said.append, open_file=lambda path, line: opened.append((path, line)))
    qtbot.addWidget(panel)
    panel.show_errors("MyPass (BEFORE_INFER_SHAPE); 1 error(s) in the pass code", [ERROR])
    rows = panel.frame_rows()
    assert rows[0] == ("✘ ZeroDivisionError: division by zero  (/home/u/util.py:3)", ("/home/u/util.py", 3))
    assert rows[1] == ("/home/u/my_pass.py:14 in meet_requirements:  return helper(x)", ("/home/u/my_pass.py", 14))
    panel.open_item(panel.tree.topLevelItem(0).child(0))
    assert opened == [("/home/u/my_pass.py", 14)] and said == ["opened /home/u/my_pass.py:14 in $EDITOR"]

    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)
    real = PassErrorPanel(said.append)  # the real opener: no $EDITOR is a message, not an exception
    qtbot.addWidget(real)
    real.show_errors("", [ERROR])
    real.open_item(real.tree.topLevelItem(0))
    assert said[-1].startswith("set $EDITOR (or $VISUAL) to open /home/u/util.py:3")


def test_a_run_that_never_ended_is_an_error_without_frames(qtbot):
    panel = PassErrorPanel(lambda _text: None)
    qtbot.addWidget(panel)
    panel.show_errors("", [CodeError("the pass ran longer than 10 s: cancelled")])
    assert panel.frame_rows() == [("✘ the pass ran longer than 10 s: cancelled", None)]


def test_user_passes_in_the_pass_panel(qtbot):
    panel = PassPanel(PassConfig.default())
    qtbot.addWidget(panel)
    switched = []
    panel.user_pass_switched.connect(lambda name, on: switched.append((name, on)))
    panel.show_user_passes([UserPass("MyMatMulAddPass", "BEFORE_INFER_SHAPE", "/home/u/my_pass.py"),
                            UserPass("MyAddZeroPass", "AFTER_INFER_SHAPE", "/home/u/my_pass.py", on=False)])
    assert panel.user_group.text(0) == USER_PASSES_TITLE
    item = panel.user_items["MyMatMulAddPass"]
    assert item.text(0) == "MyMatMulAddPass  [BEFORE_INFER_SHAPE]"
    assert panel.user_items["MyAddZeroPass"].checkState(0) == Qt.CheckState.Unchecked
    item.setCheckState(0, Qt.CheckState.Unchecked)
    assert switched == [("MyMatMulAddPass", False)]
    panel.show_config(PassConfig.default().with_scope_rules(resource("keras3_layer_norm.yaml")))  # a new catalog
    assert panel.user_items["MyMatMulAddPass"].checkState(0) == Qt.CheckState.Checked  # the tree was rebuilt
    panel.show_user_passes([UserPass("MyAddZeroPass", "AFTER_INFER_SHAPE", "/home/u/my_pass.py")])
    assert list(panel.user_items) == ["MyAddZeroPass"]
    panel.show_user_passes([])
    assert panel.user_group is None and panel.tree.topLevelItemCount() == len(panel.family_items)
