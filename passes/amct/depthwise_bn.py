"""DepthwiseConvBatchnormFusionPass: DepthwiseConv2dNative [+ BiasAdd] + FusedBatchNorm* -> depthwise + BiasAdd."""

from __future__ import annotations

from passes.amct.folding import BatchnormFoldPass
from passes.registry import register


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
