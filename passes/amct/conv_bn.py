"""ConvBatchnormFusionPass: Conv2D [+ BiasAdd] + FusedBatchNorm* (inference) -> Conv2D + BiasAdd."""

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
    switch = ToolchainSwitch(AMCT, ("Conv+BN fusion",), ge_passes=("ConvBatchnormFusionPass",),
                             sources=(AMCT_DOC, FE_CONV_BN, FE_CLOSABLE))

    @classmethod
    def explain(cls, before: Graph, after: Graph, match: Match, rewrite: Rewrite | None,
                channel: int = 0) -> dict[str, Any]:
        return explain_chain_bn_fold(before, after, match, rewrite, kind="conv_bn", formula=BN_FORMULA,
                                     channel=channel)
