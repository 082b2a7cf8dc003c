"""DepthwiseConvBatchnormFusionPass: channel in*multiplier+m, rewrite records, numbers."""

from __future__ import annotations

import numpy as np

from fuselens.passes.amct.depthwise_bn import DepthwiseConvBatchnormFusionPass
from tests.passes.amct_check import assert_same_outputs


def test_depthwise_bn_folds_with_the_multiplier_channel_order(load_sample):
    original = load_sample("depthwise_bn")
    fused, result = DepthwiseConvBatchnormFusionPass().apply(original)
    (found,) = result.matches
    assert found.nodes == ("dw1", "bn1") and found.details["filter_shape"] == [3, 3, 8, 2]
    assert result.rewrites[0].modified == ("dw1",) and "dw1/BiasAdd" in result.rewrites[0].created
    assert fused.input_node("output", 0) == "dw1/BiasAdd" and "FusedBatchNormV3" not in fused.op_histogram()

    gamma, var = original.const_value("bn1/gamma"), original.const_value("bn1/variance")
    scale = gamma / np.sqrt(var + original.attr("bn1", "epsilon"))  # 16 channels, index in*2 + m
    weights = original.const_value("dw1/depthwise_kernel/ReadVariableOp")
    np.testing.assert_allclose(fused.const_value("dw1/folded_filter"), weights * scale.reshape(8, 2), rtol=1e-6)
    assert_same_outputs(original, fused)


def test_plain_conv_bn_is_not_claimed(load_sample):
    result = DepthwiseConvBatchnormFusionPass().dry_run(load_sample("conv_bn"))
    assert not result.matches and not result.near_misses


def test_training_mode_is_a_near_miss(load_sample):
    from fuselens.core.graph.nodes import make_attr

    graph = load_sample("depthwise_bn")
    editor = graph.editor()
    editor.mutable("bn1").attr["is_training"].CopyFrom(make_attr(True))
    (miss,) = DepthwiseConvBatchnormFusionPass().dry_run(editor.build()).near_misses
    assert "training mode" in miss.reason
