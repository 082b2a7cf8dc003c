"""What the run views show, without Qt: kernel classes, heat values, timeline lanes, cards, input
shapes, profile import onto the right graph, the NPU bundle, and the backend probe."""

from __future__ import annotations

import itertools
import json

import pytest

from fuselens.core.ascend.npu_bundle import BundleSide, write_npu_bundle
from fuselens.core.ascend.profile_import import import_run_file
from fuselens.core.errors import FuseLensError
from fuselens.core.formats.switch_file import FusionSwitches, SwitchForms
from fuselens.core.graph import Graph, proto
from fuselens.core.graph.nodes import make_node
from fuselens.core.measure.result import GraphRun, KernelStat, OutputComparison, RunResult, TimelineEvent
from fuselens.core.runtime.backend_probe import probe_backends
from fuselens.core.runtime.run_view import (
    common_scope,
    format_us,
    kernel_category,
    node_times,
    open_inputs,
    parse_input_shapes,
    short_name,
    summary_cards,
    timeline_lanes,
    top_kernels,
)
from fuselens.passes.pipeline import run_pipeline

FUSED = "autofuse_pointwise_0_Abs_Relu_Exp"
OP_SUMMARY_HEADER = ("Device_id,Model ID,Task ID,Stream ID,Op Name,OP Type,OP State,Task Type,Task Start Time(us),"
                     "Task Duration(us),Task Wait Time(us),Block Dim,Mix Block Dim,HF32 Eligible,Input Shapes,"
                     "Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Context ID")


def write_op_summary(path, kernels: list[tuple[str, str, float]], steps: int = 3) -> None:
    """An op_summary CSV as msprof writes it: `kernels` (name, type, duration us) run in order each step."""
    lines = [OP_SUMMARY_HEADER]
    for step in range(steps):
        start = 1_700_000_000_000.0 + 1000.0 * step
        for name, op, dur in kernels:
            lines.append(f'0,1,{len(lines)},2,{name},{op},static,AI_VECTOR_CORE,{start:.3f}\t,{dur},N/A,8,0,NO,'
                         f'"128,192",DT_FLOAT16,ND,"128,192",DT_FLOAT16,ND,N/A')
            start += dur + 1.0
    path.write_text("\n".join(lines) + "\n")


def kernel(name: str, op: str, node: str | None, total: float, pass_id: str | None = None) -> KernelStat:
    return KernelStat(kernel=name, op_type=op, node=node, pass_id=pass_id, device="CPU:0", count=4,
                      total_us=total, mean_us=total / 4, min_us=total / 8, max_us=total / 2)


def test_kernel_category_reads_onednn_names_and_marks_fused_kernels():
    assert kernel_category("_MklNativeFusedConv2D", None) == "conv"
    assert kernel_category("_MklNativeDepthwiseConv2dNative", None) == "conv"
    assert kernel_category("_MklSoftmax", None) == "reduce"
    assert kernel_category("_UnaryOpsComposition", None) == "elementwise"
    assert kernel_category("AscBackend", "AutoFusePass") == "fused"
    assert kernel_category("_MklSomethingNew", None) == "other"


def test_node_times_sum_per_node_per_step_and_cold_nodes_get_zero():
    run = GraphRun("original", steps=4, kernels=[kernel("relu_0/unary_ops_composition", "_UnaryOpsComposition",
                                                        "relu_0", 400.0), kernel("exp_0", "Exp", "exp_0", 80.0),
                                                 kernel("exp_0/extra", "Exp", "exp_0", 20.0),
                                                 kernel("cluster_0/xla_run", "_XlaRun", None, 9.0)])
    assert node_times(run) == {"relu_0": 100.0, "exp_0": 25.0}
    assert node_times(run, ["abs_0", "relu_0"]) == {"abs_0": 0.0, "relu_0": 100.0, "exp_0": 25.0}
    assert [k.kernel for k in top_kernels(run, 2)] == ["relu_0/unary_ops_composition", "exp_0"]


def test_timeline_lanes_never_overlap_within_a_lane():
    events = [TimelineEvent(f"k{i}", "Relu", None, None, device, start, dur)
              for i, (device, start, dur) in enumerate([("CPU:0", 0, 10), ("CPU:0", 5, 10), ("CPU:0", 10, 3),
                                                        ("GPU:0", 0, 4), ("CPU:0", 13, 1)])]
    lanes, labels = timeline_lanes(events)
    assert labels == ["CPU:0", "CPU:0", "GPU:0"]
    assert lanes == [0, 1, 0, 2, 0]
    for lane in set(lanes):
        spans = sorted((e.start_us, e.start_us + e.dur_us) for e, ln in zip(events, lanes) if ln == lane)
        assert all(end <= next_start for (_, end), (next_start, _) in itertools.pairwise(spans))


def test_names_and_figures():
    assert format_us(0.8) == "0.8 µs" and format_us(459.5) == "460 µs" and format_us(12_300) == "12.3 ms"
    assert format_us(None) == "—"
    names = ["model/block_1/conv", "model/block_2/conv", FUSED]
    assert common_scope(names) == "model/"
    assert common_scope(["a/b", "c/d"]) == "" and common_scope([FUSED]) == ""
    assert common_scope(["relu_0/unary_ops_composition", "exp_0"]) == ""
    assert short_name("model/block_1/conv", 40, "model/") == "block_1/conv"
    assert short_name("x" * 50, 10) == "…" + "x" * 9


def test_summary_cards_say_speedup_and_verdict_per_output():
    runs = {label: GraphRun(label, steps=2, step_times_us=times, kernels=[kernel("k", "Relu", "k", 10.0)])
            for label, times in (("original", [400.0, 600.0]), ("fused", [250.0, 250.0]))}
    comparison = [OutputComparison("exp_0:0", f"{FUSED}:0", "float16", [128, 192], 0.0, 0.0, 0.0, 1e-2, 1e-2, True),
                  OutputComparison("y:0", "y:0", "float32", [2], 0.5, 0.25, 0.3, 1e-4, 1e-4, False)]
    result = RunResult("m", "cpu", 2, 1, True, graphs=runs, comparison=comparison)
    cards = {c.title: c for c in summary_cards(result)}
    assert cards["Before"].value == "500 µs / step" and cards["After"].value == "250 µs / step"
    assert cards["Before"].detail.startswith("1 kernels")
    assert cards["Speedup"].value == "2.00×" and cards["Speedup"].tone == "good"
    assert cards["Output exp_0"].value.startswith("allclose") and cards["Output exp_0"].tone == "good"
    assert cards["Output y"].tone == "bad" and "max abs 0.5, max rel 0.25" in cards["Output y"].detail


def test_input_shapes_are_offered_for_open_dimensions_and_parsed(load_sample):
    assert open_inputs(load_sample("abs_relu_exp")) == {}
    gd = proto.GraphDef()
    for name, shape in (("image", [None, 224, 224, 3]), ("tokens", [None, None])):
        node = make_node("Placeholder", name, attrs={"dtype": proto.AttrValue(type=proto.DT_FLOAT)})
        node.attr["shape"].shape.CopyFrom(proto.shape_proto(shape))
        gd.node.append(node)
    assert open_inputs(Graph(gd, source="t", validate=False)) == {"image": "1,224,224,3", "tokens": "?,?"}
    assert parse_input_shapes(" image=1,224,224,3 ; tokens=2,7;") == {"image": (1, 224, 224, 3), "tokens": (2, 7)}
    assert parse_input_shapes("") == {}
    for bad in ("image", "image=1,?,3", "=1,2", "image=-1"):
        with pytest.raises(FuseLensError, match="NAME=D1,D2"):
            parse_input_shapes(bad)
    with pytest.raises(FuseLensError, match=r"^--input-shape: 'image=x' is not NAME=D1,D2"):
        parse_input_shapes("image=x", "--input-shape")  # the CLI names its option


@pytest.fixture(scope="module")
def abs_relu_exp_graphs():
    from fuselens.core.formats.loaders import load_model

    original = load_model("abs_relu_exp").graph
    return original, run_pipeline(original, ["AutoFusePass"]).fused


def test_op_summary_of_the_fused_model_lands_on_the_fused_graph(tmp_path, abs_relu_exp_graphs):
    original, fused = abs_relu_exp_graphs
    path = tmp_path / "op_summary_0_1_1.csv"
    write_op_summary(path, [("trans_Cast_0", "Cast", 2.0), (FUSED, "AscBackend", 4.25)])
    result = import_run_file(path, original, fused)
    assert list(result.graphs) == ["fused"]
    stats = {k.kernel: k for k in result.graphs["fused"].kernels}
    assert (stats[FUSED].node, stats[FUSED].pass_id, stats[FUSED].count) == (FUSED, "AutoFusePass", 3)
    assert stats["trans_Cast_0"].node is None
    assert result.graphs["fused"].timeline[-1].node == FUSED


def test_op_summary_of_the_original_model_lands_on_the_original_graph(tmp_path, abs_relu_exp_graphs):
    original, fused = abs_relu_exp_graphs
    path = tmp_path / "op_summary_0_1_1.csv"
    write_op_summary(path, [("abs_0", "Abs", 1.0), ("relu_0", "Relu", 1.0), ("exp_0", "Exp", 1.5)])
    result = import_run_file(path, original, fused)
    assert list(result.graphs) == ["original"]
    assert {k.node for k in result.graphs["original"].kernels} == {"abs_0", "relu_0", "exp_0"}
    assert list(import_run_file(path).graphs) == ["fused"]  # no graph open: shown as the (usual) fused run


def test_run_file_round_trip_and_bad_paths(tmp_path):
    result = RunResult("m", "cpu", 2, 1, True, graphs={"fused": GraphRun("fused", 2, [1.0, 2.0],
                                                                          [kernel("k", "Relu", "k", 4.0)])})
    result.save(tmp_path / "run.json")
    loaded = import_run_file(tmp_path / "run.json")
    assert loaded.graphs["fused"].kernels == result.graphs["fused"].kernels
    with pytest.raises(FuseLensError, match="no such file"):
        import_run_file(tmp_path / "missing.csv")
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(FuseLensError, match="not a FuseLens run file"):
        import_run_file(tmp_path / "bad.json")


def test_npu_bundle_writes_both_sides_with_their_switches(tmp_path, abs_relu_exp_graphs):
    """core's writer on its own (tests/cli/test_npu_bundle.py runs a whole bundle): the fused side here is
    FuseLens's own fused graph, a library-function call the target check leaves alone."""
    original, fused = abs_relu_exp_graphs
    forms = {side: SwitchForms([], flags, FusionSwitches(graph_fusion={"ConvBatchnormFusionPass": state}), skips)
             for side, flags, state, skips in (("original", "--enable_autofuse=false", "off", ()),
                                               ("fused", "--enable_autofuse=true", "on", ("abs_0",)))}
    report = write_npu_bundle(tmp_path / "bundle", model="abs_relu_exp", mode="tf2-compat", steps=7, warmup=2,
                              original=BundleSide(original, forms["original"]), fused=BundleSide(fused, forms["fused"]),
                              import_command="fuselens import-profile {results} --model abs_relu_exp")
    spec = json.loads((report.folder / "bundle.json").read_text())
    assert spec["steps"] == 7 and spec["sides"]["fused"]["fetches"] == [f"{FUSED}:0"]
    assert spec["sides"]["fused"]["autofuse_skip_file"] == "switches/fused/autofuse_skip.ini"
    assert spec["sides"]["original"]["autofuse_skip_file"] is None
    assert Graph.from_bytes((report.folder / "fused.pb").read_bytes(), source="fused").op(FUSED) in fused.functions
    assert report.switches["original"].endswith("fusion switch file: ConvBatchnormFusionPass off")
    compile((report.folder / "run_on_npu.py").read_text(), "run_on_npu.py", "exec")


def test_backend_probe_in_a_child_and_its_fallback(monkeypatch):
    statuses = {s.name: s for s in probe_backends()}
    assert statuses["cpu"].available and set(statuses) == {"cpu", "gpu", "npu"}
    assert statuses["npu"].available or "npu_bridge" in statuses["npu"].reason
    monkeypatch.setattr("sys.executable", "/nonexistent/python")
    broken = {s.name: s for s in probe_backends()}
    assert broken["cpu"].available and not broken["gpu"].available and "check failed" in broken["gpu"].reason
