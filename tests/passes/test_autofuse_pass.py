"""AutoFusePass on the toolchain's reference samples: names, numbers, and one kernel in TF's step stats."""

from __future__ import annotations

import json

import pytest
from autofuse_check import assert_same_outputs

from fuselens.cli import main
from fuselens.core.formats.execute import random_feeds
from fuselens.core.graph import Graph, proto
from fuselens.passes.autofuse.autofuse_pass import AutoFusePass
from fuselens.passes.fused import FUSED_OP_TYPE_ATTR, XLA_MUST_COMPILE_ATTR

REFERENCE_KERNELS = [
    ("abs_relu_exp", None, "autofuse_pointwise_0_Abs_Relu_Exp"),
    ("abs_add_relu", None, "autofuse_pointwise_0_Abs_Add_Relu"),
    ("abs_reduce_sum", "--enable_autofuse=true;--autofuse_enable_pass=reduce", "autofuse_reduce_0_Abs_ReduceSumD"),
]


@pytest.fixture(scope="module")
def fused_samples(load_sample):
    """(original, fused, result) per reference sample, fused once for the module."""
    return {sample: (load_sample(sample), *AutoFusePass({"autofuse_flags": flags}).apply(load_sample(sample)))
            for sample, flags, _ in REFERENCE_KERNELS}


@pytest.mark.parametrize(("sample", "flags", "kernel"), REFERENCE_KERNELS)
def test_reference_sample_fuses_into_one_kernel_named_like_the_toolchain(fused_samples, sample, flags, kernel):
    _, fused, result = fused_samples[sample]
    calls = [n for n in fused if FUSED_OP_TYPE_ATTR in n.attr]
    assert [n.name for n in calls] == [kernel]
    (call,) = calls
    assert call.attr[FUSED_OP_TYPE_ATTR].s == b"AscBackend" and call.attr[XLA_MUST_COMPILE_ATTR].b
    assert set(fused.op_histogram()) == {"Placeholder", "AscBackend"}  # every fused op (and the axis Const) is inside
    assert {n.op for n in fused} == {"Placeholder", call.op}
    assert [m.details["kernel"] for m in result.matches] == [kernel]


@pytest.mark.parametrize("sample", [s for s, _, _ in REFERENCE_KERNELS])
def test_fused_outputs_match_the_original_and_fp16_stays_fp16(fused_samples, sample):
    original, fused, result = fused_samples[sample]
    assert_same_outputs(original, fused, [result])
    call = next(n for n in fused if FUSED_OP_TYPE_ATTR in n.attr)
    body = fused.functions[call.op]
    assert [a.type for a in body.signature.output_arg] == [proto.DT_HALF]


def test_reduce_stays_unfused_with_a_worded_near_miss_unless_enabled(load_sample):
    graph = load_sample("abs_reduce_sum")
    fused, result = AutoFusePass().apply(graph)
    assert not result.matches and fused is graph
    (miss,) = result.near_misses
    assert miss.anchor == "reduce_sum_0" and miss.nodes == ("abs_0", "reduce_sum_0")
    assert "the reduce category is off" in miss.reason and "--autofuse_enable_pass=reduce" in miss.reason


def kernel_names_in_step_stats(graph) -> list[str]:
    """Node names TF's step stats list for one traced CPU run (RunOptions FULL_TRACE)."""
    import tensorflow as tf

    tf_graph = tf.Graph()
    with tf_graph.as_default():
        tf.graph_util.import_graph_def(proto.to_tf(graph.graph_def), name="")
    feeds = {f"{k}:0": v for k, v in random_feeds(graph, 0).items()}
    options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
    metadata = tf.compat.v1.RunMetadata()
    with tf.compat.v1.Session(graph=tf_graph) as session:
        session.run([f"{o}:0" for o in graph.outputs()], feeds, options=options, run_metadata=metadata)
    return [s.node_name for dev in metadata.step_stats.dev_stats for s in dev.node_stats
            if not s.node_name.startswith(("_SOURCE", "_arg", "_retval"))]


def test_step_stats_show_one_xla_kernel_instead_of_abs_relu_exp(fused_samples):
    original, fused, _ = fused_samples["abs_relu_exp"]
    before = kernel_names_in_step_stats(original)
    assert "exp_0" in before and len(before) >= 2  # Grappler merges Abs+Relu, but Exp stays its own kernel
    assert kernel_names_in_step_stats(fused) == ["autofuse_pointwise_0_Abs_Relu_Exp"]


def test_inputs_produced_by_another_kernel_of_the_same_pass_read_its_call_node(load_sample):
    graph = load_sample("demo")
    fused, result = AutoFusePass({"autofuse_flags": "--autofuse_enable_pass=reduce"}).apply(graph)
    kernels = [m.details["kernel"] for m in result.matches]
    assert kernels == ["autofuse_reduce_0_SquaredDifference_ReduceMeanD",
                       "autofuse_pointwise_0_Add_Rsqrt_Mul_Mul_Mul_Sub_Add",
                       "autofuse_pointwise_1_Mul_Abs_Sigmoid_Sub_Relu_Exp"]
    assert "autofuse_reduce_0_SquaredDifference_ReduceMeanD" in [r.node for r in fused.inputs(kernels[1])]
    assert_same_outputs(graph, fused, [result])


def test_cli_fuse_takes_autofuse_flags_and_rejects_a_malformed_string(tmp_path, capsys):
    report = tmp_path / "report.json"
    assert main(["fuse", "abs_reduce_sum", "--autofuse-flags=--autofuse_enable_pass=reduce",
                 "--report", str(report)]) == 0
    passes = {p["pass"]: p for p in json.loads(report.read_text())["passes"]}
    assert [m["details"]["kernel"] for m in passes["AutoFusePass"]["matches"]] == ["autofuse_reduce_0_Abs_ReduceSumD"]
    capsys.readouterr()
    assert main(["fuse", "abs_relu_exp", "--autofuse-flags=--enable_autofuse=true;reduce"]) == 2
    assert "bad item 'reduce'" in capsys.readouterr().err


def test_numbers_differ_when_the_kernel_is_wrong(fused_samples):
    """The numeric check can fail: a kernel computing Exp(Selu(Abs(x))) instead is caught."""
    original, fused, result = fused_samples["abs_relu_exp"]
    broken = proto.GraphDef()
    broken.CopyFrom(fused.graph_def)
    body = broken.library.function[0]
    relu = next(n for n in body.node_def if n.op == "Relu")
    relu.op = "Selu"
    with pytest.raises(AssertionError):
        assert_same_outputs(original, Graph(broken), [result])
