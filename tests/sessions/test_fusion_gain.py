"""Did each fusion pay? On hand-built graphs and runs (kernels shared by several nodes and by several fusions,
originals with no kernel, the toolchain's fusion_op map) and on real CPU runs of demo and mobilenet_v2."""

from __future__ import annotations

import json

import pytest

from fuselens.cli import main as cli_main
from fuselens.core.graph import Graph
from fuselens.core.graph.nodes import make_node
from fuselens.core.graph.provenance import Rewrite
from fuselens.core.measure.msprof import FusionOpRecord
from fuselens.core.measure.result import GraphRun, KernelStat
from fuselens.passes.base import Match, PassResult
from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import PipelineResult, run_pipeline
from fuselens.session.fusion_gain import (
    TOOLCHAIN,
    constant_nodes,
    coverage,
    format_gains,
    fusion_gains,
    fusion_op_map,
    run_gains,
    toolchain_records,
)
from fuselens.session.run_workflow import RunSettings, run_both, run_request

STEPS = 4


def kernel(name: str, op: str, node: str | None, per_step_us: float, pass_id: str | None = None) -> KernelStat:
    total = per_step_us * STEPS
    return KernelStat(name, op, node, pass_id, "cpu:0", STEPS, total, per_step_us, per_step_us, per_step_us)


def graph_run(label: str, *kernels: KernelStat) -> GraphRun:
    return GraphRun(label=label, steps=STEPS, kernels=list(kernels))


def original_graph() -> Graph:
    """x -> id1 -> id2 -> conv(w) -> bias(b) -> relu -> exp; w read through an Identity, `scale` = w * 2 folds."""
    return Graph.from_nodes([
        make_node("Placeholder", "x"), make_node("Const", "w"), make_node("Identity", "w/read", ["w"]),
        make_node("Const", "two"), make_node("Mul", "scale", ["w/read", "two"]), make_node("Const", "b"),
        make_node("Identity", "id1", ["x"]), make_node("Identity", "id2", ["id1"]),
        make_node("Conv2D", "conv", ["id2", "scale"]), make_node("BiasAdd", "bias", ["conv", "b"]),
        make_node("Relu", "relu", ["bias"]), make_node("Exp", "exp", ["relu"]),
    ], validate=False)


def pipeline_of(original: Graph, fused: Graph, *rewrites: tuple[Rewrite, str]) -> PipelineResult:
    """A pipeline whose passes made `rewrites`, each with the match (its anchor given) it applied."""
    results: dict[str, PassResult] = {}
    for rewrite, anchor in rewrites:
        result = results.setdefault(rewrite.pass_id, PassResult(rewrite.pass_id))
        result.matches.append(Match(rewrite.pass_id, anchor, rewrite.removed + rewrite.modified, (anchor,), "test",
                                    index=rewrite.match_index))
        result.rewrites.append(rewrite)
    return PipelineResult(original=original, fused=fused, config=PassConfig.from_ids([]),
                          results=list(results.values()))


def test_originals_without_a_kernel_are_counted_and_named_not_guessed():
    """The fusion took two Identities, the folded `scale` and its Const, the conv, bias and relu; the baseline ran
    conv+bias+relu as one oneDNN kernel and Grappler pruned the Identities: those two are said to be missing."""
    original = original_graph()
    fused = Graph.from_nodes([make_node("Placeholder", "x"), make_node("AscBackend", "fused", ["x"]),
                              make_node("Exp", "exp", ["fused"])], validate=False)
    taken = ("w", "w/read", "two", "scale", "b", "id1", "id2", "conv", "bias", "relu")
    pipeline = pipeline_of(original, fused, (Rewrite("P", 0, removed=taken, created=("fused",)), "relu"))
    baseline = graph_run("original", kernel("relu", "_MklNativeFusedConv2D", "relu", 30.0), kernel("exp", "Exp",
                                                                                                   "exp", 2.0))
    after = graph_run("fused", kernel("fused", "AscBackend", "fused", 20.0, "P"), kernel("exp", "Exp", "exp", 2.0))

    [row] = fusion_gains(baseline, after, pipeline).rows
    assert row.matches == ("P:relu",) and row.fused_nodes == ("fused",)
    assert (row.baseline_us, row.fused_us, row.gain_us, row.ratio) == (30.0, 20.0, 10.0, 1.5)
    assert row.inside == {"conv": "relu@cpu:0", "bias": "relu@cpu:0"}  # ran inside relu's fused conv kernel
    assert set(row.constant) == {"w", "w/read", "two", "scale", "b"}  # folded by Grappler: no kernel expected
    assert row.missing == {"id1": "Identity", "id2": "Identity"}
    assert row.missing_text() == "2 of 5 original nodes have no kernel in the baseline: Identity ×2"
    text = "\n".join(format_gains(fusion_gains(baseline, after, pipeline)))
    assert "+10.0 us   1.50x     30.0 -> 20.0  P:relu" in text and "Identity ×2" in text
    assert constant_nodes(original) == {"w", "w/read", "two", "scale", "b"}


def test_a_kernel_shared_by_two_fusions_is_counted_once_and_one_that_runs_other_nodes_is_named():
    """AMCT-like pass A took `bias`, AutoFuse-like pass B took `relu`; the baseline ran conv+bias+relu as one
    kernel, so A and B are one group against it, and the conv (in neither fusion) is named as riding along."""
    original = original_graph()
    fused = Graph.from_nodes([
        make_node("Placeholder", "x"), make_node("Identity", "id1", ["x"]), make_node("Identity", "id2", ["id1"]),
        make_node("Const", "scale"), make_node("Conv2D", "conv", ["id2", "scale"]),
        make_node("BiasAdd", "bias2", ["conv", "scale"]), make_node("Relu", "relu2", ["bias2"]),
        make_node("Exp", "exp", ["relu2"])], validate=False)
    pipeline = pipeline_of(original, fused, (Rewrite("A", 0, removed=("bias",), created=("bias2",)), "bias"),
                           (Rewrite("B", 0, removed=("relu",), created=("relu2",)), "relu"))
    baseline = graph_run("original", kernel("relu", "_MklNativeFusedConv2D", "relu", 30.0),
                         kernel("exp", "Exp", "exp", 2.0))
    after = graph_run("fused", kernel("conv", "_MklNativeConv2D", "conv", 18.0),
                      kernel("bias2", "BiasAdd", "bias2", 3.0, "A"), kernel("relu2", "Relu", "relu2", 4.0, "B"),
                      kernel("exp", "Exp", "exp", 2.0))
    cover = coverage(baseline, original)
    assert cover.nodes_of["relu@cpu:0"] == {"conv", "bias", "relu"} and cover.inside["bias"] == "relu@cpu:0"

    [row] = fusion_gains(baseline, after, pipeline).rows
    assert row.label == "A:bias (+1 more)" and row.matches == ("A:bias", "B:relu")
    assert row.baseline_kernels == ("relu@cpu:0",) and row.baseline_us == 30.0  # once, not once per fusion
    assert row.fused_kernels == ("bias2@cpu:0", "relu2@cpu:0") and row.fused_us == 7.0
    assert "compared as one group: B:relu shares its original nodes or kernels" in row.notes
    assert "the baseline's kernels also run conv, outside this fusion" in row.notes
    assert not row.missing


def test_a_loss_sorts_last_and_an_unmeasured_fusion_after_it():
    original = original_graph()
    fused = Graph.from_nodes([make_node("Placeholder", "x"), make_node("AscBackend", "f1", ["x"]),
                              make_node("AscBackend", "f2", ["f1"])], validate=False)
    pipeline = pipeline_of(original, fused,
                           (Rewrite("P", 0, removed=("id1", "id2", "conv", "bias"), created=("f1",)), "conv"),
                           (Rewrite("P", 1, removed=("relu", "exp"), created=("f2",)), "exp"))
    baseline = graph_run("original", kernel("conv", "_MklNativeConv2D", "conv", 10.0),
                         kernel("bias", "BiasAdd", "bias", 1.0), kernel("exp", "Exp", "exp", 2.0),
                         kernel("relu", "Relu", "relu", 2.0))
    slower = graph_run("fused", kernel("f1", "AscBackend", "f1", 5.0), kernel("f2", "AscBackend", "f2", 9.0))
    rows = fusion_gains(baseline, slower, pipeline).rows
    assert [(r.label, r.gain_us) for r in rows] == [("P:conv", 6.0), ("P:exp", -5.0)]
    unmeasured = fusion_gains(baseline, graph_run("fused", kernel("f1", "AscBackend", "f1", 5.0)), pipeline).rows
    assert [(r.label, r.gain_us) for r in unmeasured] == [("P:conv", 6.0), ("P:exp", None)]
    assert "no kernel of the fused run is mapped to f2" in unmeasured[1].notes


def test_the_toolchains_fusion_op_map_without_any_graph():
    """Two profiles and fusion_op, no model: kernels are their own nodes; an original the baseline never ran is
    named."""
    records = [FusionOpRecord(2, "ge", "autofuse_0_Abs_Relu", ("abs_0", "relu_0"), None),
               FusionOpRecord(3, "ge", "conv_fused", ("conv", "bn", "gone"), None)]
    baseline = graph_run("original", kernel("abs_0", "Abs", None, 2.0), kernel("relu_0", "Relu", None, 2.5),
                         kernel("conv", "Conv2D", None, 40.0), kernel("bn", "BNInfer", None, 9.0))
    after = graph_run("fused", kernel("autofuse_0_Abs_Relu", "AscBackend", None, 3.0),
                      kernel("conv_fused", "Conv2D", None, 41.0))
    report = fusion_gains(baseline, after, toolchain=fusion_op_map(records))
    assert [(r.label, r.source, r.gain_us, r.ratio) for r in report.rows] == [
        ("conv_fused", TOOLCHAIN, 8.0, 1.195), ("autofuse_0_Abs_Relu", TOOLCHAIN, 1.5, 1.5)]
    assert report.rows[0].missing_text() == "1 of 3 original nodes has no kernel in the baseline: gone"
    assert report.total_gain_us() == 9.5


# ---- real CPU runs -------------------------------------------------------------------------------------------
def cpu_run(sample: str, load_sample, steps: int = 3):
    original = load_sample(sample)
    pipeline = run_pipeline(original)
    request = run_request(original, pipeline, sample, RunSettings(steps=steps, warmup=1))
    return run_both(request, pipeline).result, pipeline


def check_accounted(report, result, pipeline) -> None:
    """Every baseline kernel a row counts is one of the run's, counted in one row only, with its per-step time;
    every original a row names either ran (its own kernel or inside one), folds, or is listed as missing."""
    seen: set[str] = set()
    for row in report.rows:
        assert not seen & set(row.baseline_kernels)
        seen |= set(row.baseline_kernels)
        assert row.gain_us == round(row.baseline_us - row.fused_us, 3)
        ran = {n for n in row.originals if n in row.inside} | {k.node for k in result.graphs["original"].kernels}
        for name in row.originals:
            assert name in ran or name in row.constant or name in row.missing, name
    per_step = {f"{k.kernel}@{k.device}": k.total_us / k.count for k in result.graphs["original"].kernels}
    for row in report.rows:
        assert row.baseline_us == pytest.approx(sum(per_step[k] for k in row.baseline_kernels), abs=0.01)


def test_demo_on_cpu(load_sample):
    result, pipeline = cpu_run("demo", load_sample)
    report = run_gains(result, pipeline)
    by_match = {m: row for row in report.rows for m in row.matches}
    assert set(by_match) == {m.id for r in pipeline.results for m in r.matches}  # every match is in one row
    assert all(row.measured for row in report.rows) and len(report.rows) == 5
    check_accounted(report, result, pipeline)
    # AMCT folds the stem's BN into its conv, AutoFuse takes BiasAdd + Relu6: oneDNN runs all of it as one
    # kernel on both sides, so the two matches are one row against the baseline's fused conv
    stem = by_match["AutoFusePass:stem/relu6"]
    assert stem is by_match["ConvBatchnormFusionPass:stem/bn"] and stem.baseline_kernels[0].startswith("stem/relu6@")
    assert set(stem.inside) == {"stem/conv", "stem/bn"} and not stem.missing
    # FusedBatchNorm + Relu runs as one kernel named after the BN: the Relu ran inside it
    assert by_match["AutoFusePass:block1/relu"].inside == {"block1/relu": next(
        k for k in by_match["AutoFusePass:block1/relu"].baseline_kernels if k.startswith("block1/bn@"))}
    layer_norm = by_match["ScopeLayerNormPass:encoder/LayerNorm"]
    assert layer_norm.missing == {"encoder/LayerNorm/moments/StopGradient": "StopGradient"}  # Grappler prunes it
    assert len(layer_norm.baseline_kernels) == 10 and layer_norm.fused_nodes == ("encoder/LayerNorm",)
    head = by_match["AutoFusePass:head/exp"]  # one XLA kernel against Abs+Sigmoid (composed), Sub, Relu, Exp
    assert [k.split("@")[0] for k in head.fused_kernels] == ["autofuse_pointwise_2_Abs_Sigmoid_Sub_Relu_Exp"]
    assert {"head/abs", "head/sigmoid", "sub", "head/relu", "head/exp"} <= set(head.originals)
    assert head.inside == {"head/abs": next(k for k in head.baseline_kernels if k.startswith("head/sigmoid/"))}


@pytest.mark.slow
def test_mobilenet_v2_on_cpu(load_sample):
    result, pipeline = cpu_run("mobilenet_v2", load_sample, steps=2)
    report = run_gains(result, pipeline)
    assert len(report.rows) == 52 and all(row.measured for row in report.rows)
    assert not [row.label for row in report.rows if row.missing]  # every original ran, inside a kernel or folded
    check_accounted(report, result, pipeline)
    grouped = [row for row in report.rows if len(row.matches) == 2]
    # a BN fold and the AutoFuse epilogue after it share oneDNN's fused conv kernel: one row per epilogue
    assert len(grouped) == len(pipeline.result("AutoFusePass").matches) == 45
    # every Conv2D (not the depthwise ones) ran inside a oneDNN kernel named after the op that ends its chain
    convs = [n for n in pipeline.original.nodes if pipeline.original.op(n) == "Conv2D"]
    assert sorted(n for row in report.rows for n in row.inside if n in convs) == sorted(convs) and len(convs) == 35


def test_fuselens_run_prints_and_writes_the_gains(capsys):
    assert cli_main(["run", "demo", "--steps", "2", "--warmup", "1", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    gains = printed["fusion_gain"]
    assert len(gains["rows"]) == 5 and {"ScopeLayerNormPass:encoder/LayerNorm"} <= {r["label"] for r in gains["rows"]}
    layer_norm = next(r for r in gains["rows"] if r["label"] == "ScopeLayerNormPass:encoder/LayerNorm")
    assert layer_norm["missing_text"] == "1 of 11 original nodes has no kernel in the baseline: StopGradient"
    assert gains["total_gain_us"] == pytest.approx(sum(r["gain_us"] for r in gains["rows"]), abs=0.01)
    assert cli_main(["run", "demo", "--steps", "2", "--warmup", "1"]) == 0
    text = capsys.readouterr().out
    assert "did each fusion pay? 5 of 5 fusions measured" in text and "StopGradient" in text


def test_the_toolchains_records_come_from_fusion_op_then_the_last_dump_stage(tmp_path, load_sample):
    """tests/npu_artifacts.py writes what an NPU run of demo leaves (dumps with GE's provenance, fusion_op)."""
    from tests.npu_artifacts import write_npu_run

    original = load_sample("demo")
    root = write_npu_run(tmp_path / "run", run_pipeline(original))
    with_fusion_op = toolchain_records(root)
    assert with_fusion_op["autofuse_pointwise_2_Abs_Sigmoid_Sub_Relu_Exp"] == (
        "head/abs", "head/sigmoid", "sub", "head/relu", "head/exp")
    for path in root.rglob("fusion_op_*.csv"):
        path.unlink()
    assert toolchain_records(root) is None  # no fusion_op, and the dumps need the model to pick the graph
    from_dumps = toolchain_records(root, original)
    assert from_dumps == with_fusion_op and from_dumps["stem/conv"] == ("stem/conv", "stem/bn")
    for path in root.rglob("ge_*"):
        path.unlink()
    assert toolchain_records(root, original) is None
