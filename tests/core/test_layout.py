"""Layout: constants folded into consumers, scope collapse, dot positions, fallback, cache, op classes."""

from __future__ import annotations

import subprocess
import time
from itertools import pairwise

import numpy as np
import pytest

from core import proto
from core.errors import Cancelled
from core.fused import FUSED_OP_TYPE_ATTR, FUSION_PASS_ATTR
from core.graph import Graph
from core.layout import (
    SCOPE_PREFIX,
    Layout,
    LayoutCache,
    collapsible_scopes,
    layout_graph,
    structure_key,
    visible_graph,
)
from core.layout import dot as layout_dot
from core.layout.layered import layer_ranks, layered_positions
from core.nodes import make_node
from core.opclass import BORDER, CATEGORY_TITLES, PALETTE, op_category, ops_in


def test_constants_and_identity_reads_are_drawn_inside_their_consumer(load_sample):
    graph = load_sample("demo")
    view = visible_graph(graph)
    read_constants = {n.name for n in graph if graph.is_const(n.name) and graph.consumer_nodes(n.name)}
    assert len(read_constants) > 20 and not read_constants & set(view.nodes)
    assert "Identity" not in {node.op for node in view.nodes.values()}  # every Identity here reads a constant
    conv = view.nodes["stem/conv"]
    assert conv.weights == ("stem/conv/kernel/ReadVariableOp",)
    assert conv.weight_text == "3×3×3×16"
    assert view.owner["stem/conv/kernel/resource"] == "stem/conv"  # the Const behind the Identity too
    assert set(view.owner) == set(graph.nodes)
    # weights are not edges; the data edge carries its shape
    assert all(e.source in view.nodes and e.target in view.nodes for e in view.edges)
    edge = next(e for e in view.edges if e.source == "stem/conv" and e.target == "stem/bn")
    assert edge.label == "1×32×32×16"


def test_a_fused_node_shows_the_op_it_stands_for():
    dtype = {"dtype": proto.AttrValue(type=proto.DT_FLOAT)}
    call = make_node("fused_LayerNorm_fn", "ln", ["x"], {FUSION_PASS_ATTR: b"scope-layernorm",
                                                          FUSED_OP_TYPE_ATTR: b"LayerNorm"})
    graph = Graph.from_nodes([make_node("Placeholder", "x", attrs=dtype), call], validate=False)
    box = visible_graph(graph).nodes["ln"]
    assert box.op == "LayerNorm" and box.category == "fused"


def test_edge_labels_never_start_shape_inference(load_sample):
    bare = proto.GraphDef()
    bare.CopyFrom(load_sample("conv_bn").graph_def)
    del bare.node[-1].attr["_output_shapes"]  # one node without a recorded shape: TF would have to infer
    graph = Graph(bare)
    view = visible_graph(graph)
    assert view.edges and not any(e.label for e in view.edges)
    assert not graph.shapes_ready


def test_unread_constants_stay_visible(load_sample):
    graph = load_sample("demo")
    unread = [n.name for n in graph if n.op == "Const" and not graph.consumer_nodes(n.name)]
    assert unread  # the demo has a few (depthwise Shape and dilation_rate)
    assert set(unread) <= set(visible_graph(graph).nodes)


def test_a_collapsed_scope_is_one_box_and_nested_collapse_takes_the_outermost(load_sample):
    graph = load_sample("bert_layernorm")
    full = visible_graph(graph)
    scope = next(s for s in full.scopes if s.endswith("LayerNorm"))
    inner = scope + "/batchnorm"
    assert inner in full.scopes
    members = [k for k in full.nodes if k.startswith(scope + "/")]
    collapsed = visible_graph(graph, {scope, inner})
    box = collapsed.nodes[SCOPE_PREFIX + scope]
    assert sorted(box.members) == sorted(members)
    assert box.op == "scope" and f"({len(members)} ops)" in box.title
    assert not set(members) & set(collapsed.nodes)
    assert all(collapsed.owner[m] == SCOPE_PREFIX + scope for m in members)
    assert all(e.source != e.target for e in collapsed.edges)
    assert len(collapsed.nodes) == len(full.nodes) - len(members) + 1


def test_collapsible_scopes_need_two_nodes():
    assert collapsible_scopes(["a/b/x", "a/b/y", "a/c", "d/e"]) == ("a", "a/b")


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
    result = layout_graph(wide_random_dag(1500), timeout=0.05)
    assert result.engine == "layered" and "longer than 0.05 s" in result.notice
    assert time.perf_counter() - start < 2.0


def test_missing_dot_falls_back_too(load_sample, monkeypatch):
    monkeypatch.setattr(layout_dot.shutil, "which", lambda name: None)
    result = layout_graph(load_sample("conv_bn"))
    assert result.engine == "layered" and "not installed" in result.notice


def test_cancel_stops_the_layout(load_sample):
    with pytest.raises(Cancelled):
        layout_graph(load_sample("conv_bn"), cancelled=lambda: True)


def test_cache_by_structure_in_memory_and_on_disk(load_sample, tmp_path):
    graph = load_sample("keras_bn_small_ops")
    cache = LayoutCache(tmp_path)
    first = layout_graph(graph, cache=cache)
    assert not first.cached and list(tmp_path.glob("*.json"))
    assert layout_graph(graph, cache=cache) is first
    fresh = layout_graph(graph, cache=LayoutCache(tmp_path))  # a new process: read from disk
    assert fresh.cached and fresh.to_json() == first.to_json()
    collapsed = layout_graph(graph, {"bn_default"}, cache=cache)
    assert not collapsed.cached and SCOPE_PREFIX + "bn_default" in collapsed.nodes


def test_the_memory_cache_evicts_the_least_recently_used():
    cache = LayoutCache(limit=2)
    first, second, third = (Layout({}, [], {}) for _ in range(3))
    cache.put("first", first)
    cache.put("second", second)
    assert cache.get("first") is first  # used again: now the most recent
    cache.put("third", third)
    assert cache.get("second") is None  # first in, first out would have dropped `first` instead
    assert cache.get("first") is first and cache.get("third") is third


def test_structure_key_ignores_weight_values_but_not_wiring_or_collapse(load_sample):
    graph = load_sample("conv_bn")
    editor = graph.editor()
    const = next(n.name for n in graph if n.op == "Const")
    node = editor.mutable(const)
    value = node.attr["value"].tensor
    value.tensor_content = (np.frombuffer(value.tensor_content, np.uint8) ^ 1).tobytes()
    reweighted = editor.build()
    assert structure_key(reweighted) == structure_key(graph)
    assert structure_key(graph, {"bn"}) != structure_key(graph)
    rewired = graph.editor()
    relu = next(n.name for n in graph if n.op == "Relu")
    rewired.remove(relu)
    assert structure_key(rewired.build()) != structure_key(graph)


def test_op_classes_share_one_palette():
    assert op_category("Conv2D") == "conv" and op_category("MatMul") == "conv"
    assert op_category("Relu") == "elementwise" and op_category("Mean") == "reduce"
    assert op_category("FusedBatchNormV3") == "norm" and op_category("ConcatV2") == "data"
    assert op_category("fused_LayerNorm_fn", fused=True) == "fused" and op_category("NoSuchOp") == "other"
    assert set(PALETTE) == set(BORDER) == set(CATEGORY_TITLES)
    listed = [ops_in(c) for c in CATEGORY_TITLES]
    assert sum(len(s) for s in listed) == len(frozenset().union(*listed))  # no op in two classes
