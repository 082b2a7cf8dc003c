"""Models with dozens of matches and test-only passes that break some of them, for bisect and layerwise tests.

The passes are registered only by the tests that use them (monkeypatch.setitem on the registry, or a
plugin file for a CLI process). Every weight and every BatchNorm statistic is random.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

import numpy as np

from fuselens.core.graph import Graph, GraphEditor, TensorRef, proto
from fuselens.core.graph.nodes import make_const, make_node
from fuselens.core.graph.provenance import Rewrite
from fuselens.passes.amct.conv_bn import ConvBatchnormFusionPass
from fuselens.passes.amct.depthwise_bn import DepthwiseConvBatchnormFusionPass
from fuselens.passes.amct.op_bias_mul import OpBiasAddMulFusionPass
from fuselens.passes.base import Match, PassResult
from tests.passes.amct_check import FLOAT, conv, fused_bn, placeholder

BLOCKS = 40
CHANNELS = 4


def conv_bn_chain(blocks: int = BLOCKS, seed: int = 0) -> Graph:
    """x -> blocks x (Conv2D + inference FusedBatchNormV3 + Softsign): one Conv+BN fold per block, anchored
    at `block_<i>/bn`. Softsign keeps values in range (Grappler cannot fuse it with the BN, as it tries
    to with Tanh and fails), so a fault in any block reaches the output."""
    rng = np.random.default_rng(seed)
    nodes = [placeholder("x", [1, 4, 4, CHANNELS])]
    last = "x"
    for i in range(blocks):
        scope = f"block_{i}"
        w = rng.normal(0, 2 / np.sqrt(9 * CHANNELS), (3, 3, CHANNELS, CHANNELS)).astype(np.float32)
        nodes += [make_const(f"{scope}/w", w), conv(f"{scope}/conv", last, f"{scope}/w"),
                  *fused_bn(f"{scope}/bn", f"{scope}/conv", CHANNELS, seed=seed * 1000 + i),
                  make_node("Softsign", f"{scope}/act", [f"{scope}/bn"], {"T": FLOAT})]
        last = f"{scope}/act"
    return Graph.from_nodes(nodes, source="conv_bn_chain")


def shift_folded_bias(editor: GraphEditor, rewrite: Rewrite, shift: float) -> None:
    """The fault: the folded bias of this match is off by `shift` in every channel."""
    [bias] = [n for n in rewrite.created if n.endswith("/folded_bias")]
    tensor = editor.mutable(bias).attr["value"].tensor
    tensor.CopyFrom(proto.ndarray_to_tensor(proto.tensor_to_ndarray(tensor) + np.float32(shift)))


class MisfoldingConvBn(ConvBatchnormFusionPass):
    """Test-only Conv+BN fold that gets the bias of the `victims` matches wrong."""

    id = "MisfoldingConvBnPass"
    default_enabled = False
    order = 998
    victims: ClassVar[frozenset[str]] = frozenset({"block_23/bn"})
    shift = 0.5

    def rewrite(self, graph: Graph, editor: GraphEditor, match: Match) -> Rewrite:
        rewrite = super().rewrite(graph, editor, match)
        if match.anchor in self.victims:
            shift_folded_bias(editor, rewrite, self.shift)
        return rewrite


class PairFaultConvBn(ConvBatchnormFusionPass):
    """Test-only Conv+BN fold that is wrong for `second` only when `first` is fused in the same pass
    (as a fold that wrongly shares a buffer between two matches would be)."""

    id = "PairFaultConvBnPass"
    default_enabled = False
    order = 997
    first, second = "block_6/bn", "block_31/bn"

    def dry_run(self, graph: Graph) -> PassResult:
        result = super().dry_run(graph)
        self._fusing = {m.anchor for m in result.matches}
        return result

    def rewrite(self, graph: Graph, editor: GraphEditor, match: Match) -> Rewrite:
        rewrite = super().rewrite(graph, editor, match)
        if match.anchor == self.second and self.first in self._fusing:
            shift_folded_bias(editor, rewrite, 0.5)
        return rewrite


MOBILENET_VICTIM = "mobilenetv2_1.00_224_1/block_5_depthwise_BN_1/batchnorm/FusedBatchNormV3"


class MisfoldingDepthwiseBn(DepthwiseConvBatchnormFusionPass):
    """Test-only depthwise+BN fold (in place of the real one) that gets MobileNetV2 block 5's bias wrong."""

    id = "MisfoldingDepthwiseBnPass"
    default_enabled = False
    order = 41

    def rewrite(self, graph: Graph, editor: GraphEditor, match: Match) -> Rewrite:
        rewrite = super().rewrite(graph, editor, match)
        if match.anchor == MOBILENET_VICTIM:
            shift_folded_bias(editor, rewrite, 0.25)
        return rewrite


def matmul_chain(blocks: int = 12, width: int = 64, seed: int = 0) -> Graph:
    """x -> blocks x (MatMul + BiasAdd + Mul by a random scalar + Softsign): one AMCT fold per block
    (the Mul goes into the weights), anchored at `block_<i>/scale`."""
    rng = np.random.default_rng(seed)
    nodes = [placeholder("x", [1, width])]
    last = "x"
    for i in range(blocks):
        scope = f"block_{i}"
        nodes += [make_const(f"{scope}/w", rng.normal(0, 1 / np.sqrt(width), (width, width)).astype(np.float32)),
                  make_node("MatMul", f"{scope}/matmul", [last, f"{scope}/w"],
                            {"T": FLOAT, "transpose_a": False, "transpose_b": False}),
                  make_const(f"{scope}/b", rng.normal(0, 0.1, width).astype(np.float32)),
                  make_node("BiasAdd", f"{scope}/bias", [f"{scope}/matmul", f"{scope}/b"], {"T": FLOAT}),
                  make_const(f"{scope}/s", np.float32(rng.uniform(0.5, 1.5))),
                  make_node("Mul", f"{scope}/scale", [f"{scope}/bias", f"{scope}/s"], {"T": FLOAT}),
                  make_node("Softsign", f"{scope}/act", [f"{scope}/scale"], {"T": FLOAT})]
        last = f"{scope}/act"
    return Graph.from_nodes(nodes, source="matmul_chain")


class SlowMatMulFold(OpBiasAddMulFusionPass):
    """Test-only MatMul+BiasAdd+Mul fold that is right but slow for the `victims`: their result also
    feeds a [1024, 64] x [64, 1024] MatMul whose sum is added times zero (milliseconds of work that
    changes no value), as a fusion the CPU runs badly would be. Deterministic enough to time on a
    busy machine, unlike a few microseconds of real kernel launch overhead."""

    id = "SlowMatMulFoldPass"
    default_enabled = False
    order = 999
    victims: ClassVar[frozenset[str]] = frozenset({"block_3/scale", "block_9/scale"})

    def rewrite(self, graph: Graph, editor: GraphEditor, match: Match) -> Rewrite:
        rewrite = super().rewrite(graph, editor, match)
        if match.anchor not in self.victims:
            return rewrite
        out = match.nodes[-2]  # the BiasAdd the Mul's readers now read
        scope = f"{match.anchor}/waste"
        rng = np.random.default_rng(0)
        width = int(graph.output_shape(out)[-1])
        waste = [make_const(f"{scope}/multiples", np.array([1024, 1], np.int32)),
                 make_node("Tile", f"{scope}/tile", [out, f"{scope}/multiples"],
                           {"T": FLOAT, "Tmultiples": proto.AttrValue(type=proto.DT_INT32)}),
                 make_const(f"{scope}/w", rng.normal(size=(width, 1024)).astype(np.float32)),
                 make_node("MatMul", f"{scope}/matmul", [f"{scope}/tile", f"{scope}/w"],
                           {"T": FLOAT, "transpose_a": False, "transpose_b": False}),
                 make_const(f"{scope}/axes", np.array([0, 1], np.int32)),
                 make_node("Sum", f"{scope}/sum", [f"{scope}/matmul", f"{scope}/axes"],
                           {"T": FLOAT, "Tidx": proto.AttrValue(type=proto.DT_INT32), "keep_dims": False}),
                 make_const(f"{scope}/zero", np.float32(0)),
                 make_node("Mul", f"{scope}/times_zero", [f"{scope}/sum", f"{scope}/zero"], {"T": FLOAT}),
                 make_node("AddV2", f"{scope}/add", [out, f"{scope}/times_zero"], {"T": FLOAT})]
        editor.redirect(TensorRef(out), TensorRef(f"{scope}/add"), exclude=[f"{scope}/tile", f"{scope}/add"])
        for node in waste:
            editor.add(node, after=out)
        return replace(rewrite, created=(*rewrite.created, *(n.name for n in waste)))
