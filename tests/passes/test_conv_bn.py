"""ConvBatchnormFusionPass: matches, near misses with their reasons, rewrite records, numbers."""

from __future__ import annotations

import numpy as np
import pytest

from fuselens.core.graph.nodes import make_const, make_node
from fuselens.passes.amct.conv_bn import ConvBatchnormFusionPass
from tests.passes.amct_check import apply_passes, assert_same_outputs, conv, fused_bn, placeholder, toy_graph


@pytest.fixture(scope="module")
def conv_bn(load_sample):
    graph = load_sample("conv_bn")
    return graph, *ConvBatchnormFusionPass().apply(graph)


def test_conv_bn_folds_into_conv_plus_bias_add(conv_bn):
    original, fused, result = conv_bn
    (found,) = result.matches
    assert found.anchor == "bn1" and found.nodes == ("conv1", "bn1")
    assert found.weights == ("conv1/kernel/ReadVariableOp",)
    assert found.details["epsilon"] == pytest.approx(1e-3) and found.details["channels"] == 16
    assert len(found.details["scale"]) == 4 and found.details["bias_before"] is None
    rewrite = result.rewrites[0]
    assert rewrite.removed == ("bn1",) and rewrite.modified == ("conv1",)
    assert set(rewrite.created) == {"conv1/folded_filter", "conv1/folded_bias", "conv1/BiasAdd"}
    assert "FusedBatchNormV3" not in fused.op_histogram()
    assert fused.input_node("relu1", 0) == "conv1/BiasAdd" and fused.input_node("conv1/BiasAdd", 0) == "conv1"
    assert "conv1/kernel/resource" not in fused and "bn1/gamma" not in fused  # old weights pruned
    assert fused.const_value("conv1/folded_filter").dtype == np.float32
    assert_same_outputs(original, fused)


def test_folded_values_follow_the_formula(conv_bn):
    original, fused, _ = conv_bn
    gamma, beta, mean, var = (original.const_value(f"bn1/{k}") for k in ("gamma", "beta", "mean", "variance"))
    scale = gamma / np.sqrt(var + original.attr("bn1", "epsilon"))
    np.testing.assert_allclose(fused.const_value("conv1/folded_filter"),
                               original.const_value("conv1/kernel/ReadVariableOp") * scale, rtol=1e-6)
    np.testing.assert_allclose(fused.const_value("conv1/folded_bias"), beta - mean * scale, rtol=1e-5, atol=1e-6)


def test_existing_bias_add_is_reused(load_sample):
    original = load_sample("conv_bias_bn")
    fused, result = ConvBatchnormFusionPass().apply(original)
    rewrite = result.rewrites[0]
    assert rewrite.modified == ("conv1", "conv1/BiasAdd") and rewrite.removed == ("bn1",)
    assert fused.op_histogram()["BiasAdd"] == 1 and fused.input_node("output", 0) == "conv1/BiasAdd"
    details = result.matches[0].details
    assert details["bias_before"] != details["bias_after"] and details["bias_add"] == "conv1/BiasAdd"
    assert_same_outputs(original, fused)


def test_training_mode_is_a_near_miss(load_sample):
    result = ConvBatchnormFusionPass().dry_run(load_sample("conv_bn_training"))
    assert not result.matches
    (miss,) = result.near_misses
    assert miss.anchor == "bn1" and "training mode (is_training=true)" in miss.reason


def test_conv_with_a_second_reader_is_a_near_miss(load_sample):
    result = ConvBatchnormFusionPass().dry_run(load_sample("conv_shared"))
    assert not result.matches
    reason = result.near_misses[0].reason
    assert reason == "conv1 (Conv2D) has 2 consumers: it is also read by side_relu outside the match"


def test_non_constant_filter_is_a_near_miss():
    graph = toy_graph(placeholder("x", (1, 4, 4, 2)), placeholder("w", (1, 1, 2, 3)), conv("conv", "x", "w"),
                      *fused_bn("bn", "conv", 3))
    (miss,) = ConvBatchnormFusionPass().dry_run(graph).near_misses
    assert miss.reason == "the filter of conv (w, Placeholder) is not a constant, so it cannot be folded"


def test_non_constant_bn_parameter_is_a_near_miss():
    nodes = fused_bn("bn", "conv", 3)
    nodes[2] = placeholder("bn/mean", (3,))
    graph = toy_graph(placeholder("x", (1, 4, 4, 2)), make_const("w", np.ones((1, 1, 2, 3), np.float32)),
                      conv("conv", "x", "w"), *nodes)
    (miss,) = ConvBatchnormFusionPass().dry_run(graph).near_misses
    assert "BatchNorm mean (bn/mean, Placeholder) is not a constant" in miss.reason


def test_filter_shared_by_two_convs_is_not_folded():
    graph = toy_graph(placeholder("x", (1, 4, 4, 2)), make_const("w", np.ones((1, 1, 2, 3), np.float32)),
                      make_node("Identity", "w/read", ["w"]), conv("a", "x", "w/read"), conv("b", "x", "w/read"),
                      *fused_bn("bn_a", "a", 3), *fused_bn("bn_b", "b", 3, seed=1))
    result = ConvBatchnormFusionPass().dry_run(graph)
    assert not result.matches
    assert all("weight w/read is shared with" in miss.reason for miss in result.near_misses)


def test_depthwise_and_group_conv_structures_are_left_to_their_passes(load_sample):
    for name in ("depthwise_bn", "group_conv_bn"):
        result = ConvBatchnormFusionPass().dry_run(load_sample(name))
        assert not result.matches and not result.near_misses


def test_model_output_keeps_its_name():
    graph = toy_graph(placeholder("x", (1, 4, 4, 2)), make_const("w", np.ones((1, 1, 2, 3), np.float32)),
                      conv("conv", "x", "w"), *fused_bn("bn", "conv", 3))
    fused, results = apply_passes(graph, ConvBatchnormFusionPass)
    assert fused.outputs() == ["bn"] and fused.op("bn") == "Identity"
    assert results[0].rewrites[0].removed == () and "bn" in results[0].rewrites[0].modified
    assert_same_outputs(graph, fused)
