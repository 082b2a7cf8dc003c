"""Scope fusion through the CLI: `fuse` reports, `--enable-scope-passes`, `--scope-rules` end to end."""

from __future__ import annotations

import json

import pytest

from fuselens.cli import main as cli_main
from fuselens.core.formats.loaders import load_model
from fuselens.passes.fused import FUSED_OP_TYPE_ATTR
from tests.passes.scope_check import assert_same_outputs

CENTER = "Postprocessor/Decode/get_center_coordinates_and_sizes"
RULES = """
rules:
  - name: ScopeCenterSizePass        # off until named in --enable-scope-passes
    op_type: CenterSize
    suffix: get_center_coordinates_and_sizes
    census: {Transpose: 1, Unpack: 1, Sub: 2, RealDiv: {num: 0, step: 2}}
    inputs: [{node: transpose, input: 0}]
    outputs: [{node: add}, {node: add_1}, {node: sub_1}, {node: sub}]
  - name: ScopeThreeExpDecodePass    # general: always on; the Decode scope has 2 Exp, so a near miss
    op_type: Decode3
    general: true
    suffix: Decode
    census: {Exp: 3}
    outputs: [{node: transpose_1}]
"""


def rule_files(tmp_path) -> tuple:
    """RULES as two files, one rule each."""
    center, decode = RULES.split("  - name: ScopeThreeExpDecodePass")
    first, second = tmp_path / "center.yaml", tmp_path / "decode.yaml"
    first.write_text(center)
    second.write_text("rules:\n  - name: ScopeThreeExpDecodePass" + decode)
    return first, second


def scope_entry(report: dict, pass_id: str) -> dict:
    return next(p for p in report["passes"] if p["pass"] == pass_id)


def test_fuse_report_carries_scope_matches(tmp_path):
    report_path = tmp_path / "r.json"
    assert cli_main(["fuse", "bert_layernorm", "--report", str(report_path)]) == 0
    entry = scope_entry(json.loads(report_path.read_text()), "ScopeLayerNormPass")
    assert entry["family"] == "scope" and len(entry["matches"]) == 2 and len(entry["rewrites"]) == 2
    first = entry["matches"][0]
    assert first["details"]["op_type"] == "LayerNorm" and first["bindings"]["moments"].endswith("LayerNorm/moments")
    assert first["details"]["attrs"] == {"begin_norm_axis": -1, "begin_params_axis": -1}


def test_fuse_report_carries_scope_near_misses(capsys):
    assert cli_main(["fuse", "keras_bn_small_ops", "--json"]) == 0
    entry = scope_entry(json.loads(capsys.readouterr().out), "ScopeLayerNormPass")
    assert not entry["matches"]
    reasons = {n["anchor"]: n["reason"] for n in entry["near_misses"]}
    assert reasons["bn_default/batchnorm"] == ("a batchnorm scope without a sibling moments scope "
                                               "(a Keras BatchNormalization, not a LayerNorm)")
    assert reasons["bn_no_scale/batchnorm"].endswith("Mul: found 2, pattern needs 3")


def test_enable_scope_passes_switches_decode_on(tmp_path, capsys):
    out = tmp_path / "fused.pb"
    assert cli_main(["fuse", "ssd_decode", "--enable-scope-passes", "DecodeBboxV2ScopeFusionPass,ScopeLayerNormPass",
                     "-o", str(out)]) == 0
    assert "DecodeBboxV2ScopeFusionPass" in capsys.readouterr().out
    fused = load_model(str(out)).graph
    assert fused.attr("Postprocessor/Decode", FUSED_OP_TYPE_ATTR) == "DecodeBboxV2"
    assert_same_outputs(load_model("ssd_decode").graph, fused)


@pytest.mark.parametrize("argv, message", [
    (["--enable-scope-passes", "ScopeNopePass"],
     "unknown scope fusion pass 'ScopeNopePass'; known: ScopeLayerNormPass, ScopeInstanceNormPass"),
    (["--disable", "ScopeLayerNormPass"], "ScopeLayerNormPass is a general pass"),
])
def test_bad_scope_switches_are_one_line_errors(argv, message, capsys):
    assert cli_main(["fuse", "ssd_decode", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_user_rule_file_fuses_a_custom_scope_end_to_end(tmp_path):
    rules, report_path, out = tmp_path / "rules.yaml", tmp_path / "r.json", tmp_path / "fused.pb"
    rules.write_text(RULES)
    assert cli_main(["fuse", "ssd_decode", "--scope-rules", str(rules), "--enable-scope-passes",
                     "ScopeCenterSizePass", "--report", str(report_path), "-o", str(out)]) == 0
    report = json.loads(report_path.read_text())
    (match,) = scope_entry(report, "ScopeCenterSizePass")["matches"]
    assert match["anchor"] == CENTER and match["details"]["inputs"] == ["anchors"]
    (miss,) = scope_entry(report, "ScopeThreeExpDecodePass")["near_misses"]
    assert miss["anchor"] == "Postprocessor/Decode" and "Exp: found 2, pattern needs 3" in miss["reason"]
    fused = load_model(str(out)).graph
    assert fused.attr(CENTER, FUSED_OP_TYPE_ATTR) == "CenterSize"
    assert_same_outputs(load_model("ssd_decode").graph, fused)


def test_without_enabling_a_user_rule_does_not_run(tmp_path, capsys):
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    assert cli_main(["fuse", "ssd_decode", "--scope-rules", str(rules), "--json"]) == 0
    passes = [p["pass"] for p in json.loads(capsys.readouterr().out)["passes"]]
    assert "ScopeThreeExpDecodePass" in passes and "ScopeCenterSizePass" not in passes


def test_bad_rule_file_is_a_one_line_error_naming_the_field(tmp_path, capsys):
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES.replace("Transpose: 1", "Transpose: {num: x}"))
    assert cli_main(["fuse", "ssd_decode", "--scope-rules", str(rules)]) == 2
    err = capsys.readouterr().err
    assert f"{rules}: rules[0].census.Transpose.num: must be an integer, not a string" in err
    assert err.count("\n") == 1


def test_scope_rules_twice_loads_both_files(tmp_path, capsys):
    first, second = rule_files(tmp_path)
    assert cli_main(["fuse", "ssd_decode", "--scope-rules", str(first), "--scope-rules", str(second),
                     "--enable-scope-passes", "ScopeCenterSizePass", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(scope_entry(report, "ScopeCenterSizePass")["matches"]) == 1
    assert len(scope_entry(report, "ScopeThreeExpDecodePass")["near_misses"]) == 1


def test_rules_of_one_command_do_not_leak_into_the_next(tmp_path, capsys):
    first, _ = rule_files(tmp_path)
    assert cli_main(["fuse", "ssd_decode", "--scope-rules", str(first), "--enable-scope-passes",
                     "ScopeCenterSizePass", "--json"]) == 0
    capsys.readouterr()
    assert cli_main(["fuse", "ssd_decode", "--enable-scope-passes", "ScopeCenterSizePass"]) == 2
    assert "unknown scope fusion pass 'ScopeCenterSizePass'" in capsys.readouterr().err
