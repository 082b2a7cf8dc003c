"""The OM model as JSON (atc --mode=1) read to its fused ops (tests/corpus/om_json: the attr encodings GE's
Pb2Json writes and Ascend's comparison tools read)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuselens.core.ascend.om_json import parse_om_json, read_om_json, recognises
from fuselens.core.errors import FuseLensError

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "om_json"


def test_fused_ops_with_pass_names_and_original_ops() -> None:
    model = read_om_json(CORPUS / "resnet_tiny.json")
    assert model.name == "resnet_tiny" and model.graphs == ["resnet_tiny", "resnet_tiny_sub_0"]
    assert len(model.ops) == 6
    fused = {op.name: op for op in model.fused_ops()}
    assert list(fused) == ["conv1conv1_relu", "res2a_branch2c_add", "fc/MatMul_fused"]
    conv = fused["conv1conv1_relu"].provenance
    assert conv.original_names == ("scale_conv1", "conv1", "bn_conv1", "conv1_relu")
    assert conv.original_types == ("Mul", "Conv2D", "FusedBatchNormV3", "Relu")
    assert conv.passes == ("ConvBatchnormFusionPass", "AConv2dMulFusion", "TbeConvElemwiseFusionPass")
    assert fused["res2a_branch2c_add"].provenance.original_names == ()  # named by its pass alone
    assert fused["fc/MatMul_fused"].graph == "resnet_tiny_sub_0"
    assert model.op_types()["pool1"] == "MaxPool" and "pool1" not in model.table()  # one original, its own name


def test_attr_keyed_by_name() -> None:
    model = read_om_json(CORPUS / "attr_keyed_by_name.json")
    (op,) = model.fused_ops()
    assert op.provenance.original_names == ("a/mean", "a/add_1") and op.provenance.passes == ("ScopeLayerNormPass",)


def test_an_empty_model_with_a_byte_order_mark() -> None:
    model = read_om_json(CORPUS / "empty_model_bom.json")
    assert model.name == "empty" and model.ops == []


def test_odd_values_are_skipped_not_fatal() -> None:
    model = parse_om_json('{"graph": [{"op": [{"name": "x", "attr": [1, {"key": "pass_name", "value": {"i": 3}}, '
                          '{"key": ["pass_name"], "value": "y"}]}, {"type": "NoName"}, 7]}]}')
    assert [op.name for op in model.ops] == ["x"] and model.fused_ops() == [] and model.graphs == ["graph 0"]


def test_recognises_by_content() -> None:
    assert recognises((CORPUS / "resnet_tiny.json").read_bytes()[:65536])
    assert recognises((CORPUS / "empty_model_bom.json").read_bytes())
    assert not recognises((CORPUS / "not_om_fusion_result.json").read_bytes())
    assert not recognises(b'[{"graph_fusion": {}, "session_and_graph_id": "0_1"}]') and not recognises(b"")


@pytest.mark.parametrize("text, expected", [
    ('{"session_and_graph_id_0_0": {}}', "a JSON object with keys session_and_graph_id_0_0: not an OM model"),
    ("[1, 2]", "a JSON list of 2 items: not an OM model"),
    ('{"graph": [3]}', "graph 0 is int"),
    ('{"graph": [{"name": "g", "op": {}}]}', "'op' is dict"),
    ('{"graph": [', "line 1, column 12: not valid JSON"),
])
def test_refusals_are_one_line(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "model.json"
    path.write_text(text)
    with pytest.raises(FuseLensError) as e:
        read_om_json(path)
    assert expected in str(e.value) and str(path) in str(e.value) and "\n" not in str(e.value)


def test_c_escaped_strings_are_undone() -> None:
    """Newer Pb2Json writes AttrDef's bytes `s` through CEscape; op names (strings) are written as they are."""
    escaped = ["caf\\303\\251", "it\\'s", "a\\\\b", "\u00e9\\041"]  # as the JSON holds them, decoded once
    model = parse_om_json(json.dumps({"graph": [{"op": [{"name": "caf\u00e9", "type": "Add", "attr": [
        {"key": "_datadump_original_op_names", "value": {"list": {"s": escaped}}}]}]}]}))
    (op,) = model.ops
    assert op.name == "café" and op.provenance.original_names == ("café", "it's", "a\\b", "é!")


def test_a_model_whose_own_attr_list_fills_the_head_is_recognised() -> None:
    entries = [json.dumps({"key": f"k{i}", "value": {"s": "x" * 100}}) for i in range(700)]
    head = ('{"attr": [' + ", ".join(entries)).encode()[:65536]
    assert recognises(head) and not recognises(b'{"attr": {"k": 1}}')
