"""SmallOpBatchnormFusionPass: the four Keras variants become FusedBatchNormV3, then the conv fold removes them."""

from __future__ import annotations

import numpy as np
import pytest

from fuselens.core.graph import Graph, proto
from fuselens.passes.amct.conv_bn import ConvBatchnormFusionPass
from fuselens.passes.amct.small_op_bn import SmallOpBatchnormFusionPass
from tests.passes.amct_check import apply_passes, assert_same_outputs

VARIANTS = {"bn_default": "default", "bn_no_center": "center=False", "bn_no_scale": "scale=False",
            "bn_plain": "center=False, scale=False"}


@pytest.fixture(scope="module")
def small_ops(load_sample):
    graph = load_sample("keras_bn_small_ops")
    return graph, *SmallOpBatchnormFusionPass().apply(graph)


def test_four_variants_become_fused_batch_norms(small_ops):
    original, fused, result = small_ops
    assert {m.anchor.split("/")[0]: m.details["variant"] for m in result.matches} == VARIANTS
    assert not result.near_misses
    for scope in VARIANTS:
        bn = f"{scope}/batchnorm/FusedBatchNormV3"
        assert fused.op(bn) == "FusedBatchNormV3" and fused.attr(bn, "is_training") is False
        assert fused.attr(bn, "epsilon") == pytest.approx(1e-3)
        assert fused.input_node(f"{scope}_relu", 0) == bn
    assert {"Rsqrt", "Sub", "Neg", "Mul", "AddV2"}.isdisjoint(fused.op_histogram())
    plain = next(m for m in result.matches if m.anchor.startswith("bn_plain"))
    assert plain.details["gamma"] == "(ones)" and plain.details["beta"] == "(zeros)"
    assert_same_outputs(original, fused)


def test_rewrite_records_removed_and_created(small_ops):
    _, _, result = small_ops
    rewrite = result.rewrites[0]
    assert rewrite.created[0] == "bn_default/batchnorm/FusedBatchNormV3"
    assert set(rewrite.removed) == {f"bn_default/batchnorm/{n}" for n in
                                    ("add", "Rsqrt", "mul", "mul_1", "mul_2", "sub", "add_1")}


def test_then_the_conv_fold_removes_them(load_sample):
    original = load_sample("keras_bn_small_ops")
    fused, results = apply_passes(original, SmallOpBatchnormFusionPass, ConvBatchnormFusionPass)
    assert len(results[1].matches) == 4
    assert fused.op_histogram()["BiasAdd"] == 4 and "FusedBatchNormV3" not in fused.op_histogram()
    assert_same_outputs(original, fused)


def _keras_bn_after(build_input) -> Graph:
    """A small-op BN (tf.nn.batch_normalization with constant stats) after whatever build_input() returns."""
    import tensorflow as tf

    rng = np.random.default_rng(3)
    graph = tf.Graph()
    with graph.as_default():
        x = build_input(tf)
        stats = [tf.constant(rng.uniform(0.5, 1.5, x.shape[-1]).astype(np.float32)) for _ in range(4)]
        tf.nn.batch_normalization(x, stats[0], stats[1], stats[2], stats[3], 1e-3, name="bn/batchnorm")
    return Graph(proto.from_tf(graph.as_graph_def(add_shapes=True)), source="keras_bn")


def test_a_batch_norm_that_is_the_model_output_is_fused():
    """Nothing reads the BatchNorm's last add: it is the model's output (a RecursionError before)."""
    rng = np.random.default_rng(9)
    graph = _keras_bn_after(lambda tf: tf.nn.conv2d(tf.compat.v1.placeholder(tf.float32, [1, 6, 6, 3], name="x"),
                                                    rng.normal(0, 0.5, (3, 3, 3, 4)).astype(np.float32), 1, "SAME",
                                                    name="conv"))
    assert graph.consumer_nodes("bn/batchnorm/add_1") == []
    fused, results = apply_passes(graph, SmallOpBatchnormFusionPass, ConvBatchnormFusionPass)
    assert [len(r.matches) for r in results] == [1, 1] and "FusedBatchNormV3" not in fused.op_histogram()
    assert_same_outputs(graph, fused)


def test_producer_not_a_conv_is_a_near_miss():
    graph = _keras_bn_after(lambda tf: tf.nn.relu(tf.compat.v1.placeholder(tf.float32, [1, 4, 4, 3]), name="relu"))
    result = SmallOpBatchnormFusionPass().dry_run(graph)
    assert not result.matches
    assert "the BatchNorm input relu (Relu) is not a Conv2D or DepthwiseConv2dNative" in result.near_misses[0].reason


def test_input_not_4d_is_a_near_miss():
    graph = _keras_bn_after(lambda tf: tf.compat.v1.placeholder(tf.float32, [2, 3], name="features"))
    (miss,) = SmallOpBatchnormFusionPass().dry_run(graph).near_misses
    assert miss.reason == "the BatchNorm input features is 2-D; FusedBatchNormV3 needs a 4-D input"



def test_input_of_unknown_shape_is_a_near_miss_saying_so():
    """A bare .pb (no `_output_shapes`) whose BatchNorm input is an op the shape table does not know."""
    graph = _keras_bn_after(lambda tf: tf.raw_ops.Cumsum(x=tf.compat.v1.placeholder(tf.float32, [1, 4, 4, 3]),
                                                          axis=tf.constant(1), name="cumsum"))
    bare = proto.GraphDef()
    bare.CopyFrom(graph.graph_def)
    for node in bare.node:
        del node.attr["_output_shapes"]
    (miss,) = SmallOpBatchnormFusionPass().dry_run(Graph(bare, source="bare")).near_misses
    assert miss.reason.startswith("shape unknown: the BatchNorm input cumsum records no shape")

def test_layer_norm_statistics_are_not_constants(load_sample):
    result = SmallOpBatchnormFusionPass().dry_run(load_sample("bert_layernorm"))
    assert not result.matches and len(result.near_misses) == 2
    assert all("is not a constant" in miss.reason for miss in result.near_misses)
