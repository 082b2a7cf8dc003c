"""Fusion switch file: JSON and line forms both ways, bad entries named; the three NPU switch forms."""

from __future__ import annotations

import json

import pytest

from core.errors import FuseLensError
from core.runtime.switch_file import FusionSwitches, parse_switch_file, switch_forms

FACTS_JSON = """{"Switch": {
  "GraphFusion": {"ALL": "off", "SoftmaxFusionPass": "on", "ConvToFullyConnectionFusionPass": "off"},
  "UBFusion": {"ALL": "off", "TbePool2dQuantFusionPass": "on"}}}"""
CATALOG = [
    {"id": "ScopeLayerNormPass", "family": "scope", "general": True},
    {"id": "ScopeInstanceNormPass", "family": "scope", "general": False},
    {"id": "ScopeDecodeBboxV2Pass", "family": "scope", "general": False},
    {"id": "ConvBatchnormFusionPass", "family": "amct", "general": False},
    {"id": "AutoFusePass", "family": "autofuse", "general": False},
]


def test_json_form_round_trip():
    switches = parse_switch_file(FACTS_JSON, "fusion_switch.json")
    assert switches.graph_fusion == {"ALL": "off", "SoftmaxFusionPass": "on", "ConvToFullyConnectionFusionPass": "off"}
    assert switches.ub_fusion == {"ALL": "off", "TbePool2dQuantFusionPass": "on"}
    assert parse_switch_file(switches.to_json_text()) == switches
    assert json.loads(switches.to_json_text()) == json.loads(FACTS_JSON)


def test_line_form_round_trip():
    switches = parse_switch_file("RequantFusionPass:off\n# comment\n\nTbeConvDequantVaddReluQuantFusionPass:OFF\n")
    assert switches.graph_fusion == {"RequantFusionPass": "off", "TbeConvDequantVaddReluQuantFusionPass": "off"}
    assert switches.to_lines() == "RequantFusionPass:off\nTbeConvDequantVaddReluQuantFusionPass:off\n"
    assert parse_switch_file(switches.to_lines()) == switches
    assert "ALL" not in FusionSwitches(graph_fusion={"ALL": "off", "X": "on"}).to_lines()


@pytest.mark.parametrize(("text", "message"), [
    ("A:on\nB:maybe\n", r"sw, line 2: expected PassName:on or PassName:off, got 'B:maybe'"),
    ('{"Switch": {"GraphFusion": {"A": "yes"}}}', r"sw: Switch.GraphFusion.A is 'yes'"),
    ('{"Switch": {"Other": {}}}', r"sw: unknown section Switch.Other"),
    ('{"Switch": [1]}', r"sw: expected \{\"Switch\""),
    ('{"Switch": ', r"sw: not valid JSON \(line 1"),
])
def test_bad_switch_files_are_named(text, message):
    with pytest.raises(FuseLensError, match=message):
        parse_switch_file(text, "sw")


def test_three_switch_forms_from_a_selection():
    forms = switch_forms(CATALOG, ["ScopeLayerNormPass", "ScopeDecodeBboxV2Pass", "AutoFusePass"],
                         "--enable_autofuse=true;--autofuse_enable_pass=reduce")
    assert forms.scope_passes == ["ScopeDecodeBboxV2Pass"]  # general passes are on without being listed
    assert forms.autofuse_flags == "--enable_autofuse=true;--autofuse_enable_pass=reduce"
    assert forms.fusion_switches.graph_fusion == {
        "ScopeLayerNormPass": "on", "ScopeInstanceNormPass": "off", "ScopeDecodeBboxV2Pass": "on",
        "ConvBatchnormFusionPass": "off", "AutoFusePass": "on"}
    off = switch_forms(CATALOG, ["ScopeLayerNormPass"], "--enable_autofuse=true")
    assert off.autofuse_flags == "--enable_autofuse=false" and off.scope_passes == []
