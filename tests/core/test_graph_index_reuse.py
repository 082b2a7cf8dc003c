"""A graph an edit built reads the ops and inputs of the nodes the edit left unchanged from its source graph's
arrays: its indexes must be those of the same nodes indexed afresh, whatever the edit did around them."""

from __future__ import annotations

import numpy as np

from fuselens.core.graph import Graph, proto
from fuselens.core.graph.nodes import make_const, make_node


def _indexes(graph: Graph) -> tuple:
    return (graph._names, dict(graph._missing), [graph._op_names[c] for c in graph._ops], list(graph._in_start),
            list(graph._in_node), list(graph._in_port), list(graph._out_start), list(graph._out_edge),
            list(graph._in_reader))


def _source() -> Graph:
    return Graph.from_nodes([
        make_node("Placeholder", "x", attrs={"dtype": proto.AttrValue(type=proto.DT_FLOAT)}),
        make_const("w", np.ones(3, np.float32)),
        make_node("Identity", "w/read", ["w"]),
        make_node("Split", "split", ["w", "x"], {"num_split": 2}),
        make_node("Mul", "a", ["x:0", "w/read", "^w"]),
        make_node("AddV2", "b", ["a", "split:1"]),
        make_node("Relu", "c", ["b", "^a"]),
        make_node("Identity", "out", ["c", "ghost:2"]),  # an input that names no node
    ], source="toy", validate=False)


def test_an_edit_that_changes_adds_and_removes_nodes_indexes_as_afresh():
    source = _source()
    editor = source.editor()
    editor.add(make_node("Abs", "abs", ["a"]), after="a")
    editor.set_input("b", 0, "abs")
    editor.remove("split")  # b still reads split:1: a missing producer of the built graph
    editor.add(make_node("Neg", "neg", ["c", "^abs"]))
    built = editor.build(validate=False)
    afresh = Graph.from_bytes(built.to_bytes(), validate=False)
    assert _indexes(built) == _indexes(afresh)
    assert built.inputs("b")[1].node == "split" and "split" in built._missing


def test_an_edit_that_changes_nothing_indexes_as_its_source():
    source = _source()
    built = source.editor().build(validate=False)
    assert _indexes(built) == _indexes(source)


def test_whether_a_built_graph_records_every_shape_is_that_of_its_nodes():
    nodes = [make_node("Placeholder", "x", attrs={"dtype": proto.AttrValue(type=proto.DT_FLOAT)}),
             make_node("Relu", "r", ["x"]), make_node("NoOp", "done", ["^r"])]
    for node in nodes[:2]:
        node.attr["_output_shapes"].list.shape.add().dim.add(size=3)
    source = Graph.from_nodes(nodes)
    assert source.records_shapes
    for shapes, expected in (([(3,)], True), (None, False)):
        editor = source.editor()
        editor.add(make_node("Abs", "abs", ["r"]), shapes=shapes)
        built = editor.build()
        assert built.records_shapes is expected
        assert Graph.from_bytes(built.to_bytes()).records_shapes is expected
    editor = built.editor()  # a source that does not record every shape: asked afresh
    editor.remove("abs")
    assert editor.build().records_shapes is True


def test_missing_producers_are_numbered_in_the_order_they_are_read_as_afresh():
    """An unchanged node that reads a missing node before a changed node reads another: the missing ids come in
    the order of their first reading edge, as when the built graph is indexed afresh."""
    source = _source()  # `out`, left unchanged, reads `ghost`
    editor = source.editor()
    editor.remove("split")
    editor.add(make_node("Neg", "late", ["split:1", "gone"]))  # after `out`: two more missing producers
    editor.set_input("a", 0, "vanished")  # before `out`, changed: reads one more
    built = editor.build(validate=False)
    afresh = Graph.from_bytes(built.to_bytes(), validate=False)
    assert _indexes(built) == _indexes(afresh)
    assert list(built._missing) == ["vanished", "split", "ghost", "gone"]


def test_the_op_types_are_those_of_the_nodes_left_after_an_edit():
    """Graph.op_types reads the op codes, which an edit's graph keeps for ops none of its nodes has any more."""
    graph = Graph.from_nodes([make_node("Placeholder", "x", []), make_node("Relu", "r", ["x"]),
                              make_node("Abs", "a", ["r"])])
    editor = graph.editor()
    editor.remove("r")
    editor.set_input("a", 0, "x")
    editor.add(make_node("Neg", "n", ["a"]))
    edited = editor.build()
    assert graph.op_types() == {"Placeholder", "Relu", "Abs"}
    assert edited.op_types() == {node.op for node in edited} == {"Placeholder", "Abs", "Neg"}
