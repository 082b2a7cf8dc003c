"""User scope rule files: parsing with field-path errors, rules as passes of one configuration, replacing built-ins."""

from __future__ import annotations

import json

import pytest

from fuselens.core.errors import FuseLensError
from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import run_pipeline
from fuselens.passes.registry import get_pass
from fuselens.passes.scope.layer_norm import ScopeLayerNormPass
from fuselens.passes.scope.user_rules import catalog_with_rules, load_rule_file, parse_rules
from tests.passes.scope_check import assert_same_outputs, fused_calls

CENTER = "Postprocessor/Decode/get_center_coordinates_and_sizes"
CENTER_RULE = """
rules:
  - name: ScopeCenterSizePass
    op_type: CenterSize
    description: the anchors' centres and sizes in SSD's box decoding
    suffix: get_center_coordinates_and_sizes
    census: {Transpose: 1, Unpack: 1, Sub: 2, RealDiv: {num: 0, step: 2}, Softmax: -1}
    inputs: [{node: transpose, input: 0}]
    outputs: [{node: add}, {node: add_1}, {node: sub_1}, {node: sub}]
"""
MY_LAYER_NORM = {"rules": [{
    "name": "ScopeLayerNormPass", "op_type": "MyLayerNorm",
    "patterns": [
        {"sub_type": "batchnorm", "suffix": "batchnorm", "census": {"Rsqrt": 1, "Mul": 3}},
        {"sub_type": "moments", "suffix": "moments", "census": {"Mean": 2}},
    ],
    "pair": ["batchnorm", "moments"],
    "inputs": [{"node": "batchnorm/mul_1"}, {"node": "batchnorm/mul"}, {"node": "batchnorm/sub", "input": 0}],
    "outputs": [{"node": "batchnorm/add_1"}],
    "fused_attrs": {"epsilon": 1e-12},
}]}


@pytest.fixture
def center_rules(tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_text(CENTER_RULE)
    return path


def scope_ids(config: PassConfig) -> list[str]:
    return [c.id for c in config.catalog() if c.family == "scope"]


def test_a_user_rule_is_a_scope_pass_switched_on_by_name(center_rules, load_sample):
    config = PassConfig.default().with_scope_rules(center_rules)
    cls = config.get_pass("ScopeCenterSizePass")
    assert cls.family == "scope" and not cls.general and scope_ids(config)[-1] == "ScopeCenterSizePass"
    assert "ScopeCenterSizePass" not in config.pass_ids()
    graph = load_sample("ssd_decode")
    pipeline = run_pipeline(graph, config.with_scope_list("ScopeCenterSizePass"))
    (match,) = pipeline.result("ScopeCenterSizePass").matches
    assert match.anchor == CENTER and match.details["inputs"] == ["anchors"]
    (call,) = fused_calls(pipeline.fused, "CenterSize")
    assert call.name == CENTER
    assert_same_outputs(graph, pipeline.fused, {f"{CENTER}/sub": f"{CENTER}:3"})


def test_rules_belong_to_their_configuration_only(center_rules):
    with_rules = PassConfig.default().with_scope_rules(center_rules)
    assert "ScopeCenterSizePass" in scope_ids(with_rules)
    for other in (PassConfig.default(), with_rules.without_scope_rules()):
        assert "ScopeCenterSizePass" not in scope_ids(other)
        with pytest.raises(FuseLensError, match="unknown scope fusion pass 'ScopeCenterSizePass'"):
            other.with_scope_list("ScopeCenterSizePass")
    with pytest.raises(FuseLensError, match="unknown pass 'ScopeCenterSizePass'"):
        get_pass("ScopeCenterSizePass")


def test_a_rule_with_a_builtin_name_replaces_the_builtin_in_its_configuration(load_sample, tmp_path):
    path = tmp_path / "my.json"
    path.write_text(json.dumps(MY_LAYER_NORM))
    config = PassConfig.default().with_scope_rules(path)
    cls = config.get_pass("ScopeLayerNormPass")
    assert cls is not ScopeLayerNormPass and cls.general and cls.order == ScopeLayerNormPass.order
    fused = run_pipeline(load_sample("bert_layernorm"), config).fused
    calls = fused_calls(fused, "MyLayerNorm")
    assert len(calls) == 2 and not fused_calls(fused, "LayerNorm")
    assert fused.attr(calls[0].name, "_epsilon") == pytest.approx(1e-12)
    assert get_pass("ScopeLayerNormPass") is ScopeLayerNormPass


def rule(**fields):
    base = {"name": "ScopeXPass", "op_type": "X", "suffix": "x", "outputs": [{"node": "y"}]}
    return {"rules": [{**base, **fields}]}


@pytest.mark.parametrize("data, message", [
    (rule(census={"Mul": {"num": "three"}}), "rules[0].census.Mul.num: must be an integer, not a string"),
    (rule(census={"Mul": 2.5}), "rules[0].census.Mul: must be an integer, not a number"),
    (rule(census={"RealDiv": {"num": 3, "step": 2}}), "rules[0].census.RealDiv.num: with step 2 must be between 0"),
    (rule(census={"Mul": -2}), "rules[0].census.Mul: must be >= -1, not -2"),
    (rule(censsus={"Mul": 1}), "rules[0]: unknown field 'censsus' (known: name, op_type,"),
    (rule(op_type=None), "rules[0].op_type: must be a non-empty string, not empty"),
    ({"rules": [{"name": "A", "suffix": "x", "outputs": [{"node": "y"}]}]},
     "rules[0]: missing required field 'op_type'"),
    (rule(outputs=[]), "rules[0].outputs: must not be empty"),
    (rule(inputs=[{"node": "a", "input": -1}]), "rules[0].inputs[0].input: must be >= 0, not -1"),
    (rule(pair=["x", "moments"]), "rules[0].pair[1]: 'moments' is not the sub type of a pattern"),
    (rule(suffix=None), "rules[0].suffix: must be a non-empty string"),
    ({"rules": [{"name": "A", "op_type": "X", "outputs": [{"node": "y"}]}]},
     "rules[0]: a pattern needs at least a suffix or a census"),
    (rule(patterns=[{"suffix": "a"}]), "rules[0]: give either `patterns` or a rule-level pattern (suffix)"),
    (rule(attrs=[{"op": "Split", "attr": "num_split"}]), "rules[0].attrs[0]: missing required field 'value'"),
    (rule(sub_scopes=[{"sub_type": "other", "num": 1}]),
     "rules[0].sub_scopes[0].sub_type: 'other' is not the sub type of an earlier pattern"),
    ({"rules": [rule()["rules"][0], rule()["rules"][0]]}, "rules[1].name: 'ScopeXPass' is defined twice"),
    ([1, 2], "top level: must be a mapping, not a list"),
    ({"rules": []}, "rules: must not be empty"),
])
def test_a_bad_rule_names_the_file_the_field_and_the_problem(data, message):
    with pytest.raises(FuseLensError) as error:
        parse_rules(data, "bad.yaml")
    assert str(error.value).startswith("bad.yaml: ") and message in str(error.value)


def test_rule_files_in_json_and_broken_files(tmp_path):
    good = tmp_path / "rules.json"
    good.write_text(json.dumps(MY_LAYER_NORM))
    (parsed,) = load_rule_file(good)
    assert parsed.rule.pair == ("batchnorm", "moments") and parsed.source == str(good)
    broken = tmp_path / "broken.yaml"
    broken.write_text("rules: [ {name: A\n")
    with pytest.raises(FuseLensError, match=r"broken.yaml: not valid YAML: .*") as error:
        load_rule_file(broken)
    assert "\n" not in str(error.value)
    with pytest.raises(FuseLensError, match=r"missing\.yaml: no such rule file"):
        load_rule_file(tmp_path / "missing.yaml")


def test_a_rule_may_not_take_the_name_of_a_pass_of_another_family():
    with pytest.raises(FuseLensError, match="only replace a scope pass"):
        catalog_with_rules(parse_rules(rule(name="ConvBatchnormFusionPass"), "r.yaml"))
    assert get_pass("ConvBatchnormFusionPass").family == "amct"


@pytest.mark.parametrize("change, reason", [
    ({"inputs": []}, f"{CENTER}/transpose reads anchors from outside the scope, and no fused input is wired to it"),
    ({"outputs": [{"node": "add"}, {"node": "add_1"}, {"node": "sub_1"}]},
     f"{CENTER}/sub (Sub) has 3 consumers: it is also read by Postprocessor/Decode/mul (+1 more) outside"),
    ({"outputs": [{"node": "sub", "port": 1}]}, f"{CENTER}/sub has 1 outputs; the wiring reads output 1"),
    ({"inputs": [{"node": "unstack", "input": 0}]},
     f"input 0 of {CENTER}/unstack comes from {CENTER}/transpose inside the scope"),
    ({"outputs": [{"node": "nothing"}]}, f"no inner node nothing to wire (looked for {CENTER}/nothing)"),
])
def test_wiring_that_does_not_fit_the_scope_is_a_near_miss_saying_why(change, reason, load_sample):
    data = {"rules": [{"name": "ScopeCenterSizePass", "op_type": "CenterSize",
                       "suffix": "get_center_coordinates_and_sizes", "census": {"Unpack": 1},
                       "inputs": [{"node": "transpose", "input": 0}], "outputs": [{"node": "add"}], **change}]}
    (cls,) = [c for c in catalog_with_rules(parse_rules(data, "r.yaml")) if c.id == "ScopeCenterSizePass"]
    result = cls().dry_run(load_sample("ssd_decode"))
    assert not result.matches
    assert reason in result.near_misses[0].reason
