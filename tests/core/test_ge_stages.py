"""A dump folder as timelines: both index widths, aclop_, the oldest onnx names, several graph ids and
processes, stage lookup (and its refusals), a bad stage among good ones; and the diff between stages,
credited to the pass that made the change."""

from __future__ import annotations

import pytest

from fuselens.core.ascend.ge.diff import NO_PASS, diff_graphs, format_diff
from fuselens.core.ascend.ge.dump import GE_ONNX, GE_PROTO
from fuselens.core.ascend.ge.open import open_graph
from fuselens.core.ascend.ge.stages import parse_dump_name, scan_dump_folder
from fuselens.core.errors import FuseLensError
from fuselens.passes.pipeline import run_pipeline
from tests.npu_artifacts import FINAL_STAGE, ge_ops, toolchain_fusions, write_dump_folder

FUSED = "autofuse_pointwise_0_Abs_Relu_Exp"


@pytest.fixture(scope="module")
def pipelines(load_sample):
    return {name: run_pipeline(load_sample(name)) for name in ("abs_relu_exp", "bert_layernorm", "conv_bn")}


def stages_of(pipeline, final=FINAL_STAGE):
    return [("PreRunBegin", ge_ops(pipeline.original)), (final, ge_ops(pipeline.fused, toolchain_fusions(pipeline)))]


def parts(name):
    found = parse_dump_name(name)
    return found.format, found.index, found.width, found.graph_id, found.stage, found.aclop


def test_file_names_in_every_form_ge_writes():
    assert parts("ge_proto_00000012_graph_1_PreRunAfterOptimize1.txt") == \
        (GE_PROTO, 12, 8, "1", "PreRunAfterOptimize1", False)
    assert parts("ge_onnx_00003_graph_0_AutoFuseBeforeOptimize.pbtxt")[:4] == (GE_ONNX, 3, 5, "0")
    assert parse_dump_name("ge_proto_00000001_aclop_graph_2_Build.txt").aclop
    old = parse_dump_name("ge_onnx_00007_PreRunBegin.pbtxt")
    assert (old.graph_id, old.stage, old.width) == (None, "PreRunBegin", 5)
    assert parse_dump_name("ge_readable_00000001_graph_0_Build.txt").format == "ge_readable"
    assert parse_dump_name("fusion_result.json") is None and parse_dump_name("model.pb") is None


def test_folder_orders_stages_pairs_formats_and_separates_graphs_and_processes(tmp_path, pipelines):
    abs_relu_exp, bert = pipelines["abs_relu_exp"], pipelines["bert_layernorm"]
    write_dump_folder(tmp_path, stages_of(abs_relu_exp), pid=11, first_index=3)
    write_dump_folder(tmp_path, stages_of(bert, "OptimizeOriginalGraph_FeGraphFusionAfter"), pid=11, graph_id=1,
                      first_index=5, formats=(GE_PROTO,))
    write_dump_folder(tmp_path, stages_of(abs_relu_exp), pid=12, width=5, aclop=True)
    write_dump_folder(tmp_path / "pid_13_deviceid_0", stages_of(abs_relu_exp)[:1], graph_id=None)
    (tmp_path / "pid_11_deviceid_0" / "ge_readable_00000009_graph_0_Build.txt").write_text("readable\n")
    folder = scan_dump_folder(tmp_path)
    assert [t.label for t in folder.timelines] == [
        "pid_11_deviceid_0 graph 0", "pid_11_deviceid_0 graph 1", "pid_12_deviceid_0 graph 0",
        "pid_13_deviceid_0 graph (no id: old GE)"]
    first = folder.timelines[0]
    assert [(s.label, s.index, sorted(s.files)) for s in first.stages] == \
        [("PreRunBegin", 3, [GE_ONNX, GE_PROTO]), (FINAL_STAGE, 4, [GE_ONNX, GE_PROTO])]
    assert first.stages[0].file.format == GE_PROTO  # ge_proto keeps the string attributes
    assert folder.timelines[2].stages[0].file.width == 5 and folder.timelines[2].stages[0].file.aclop
    assert "ge_readable dumps are for reading" in folder.skipped[0]
    assert folder.find("1/PreRunBegin").graph_id == "1"
    assert folder.find("pid_12_deviceid_0/0/" + FINAL_STAGE).process == "pid_12_deviceid_0"
    assert folder.find("OptimizeOriginalGraph_FeGraphFusionAfter").index == 6
    with pytest.raises(FuseLensError, match=r"'PreRunBegin' names 4 dumps .*name one as DIR:GRAPH_ID/STAGE"):
        folder.find("PreRunBegin")  # mixed graph ids and processes: never a guess
    with pytest.raises(FuseLensError, match=r"no stage 'Build' of graph 0 \(stages: PreRunBegin, "):
        folder.find("0/Build")


def test_repeated_stage_names_and_a_bad_stage_among_good_ones(tmp_path, pipelines):
    stages = stages_of(pipelines["abs_relu_exp"])
    write_dump_folder(tmp_path, [*stages, ("PreRunBegin", stages[0][1])], formats=(GE_PROTO,))
    bad = tmp_path / "ge_proto_00000001_graph_0_" f"{FINAL_STAGE}.txt"
    bad.write_text(bad.read_text()[:200])  # truncated
    folder = scan_dump_folder(tmp_path)
    assert [s.label for s in folder.stages()] == ["PreRunBegin", FINAL_STAGE, "PreRunBegin#2"]
    assert folder.find("PreRunBegin#2").index == 2 and folder.find("00000001").label == FINAL_STAGE
    loads = folder.load_all()
    assert [load.dump is not None for load in loads] == [True, False, True]
    assert loads[1].error.startswith(f"{bad}, line ")


def test_folders_without_dumps(tmp_path):
    (tmp_path / "model.pb").write_bytes(b"x")
    with pytest.raises(FuseLensError, match=r"no GE graph dumps \(ge_proto_\*\.txt or ge_onnx_\*\.pbtxt\) here"):
        scan_dump_folder(tmp_path)
    with pytest.raises(FuseLensError, match="no such file or directory"):
        scan_dump_folder(tmp_path / "nowhere")


def test_diff_of_autofuse_names_the_kernel_and_its_three_original_nodes(tmp_path, pipelines):
    write_dump_folder(tmp_path, stages_of(pipelines["abs_relu_exp"]))
    before, before_label = open_graph(f"{tmp_path}:PreRunBegin")
    after, after_label = open_graph(f"{tmp_path}:{FINAL_STAGE}")
    diff = diff_graphs(before, after, before_label=before_label, after_label=after_label)
    groups = diff.by_pass()
    assert list(groups) == ["AutoFusePass", NO_PASS]
    added = [c for c in groups["AutoFusePass"] if c.kind == "added"]
    assert [(c.name, c.op, c.related) for c in added] == [(FUSED, "AscBackend", ("abs_0", "relu_0", "exp_0"))]
    assert {c.name for c in groups["AutoFusePass"] if c.kind == "removed"} == {"abs_0", "relu_0", "exp_0"}
    assert diff.counterparts["relu_0"] == [FUSED] and diff.origins[FUSED] == ["abs_0", "relu_0", "exp_0"]
    assert diff.counterparts["data1"] == ["data1"]
    text = format_diff(diff)
    assert f"+ {FUSED} (AscBackend) <- abs_0, relu_0, exp_0" in text and "- relu_0 (Relu) -> " + FUSED in text


def test_diff_of_scope_and_graph_fusion_stages(tmp_path, pipelines):
    for name, pass_id, kept in (("bert_layernorm", "ScopeLayerNormPass", None),
                                ("conv_bn", "ConvBatchnormFusionPass", "conv1")):
        folder = tmp_path / name
        write_dump_folder(folder, stages_of(pipelines[name]))
        dumps = scan_dump_folder(folder)
        diff = diff_graphs(dumps.find("PreRunBegin").load().graph, dumps.find(FINAL_STAGE).load().graph)
        group = diff.by_pass()[pass_id]
        if kept:  # the conv keeps its name and absorbs the BatchNorm
            assert any(c.name == kept and c.kind == "changed" for c in group)
            assert diff.counterparts["bn1"] == [kept, "autofuse_pointwise_0_BiasAdd_Relu"]
        else:
            layer_norms = [c for c in group if c.kind == "added"]
            assert [c.op for c in layer_norms] == ["LayerNorm", "LayerNorm"]
            assert all(len(c.related) == 11 for c in layer_norms)  # moments + batchnorm ops, weights aside


def test_a_model_and_its_fused_graph_diff_by_fuselens_pass(pipelines):
    pipeline = pipelines["abs_relu_exp"]
    diff = diff_graphs(pipeline.original, pipeline.fused)
    assert [c.related for c in diff.by_pass()["AutoFusePass"] if c.kind == "added"] == [("abs_0", "relu_0", "exp_0")]
