from __future__ import annotations

import numpy as np
import pytest

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import Graph, TensorRef, proto, topological_sort
from fuselens.core.graph.nodes import make_const, make_node


def small_graph() -> Graph:
    gd = proto.GraphDef()
    gd.node.extend([
        make_node("Placeholder", "x", attrs={"dtype": proto.AttrValue(type=proto.DT_FLOAT)}),
        make_const("w", np.arange(6, dtype=np.float32).reshape(2, 3)),
        make_node("Identity", "w/read", ["w"]),
        make_node("MatMul", "mm", ["x", "w/read"]),
        make_node("Split", "split", ["mm"], {"num_split": 2}),
        make_node("AddV2", "add", ["split:1", "split", "^mm"]),
    ])
    return Graph(gd, source="small")


@pytest.mark.parametrize("text,ref", [
    ("a/b", TensorRef("a/b", 0)),
    ("a/b:3", TensorRef("a/b", 3)),
    ("^a/b", TensorRef("a/b", 0, True)),
    ("weird:name:1", TensorRef("weird:name", 1)),
])
def test_input_strings_parse_and_print_back(text, ref):
    assert TensorRef.parse(text) == ref
    assert str(ref) == (text if not text.endswith(":0") else text[:-2])


def test_indexes_ports_and_control_edges():
    g = small_graph()
    assert [str(r) for r in g.inputs("add")] == ["split:1", "split"]
    assert g.control_inputs("add") == ["mm"]
    assert {(c.node, c.index, c.port) for c in g.consumers("split")} == {("add", 0, 1), ("add", 1, 0)}
    assert [c.node for c in g.consumers("split", port=1)] == ["add"]
    assert g.control_consumers("mm") == ["add"]
    assert g.consumer_nodes("mm") == ["split", "add"]
    assert g.outputs() == ["add"]


def test_constants_are_seen_through_identity():
    g = small_graph()
    assert g.const_source("w/read") == "w"
    np.testing.assert_array_equal(g.const_value("w/read"), np.arange(6).reshape(2, 3))
    assert g.const_value("mm") is None


def test_editor_is_copy_on_write():
    g = small_graph()
    before = g.graph_def.SerializeToString(deterministic=True)
    ed = g.editor()
    ed.mutable("mm").input[1] = "w"
    ed.add(make_node("Relu", "relu", ["add"]), after="add")
    ed.redirect(TensorRef("split", 1), TensorRef("mm"), exclude=["split"])
    ed.remove("w/read")
    new = ed.build()
    assert g.graph_def.SerializeToString(deterministic=True) == before
    assert "w/read" in g and "w/read" not in new
    assert [str(r) for r in new.inputs("add")] == ["mm", "split"]
    assert list(new.nodes)[-1] == "relu"


def test_an_edit_lists_its_nodes_as_a_copied_dict_would_and_a_graph_keeps_only_the_arenas_it_uses():
    g = small_graph()
    ed = g.editor()
    ed.remove("w/read", "ghost")
    ed.add(make_node("Identity", "w/read", ["w"]))  # removed, then added again: it goes last
    ed.mutable("split")
    ed.add(make_node("Relu", "gone", ["add"]))
    ed.remove("gone")
    assert ed.names() == ["x", "w", "mm", "split", "add", "w/read"]
    assert "gone" not in ed and "ghost" not in ed and ed.node("w/read").input == ["w"]
    with pytest.raises(KeyError):
        ed.mutable("gone")
    first = ed.build(validate=False)
    assert list(first.nodes) == ["x", "w", "w/read", "mm", "split", "add"]  # back in its place, as before
    assert dict(first.nodes.items()) == {n.name: n for n in first} and first.nodes["split"] is not g.nodes["split"]
    assert len(first.nodes.containers) == 2  # the GraphDef read and this edit's nodes
    # The edit's nodes are written out of its arena, and `gone`, added and removed in it, is not among them.
    assert [node.name for node in first.nodes.containers[1]] == ["w/read", "split"]
    back = first.editor()
    back.add(make_node("Identity", "w/read2", ["w"]))
    for name in ("w/read", "split"):  # every node of the first edit's arena goes
        back.remove(name)
        back.add(g.nodes[name])
    again = back.build(validate=False)
    assert len(again.nodes.containers) == 2 and all(c is not first.nodes.containers[1] for c in again.nodes.containers)
    assert list(again.nodes) == ["x", "w", "w/read", "mm", "split", "add", "w/read2"]


def test_validation_names_every_problem():
    nodes = [make_node("Relu", "a", ["ghost"]), make_node("NoOp", "b"), make_node("NoOp", "b")]
    with pytest.raises(FuseLensError, match=r"bad\.pb: duplicate node names: b; inputs name missing nodes: a -> ghost"):
        Graph.from_nodes(nodes, source="bad.pb")


def test_cycle_outside_loop_is_rejected_but_loop_back_edge_is_fine():
    gd = proto.GraphDef()
    gd.node.extend([make_node("Relu", "a", ["b"]), make_node("Relu", "b", ["a"])])
    with pytest.raises(FuseLensError, match="cycle outside a TensorFlow while loop"):
        Graph(gd, source="cyc")
    loop = proto.GraphDef()
    loop.node.extend([
        make_node("Placeholder", "x"),
        make_node("Merge", "merge", ["x", "next"]),
        make_node("Relu", "body", ["merge"]),
        make_node("NextIteration", "next", ["body"]),
    ])
    assert len(Graph(loop).topological_order()) == 4


def test_networkx_view_has_ports_and_control_flags():
    nxg = small_graph().to_networkx()
    edges = {(u, v, d["port"], d["control"]) for u, v, d in nxg.edges(data=True)}
    assert ("split", "add", 1, False) in edges and ("mm", "add", 0, True) in edges


def test_an_op_with_no_data_output_is_not_an_output_but_runs_before_the_one_that_waits_on_it():
    """`Abort` (or `PrintV2`) waited on through a control edge: fetching `Abort:0` would fail before anything ran."""
    gd = small_graph().graph_def
    gd.node.extend([make_node("Abort", "abort", attrs={"error_msg": proto.AttrValue(s=b"no")}),
                    make_node("Relu", "y", ["add", "^abort"])])
    assert Graph(gd).outputs() == ["y"]


def test_shapes_come_from_output_shapes_attr(load_sample):
    g = load_sample("abs_relu_exp")
    assert g.output_shape("exp_0") == (128, 192)
    assert g.placeholder_spec("data1") == ("float16", (128, 192))


def while_loop() -> Graph:
    """x -> enter -> merge -> body -> next -> merge (back edge), merge -> exit -> late; `late` is written first."""
    return Graph.from_nodes([
        make_node("Relu", "late", ["exit"]),
        make_node("Placeholder", "x"),
        make_node("Enter", "enter", ["x"]),
        make_node("Merge", "merge", ["enter", "next"]),
        make_node("Relu", "body", ["merge"]),
        make_node("NextIteration", "next", ["body"]),
        make_node("Exit", "exit", ["merge"]),
    ], source="loop")


def test_topological_order_skips_loop_back_edges_and_keeps_graph_order_among_ready_nodes():
    g = while_loop()
    order = g.topological_order()
    assert order == ["x", "enter", "merge", "body", "next", "exit", "late"]
    assert g.topological_index() == {name: i for i, name in enumerate(order)}
    for name in g.nodes:  # every edge but the back edge points forward
        for ref in g.inputs(name):
            assert g.op(ref.node) == "NextIteration" or order.index(ref.node) < order.index(name)


def test_a_graph_read_without_validation_indexes_missing_producers_and_leaves_a_cycle_out_of_its_order():
    g = Graph.from_nodes([make_node("Relu", "a", ["ghost:1", "c"]), make_node("Relu", "b", ["a", "^ghost"]),
                          make_node("Relu", "c", ["b"]), make_node("Placeholder", "x"),
                          make_node("Relu", "y", ["x", "ghost"])], validate=False)
    assert [(c.node, c.index, c.port) for c in g.consumers("ghost")] == [("a", 0, 1), ("y", 1, 0)]
    assert g.control_consumers("ghost") == ["b"] and g.consumer_nodes("ghost") == ["a", "y", "b"]
    assert [str(r) for r in g.inputs("a")] == ["ghost:1", "c"] and g.consumers("nobody") == []
    assert g.topological_order() == ["x", "y"]  # a, b and c wait on each other
    index = g.topological_index()
    assert dict(index) == {"x": 0, "y": 1} and len(index) == 2 and "a" not in index and index.get("ghost") is None
    with pytest.raises(FuseLensError, match=r"inputs name missing nodes: a -> ghost:1; b -> \^ghost; y -> ghost"):
        g.validate()


@pytest.mark.parametrize("seed", range(5))
def test_a_graphs_order_is_topological_sort_over_its_edges(seed):
    rng = np.random.default_rng(seed)
    names = [f"n{i}" for i in rng.permutation(40)]  # written in an order unrelated to the edges
    rank = {name: int(name[1:]) for name in names}
    nodes = [make_node("AddN" if rank[n] else "Placeholder", n,
                       [f"n{j}" if rng.random() < 0.8 else f"^n{j}" for j in rng.choice(rank[n], min(rank[n], 3),
                                                                                         replace=False)])
             for n in names]
    g = Graph.from_nodes(nodes)
    edges = [(ref, name) for name in g.nodes for ref in [r.node for r in g.inputs(name)] + g.control_inputs(name)]
    assert g.topological_order() == topological_sort(names, edges)
    assert g.edge_count() == len(edges)


def test_topological_sort_leaves_out_keys_on_or_after_a_cycle():
    edges = [("a", "b"), ("b", "c"), ("c", "b"), ("c", "d"), ("a", "ghost")]
    assert topological_sort(["d", "c", "b", "a", "e"], edges) == ["a", "e"]
    assert topological_sort(["b", "a"], [("a", "b")]) == ["a", "b"]


def test_reaches_and_contraction_cycle_follow_data_and_control_edges():
    # a -> b -> c and a -> c; d only waits on b (control) and feeds c
    g = Graph.from_nodes([
        make_node("Placeholder", "x"), make_node("Abs", "a", ["x"]), make_node("Relu", "b", ["a"]),
        make_node("NoOp", "d", ["^b"]), make_node("AddV2", "c", ["a", "b", "^d"]), make_node("Neg", "e", ["c"]),
    ])
    assert g.reaches(["b"], {"c"}) == ("b", "b")
    assert g.reaches(["e", "x"], {"c"}) == ("x", "a")
    assert g.reaches(["e"], {"c"}) is None  # e comes after c
    assert g.contraction_cycle({"a", "c"}) == ("a", "b", "b")
    assert g.contraction_cycle(["b", "c"]) == ("b", "d", "d")  # through the control edge
    assert g.contraction_cycle({"a", "b", "d", "c"}) is None
    assert g.contraction_cycle({"c", "e"}) is None


def test_contraction_cycle_inside_a_while_loop():
    g = while_loop()
    assert g.contraction_cycle({"enter", "body"}) == ("enter", "merge", "merge")
    assert g.contraction_cycle({"x", "enter"}) is None
    # body -> next -> merge -> exit: the walk takes the back edge too, so a group that would swallow
    # part of the loop frame is refused
    assert g.contraction_cycle({"body", "exit"}) == ("body", "next", "merge")


def scan_redirect(g: Graph, old: TensorRef, new: TensorRef, exclude=()) -> dict[str, list[str]]:
    """What redirect must do, by scanning every input string of the source graph."""
    data = {str(old), f"{old.node}:{old.port}"}
    result = {}
    for node in g:
        inputs = list(node.input)
        if node.name not in exclude:
            inputs = [str(new) if t in data else f"^{new.node}" if old.port == 0 and t == f"^{old.node}" else t
                      for t in inputs]
        result[node.name] = inputs
    return result


@pytest.mark.parametrize("old", [TensorRef("split", 0), TensorRef("split", 1), TensorRef("mm"), TensorRef("w")])
def test_redirect_rewrites_exactly_the_readers_of_a_tensor(old):
    g = Graph.from_nodes([*small_graph().graph_def.node, make_node("Relu", "r", ["split:0", "^split", "mm:0"])])
    ed = g.editor()
    ed.redirect(old, TensorRef("x", 0), exclude=["add"])
    assert {n.name: list(n.input) for n in ed.build(validate=False)} == scan_redirect(g, old, TensorRef("x"), ["add"])


def test_redirect_sees_readers_added_or_rewired_in_the_same_edit():
    ed = small_graph().editor()
    ed.add(make_node("Relu", "relu", ["add", "^mm"]), after="add")
    ed.redirect(TensorRef("add"), TensorRef("mm"), exclude=["relu"])  # indexes the new node
    ed.set_input("relu", 0, "split:1")  # changed after that redirect
    ed.redirect(TensorRef("split", 1), TensorRef("w/read"))
    ed.redirect_control("mm", "x")
    new = ed.build()
    assert list(new.node("relu").input) == ["w/read", "^x"]
    assert list(new.node("add").input) == ["w/read", "split", "^x"]
    assert list(new.node("split").input) == ["mm"]  # data readers keep reading mm


def test_constants_are_seen_through_forwarding_ops_and_what_a_pass_adds():
    g = Graph.from_nodes([
        make_const("w", np.arange(6, dtype=np.float32)), make_const("shape", np.array([2, 3], np.int32)),
        make_node("Identity", "w/read", ["w"]), make_node("Reshape", "r", ["w/read", "shape"]),
        make_node("Identity", "r/read", ["r"]), make_node("Placeholder", "x"), make_node("Reshape", "rx", ["w", "x"]),
    ])
    assert g.const_chain("w/read") == ["w/read", "w"] and g.const_source("w/read") == "w"
    assert g.const_chain("r/read") is None and not g.is_const("r")
    widened = frozenset({"Identity", "Reshape"})
    assert g.const_chain("r/read", through=widened) == ["r/read", "r", "w/read", "w"]
    assert g.is_const("r", through=widened) and g.const_source("r", through=widened) == "w"
    assert not g.is_const("rx", through=widened)  # its shape is not a constant


def test_the_const_mask_says_for_every_node_what_is_const_says():
    """Graph.const_mask (every node at once, for the drawing) against is_const node by node: chains of
    forwarding ops, one that also waits on a control input, one reading a missing node, an Identity cycle,
    a forwarding op with no data input."""
    g = Graph.from_nodes([
        make_const("w", np.arange(6, dtype=np.float32)), make_node("Identity", "w/read", ["w"]),
        make_node("Snapshot", "w/snap", ["w/read", "^x"]), make_node("StopGradient", "w/stop", ["w/snap"]),
        make_node("Placeholder", "x"), make_node("Identity", "x/read", ["x"]),
        make_node("Identity", "ghost/read", ["ghost"]),
        make_node("Identity", "loop_a", ["loop_b"]), make_node("Identity", "loop_b", ["loop_a"]),
        make_node("Identity", "waits", ["^w"]), make_node("AddV2", "sum", ["w/stop", "w"]),
    ], validate=False)
    assert [name for name in g.nodes if g.const_mask[g.node_id(name)]] == ["w", "w/read", "w/snap", "w/stop"]
    assert all(bool(g.const_mask[g.node_id(name)]) == g.is_const(name) for name in g.nodes)


def indexes(graph: Graph) -> tuple:
    """What a graph knows about its edges, in a comparable form."""
    return ({name: [str(r) for r in graph.inputs(name)] + [f"^{c}" for c in graph.control_inputs(name)]
             for name in graph.nodes},
            {name: [(c.node, c.index, c.port) for c in graph.consumers(name)] for name in graph.nodes},
            {name: graph.control_consumers(name) for name in graph.nodes}, graph.topological_order())


@pytest.mark.parametrize("sample", ["demo", "keras_bn_small_ops", "bert_layernorm"])
def test_a_built_graph_shares_unchanged_nodes_and_equals_its_graph_def_read_afresh(sample, load_sample):
    from fuselens.passes.pipeline import run_pipeline

    original = load_sample(sample)
    fused = run_pipeline(original).fused
    assert fused is not original
    afresh = Graph.from_bytes(fused.graph_def.SerializeToString())
    assert indexes(fused) == indexes(afresh)
    assert fused.to_bytes() == afresh.graph_def.SerializeToString(deterministic=True)
    assert fused.fingerprint == afresh.fingerprint
    shared = [name for name in fused.nodes if name in original.nodes and stored(original, name) == stored(fused, name)]
    assert shared, "unchanged NodeDefs are shared with the input graph, not copied"


def stored(graph: Graph, name: str) -> tuple[object, int]:
    """The container a graph reads a node from (the bytes read, a pass's arena) and its position there."""
    where = graph.nodes.where[graph.nodes.ids[name]]
    return graph.nodes.containers[where >> 32], where & 0xFFFFFFFF


def test_to_bytes_of_an_edit_without_writing_its_graph_def():
    g = small_graph()
    ed = g.editor()
    ed.set_input("mm", 1, "w")
    ed.remove("w/read")
    new = ed.build()
    data = new.to_bytes()
    assert new._graph_def is None  # serialized node by node
    assert data == new.graph_def.SerializeToString(deterministic=True)
    assert [n.name for n in Graph.from_bytes(data)] == ["x", "w", "mm", "split", "add"]


def test_an_edits_library_is_written_a_record_at_a_time_as_the_whole_message_would_be():
    ed = small_graph().editor()
    for name in ("f", "g"):
        function = proto.FunctionDef()
        function.signature.name = name
        function.node_def.add().CopyFrom(make_node("Identity", "i", ["x"], {"T": proto.AttrValue(type=proto.DT_FLOAT)}))
        function.ret["y"] = "i:output:0"
        function.attr["b"].s, function.attr["a"].i = b"map order", 3
        ed.add_function(function)
    ed._library.gradient.add(function_name="f", gradient_func="g")
    ed._library.registered_gradients.add(gradient_func="g", registered_op_type="Op")
    new = ed.build()
    assert b"".join(new.serialized()) == new.graph_def.SerializeToString(deterministic=True)
    assert proto.GraphDef.FromString(new.to_bytes()).library == new.library


def test_constants_decode_once_read_only_and_large_ones_are_not_kept():
    g = Graph.from_nodes([make_const("small", np.ones(4, np.float32)),
                          make_const("big", np.ones(1 << 13, np.float32)), make_node("Identity", "read", ["small"])])
    assert g.const_value("read") is g.const_value("small")
    assert not g.const_value("small").flags.writeable
    assert g.const_value("big") is not g.const_value("big")
    with pytest.raises(ValueError):
        g.const_value("big")[0] = 2
