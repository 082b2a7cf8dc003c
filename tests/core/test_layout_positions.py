"""Positions: dot within its time limit, the layered fallback (loops too), thousands of boxes in rows, cancel."""

from __future__ import annotations

import subprocess
import time
from itertools import pairwise

import numpy as np
import pytest

from fuselens.core.errors import Cancelled
from fuselens.core.graph import Graph, proto
from fuselens.core.graph.nodes import make_node
from fuselens.core.layout import LayoutCache, layout_graph, visible_graph
from fuselens.core.layout import dot as layout_dot
from fuselens.core.layout.engine import DOT_MAX_BOXES
from fuselens.core.layout.layered import layer_ranks, layered_positions


def test_dot_places_every_box_inside_the_drawing_and_routes_every_edge(load_sample):
    graph = load_sample("keras_bn_small_ops")
    result = layout_graph(graph)
    assert result.engine == "dot" and not result.notice
    positions = {(n.x, n.y) for n in result.nodes.values()}
    assert len(positions) == len(result.nodes)
    for node in result.nodes.values():
        assert node.x - node.width / 2 >= 0 and node.x + node.width / 2 <= result.width + 1
        assert node.y - node.height / 2 >= 0 and node.y + node.height / 2 <= result.height + 1
    assert all(len(e.points) >= 4 and (len(e.points) - 1) % 3 == 0 for e in result.edges)
    # top to bottom: every data edge points down
    assert all(result.nodes[e.target].y > result.nodes[e.source].y for e in result.edges)


def test_dot_over_the_time_limit_falls_back_to_a_layered_layout_with_a_notice(load_sample, monkeypatch):
    graph = load_sample("keras_bn_small_ops")

    def too_slow(source, timeout, cancelled=None):
        raise subprocess.TimeoutExpired("dot", timeout)

    monkeypatch.setattr(layout_dot, "run_dot", too_slow)
    result = layout_graph(graph, timeout=0.5)
    assert result.engine == "layered" and "longer than 0.5 s" in result.notice
    assert all(result.nodes[e.target].y > result.nodes[e.source].y for e in result.edges)
    rows: dict[float, list] = {}
    for node in result.nodes.values():
        rows.setdefault(node.y, []).append(node)
    for row in rows.values():  # boxes in a row do not overlap
        row.sort(key=lambda n: n.x)
        assert all(a.x + a.width / 2 <= b.x - b.width / 2 for a, b in pairwise(row))


def while_loop_graph() -> Graph:
    """A TF1 while loop: NextIteration feeds Merge back, so the drawn graph has a cycle."""
    nodes = [make_node("Placeholder", "x", attrs={"dtype": proto.AttrValue(type=proto.DT_FLOAT)}),
             make_node("Enter", "while/Enter", ["x"]),
             make_node("Merge", "while/Merge", ["while/Enter", "while/NextIteration"]),
             make_node("Less", "while/Less", ["while/Merge", "x"]),
             make_node("LoopCond", "while/LoopCond", ["while/Less"]),
             make_node("Switch", "while/Switch", ["while/Merge", "while/LoopCond"]),
             make_node("Identity", "while/Identity", ["while/Switch:1"]),
             make_node("AddV2", "while/add", ["while/Identity", "x"]),
             make_node("NextIteration", "while/NextIteration", ["while/add"]),
             make_node("Exit", "while/Exit", ["while/Switch"]),
             make_node("Relu", "out", ["while/Exit"])]
    return Graph.from_nodes(nodes, source="while loop")


def test_the_fallback_places_a_while_loop_below_its_inputs():
    view = visible_graph(while_loop_graph())
    rank = layer_ranks(view)
    assert rank["x"] == 0 and rank["while/Enter"] == 1
    assert rank["while/Merge"] == 2  # one row below its input from outside the loop
    unfed = ["while/LoopCond", "while/Switch", "while/Identity", "while/NextIteration", "while/Exit", "out"]
    assert [rank[k] for k in unfed] == list(range(3, 3 + len(unfed)))  # after everything, one row each
    layered_positions(view)
    assert len({(n.x, n.y) for n in view.nodes.values()}) == len(view.nodes)
    assert all(len(e.points) == 2 for e in view.edges)


def wide_random_dag(count: int, seed: int = 0) -> Graph:
    """Many crossing edges: a graph dot needs far more than 50 ms for."""
    rng = np.random.default_rng(seed)
    nodes = [make_node("Placeholder", "x", attrs={"dtype": proto.AttrValue(type=proto.DT_FLOAT)})]
    for i in range(count):
        a, b = (nodes[j].name for j in rng.integers(0, len(nodes), 2))
        nodes.append(make_node("AddV2", f"add_{i}", [a, b]))
    return Graph.from_nodes(nodes, source="random dag")


def test_the_real_time_limit_kills_dot():
    start = time.perf_counter()
    result = layout_graph(wide_random_dag(900), timeout=0.05)
    assert result.engine == "layered" and "longer than 0.05 s" in result.notice
    assert time.perf_counter() - start < 2.0


def test_thousands_of_boxes_go_to_the_layered_engine_without_trying_dot(monkeypatch):
    monkeypatch.setattr(layout_dot, "run_dot", lambda *args: pytest.fail("dot was run"))
    cache = LayoutCache(None)
    result = layout_graph(wide_random_dag(DOT_MAX_BOXES + 10), cache=cache)
    assert result.engine == "layered" and "drawn in rows" in result.notice and "longer" not in result.notice
    assert layout_graph(wide_random_dag(DOT_MAX_BOXES + 10), cache=cache) is result  # kept: it is no fallback


def test_missing_dot_falls_back_too(load_sample, monkeypatch):
    monkeypatch.setattr(layout_dot.shutil, "which", lambda name: None)
    result = layout_graph(load_sample("conv_bn"))
    assert result.engine == "layered" and "not installed" in result.notice


def test_cancel_stops_the_layout(load_sample):
    with pytest.raises(Cancelled):
        layout_graph(load_sample("conv_bn"), cancelled=lambda: True)
