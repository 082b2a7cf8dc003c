"""The pass panel: catalog-driven switches, locked general passes, AutoFuse categories, toolchain switches."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt

from core.errors import FuseLensError
from gui.pass_panel import PassPanel
from passes.autofuse.flags import parse_autofuse_flags
from passes.registry import catalog
from passes.scope.user_rules import install_rules


@pytest.fixture
def panel(qtbot):
    widget = PassPanel()
    qtbot.addWidget(widget)
    return widget


def test_every_pass_is_listed_by_family_and_general_passes_are_locked_on(panel):
    assert set(panel.pass_items) == {c.id for c in catalog()}
    for cls in catalog():
        item = panel.pass_items[cls.id]
        assert item.parent() is panel.family_items[cls.family]
        assert cls.description in item.toolTip(0)
        if cls.general:
            assert item.checkState(0) == Qt.CheckState.Checked and item.isDisabled()
            panel.set_enabled(cls.id, False)
            assert cls.id in panel.pass_ids()
        else:
            assert (item.checkState(0) == Qt.CheckState.Checked) == cls.default_enabled


def test_autofuse_categories_map_to_autofuse_flags(panel, qtbot):
    assert panel.options()["autofuse_flags"] == "--enable_autofuse=true"
    with qtbot.waitSignal(panel.changed):
        panel.set_category("reduce", True)
    panel.set_category("broadcast", False)
    flags = parse_autofuse_flags(panel.options()["autofuse_flags"])
    assert flags.categories == {"pointwise", "reduce"}
    for pass_id in panel.pass_items:
        if panel.pass_items[pass_id].parent() is panel.family_items["autofuse"]:
            panel.set_enabled(pass_id, False)
    assert panel.autofuse_flags() == "--enable_autofuse=false"
    panel.apply_autofuse_flags("--enable_autofuse=true;--autofuse_enable_pass=concat")
    assert panel.categories() == {"pointwise": True, "broadcast": True, "reduce": False, "concat": True}
    with pytest.raises(FuseLensError, match="bad item"):
        panel.apply_autofuse_flags("enable_autofuse")


def test_scope_pass_list_import_and_export(panel):
    optional = [c.id for c in catalog() if c.family == "scope" and not c.general]
    assert len(optional) >= 2
    with_general = ",".join([optional[1], *[c.id for c in catalog() if c.family == "scope" and c.general]])
    panel.apply_scope_list(with_general)
    assert panel.scope_pass_list() == optional[1]
    assert optional[1] in panel.pass_ids() and optional[0] not in panel.pass_ids()
    with pytest.raises(FuseLensError, match="unknown scope fusion pass 'NoSuchPass'"):
        panel.apply_scope_list("NoSuchPass")


def test_fusion_switch_file_round_trip(panel, tmp_path):
    optional = [c.id for c in catalog() if not c.general]
    panel.set_enabled(optional[0], False)
    exported = tmp_path / "switch.json"
    exported.write_text(panel.switch_file_text())
    assert json.loads(exported.read_text())["Switch"]["GraphFusion"][optional[0]] == "off"
    panel.set_enabled(optional[0], True)
    assert panel.apply_switch_file(str(exported)) == []
    assert optional[0] not in panel.pass_ids()
    lines = tmp_path / "switch.cfg"
    lines.write_text(f"{optional[0]}:on\nRequantFusionPass:off\n")
    assert panel.apply_switch_file(str(lines)) == ["RequantFusionPass"]
    assert optional[0] in panel.pass_ids()
    lines.write_text("RequantFusionPass:maybe\n")
    with pytest.raises(FuseLensError, match="line 1"):
        panel.apply_switch_file(str(lines))


def test_user_scope_rule_file_adds_a_switchable_pass(panel, tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - name: ScopeToyNormPass\n    op_type: ToyNorm\n    suffix: toynorm\n"
                     "    census: {Rsqrt: 1}\n    outputs: [{node: toynorm/add_1}]\n")
    try:
        assert panel.apply_scope_rules(str(rules)) == ["ScopeToyNormPass"]
        item = panel.pass_items["ScopeToyNormPass"]
        assert item.parent() is panel.family_items["scope"] and item.checkState(0) == Qt.CheckState.Unchecked
        panel.set_enabled("ScopeToyNormPass", True)
        assert "ScopeToyNormPass" in panel.scope_pass_list().split(",")
        rules.write_text("rules:\n  - name: ScopeToyNormPass\n")
        with pytest.raises(FuseLensError, match=r"rules\.yaml"):
            panel.apply_scope_rules(str(rules))
    finally:
        install_rules([])
