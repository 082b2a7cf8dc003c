"""SmallOpBatchnormFusionPass: Keras BatchNormalization written as small ops -> FusedBatchNormV3.

tf.nn.batch_normalization (Keras BatchNormalization(fused=False) at inference, and every
BatchNormalization of a frozen Keras 3 model) writes, under NAME/batchnorm/:

    inv = Rsqrt(var + eps) [* gamma]
    y   = x * inv + (beta - mean * inv)     # center=False: + (-mean) * inv

The pass turns it into one FusedBatchNormV3 (is_training=false) so that the conv BatchNorm folds
then remove it; it runs before them in the AMCT family.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from fuselens.core.graph import Graph, GraphEditor, TensorRef, proto
from fuselens.core.graph.nodes import make_const, make_node
from fuselens.core.graph.provenance import Rewrite
from fuselens.passes.amct.explain import GLYPHS
from fuselens.passes.amct.folding import (
    CONV_TYPES,
    AmctPass,
    batchnorm_affine,
    constant_value,
    find_chain,
    fit_problem,
    preview,
    replace_node,
)
from fuselens.passes.amct.sources import AMCT_DOC, FE_CONV3D_BN
from fuselens.passes.base import Match, NearMiss, Reason, reading_edge
from fuselens.passes.explain import display_number, saved_nodes, tensor_bytes
from fuselens.passes.pattern import ANY, MatchResult, Op, match
from fuselens.passes.registry import register
from fuselens.passes.switch import AMCT, ToolchainSwitch

FUSED_BN_DTYPES = frozenset({proto.DT_FLOAT, proto.DT_HALF, proto.types_pb2.DT_BFLOAT16})
PARAMS = ("gamma", "beta", "mean", "variance")  # FusedBatchNormV3 inputs 1..4
CONSTANTS = ("variance", "epsilon", "mean", "gamma", "beta")
DEFAULTS = {"gamma": 1.0, "beta": 0.0}  # what scale=False / center=False leave out


def _variant(center: bool, scale: bool) -> Op:
    """The structure; the parameters bind to any node and _refusal() says which one is not a constant."""
    rsqrt = Op("Rsqrt", "rsqrt", [Op("Add|AddV2", "add_eps", [Op("*", "variance"), Op("*", "epsilon")])])
    inv = Op("Mul", "inv", [rsqrt, Op("*", "gamma")]) if scale else rsqrt
    mean = Op("*", "mean") if center else Op("Neg", "neg", [Op("*", "mean")])
    mean_mul = Op("Mul", "mul_mean", [mean, inv])
    shift = Op("Sub", "sub", [Op("*", "beta"), mean_mul]) if center else mean_mul
    return Op("Add|AddV2", "add", [Op("Mul", "mul_x", [ANY, inv]), shift])


VARIANTS = {
    "default": _variant(center=True, scale=True),
    "center=False": _variant(center=False, scale=True),
    "scale=False": _variant(center=True, scale=False),
    "center=False, scale=False": _variant(center=False, scale=False),
}
OP_ROLES = ("add", "mul_x", "inv", "rsqrt", "add_eps", "mul_mean", "neg", "sub")  # the nodes replaced
TERMS = {  # binding role -> (term it computes, in words)
    "add_eps": ("σ² + ε", "variance plus epsilon"),
    "rsqrt": ("1 / √(σ² + ε)", "the reciprocal standard deviation"),
    "inv": ("s = γ / √(σ² + ε)", "the per-channel scale"),
    "mul_x": ("x · s", "the scaled input"),
    "neg": ("−μ", "the negated mean (center=False)"),
    "mul_mean": ("μ · s", "the mean, scaled"),
    "sub": ("β − μ · s", "the shift"),
    "add": ("y = x · s + (β − μ · s)", "the output"),
}


def per_channel(value: np.ndarray, channels: int) -> np.ndarray | None:
    """The parameter as one float32 per channel of the last axis, or None if it is not that."""
    if value.size == 1:
        return np.full(channels, value.reshape(()), np.float32)
    if value.ndim >= 1 and value.shape[-1] == channels and value.size == channels:
        return value.reshape(channels).astype(np.float32)
    return None


@register
class SmallOpBatchnormFusionPass(AmctPass):
    id = "SmallOpBatchnormFusionPass"
    title = "Keras small-op BatchNorm -> FusedBatchNormV3"
    description = ("A BatchNormalization written as small ops (AddV2 / Rsqrt / Mul / Mul / Mul / Sub / AddV2: "
                   "y = x * inv + (beta - mean * inv), inv = gamma / sqrt(var + eps)) in its four Keras variants "
                   "(default, center=False, scale=False, both False) after a Conv2D or DepthwiseConv2dNative "
                   "(optionally + BiasAdd) with a 4-D input becomes one FusedBatchNormV3 (is_training=false, "
                   "epsilon from the add constant, gamma = 1 and beta = 0 where the variant has none), so the "
                   "conv BatchNorm folds that run next can fold it.")
    order = 10
    switch = ToolchainSwitch(
        AMCT, ("fusion of small BN operators into FusedBatchNormV3",),
        note="FE's only small-op BatchNorm pass, ABatchnormFusionPass, folds one after a Conv3D, not this structure",
        sources=(AMCT_DOC, FE_CONV3D_BN))

    def candidates(self, graph: Graph) -> Iterable[Match | NearMiss]:
        for add in graph.with_op(("Add", "AddV2")):
            variant, result = self._best_variant(graph, add)
            if result is None:
                continue  # nothing BatchNorm-like ends here
            nodes = tuple(result.bindings[r] for r in OP_ROLES if r in result.bindings)
            nodes += tuple(n for n in result.nodes if n not in nodes)  # where a failed match stopped
            # computed statistics first: a LayerNorm is not "a BatchNorm that needs Sub"
            reason = self._computed_statistics(graph, result.bindings) or result.refusal \
                or self._refusal(graph, result.bindings)
            if reason:
                yield NearMiss(self.id, add, nodes, reason, bindings=dict(result.bindings))
                continue
            b = result.bindings
            x = graph.inputs(b["mul_x"])[0]
            params = {role: b.get(role, f"({'ones' if role == 'gamma' else 'zeros'})") for role in PARAMS}
            yield Match(self.id, add, nodes, (add,),
                        f"{b['rsqrt'].rsplit('/', 1)[0]} ({variant}) -> FusedBatchNormV3",
                        bindings=b, details={"variant": variant, "input": str(x),
                                             "epsilon": float(constant_value(graph, b["epsilon"]).reshape(())),
                                             "channels": graph.output_shape(x.node, x.port)[-1], **params,
                                             "mean_values": preview(constant_value(graph, b["mean"]))})

    @staticmethod
    def _best_variant(graph: Graph, add: str) -> tuple[str, MatchResult | None]:
        """The variant that matches; else the deepest failure that got as far as the Rsqrt; else None."""
        best: tuple[str, MatchResult | None] = ("", None)
        for variant, pattern in VARIANTS.items():
            result = match(graph, pattern, add)
            if result.ok:
                return variant, result
            if "rsqrt" in result.bindings and (best[1] is None or result.depth > best[1].depth):
                best = (variant, result)
        return best

    def _computed_statistics(self, graph: Graph, b: dict[str, str]) -> Reason | None:
        """Whether a parameter bound so far (also by a failed match) is computed, not a constant."""
        for role in CONSTANTS:
            if role in b and not self.is_constant(graph, b[role]):
                return Reason(f"the BatchNorm {role} {b[role]} ({graph.op(b[role])}) is not a constant: this "
                              "normalises with computed statistics (e.g. a LayerNorm), not an inference BatchNorm",
                              b[role], edge=reading_edge(graph, b[role], b.values()))
        return None

    def _refusal(self, graph: Graph, b: dict[str, str]) -> Reason | None:
        x = graph.inputs(b["mul_x"])[0]
        into_x = (x.node, b["mul_x"])
        shape = graph.output_shape(x.node, x.port)
        if shape is None:
            return Reason(f"shape unknown: the BatchNorm input {x} records no shape and its op's shape cannot be "
                          "derived without TensorFlow; FusedBatchNormV3 needs a 4-D input", x.node, edge=into_x)
        if len(shape) != 4:
            return Reason(f"the BatchNorm input {x} is {len(shape)}-D; FusedBatchNormV3 needs a 4-D input", x.node,
                          edge=into_x)
        chain, _ = find_chain(graph, x.node, CONV_TYPES)
        if chain is None:
            return Reason(f"the BatchNorm input {x} ({graph.op(x.node)}) is not a Conv2D or DepthwiseConv2dNative "
                          "[+ BiasAdd]: AMCT converts small-op BatchNorms only after a conv", x.node, edge=into_x)
        if graph.node(b["mul_x"]).attr["T"].type not in FUSED_BN_DTYPES:
            return Reason(f"{b['mul_x']} computes in {proto.dtype_name(graph.node(b['mul_x']).attr['T'].type)}, "
                          "which FusedBatchNormV3 does not support", b["mul_x"])
        if shape[-1] is None:
            return Reason(f"the channel count of {x} (its last dimension) is unknown", x.node, edge=into_x)
        if constant_value(graph, b["epsilon"]).size != 1:
            return Reason(f"the epsilon {b['epsilon']} is not a scalar", b["epsilon"])
        for role in PARAMS:
            if role in b and per_channel(constant_value(graph, b[role]), shape[-1]) is None:
                return Reason(f"the {role} {b[role]} has shape {list(constant_value(graph, b[role]).shape)}, not one "
                              f"value per channel of the last axis ({shape[-1]})", b[role])
        return self._dtype_refusal(graph, b)

    @staticmethod
    def _dtype_refusal(graph: Graph, b: dict[str, str]) -> Reason | None:
        """The small ops compute the scale and shift in the graph's dtype, FusedBatchNormV3 in float32: where
        that dtype cannot hold them (float16 overflows at 65504), fusing would change the numbers."""
        dtype = proto.np_dtype(graph.node(b["mul_x"]).attr["T"].type)
        values = {role: constant_value(graph, b[role]) if role in b else DEFAULTS[role] for role in PARAMS}
        affine = batchnorm_affine(**values, epsilon=float(constant_value(graph, b["epsilon"]).reshape(())))
        scope = b["rsqrt"].rsplit("/", 1)[0]
        for what, exact in (("scale gamma / sqrt(variance + epsilon)", affine.scale),
                            ("shift beta - mean * scale", affine.shift)):
            problem = fit_problem(np.asarray(exact), dtype, f"the {what} of {scope}")
            if problem:
                return Reason(f"{problem}: the small ops compute it in {np.dtype(dtype).name}, FusedBatchNormV3 in "
                              "float32, so fusing would change the numbers", b.get("inv", b["rsqrt"]))
        return None

    def rewrite(self, graph: Graph, editor: GraphEditor, found: Match) -> Rewrite:
        b = found.bindings
        x = graph.inputs(b["mul_x"])[0]
        channels = graph.output_shape(x.node, x.port)[-1]
        scope = b["rsqrt"].rsplit("/", 1)[0]
        inputs, created = [str(x)], []
        for role in PARAMS:
            value = constant_value(graph, b[role]) if role in b else np.full(channels, DEFAULTS[role], np.float32)
            if role in b and graph.is_const(b[role]) and value.shape == (channels,) and value.dtype == np.float32:
                inputs.append(b[role])
                continue
            name = editor.unique_name(f"{scope}/{role}")
            editor.add(make_const(name, per_channel(value, channels)), after=found.anchor)
            inputs.append(name)
            created.append(name)
        fused = make_node("FusedBatchNormV3", editor.unique_name(f"{scope}/FusedBatchNormV3"), inputs, {
            "T": graph.node(b["mul_x"]).attr["T"], "U": proto.AttrValue(type=proto.DT_FLOAT),
            "epsilon": float(constant_value(graph, b["epsilon"]).reshape(())), "data_format": "NHWC",
            "is_training": False, "exponential_avg_factor": 1.0})
        x_shapes = graph.recorded_shapes(x.node)
        editor.add(fused, after=found.anchor,
                   shapes=[x_shapes[x.port], *[(channels,)] * 4, None] if x_shapes else None)
        editor.remove(*found.nodes)
        _, kept = replace_node(graph, editor, found.anchor, fused.name)
        return Rewrite(self.id, found.index, removed=tuple(n for n in found.nodes if n not in kept),
                       modified=kept, created=(fused.name, *created))

    @classmethod
    def explain(cls, before: Graph, after: Graph, match: Match, rewrite: Rewrite | None,
                channel: int = 0) -> dict[str, Any]:
        """Which small op is which term, and one channel's values."""
        b = match.bindings
        channels = int(match.details["channels"])
        channel = min(channel, channels - 1)
        values: dict[str, float] = {}
        for role in PARAMS:
            value = constant_value(before, b[role]) if role in b else np.full(channels, 1.0 if role == "gamma" else 0.0)
            values[GLYPHS[role]] = display_number(np.asarray(value).reshape(-1)[channel % np.asarray(value).size])
        values["ε"] = display_number(match.details["epsilon"])
        scale = values["γ"] / np.sqrt(values["σ²"] + values["ε"])
        terms = [{"node": b[role], "op": before.op(b[role]), "term": term, "meaning": meaning}
                 for role, (term, meaning) in TERMS.items() if role in b]
        created = rewrite.after if rewrite else ()
        fused = next((n for n in created if n in after and after.op(n) == "FusedBatchNormV3"), None)
        shown: dict[str, Any] = {"channel": channel, **values, "s": display_number(scale),
                                 "shift": display_number(values["β"] - values["μ"] * scale), "fused_node": fused}
        if fused:
            shown["fused_inputs"] = {
                GLYPHS[role]: display_number(constant_value(after, after.input_node(fused, i + 1)).reshape(-1)[channel])
                for i, role in enumerate(PARAMS)}
            shown["fused_epsilon"] = display_number(after.attr(fused, "epsilon"))
        x = TensorRef.parse(match.details["input"])
        size = tensor_bytes(before, x)
        intermediates = [{"tensor": b[r], "bytes": size} for r in ("mul_x",) if r in b]
        return {"family": "amct", "kind": "small_op_bn", "title": f"{len(terms)} small ops -> one FusedBatchNormV3 "
                f"({match.details['variant']})",
                "formula": ["y = x · s + (β − μ · s),  s = γ / √(σ² + ε)", "FusedBatchNormV3(x, γ, β, μ, σ², ε) "
                            "computes the same y in one op (is_training = false), which the conv fold then removes"],
                "terms": terms, "example": shown,
                "saved": {**saved_nodes(before, after, match, rewrite), "intermediates": intermediates}}
