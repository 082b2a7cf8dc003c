"""Toolchain logs and the OM model as JSON as predicted-vs-actual evidence, on the bert_layernorm sample: the
log's word on each pass (did not match where FuseLens predicts matches: missing on device) and the OM model's
fused ops (one LayerNorm fused, one left as its small ops, a fusion FuseLens did not predict)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fuselens.core.errors import FuseLensError
from fuselens.gui.predicted_rows import AGREED, DIFFERENT, EXTRA, MISSING, NO_EVIDENCE, check_rows
from fuselens.passes.pipeline import run_pipeline
from fuselens.session.npu_check import check_toolchain_records, gather_evidence
from fuselens.session.npu_check.report import check_prediction

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
NOT_MATCHED = CORPUS / "logs" / "plog-4913_20201105095233.log"  # ScopeLayerNormPass did not match
MATCHED = CORPUS / "logs" / "plog-21870_20230412160511123.log"  # ScopeLayerNormPass matched
FE_LOG = CORPUS / "logs" / "host-0_20240603102001.log"
BERT_OM = CORPUS / "om_json" / "bert_layernorm_one_fused.json"
LAYER_NORMS = ["bert/encoder/layer_0/attention/output/LayerNorm", "bert/encoder/layer_0/output/LayerNorm"]


@pytest.fixture(scope="module")
def bert(load_sample):
    return run_pipeline(load_sample("bert_layernorm"))


def test_a_log_saying_the_scope_pass_did_not_match_where_fuselens_predicts_matches(bert) -> None:
    report = check_toolchain_records(bert, [NOT_MATCHED], model="bert_layernorm")
    assert report.summary.evidence == ["log"] and report.sources["log"] == str(NOT_MATCHED)
    [row] = [r for r in report.log if r.pass_id == "ScopeLayerNormPass"]
    assert (row.status, row.predicted) == ("missing", 2)
    assert row.log == "the log says ScopeLayerNormPass did not match (1 time)"
    assert row.note.startswith("FuseLens predicts 2 matches: check the graph's scope names")
    assert report.summary.log_disagreements == 1
    layer_norms = [r for r in report.predicted if r.prediction.pass_id == "ScopeLayerNormPass"]
    assert [r.verdict.value for r in layer_norms] == ["not_found", "not_found"]
    assert layer_norms[0].evidence[0].detail == "ScopeLayerNormPass's patterns did not match (1 time)"
    rows = check_rows(report)
    assert [r.status for r in rows if r.kind == "prediction" and r.pass_id == "ScopeLayerNormPass"] == [MISSING] * 2
    [log_row] = [r for r in rows if r.kind == "log"]  # the passes it only registered, with nothing predicted: no row
    assert log_row.status == MISSING and log_row.kinds == ("log",) and "did not match" in log_row.toolchain
    autofuse = next(r for r in rows if r.pass_id == "AutoFusePass")
    assert autofuse.status == NO_EVIDENCE  # the log says nothing of it


def test_a_log_saying_it_matched_agrees_without_naming_scopes(bert) -> None:
    report = check_toolchain_records(bert, [MATCHED])
    [row] = [r for r in report.log if r.pass_id == "ScopeLayerNormPass"]
    assert row.status == "agree" and row.log == "the log says ScopeLayerNormPass matched in 1 of 1 run"
    assert {r.verdict.value for r in report.predicted if r.prediction.pass_id == "ScopeLayerNormPass"} == {"unknown"}
    instance = next(r for r in report.log if r.pass_id == "ScopeInstanceNormPass")
    assert instance.status == "agree" and instance.predicted == 0


def test_the_om_model_names_what_the_toolchain_fused(bert) -> None:
    report = check_toolchain_records(bert, [BERT_OM], model="bert_layernorm")
    assert report.summary.evidence == ["om_json"] and report.sources["om_json"] == str(BERT_OM)
    verdicts = {r.prediction.node: r for r in report.predicted}
    first, second = (verdicts[n] for n in LAYER_NORMS)
    assert first.verdict.value == "found" and first.evidence[0].source == "om_json"
    assert first.evidence[0].detail == f"{BERT_OM.name}: node {LAYER_NORMS[0]} (LayerNorm) stands for them"
    assert second.verdict.value == "not_found" and second.evidence[0].detail.endswith(" separate")
    assert verdicts["autofuse_pointwise_0_Tanh_Add"].verdict.value == "found"
    [extra] = report.unpredicted
    assert (extra.name, extra.op_type, extra.sources) == ("bert/encoder/layer_0/output/dense/MatMul", "MatMulV2",
                                                          ["om_json"])
    assert extra.passes == ("MatMulReshapeFusionPass", "TbeMatmulElemwiseFusionPass")
    rows = check_rows(report)
    by_node = {r.node: r for r in rows if r.kind == "prediction"}
    assert by_node[LAYER_NORMS[0]].status == AGREED and by_node[LAYER_NORMS[0]].kinds == ("OM JSON",)
    assert by_node[LAYER_NORMS[1]].status == MISSING
    assert [(r.status, r.kinds) for r in rows if r.kind == "toolchain"] == [(EXTRA, ("OM JSON",))]


def test_log_and_om_json_together_and_found_in_a_folder_by_content(tmp_path, bert) -> None:
    folder = tmp_path / "brought_back"
    (folder / "log" / "debug" / "plog").mkdir(parents=True)
    shutil.copy(NOT_MATCHED, folder / "log" / "debug" / "plog" / "renamed.txt")
    shutil.copy(BERT_OM, folder / "model_as_json.out")
    evidence = gather_evidence(folder)
    assert evidence.log is not None and evidence.om_model is not None
    report = check_prediction(bert, evidence, model="bert_layernorm")
    assert report.summary.evidence == ["log", "om_json"]
    first = next(r for r in report.predicted if r.prediction.node == LAYER_NORMS[0])
    # the OM model shows the fusion, the log says the pass did not match: the records disagree
    assert [v.source for v in first.evidence] == ["om_json", "log"] and first.verdict.value == "found"
    assert next(r for r in check_rows(report) if r.node == LAYER_NORMS[0]).status == DIFFERENT
    assert check_toolchain_records(bert, [folder]).summary.evidence == ["log", "om_json"]


def test_an_fe_log_on_a_conv_bn_sample(load_sample) -> None:
    pipeline = run_pipeline(load_sample("conv_bn"))
    report = check_toolchain_records(pipeline, [FE_LOG])
    [row] = [r for r in report.log if r.pass_id == "ConvBatchnormFusionPass"]
    assert row.status == "unverifiable" and row.log == "FE ran ConvBatchnormFusionPass 2 times, 500 us in all"
    conv = next(r for r in report.predicted if r.prediction.pass_id == "ConvBatchnormFusionPass")
    assert conv.evidence[0].detail.startswith("FE ran ConvBatchnormFusionPass (2 times, 500 us")
    refusals = next(r for r in report.log if r.pass_id == "AutoFusePass")
    assert refusals.log.startswith("AutoFuse refused 2 fusions: NF1002 x1 (fusing them would create a cycle)")


def test_an_autofuse_refusal_between_two_nodes_of_one_predicted_kernel(tmp_path, load_sample) -> None:
    pipeline = run_pipeline(load_sample("abs_relu_exp"))
    log = tmp_path / "plog-1.log"
    log.write_text("[INFO] GE(7,python3.9):2025-01-01-00:00:00.000.000 [can_fuse.cc:9]7 CanFuse:node1 abs_0(Abs) "
                   "and node2 relu_0(Relu) cannot fuse, the reason is [NF1003][fusion increases peak memory]\n")
    report = check_toolchain_records(pipeline, [log])
    [row] = report.predicted
    assert row.verdict.value == "not_found"
    assert row.evidence[0].detail == "AutoFuse: abs_0 and relu_0 cannot fuse, [NF1003] fusion increases peak memory"


def test_records_that_are_neither_are_refused_in_one_line(tmp_path, bert) -> None:
    (tmp_path / "op_summary.csv").write_text("Op Name,OP Type\n")
    with pytest.raises(FuseLensError, match="holds no toolchain log and no OM model as JSON"):
        check_toolchain_records(bert, [tmp_path])
    with pytest.raises(FuseLensError, match="not a toolchain log"):
        check_toolchain_records(bert, [tmp_path / "op_summary.csv"])


def test_a_broken_om_json_found_in_a_profile_folder_is_a_note_not_a_failure(tmp_path, bert) -> None:
    (tmp_path / "model.json").write_text('{"graph": [{"name": "g", "op": {}}]}')
    shutil.copy(MATCHED, tmp_path / "plog-1.log")
    evidence = gather_evidence(tmp_path)
    assert evidence.om_model is None and evidence.log is not None
    assert any("'op' is dict, not a list of ops" in note for note in evidence.notes)
    assert check_prediction(bert, evidence).summary.evidence == ["log"]
