"""GroupConvBatchnormFusionPass: the BN folds into each branch; concat on another axis is a near miss."""

from __future__ import annotations

import numpy as np

from fuselens.core.graph.nodes import make_const
from fuselens.passes.amct.conv_bn import ConvBatchnormFusionPass
from fuselens.passes.amct.group_conv_bn import GroupConvBatchnormFusionPass
from tests.passes.amct_check import assert_same_outputs


def test_bn_folds_into_every_branch(load_sample):
    original = load_sample("group_conv_bn")
    fused, result = GroupConvBatchnormFusionPass().apply(original)
    (found,) = result.matches
    assert found.details["groups"] == 4 and [b["channel_range"] for b in found.details["branches"]] == [
        [0, 8], [8, 16], [16, 24], [24, 32]]
    assert len(found.weights) == 4 and found.outputs == ("bn1",)
    rewrite = result.rewrites[0]
    assert rewrite.removed == ("bn1",) and "group_conv/concat" in rewrite.modified
    assert [fused.op(i.node) for i in fused.inputs("group_conv/concat")[:4]] == ["BiasAdd"] * 4
    assert fused.input_node("output", 0) == "group_conv/concat" and "FusedBatchNormV3" not in fused.op_histogram()

    gamma, var = original.const_value("bn1/gamma"), original.const_value("bn1/variance")
    scale = gamma / np.sqrt(var + original.attr("bn1", "epsilon"))
    np.testing.assert_allclose(fused.const_value("group_conv/conv_2/folded_filter"),
                               original.const_value("group_conv/kernel_2/ReadVariableOp") * scale[16:24], rtol=1e-6)
    assert_same_outputs(original, fused)


def test_concat_not_on_the_channel_axis_is_a_near_miss(load_sample):
    editor = load_sample("group_conv_bn").editor()
    editor.remove("group_conv/concat/axis")
    editor.add(make_const("group_conv/concat/axis", np.int32(1)))
    (miss,) = GroupConvBatchnormFusionPass().dry_run(editor.build()).near_misses
    assert miss.anchor == "bn1" and "concatenates on axis 1, not the channel axis 3" in miss.reason


def test_plain_conv_bn_does_not_steal_the_group_conv(load_sample):
    result = ConvBatchnormFusionPass().dry_run(load_sample("group_conv_bn"))
    assert not result.matches
