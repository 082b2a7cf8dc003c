"""Dry run and apply of every AMCT pass, next to TensorFlow Grappler's optimisation of the same graph.

    .venv/bin/python benchmarks/bench_amct.py [--sizes 1000,5000,20000] [--repeat 3]

Graphs: frozen Keras ResNet50 (sample `resnet50`) and synthetic stacks of blocks built as a
GraphDef with core.graph.nodes (no TensorFlow needed to build them), each block one of:
Conv2D + FusedBatchNormV3 + Relu, DepthwiseConv2dNative + Keras small-op BatchNorm + Relu6,
Conv2D + BiasAdd + Mul(scalar). Every block is a match, so the cost per node is the cost of real
work. "dry run" runs every AMCT pass's dry run on the input graph; "apply" chains the passes in
toolchain order (what `fuselens fuse` does for the AMCT family) and counts their matches.
Best of `--repeat` runs.
Grappler: `tf_optimizer.OptimizeGraph` with TensorFlow's default rewriter config, fetching the
graph's outputs, timed once per graph in the same process.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from fuselens.core.graph import Graph, proto  # noqa: E402
from fuselens.core.graph.nodes import make_const, make_node  # noqa: E402

CHANNELS = 8
SPATIAL = 8
FLOAT = {"T": proto.AttrValue(type=proto.DT_FLOAT)}


def _shapes(*shapes: tuple[int, ...]) -> proto.AttrValue:
    attr = proto.AttrValue()
    for shape in shapes:
        attr.list.shape.add().CopyFrom(proto.shape_proto(shape))
    return attr


class SyntheticBuilder:
    """A GraphDef built node by node, every node with `_output_shapes` (as a frozen graph has)."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.graph_def = proto.GraphDef()
        self.activation = (1, SPATIAL, SPATIAL, CHANNELS)

    def node(self, op: str, name: str, inputs: list[str], attrs: dict | None = None,
             shapes: tuple[tuple[int, ...], ...] | None = None, *, typed: bool = True) -> str:
        node = make_node(op, name, inputs, {**(FLOAT if typed else {}), **(attrs or {})})
        node.attr["_output_shapes"].CopyFrom(_shapes(*(shapes or (self.activation,))))
        self.graph_def.node.append(node)
        return name

    def const(self, name: str, value: np.ndarray) -> str:
        node = make_const(name, value)
        node.attr["_output_shapes"].CopyFrom(_shapes(value.shape))
        self.graph_def.node.append(node)
        return name

    def weight(self, name: str, shape: tuple[int, ...]) -> str:
        const = self.const(f"{name}/resource", self.rng.normal(0, 0.3, shape).astype(np.float32))
        return self.node("Identity", f"{name}/ReadVariableOp", [const], shapes=(shape,))

    def stats(self, name: str) -> dict[str, str]:
        c = CHANNELS
        values = {"gamma": self.rng.uniform(0.5, 1.5, c), "beta": self.rng.normal(0, 0.5, c),
                  "mean": self.rng.normal(0, 0.5, c), "variance": self.rng.uniform(0.5, 2.0, c)}
        return {k: self.const(f"{name}/{k}", v.astype(np.float32)) for k, v in values.items()}

    def conv_bn(self, x: str, name: str) -> str:
        conv = self.node("Conv2D", f"{name}/conv", [x, self.weight(f"{name}/kernel", (1, 1, CHANNELS, CHANNELS))],
                         {"strides": [1, 1, 1, 1], "padding": "SAME", "data_format": "NHWC"})
        p = self.stats(f"{name}/bn")
        bn = self.node("FusedBatchNormV3", f"{name}/bn", [conv, p["gamma"], p["beta"], p["mean"], p["variance"]],
                       {"U": proto.AttrValue(type=proto.DT_FLOAT), "epsilon": 1e-3, "is_training": False,
                        "data_format": "NHWC"},
                       shapes=(self.activation, *[(CHANNELS,)] * 4, (0,)))
        return self.node("Relu", f"{name}/relu", [bn])

    def depthwise_small_op_bn(self, x: str, name: str) -> str:
        dw = self.node("DepthwiseConv2dNative", f"{name}/depthwise",
                       [x, self.weight(f"{name}/depthwise_kernel", (3, 3, CHANNELS, 1))],
                       {"strides": [1, 1, 1, 1], "padding": "SAME", "data_format": "NHWC"})
        return self.node("Relu6", f"{name}/relu6", [self.small_op_bn(dw, f"{name}/bn")])

    def small_op_bn(self, x: str, name: str) -> str:
        """A Keras small-op BatchNorm of `x` (AddV2 / Rsqrt / Mul x3 / Sub / AddV2 under NAME/batchnorm)."""
        p, s, c = self.stats(name), f"{name}/batchnorm", (CHANNELS,)
        eps = self.const(f"{s}/add/y", np.float32(1e-3))
        add = self.node("AddV2", f"{s}/add", [p["variance"], eps], shapes=(c,))
        rsqrt = self.node("Rsqrt", f"{s}/Rsqrt", [add], shapes=(c,))
        inv = self.node("Mul", f"{s}/mul", [rsqrt, p["gamma"]], shapes=(c,))
        mul_x = self.node("Mul", f"{s}/mul_1", [x, inv])
        mul_mean = self.node("Mul", f"{s}/mul_2", [p["mean"], inv], shapes=(c,))
        sub = self.node("Sub", f"{s}/sub", [p["beta"], mul_mean], shapes=(c,))
        return self.node("AddV2", f"{s}/add_1", [mul_x, sub])

    def conv_bias_mul(self, x: str, name: str) -> str:
        conv = self.node("Conv2D", f"{name}/conv", [x, self.weight(f"{name}/kernel", (1, 1, CHANNELS, CHANNELS))],
                         {"strides": [1, 1, 1, 1], "padding": "SAME", "data_format": "NHWC"})
        bias = self.node("BiasAdd", f"{name}/BiasAdd", [conv, self.weight(f"{name}/bias", (CHANNELS,))],
                         {"data_format": "NHWC"})
        scale = self.const(f"{name}/mul/y", np.float32(self.rng.uniform(0.5, 1.5)))
        return self.node("Mul", f"{name}/mul", [bias, scale])


def synthetic(target_nodes: int) -> Graph:
    """A chain of blocks (cycling through the three kinds) with about `target_nodes` nodes."""
    builder = SyntheticBuilder()
    shape = proto.AttrValue(shape=proto.shape_proto(builder.activation))
    x = builder.node("Placeholder", "input", [], {"dtype": proto.AttrValue(type=proto.DT_FLOAT), "shape": shape},
                     typed=False)
    kinds = (builder.conv_bn, builder.depthwise_small_op_bn, builder.conv_bias_mul)
    i = 0
    while len(builder.graph_def.node) < target_nodes:
        x = kinds[i % 3](x, f"block{i}")
        i += 1
    builder.node("Identity", "output", [x])
    return Graph(builder.graph_def, source=f"synthetic-{target_nodes}")


def bare(graph: Graph) -> bytes:
    """The graph as a bare .pb: no `_output_shapes` (a frozen GraphDef as most users have it)."""
    graph_def = proto.GraphDef.FromString(graph.to_bytes())
    for node in graph_def.node:
        del node.attr["_output_shapes"]
    return graph_def.SerializeToString()


def amct_passes() -> list[type]:
    from fuselens.passes.registry import catalog

    return [c for c in catalog() if c.family == "amct"]


def time_amct(graph: Graph, repeat: int) -> dict:
    passes = amct_passes()
    dry = apply = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        for cls in passes:
            cls().dry_run(graph)
        dry = min(dry, time.perf_counter() - start)
        gc.collect()
        start = time.perf_counter()
        current, matches = graph, 0
        for cls in passes:
            current, result = cls().apply(current)
            matches += len(result.matches)
        apply = min(apply, time.perf_counter() - start)
    return {"dry_s": dry, "apply_s": apply, "matches": matches, "nodes_after": len(current)}


def time_grappler(graph: Graph) -> float:
    """Seconds TensorFlow's default Grappler pipeline takes to optimise the graph for its outputs."""
    from tensorflow.core.protobuf import config_pb2, meta_graph_pb2
    from tensorflow.python.grappler import tf_optimizer

    metagraph = meta_graph_pb2.MetaGraphDef()
    metagraph.graph_def.CopyFrom(proto.to_tf(graph.graph_def))
    fetches = meta_graph_pb2.CollectionDef()
    fetches.node_list.value.extend(graph.outputs())
    metagraph.collection_def["train_op"].CopyFrom(fetches)
    start = time.perf_counter()
    tf_optimizer.OptimizeGraph(config_pb2.ConfigProto(), metagraph)
    return time.perf_counter() - start


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1250,2500,5000,10000,20000", help="synthetic graph sizes (nodes)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-resnet", action="store_true", help="skip ResNet50 (its first build takes ~1 min)")
    args = parser.parse_args(argv)
    from fuselens.core.formats.loaders import load_model

    graphs: list[tuple[str, Callable[[], Graph]]] = [] if args.no_resnet else [
        ("resnet50", lambda: load_model("resnet50").graph)]
    graphs += [(f"synthetic {n}", partial(synthetic, n)) for n in (int(s) for s in args.sizes.split(","))]
    print(f"{'graph':18s} {'nodes':>6s} {'matches':>7s} {'after':>6s} {'dry run s':>10s} {'apply s':>8s} "
          f"{'apply us/node':>13s} {'Grappler s':>10s}")
    for name, build in graphs:  # built one at a time, so a big graph does not slow the small ones' GC
        graph = build()
        r = time_amct(graph, args.repeat)
        grappler = time_grappler(graph)
        print(f"{name:18s} {len(graph):6d} {r['matches']:7d} {r['nodes_after']:6d} {r['dry_s']:10.3f} "
              f"{r['apply_s']:8.3f} {r['apply_s'] / len(graph) * 1e6:13.1f} {grappler:10.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
