"""prune_dead_constants counts the readers of the nodes an edit left alone from the source graph's edge index
and decodes only the nodes it changed or added: these check that it still removes exactly the weights the edit
left unread, and the control edges to them, wherever the readers are (unchanged, changed, added, removed)."""

from __future__ import annotations

import numpy as np

from fuselens.core.graph import Graph, TensorRef, proto
from fuselens.core.graph.nodes import make_const, make_node
from fuselens.passes.base import prune_dead_constants


def _graph() -> Graph:
    """x * w/read (w a Const behind an Identity), u read by two Muls, v read by nothing, a NoOp waiting on
    w/read and reading x as `x:0`."""
    return Graph.from_nodes([
        make_node("Placeholder", "x", attrs={"dtype": proto.AttrValue(type=proto.DT_FLOAT)}),
        make_const("w", np.ones(3, np.float32)),
        make_node("Identity", "w/read", ["w"]),
        make_node("Mul", "scale", ["x", "w/read"]),
        make_const("u", np.ones(3, np.float32)),
        make_node("Mul", "u1", ["scale", "u"]),
        make_node("Mul", "u2", ["u1", "u"]),
        make_const("v", np.ones(3, np.float32)),
        make_node("NoOp", "wait", ["^w/read", "x:0"]),
    ], source="toy")


def test_a_weight_left_unread_goes_with_its_identity_and_the_control_edges_to_it():
    graph = _graph()
    editor = graph.editor()
    editor.add(make_const("w2", np.full(3, 2, np.float32)))
    editor.set_input("scale", 1, "w2")
    assert prune_dead_constants(graph, editor) == ["w", "w/read"]
    pruned = editor.build()
    assert "w" not in pruned and "w/read" not in pruned
    assert list(pruned.node("wait").input) == ["x"]  # the control edge gone, the rest written as TensorRefs
    assert "v" in pruned  # read by nothing before the edit: not this edit's to prune
    assert "u" in pruned


def test_a_weight_still_read_by_an_unchanged_node_stays():
    graph = _graph()
    editor = graph.editor()
    editor.set_input("u1", 1, "w/read")  # u is still read by u2
    assert prune_dead_constants(graph, editor) == []
    editor.set_input("u2", 1, "w/read")
    assert prune_dead_constants(graph, editor) == ["u"]


def test_readers_added_or_removed_in_the_edit_count():
    graph = _graph()
    editor = graph.editor()
    editor.remove("u1", "u2")
    editor.add(make_node("Mul", "u3", ["scale", "u"]))
    assert prune_dead_constants(graph, editor) == []  # the added node reads u
    editor.remove("u3")
    assert prune_dead_constants(graph, editor) == ["u"]


def test_a_control_edge_from_an_added_node_to_a_pruned_weight_goes_too():
    graph = _graph()
    editor = graph.editor()
    editor.add(make_node("NoOp", "wait2", ["^w/read", "^x"]))
    editor.set_input("scale", 1, "x")
    assert prune_dead_constants(graph, editor) == ["w", "w/read"]
    assert list(editor.node("wait2").input) == ["^x"]


def test_a_node_removed_and_added_again_under_its_name_is_read_as_added():
    graph = _graph()
    editor = graph.editor()
    editor.remove("scale")
    editor.add(make_node("Mul", "scale", ["x", "x"]))
    assert prune_dead_constants(graph, editor) == ["w", "w/read"]
    assert [TensorRef.parse(t) for t in editor.node("scale").input] == [TensorRef("x"), TensorRef("x")]


def test_const_chain_is_kept_per_graph_and_handed_out_as_a_fresh_list():
    graph = _graph()
    chain = graph.const_chain("w/read")
    assert chain == ["w/read", "w"]
    chain.append("changed by its caller")
    assert graph.const_chain("w/read") == ["w/read", "w"]
    assert graph.const_chain("w/read", through={"Mul"}) is None  # another `through`, not the one kept
    assert graph.const_chain("scale") is None and graph.const_chain("scale") is None


def test_with_op_reads_the_op_codes_in_graph_order():
    graph = _graph()
    assert graph.with_op(("Mul",)) == ["scale", "u1", "u2"]
    assert graph.with_op(["Const", "NoOp"]) == ["w", "u", "v", "wait"]
    assert graph.with_op(("Conv2D",)) == []
