"""DepthwiseConvBatchnormFusionPass: DepthwiseConv2dNative [+ BiasAdd] + FusedBatchNorm* -> depthwise + BiasAdd."""

from __future__ import annotations

from typing import Any

from fuselens.core.graph import Graph
from fuselens.core.graph.provenance import Rewrite
from fuselens.passes.amct.explain import BN_FORMULA, explain_chain_bn_fold
from fuselens.passes.amct.folding import BatchnormFoldPass
from fuselens.passes.amct.sources import AMCT_DOC, FE_CLOSABLE, FE_CONV_BN
from fuselens.passes.base import Match
from fuselens.passes.registry import register
from fuselens.passes.switch import AMCT, ToolchainSwitch


@register
class DepthwiseConvBatchnormFusionPass(BatchnormFoldPass):
    id = "DepthwiseConvBatchnormFusionPass"
    title = "DepthwiseConv2dNative + BatchNorm -> depthwise + BiasAdd"
    description = ("Folds an inference FusedBatchNorm/V2/V3 that reads a DepthwiseConv2dNative (optionally "
                   "through a BiasAdd) into the depthwise filter [kh, kw, in, multiplier]. Output channel "
                   "c = in_channel * multiplier + m, so s = gamma / sqrt(var + eps) is reshaped to "
                   "[in, multiplier]: W'[..., i, m] = W[..., i, m] * s[i * multiplier + m], "
                   "b' = (b - mean) * s + beta. The BatchNorm is deleted; the depthwise conv feeds a BiasAdd.")
    order = 40
    op_type = "DepthwiseConv2dNative"
    switch = ToolchainSwitch(AMCT, ("Depthwise_Conv+BN fusion",), ge_passes=("ConvBatchnormFusionPass",),
                             note="FE's ConvBatchnormFusionPass also folds a BatchNorm after a depthwise convolution",
                             sources=(AMCT_DOC, FE_CONV_BN, FE_CLOSABLE))

    @classmethod
    def explain(cls, before: Graph, after: Graph, match: Match, rewrite: Rewrite | None,
                channel: int = 0) -> dict[str, Any]:
        return explain_chain_bn_fold(before, after, match, rewrite, kind="depthwise_bn", channel=channel, formula=(
            *BN_FORMULA, "depthwise filter [kh, kw, in, mult]: output channel c = in · mult + m"))
