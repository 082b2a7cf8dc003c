"""Helpers shared by the AMCT pass tests: run passes, compare numbers, build tiny graphs by hand."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.formats.execute import random_feeds, run_graph
from core.graph import Graph, proto
from core.graph.nodes import make_const, make_node
from passes.base import FusionPass, PassResult

FLOAT = proto.AttrValue(type=proto.DT_FLOAT)


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


def placeholder(name: str, shape: Sequence[int]) -> proto.NodeDef:
    shape_attr = proto.AttrValue(shape=proto.shape_proto(shape))
    return make_node("Placeholder", name, attrs={"dtype": FLOAT, "shape": shape_attr})


def conv(name: str, x: str, w: str) -> proto.NodeDef:
    return make_node("Conv2D", name, [x, w], {"T": FLOAT, "strides": [1, 1, 1, 1], "padding": "SAME"})


def fused_bn(name: str, x: str, channels: int, *, seed: int = 0) -> list[proto.NodeDef]:
    """A FusedBatchNormV3 (inference) with random constant parameters, the BN node last."""
    rng = np.random.default_rng(seed)
    params = [make_const(f"{name}/{role}", rng.uniform(0.5, 1.5, channels).astype(np.float32))
              for role in ("gamma", "beta", "mean", "variance")]
    bn = make_node("FusedBatchNormV3", name, [x, *(p.name for p in params)],
                   {"T": FLOAT, "U": FLOAT, "epsilon": 1e-3, "is_training": False})
    return [*params, bn]
