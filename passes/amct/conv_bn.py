"""ConvBatchnormFusionPass: Conv2D [+ BiasAdd] + FusedBatchNorm* (inference) -> Conv2D + BiasAdd."""

from __future__ import annotations

from passes.amct.folding import BatchnormFoldPass
from passes.registry import register


@register
class ConvBatchnormFusionPass(BatchnormFoldPass):
    id = "ConvBatchnormFusionPass"
    title = "Conv2D + BatchNorm -> Conv2D + BiasAdd"
    description = ("Folds an inference FusedBatchNorm/V2/V3 that reads a Conv2D (optionally through a BiasAdd) "
                   "into the convolution: per output channel c, s = gamma / sqrt(var + eps), "
                   "W'[..., c] = W[..., c] * s, b' = (b - mean) * s + beta (b = 0 without BiasAdd). "
                   "The BatchNorm is deleted; the Conv2D keeps its name and feeds a BiasAdd. Filter, bias and "
                   "all BatchNorm parameters must be constants, the conv output must have no other reader.")
    order = 30
    op_type = "Conv2D"
