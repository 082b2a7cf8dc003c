"""Kernel tables from step-stats events: aggregation, bookkeeping left out, kernels mapped to nodes."""

from __future__ import annotations

from fuselens.core.graph import Graph, proto
from fuselens.core.graph.nodes import make_node
from fuselens.core.measure.profile import KernelEvent, NodeMapper, build_graph_run, label_op


def _graph() -> Graph:
    gd = proto.GraphDef()
    x = make_node("Placeholder", "x", attrs={"dtype": proto.AttrValue(type=proto.DT_FLOAT)})
    fused = make_node("fused_af", "autofuse_pointwise_0_Abs_Relu", ["x"])
    fused.attr["_fusion_pass"].s = b"AutoFusePass"
    fused.attr["_fused_op_type"].s = b"AscBackend"
    fused.attr["_fused_nodes"].list.s.extend([b"abs_0", b"relu_0"])
    gd.node.extend([x, fused, make_node("Relu", "block/relu", ["autofuse_pointwise_0_Abs_Relu"]),
                    make_node("Add", "block_2_add/Add", ["block/relu", "x"])])
    gd.library.function.add().signature.name = "fused_af"
    return Graph(gd, source="t", validate=False)


def test_label_op():
    assert label_op("conv = _MklNativeFusedConv2D(x, w)") == "_MklNativeFusedConv2D"
    assert label_op("", "fallback") == "fallback"


def test_mapping_rules():
    mapper = NodeMapper(_graph())
    assert mapper.node("block/relu") == "block/relu"
    assert mapper.node("autofuse_pointwise_0_Abs_Relu") == "autofuse_pointwise_0_Abs_Relu"
    assert mapper.node("relu_0") == "autofuse_pointwise_0_Abs_Relu"  # kernel named after an inner node
    assert mapper.node("block/relu/unary_ops_composition") == "block/relu"  # Grappler remapper suffix
    assert mapper.node("block_2_add/ArithmeticOptimizer/AddOpsRewrite_Add") == "block_2_add/Add"
    assert mapper.node("ArithmeticOptimizer/AddOpsRewrite_block_2_add/Add") == "block_2_add/Add"
    assert mapper.node("cluster_0_1/xla_run") is None
    assert mapper.pass_id("relu_0") is None and mapper.pass_id("autofuse_pointwise_0_Abs_Relu") == "AutoFusePass"
    assert mapper.op_type("autofuse_pointwise_0_Abs_Relu", "fused_af") == "AscBackend"
    assert mapper.op_type("block/relu", "Relu") == "Relu"
    assert NodeMapper(None).node("anything") is None


def test_table_timeline_and_summary():
    events = []
    for step in range(3):
        t = 1000.0 * step
        events += [KernelEvent(step, "CPU:0", "_SOURCE", "NoOp", t, 1.0),
                   KernelEvent(step, "CPU:0", "_arg_x_0_0", "_Arg", t, 1.0),
                   KernelEvent(step, "CPU:0", "autofuse_pointwise_0_Abs_Relu", "fused_af", t + 2, 10.0 + step),
                   KernelEvent(step, "CPU:0", "block/relu", "Relu", t + 13, 4.0)]
    run = build_graph_run("fused", _graph(), events, [50.0, 40.0, 60.0], steps=3)
    assert [k.kernel for k in run.kernels] == ["autofuse_pointwise_0_Abs_Relu", "block/relu"]
    fused = run.kernels[0]
    assert (fused.count, fused.total_us, fused.mean_us, fused.min_us, fused.max_us) == (3, 33.0, 11.0, 10.0, 12.0)
    assert (fused.op_type, fused.pass_id) == ("AscBackend", "AutoFusePass")
    assert [(e.kernel, e.start_us, e.dur_us) for e in run.timeline] == \
        [("autofuse_pointwise_0_Abs_Relu", 0.0, 12.0), ("block/relu", 11.0, 4.0)]
    summary = run.summary()
    assert summary["step_median_us"] == 50.0 and summary["kernel_count"] == 2
    assert summary["kernel_launches_per_step"] == 2.0 and summary["kernel_us_per_step"] == 15.0
