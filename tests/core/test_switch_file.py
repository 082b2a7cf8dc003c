"""Fusion switch file: JSON and line forms both ways, bad entries named (the three switch forms of a
pass configuration are tested with PassConfig, in tests/passes/test_config.py)."""

from __future__ import annotations

import json

import pytest

from fuselens.core.errors import FuseLensError
from fuselens.core.formats.switch_file import FusionSwitches, parse_switch_file

FACTS_JSON = """{"Switch": {
  "GraphFusion": {"ALL": "off", "SoftmaxFusionPass": "on", "ConvToFullyConnectionFusionPass": "off"},
  "UBFusion": {"ALL": "off", "TbePool2dQuantFusionPass": "on"}}}"""
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

