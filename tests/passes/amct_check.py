"""Helpers shared by the AMCT pass tests: run passes, compare numbers, build tiny graphs by hand."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from fuselens.core.formats.execute import random_feeds, run_graph
from fuselens.core.graph import Graph, proto
from fuselens.core.graph.nodes import make_const, make_node
from fuselens.passes.base import FusionPass, PassResult

FLOAT = proto.AttrValue(type=proto.DT_FLOAT)
BN_ROLES = ("gamma", "beta", "mean", "variance")


def type_attr(dtype: np.dtype) -> proto.AttrValue:
    return proto.AttrValue(type=proto.tf_dtype(dtype))


def apply_passes(graph: Graph, *passes: type[FusionPass]) -> tuple[Graph, list[PassResult]]:
    """Apply the passes one after the other (no general scope pass in between)."""
    results = []
    for cls in passes:
        graph, result = cls().apply(graph)
        results.append(result)
    return graph, results


def assert_same_outputs(original: Graph, fused: Graph, fetches: Sequence[str] | None = None, seed: int = 0) -> None:
    """The fetches (default: the model outputs) agree on seeded random feeds, fp32 rtol 1e-4 / atol 1e-5."""
    feeds = random_feeds(original, seed)
    fetches = list(fetches or original.outputs())
    before, after = run_graph(original, feeds, fetches), run_graph(fused, feeds, fetches)
    for name in fetches:
        assert before[name].size and np.abs(before[name]).max() > 0, f"{name} is all zeros: the check proves nothing"
        np.testing.assert_allclose(after[name], before[name], rtol=1e-4, atol=1e-5, err_msg=name)


def toy_graph(*nodes: proto.NodeDef) -> Graph:
    return Graph.from_nodes(nodes, source="toy")


def placeholder(name: str, shape: Sequence[int], dtype: np.dtype = np.float32) -> proto.NodeDef:
    shape_attr = proto.AttrValue(shape=proto.shape_proto(shape))
    return make_node("Placeholder", name, attrs={"dtype": type_attr(dtype), "shape": shape_attr})


def conv(name: str, x: str, w: str, dtype: np.dtype = np.float32) -> proto.NodeDef:
    return make_node("Conv2D", name, [x, w], {"T": type_attr(dtype), "strides": [1, 1, 1, 1], "padding": "SAME"})


def fused_bn(name: str, x: str, channels: int, *, seed: int = 0) -> list[proto.NodeDef]:
    """A FusedBatchNormV3 (inference) with random constant parameters, the BN node last."""
    rng = np.random.default_rng(seed)
    params = [make_const(f"{name}/{role}", rng.uniform(0.5, 1.5, channels).astype(np.float32))
              for role in ("gamma", "beta", "mean", "variance")]
    bn = make_node("FusedBatchNormV3", name, [x, *(p.name for p in params)],
                   {"T": FLOAT, "U": FLOAT, "epsilon": 1e-3, "is_training": False})
    return [*params, bn]


# ---- graphs in any dtype, with magnitudes chosen to fit, overflow or underflow ----------------------
class Magnitudes(NamedTuple):
    """Orders of magnitude of a random fold: the per-channel scale s (BatchNorm gamma / sqrt(var + eps), or
    the Mul factor), the weights, the inputs, the BatchNorm variance and epsilon. The folded filter is
    about weights * scale; the original's output about weights * inputs * scale."""

    scale: float
    weights: float = 1.0
    inputs: float = 1.0
    variance: float = 1.0
    epsilon: float = 1e-3


def random_bn_statistics(rng: np.random.Generator, channels: int, size: Magnitudes) -> dict[str, np.ndarray]:
    """Random inference BatchNorm statistics (float64) whose scale gamma / sqrt(var + eps) is about size.scale
    with random signs, and whose mean and shift are of the size of the conv output and the BN output."""
    output = size.weights * size.inputs
    variance = rng.uniform(0.5, 1.5, channels) * size.variance
    gamma = rng.choice([-1.0, 1.0], channels) * rng.uniform(0.5, 1.5, channels) * size.scale \
        * np.sqrt(variance + size.epsilon)
    return {"gamma": gamma, "beta": rng.normal(0.0, 1.0, channels) * output * size.scale,
            "mean": rng.normal(0.0, 1.0, channels) * output, "variance": variance}


def random_const(name: str, rng: np.random.Generator, shape: Sequence[int], magnitude: float,
                 dtype: np.dtype) -> proto.NodeDef:
    """A Const of normal random values times `magnitude`, computed in float64 and cast once."""
    return make_const(name, (rng.normal(0.0, 1.0, shape) * magnitude).astype(dtype))


def batch_norm(name: str, x: str, statistics: Mapping[str, np.ndarray], dtype: np.dtype,
               epsilon: float) -> list[proto.NodeDef]:
    """A FusedBatchNormV3 (inference) on a `dtype` input; its parameters are float32, as TensorFlow's are."""
    params = [make_const(f"{name}/{role}", statistics[role].astype(np.float32)) for role in BN_ROLES]
    bn = make_node("FusedBatchNormV3", name, [x, *(p.name for p in params)],
                   {"T": type_attr(dtype), "U": FLOAT, "epsilon": epsilon, "is_training": False})
    return [*params, bn]


def conv_bias_bn_graph(dtype: np.dtype, size: Magnitudes, seed: int = 0) -> Graph:
    """x [1,5,5,3] -> Conv2D 3x3 -> BiasAdd -> FusedBatchNormV3 "bn" (4 channels), random everything."""
    rng = np.random.default_rng(seed)
    return toy_graph(placeholder("x", (1, 5, 5, 3), dtype), random_const("w", rng, (3, 3, 3, 4), size.weights, dtype),
                     conv("conv", "x", "w", dtype), random_const("b", rng, (4,), size.weights * size.inputs, dtype),
                     make_node("BiasAdd", "conv/BiasAdd", ["conv", "b"], {"T": type_attr(dtype)}),
                     *batch_norm("bn", "conv/BiasAdd", random_bn_statistics(rng, 4, size), dtype, size.epsilon))


def depthwise_bn_graph(dtype: np.dtype, size: Magnitudes, seed: int = 0) -> Graph:
    """x [1,5,5,3] -> DepthwiseConv2dNative 3x3, multiplier 2 -> FusedBatchNormV3 "bn" (6 channels)."""
    rng = np.random.default_rng(seed)
    depthwise = make_node("DepthwiseConv2dNative", "dw", ["x", "w"],
                          {"T": type_attr(dtype), "strides": [1, 1, 1, 1], "padding": "SAME"})
    return toy_graph(placeholder("x", (1, 5, 5, 3), dtype), random_const("w", rng, (3, 3, 3, 2), size.weights, dtype),
                     depthwise, *batch_norm("bn", "dw", random_bn_statistics(rng, 6, size), dtype, size.epsilon))


def group_conv_bn_graph(dtype: np.dtype, size: Magnitudes, seed: int = 0) -> Graph:
    """x [1,5,5,4] -> Split in 2 -> 2 x Conv2D 3x3 (2 -> 3 channels) -> ConcatV2 -> FusedBatchNormV3 "bn"."""
    rng = np.random.default_rng(seed)
    t = type_attr(dtype)
    nodes = [placeholder("x", (1, 5, 5, 4), dtype), make_const("split/dim", np.asarray(3, np.int32)),
             make_node("Split", "split", ["split/dim", "x"], {"T": t, "num_split": 2}),
             make_const("concat/axis", np.asarray(3, np.int32))]
    for k in range(2):
        nodes += [random_const(f"w{k}", rng, (3, 3, 2, 3), size.weights, dtype),
                  conv(f"conv{k}", f"split:{k}", f"w{k}", dtype)]
    nodes.append(make_node("ConcatV2", "concat", ["conv0", "conv1", "concat/axis"],
                           {"T": t, "N": 2, "Tidx": proto.AttrValue(type=proto.DT_INT32)}))
    return toy_graph(*nodes, *batch_norm("bn", "concat", random_bn_statistics(rng, 6, size), dtype, size.epsilon))


def op_bias_mul_graph(dtype: np.dtype, size: Magnitudes, op: str = "Conv2D", seed: int = 0) -> Graph:
    """x -> Conv2D 3x3 [1,5,5,3] -> [.., 4] (or MatMul [2,5] x [5,4]) -> BiasAdd -> Mul "mul" by a random
    scalar Const of about size.scale."""
    rng = np.random.default_rng(seed)
    t = type_attr(dtype)
    if op == "Conv2D":
        head = [placeholder("x", (1, 5, 5, 3), dtype), random_const("w", rng, (3, 3, 3, 4), size.weights, dtype),
                conv("op", "x", "w", dtype)]
    else:
        head = [placeholder("x", (2, 5), dtype), random_const("w", rng, (5, 4), size.weights, dtype),
                make_node("MatMul", "op", ["x", "w"], {"T": t})]
    factor = rng.choice([-1.0, 1.0]) * rng.uniform(0.5, 1.5) * size.scale
    return toy_graph(*head, random_const("b", rng, (4,), size.weights * size.inputs, dtype),
                     make_node("BiasAdd", "op/BiasAdd", ["op", "b"], {"T": t}),
                     make_const("factor", np.asarray(factor).astype(dtype)),
                     make_node("Mul", "mul", ["op/BiasAdd", "factor"], {"T": t}))


def small_op_bn_graph(dtype: np.dtype, size: Magnitudes, seed: int = 0) -> Graph:
    """x [1,5,5,3] -> Conv2D 3x3 -> a Keras small-op BatchNorm "bn/batchnorm/..." (its constants in `dtype`)
    -> Relu "out"."""
    rng = np.random.default_rng(seed)
    t = type_attr(dtype)
    statistics = random_bn_statistics(rng, 4, size)
    scope = "bn/batchnorm"

    def binary(op: str, name: str, a: str, b: str) -> proto.NodeDef:
        return make_node(op, f"{scope}/{name}", [a, b], {"T": t})

    return toy_graph(
        placeholder("x", (1, 5, 5, 3), dtype), random_const("w", rng, (3, 3, 3, 4), size.weights, dtype),
        conv("conv", "x", "w", dtype),
        *(make_const(f"bn/{role}", statistics[role].astype(dtype)) for role in BN_ROLES),
        make_const(f"{scope}/epsilon", np.asarray(size.epsilon).astype(dtype)),
        binary("AddV2", "add", "bn/variance", f"{scope}/epsilon"),
        make_node("Rsqrt", f"{scope}/Rsqrt", [f"{scope}/add"], {"T": t}),
        binary("Mul", "mul", f"{scope}/Rsqrt", "bn/gamma"),
        binary("Mul", "mul_1", "conv", f"{scope}/mul"),
        binary("Mul", "mul_2", "bn/mean", f"{scope}/mul"),
        binary("Sub", "sub", "bn/beta", f"{scope}/mul_2"),
        binary("AddV2", "add_1", f"{scope}/mul_1", f"{scope}/sub"),
        make_node("Relu", "out", [f"{scope}/add_1"], {"T": t}))


def dtype_feeds(graph: Graph, inputs: float, seed: int = 0) -> dict[str, np.ndarray]:
    """Normal random placeholders times `inputs`, in each placeholder's dtype (bfloat16 too: random_feeds
    takes bfloat16, which numpy does not count as floating, for an integer type)."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for name in graph.placeholders():
        dtype = proto.np_dtype(graph.node(name).attr["dtype"].type)
        feeds[name] = (rng.normal(0.0, 1.0, graph.placeholder_spec(name)[1]) * inputs).astype(dtype)
    return feeds


def reference_outputs(graph: Graph, feeds: Mapping[str, np.ndarray], fetches: Sequence[str]) -> dict[str, np.ndarray]:
    """The fetches computed by numpy in float64 (SAME stride-1 convolutions, NHWC): the original's numbers
    where TensorFlow's CPU kernels refuse its dtype (FusedBatchNorm* has no float64 kernel, nor op)."""
    values: dict[str, list[np.ndarray]] = {}

    def tensor(ref: str) -> np.ndarray:
        node, _, port = ref.partition(":")
        if node not in values:
            values[node] = evaluate(node)
        return values[node][int(port or 0)]

    def evaluate(node: str) -> list[np.ndarray]:
        op = graph.op(node)
        if op == "Placeholder":
            return [np.asarray(feeds[node], np.float64)]
        if op == "Const":
            return [np.asarray(graph.const_value(node), np.float64)]
        args = [tensor(str(ref)) for ref in graph.inputs(node)]
        if op == "Split":
            return np.split(args[1], graph.attr(node, "num_split"), axis=int(args[0]))
        if op == "ConcatV2":
            return [np.concatenate(args[:-1], axis=int(args[-1]))]
        if op.startswith("FusedBatchNorm"):
            x, gamma, beta, mean, variance = args
            return [(x - mean) * gamma / np.sqrt(variance + graph.attr(node, "epsilon")) + beta]
        simple = {"Identity": lambda a: a, "Rsqrt": lambda a: 1.0 / np.sqrt(a), "BiasAdd": np.add, "AddV2": np.add,
                  "Mul": np.multiply, "Sub": np.subtract, "MatMul": np.matmul, "Conv2D": _conv,
                  "DepthwiseConv2dNative": _depthwise}
        return [simple[op](*args)]

    return {name: tensor(name) for name in fetches}


def _windows(x: np.ndarray, kh: int, kw: int) -> list[tuple[int, int, np.ndarray]]:
    """(i, j, the input shifted by the kernel offset (i, j)) over a SAME-padded NHWC input."""
    top, left = (kh - 1) // 2, (kw - 1) // 2
    padded = np.pad(x, ((0, 0), (top, kh - 1 - top), (left, kw - 1 - left), (0, 0)))
    return [(i, j, padded[:, i:i + x.shape[1], j:j + x.shape[2], :]) for i in range(kh) for j in range(kw)]


def _conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return sum(window @ w[i, j] for i, j, window in _windows(x, *w.shape[:2]))


def _depthwise(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    out = sum(window[..., None] * w[i, j] for i, j, window in _windows(x, *w.shape[:2]))
    return out.reshape(*out.shape[:3], -1)
