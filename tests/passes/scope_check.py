"""Helpers shared by the scope fusion tests: numeric equality of original and fused graphs."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from fuselens.core.formats.execute import random_feeds, run_graph
from fuselens.core.graph import Graph, proto
from fuselens.passes.fused import FUSED_OP_TYPE_ATTR


def fused_calls(graph: Graph, op_type: str) -> list[proto.NodeDef]:
    return [n for n in graph if graph.attr(n.name, FUSED_OP_TYPE_ATTR) == op_type]


def assert_same_outputs(original: Graph, fused: Graph, also: Mapping[str, str] | None = None, seed: int = 0) -> None:
    """The model outputs, plus `also` (original tensor -> fused tensor), agree on seeded random feeds."""
    feeds = random_feeds(original, seed)
    fetches = original.outputs()
    before, after = run_graph(original, feeds, fetches), run_graph(fused, feeds, fetches)
    for name in fetches:
        np.testing.assert_allclose(after[name], before[name], rtol=1e-5, atol=1e-5, err_msg=name)
    # one fetch per run: TF's oneDNN remapper rewrites a norm it sees fetched together with the output
    for old, new in (also or {}).items():
        np.testing.assert_allclose(run_graph(fused, feeds, [new])[new], run_graph(original, feeds, [old])[old],
                                   rtol=1e-5, atol=1e-5, err_msg=f"{old} vs {new}")


def renamed(graph: Graph, old: str, new: str) -> Graph:
    """A copy with every node name (and input) starting with `old` starting with `new` instead."""
    def fix(text: str) -> str:
        bang = "^" if text.startswith("^") else ""
        name = text[len(bang):]
        return bang + (new + name[len(old):] if name.startswith(old) else name)

    graph_def = proto.GraphDef()
    graph_def.CopyFrom(graph.graph_def)
    for node in graph_def.node:
        node.name = fix(node.name)
        node.input[:] = [fix(i) for i in node.input]
    return Graph(graph_def, source=f"{graph.source} ({old} -> {new})")
