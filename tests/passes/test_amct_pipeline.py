"""The AMCT family end to end: expected matches per sample, numbers on every sample and MobileNetV2,
and TensorFlow's own fold_batch_norms as an outside oracle."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from fuselens.core.formats.execute import random_feeds, run_graph
from fuselens.core.formats.samples import SAMPLES
from fuselens.core.graph import Graph, proto
from fuselens.passes.pipeline import run_pipeline
from fuselens.passes.registry import catalog
from tests.passes.amct_check import assert_same_outputs

AMCT_DEFAULTS = [c.id for c in catalog() if c.family == "amct" and c.default_enabled]
COMMITTED = [name for name, sample in SAMPLES.items() if not sample.cached]
# sample -> {pass: (matches, near misses)} for every AMCT pass that reports anything
EXPECTED = {
    "conv_bn": {"ConvBatchnormFusionPass": (1, 0)},
    "conv_bias_bn": {"ConvBatchnormFusionPass": (1, 0)},
    "depthwise_bn": {"DepthwiseConvBatchnormFusionPass": (1, 0)},
    "conv_bias_mul": {"OpBiasAddMulFusionPass": (1, 0)},
    "matmul_mul": {"OpBiasAddMulFusionPass": (1, 0)},
    "group_conv_bn": {"GroupConvBatchnormFusionPass": (1, 0)},
    "keras_bn_small_ops": {"SmallOpBatchnormFusionPass": (4, 0), "ConvBatchnormFusionPass": (4, 0)},
    "conv_bn_training": {"ConvBatchnormFusionPass": (0, 1)},
    "conv_shared": {"ConvBatchnormFusionPass": (0, 1)},
    "mul_vector": {"OpBiasAddMulFusionPass": (0, 1)},
    # InstanceNorm (scope pass off by default) normalises with computed statistics: explained, not folded
    "instance_norm": {"SmallOpBatchnormFusionPass": (0, 2), "OpBiasAddMulFusionPass": (0, 1)},
    "demo": {"ConvBatchnormFusionPass": (1, 0), "DepthwiseConvBatchnormFusionPass": (1, 0),
             "OpBiasAddMulFusionPass": (1, 0)},
}


def amct_counts(pipeline) -> dict[str, tuple[int, int]]:
    amct = {c.id for c in catalog() if c.family == "amct"}
    return {r.pass_id: (len(r.matches), len(r.near_misses)) for r in pipeline.results
            if r.pass_id in amct and (r.matches or r.near_misses)}


@pytest.mark.parametrize("name", COMMITTED)
def test_every_sample_gives_the_expected_matches_and_the_same_numbers(load_sample, name):
    original = load_sample(name)
    pipeline = run_pipeline(original, AMCT_DEFAULTS)
    assert amct_counts(pipeline) == EXPECTED.get(name, {})
    if pipeline.fused.fingerprint != original.fingerprint:
        assert_same_outputs(original, pipeline.fused)


def test_conv_bn_agrees_with_tensorflow_fold_batch_norms(load_sample):
    import tensorflow as tf
    from tensorflow.python.tools import optimize_for_inference_lib

    original = load_sample("conv_bn")
    ours = run_pipeline(original, ["ConvBatchnormFusionPass"]).fused
    given = proto.to_tf(copy.deepcopy(original.graph_def))  # fold_batch_norms edits the NodeDefs it is given
    given = tf.compat.v1.graph_util.remove_training_nodes(given, ["relu1"])  # it wants the Const, not its Identity
    oracle = Graph(proto.from_tf(optimize_for_inference_lib.fold_batch_norms(given)), source="fold_batch_norms")
    assert "FusedBatchNormV3" not in oracle.op_histogram()
    feeds = random_feeds(original, seed=7)
    expected, got = run_graph(oracle, feeds, ["relu1"])["relu1"], run_graph(ours, feeds, ["relu1"])["relu1"]
    assert np.abs(expected).max() > 0
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_mobilenet_v2_has_no_batch_norm_left_and_the_same_numbers(load_sample):
    original = load_sample("mobilenet_v2")
    pipeline = run_pipeline(original, AMCT_DEFAULTS)
    fused = pipeline.fused
    assert amct_counts(pipeline) == {"SmallOpBatchnormFusionPass": (52, 0), "ConvBatchnormFusionPass": (35, 0),
                                     "DepthwiseConvBatchnormFusionPass": (17, 0)}
    ops = fused.op_histogram()
    assert "Rsqrt" not in ops and not [op for op in ops if op.startswith("FusedBatchNorm")]
    convs = [n.name for n in fused if n.op in ("Conv2D", "DepthwiseConv2dNative")]
    assert len(convs) == 52
    assert all([fused.op(c) for c in fused.consumer_nodes(conv)] == ["BiasAdd"] for conv in convs)
    # the softmax output, and the logits before it (a softmax of near-equal logits hides errors)
    logits = fused.input_node(fused.input_node("Identity", 0), 0)
    assert original.op(logits) == "BiasAdd"
    assert_same_outputs(original, fused, [*original.outputs(), logits], seed=1)
