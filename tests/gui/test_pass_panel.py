"""The pass panel: a view and editor of a PassConfig; locked general passes, AutoFuse categories, toolchain switches."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt

from fuselens.core.errors import FuseLensError
from fuselens.gui.pass_panel import PassPanel
from fuselens.passes.config import PassConfig
from fuselens.passes.registry import catalog


@pytest.fixture
def panel(qtbot):
    widget = PassPanel(PassConfig.default())
    qtbot.addWidget(widget)
    edits: list[PassConfig] = []
    widget.config_edited.connect(edits.append)
    widget.edits = edits
    return widget


def checked(panel, pass_id: str) -> bool:
    return panel.pass_items[pass_id].checkState(0) == Qt.CheckState.Checked


def test_every_pass_is_listed_by_family_and_general_passes_are_locked_on(panel):
    assert set(panel.pass_items) == {c.id for c in catalog()}
    for cls in catalog():
        item = panel.pass_items[cls.id]
        assert item.parent() is panel.family_items[cls.family]
        assert cls.description in item.toolTip(0)
        if cls.general:
            assert checked(panel, cls.id) and item.isDisabled()
            panel.set_enabled(cls.id, False)
            assert cls.id in panel.config.pass_ids()
        else:
            assert checked(panel, cls.id) == cls.default_enabled


def test_a_click_is_an_edited_configuration_and_showing_one_sets_the_boxes(panel, qtbot):
    with qtbot.waitSignal(panel.config_edited) as signal:
        panel.set_enabled("ConvBatchnormFusionPass", False)
    assert not signal.args[0].is_enabled("ConvBatchnormFusionPass") and panel.config is signal.args[0]
    panel.show_config(PassConfig.default())
    assert checked(panel, "ConvBatchnormFusionPass") and len(panel.edits) == 1  # showing is not editing


def test_autofuse_categories_map_to_autofuse_flags(panel, qtbot):
    assert panel.config.autofuse_flags() == "--enable_autofuse=true"
    with qtbot.waitSignal(panel.config_edited):
        panel.set_category("reduce", True)
    panel.set_category("broadcast", False)
    assert panel.config.autofuse.categories == {"pointwise", "reduce"}
    panel.set_enabled("AutoFusePass", False)
    assert panel.config.autofuse_flags() == "--enable_autofuse=false;--autofuse_enable_pass=reduce;" \
                                            "--autofuse_disable_pass=broadcast"
    panel.apply_autofuse_flags("--enable_autofuse=true;--autofuse_enable_pass=concat")
    states = {c: item.checkState(0) == Qt.CheckState.Checked for c, item in panel.category_items.items()}
    assert states == {"pointwise": True, "broadcast": True, "reduce": False, "concat": True}
    assert checked(panel, "AutoFusePass")
    with pytest.raises(FuseLensError, match="bad item"):
        panel.apply_autofuse_flags("enable_autofuse")


def test_scope_pass_list_import_and_export(panel):
    optional = [c.id for c in catalog() if c.family == "scope" and not c.general]
    assert len(optional) >= 2
    with_general = ",".join([optional[1], *[c.id for c in catalog() if c.family == "scope" and c.general]])
    panel.apply_scope_list(with_general)
    assert panel.config.scope_list() == optional[1]
    assert checked(panel, optional[1]) and not checked(panel, optional[0])
    with pytest.raises(FuseLensError, match="unknown scope fusion pass 'NoSuchPass'"):
        panel.apply_scope_list("NoSuchPass")


def test_fusion_switch_file_round_trip(panel, tmp_path):
    fold = "ConvBatchnormFusionPass"  # FE registers a graph fusion pass of this name: it is in the switch file
    panel.set_enabled(fold, False)
    exported = tmp_path / "switch.json"
    exported.write_text(panel.config.switch_file().to_json_text())
    graph_fusion = json.loads(exported.read_text())["Switch"]["GraphFusion"]
    assert graph_fusion[fold] == "off" and "ScopeInstanceNormPass" not in graph_fusion  # GE/FE names only
    panel.set_enabled(fold, True)
    assert panel.apply_switch_file(str(exported)) == []
    assert not checked(panel, fold)
    lines = tmp_path / "switch.cfg"
    lines.write_text(f"{fold}:on\nRequantFusionPass:off\n")
    assert panel.apply_switch_file(str(lines)) == ["RequantFusionPass"]
    assert checked(panel, fold)
    lines.write_text("RequantFusionPass:maybe\n")
    with pytest.raises(FuseLensError, match="line 1"):
        panel.apply_switch_file(str(lines))


def test_user_scope_rule_file_adds_a_switchable_pass(panel, tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - name: ScopeToyNormPass\n    op_type: ToyNorm\n    suffix: toynorm\n"
                     "    census: {Rsqrt: 1}\n    outputs: [{node: toynorm/add_1}]\n")
    assert panel.apply_scope_rules(str(rules)) == ["ScopeToyNormPass"]
    item = panel.pass_items["ScopeToyNormPass"]
    assert item.parent() is panel.family_items["scope"] and not checked(panel, "ScopeToyNormPass")
    panel.set_enabled("ScopeToyNormPass", True)
    assert panel.config.is_enabled("ScopeToyNormPass")
    assert "ScopeToyNormPass" not in panel.config.scope_list().split(",")  # the toolchain has no such pass
    rules.write_text("rules:\n  - name: ScopeToyNormPass\n")
    with pytest.raises(FuseLensError, match=r"rules\.yaml"):
        panel.apply_scope_rules(str(rules))
    assert "ScopeToyNormPass" not in {c.id for c in catalog()}  # nothing global changed
