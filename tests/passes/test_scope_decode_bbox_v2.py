"""DecodeBboxV2ScopeFusionPass: the SSD `Decode` scope fuses into DecodeBboxV2 only when enabled; its earlier
id ScopeDecodeBboxV2Pass (the built-in ops package's name) still switches it, with a one-line notice."""

from __future__ import annotations

from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import run_pipeline
from fuselens.passes.scope.decode_bbox_v2 import DecodeBboxV2ScopeFusionPass
from fuselens.passes.scope.scope_tree import ScopeTree
from tests.passes.scope_check import assert_same_outputs, fused_calls

DECODE = "Postprocessor/Decode"


def test_census_counts_the_sub_scope_too(load_sample):
    scope = ScopeTree(load_sample("ssd_decode"))[DECODE]
    census = {op: scope.op_count(op) for op in ("Exp", "Mul", "Sub", "RealDiv", "Unpack", "Pack", "Transpose",
                                                 "Softmax")}
    assert census == {"Exp": 2, "Mul": 4, "Sub": 4, "RealDiv": 10, "Unpack": 2, "Pack": 1, "Transpose": 3,
                      "Softmax": -1}


def test_fuses_only_when_enabled(load_sample):
    graph = load_sample("ssd_decode")
    assert not fused_calls(run_pipeline(graph, None).fused, "DecodeBboxV2")
    enabled = run_pipeline(graph, PassConfig.default().with_pass("DecodeBboxV2ScopeFusionPass", True))
    (call,) = fused_calls(enabled.fused, "DecodeBboxV2")
    assert call.name == DECODE and list(call.input) == ["box_encodings", "anchors"]
    assert call.attr["_fusion_pass"].s == b"DecodeBboxV2ScopeFusionPass"


def test_the_earlier_id_still_switches_it_with_one_notice(load_sample, capsys, monkeypatch):
    from fuselens.passes import registry

    monkeypatch.setattr(registry, "_noticed", set())  # once per process: let it come here
    by_old = PassConfig.default().with_scope_list("ScopeDecodeBboxV2Pass").with_pass("ScopeDecodeBboxV2Pass", True)
    assert by_old.is_enabled("DecodeBboxV2ScopeFusionPass") and by_old.get_pass("ScopeDecodeBboxV2Pass").id == (
        "DecodeBboxV2ScopeFusionPass")
    assert capsys.readouterr().err == ("fuselens: notice: pass ScopeDecodeBboxV2Pass is now called "
                                       "DecodeBboxV2ScopeFusionPass (the toolchain's registered name); the old id "
                                       "still works\n")
    (call,) = fused_calls(run_pipeline(load_sample("ssd_decode"), by_old).fused, "DecodeBboxV2")
    assert call.name == DECODE


def test_decode_wiring_and_same_boxes(load_sample):
    original = load_sample("ssd_decode")
    fused, result = DecodeBboxV2ScopeFusionPass().apply(original)
    (match,) = result.matches
    assert match.details["inputs"] == ["box_encodings", "anchors"]
    assert match.details["outputs"] == [f"{DECODE}/transpose_1"]
    assert len(match.nodes) == len(ScopeTree(original)[DECODE].all_nodes())
    assert sorted(fused.nodes) == sorted(["box_encodings", "anchors", DECODE, "detection_boxes"])
    assert_same_outputs(original, fused)


def test_a_decode_scope_with_the_wrong_census_is_a_near_miss_saying_which_count(load_sample):
    graph = load_sample("ssd_decode")
    editor = graph.editor()
    editor.mutable(f"{DECODE}/Exp_1").op = "Softmax"
    result = DecodeBboxV2ScopeFusionPass().dry_run(editor.build(validate=False))
    assert not result.matches
    (miss,) = result.near_misses
    assert miss.anchor == DECODE
    assert miss.reason == ("DecodeBboxV2 scope does not match the pattern: Exp: found 1, pattern needs 2; "
                           "Softmax: found 1, pattern needs none")
