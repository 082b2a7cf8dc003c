"""A graph read from bytes keeps them (SerializedGraphDef) and must behave as the graph of the parsed GraphDef."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from google.protobuf.message import DecodeError

from fuselens.core.errors import FuseLensError
from fuselens.core.formats.loaders import load_model
from fuselens.core.graph import WRITTEN_NODE_BYTES, Graph, SerializedGraphDef, proto
from fuselens.core.graph.nodes import make_const, make_node
from fuselens.core.graph.wire import NodeRecords, record_head
from tests.core.test_graph import indexes, small_graph, stored


def with_everything() -> bytes:
    """small_graph's GraphDef with a function, versions, the deprecated `version` and an unknown field, written
    with a node after them and its attributes in a non-deterministic order."""
    gd = small_graph().graph_def
    function = gd.library.function.add()
    function.signature.name = "f"
    gd.versions.producer = 1087
    gd.version = 7
    late = make_node("Relu", "late", ["add"])
    late.attr["b"].i, late.attr["a"].i = 1, 2
    payload = late.SerializeToString()  # not deterministic: the attributes as written
    return gd.SerializeToString() + bytes([9 << 3, 42]) + record_head(1, len(payload)) + payload


def test_a_graph_read_from_bytes_keeps_them_and_decodes_a_node_each_time_it_is_read():
    data = with_everything()
    g = Graph.from_bytes(data)
    parsed = proto.GraphDef.FromString(data)
    assert isinstance(g._graph_def, SerializedGraphDef) and g._graph_def.node.data is data
    assert g.nodes["mm"] == parsed.node[3] and g.nodes["mm"] is not g.nodes["mm"]
    assert [n.name for n in g] == [n.name for n in parsed.node]
    assert indexes(g) == indexes(Graph(parsed))
    assert g.library == parsed.library and g.versions == parsed.versions
    assert [g.op(name) for name in g.nodes] == [n.op for n in parsed.node]


def test_a_graph_read_from_bytes_writes_what_its_parsed_graph_def_writes():
    data = with_everything()
    g = Graph.from_bytes(data)
    expected = proto.GraphDef.FromString(data).SerializeToString(deterministic=True)
    assert expected != data  # the unknown field moves to the end, the late node's attributes are sorted
    assert g.to_bytes() == expected and g.fingerprint == Graph(proto.GraphDef.FromString(data)).fingerprint
    again = pickle.loads(pickle.dumps(g))
    assert again.to_bytes() == expected and indexes(again) == indexes(g)
    assert g.graph_def == proto.GraphDef.FromString(data) and g.to_bytes() == expected  # parsed when asked for


def test_a_weight_read_from_bytes_is_parsed_once_and_the_graph_writes_what_it_read():
    weight = make_const("big", np.arange(WRITTEN_NODE_BYTES // 4 + 1, dtype=np.float32))
    reader = make_node("Identity", "read", ["big"])
    data = with_everything() + b"".join(record_head(1, n.ByteSize()) + n.SerializeToString() for n in (weight, reader))
    g = Graph.from_bytes(data)
    parsed = proto.GraphDef.FromString(data)
    records, position = stored(g, "big")
    assert records.ends[position] == -1 and records.data != data  # the weight is not kept as bytes too
    assert g.nodes["big"] == weight and g.nodes["read"] == reader and g.nodes["late"] == parsed.node[-3]
    assert [n.name for n in g] == [n.name for n in parsed.node] and indexes(g) == indexes(Graph(parsed))
    assert g.to_bytes() == parsed.SerializeToString(deterministic=True)
    assert g.graph_def == parsed


def test_an_edit_of_a_graph_read_from_bytes_reads_its_unchanged_nodes_from_them():
    data = small_graph().to_bytes()
    g = Graph.from_bytes(data)
    ed = g.editor()
    ed.set_input("mm", 1, "w")
    ed.remove("w/read")
    new = ed.build()
    assert new.nodes.containers[0] is g.nodes.containers[0]
    assert new.to_bytes() == new.graph_def.SerializeToString(deterministic=True)
    assert [n.name for n in Graph.from_bytes(new.to_bytes())] == ["x", "w", "mm", "split", "add"]
    assert g.to_bytes() == data  # the source is untouched


def test_an_edit_writes_out_the_nodes_it_keeps_but_a_weight_stays_parsed():
    g = Graph.from_bytes(small_graph().to_bytes())
    ed = g.editor()
    weight = make_const("big", np.arange(WRITTEN_NODE_BYTES // 4 + 1, dtype=np.float32))
    ed.add(weight)
    ed.add(make_node("Identity", "small", ["big"]))
    ed.mutable("mm").input[1] = "w"
    new = ed.build()
    written, _ = stored(new, "small")
    assert isinstance(written, NodeRecords) and stored(new, "mm")[0] is written and len(written) == 2
    parsed, position = stored(new, "big")
    assert not isinstance(parsed, NodeRecords) and parsed[position] == weight
    assert new.nodes["big"] == weight and new.nodes["mm"].input == ["x", "w"]
    assert new.to_bytes() == new.graph_def.SerializeToString(deterministic=True)


def test_duplicates_and_missing_producers_read_from_bytes_as_from_a_graph_def():
    nodes = [make_node("Relu", "a", ["ghost"]), make_node("NoOp", "b"), make_node("Relu", "b", ["a", "^ghost"])]
    data = Graph.from_nodes(nodes, validate=False).to_bytes()
    with pytest.raises(FuseLensError, match=r"bad\.pb: duplicate node names: b; inputs name missing nodes: a -> ghost"):
        Graph.from_bytes(data, source="bad.pb")
    g = Graph.from_bytes(data, validate=False)
    assert g.op("b") == "Relu" and len(g) == 2  # the later node of a name wins
    assert indexes(g) == indexes(Graph.from_nodes(nodes, validate=False))
    assert g.consumer_nodes("ghost") == ["a", "b"] and g.control_consumers("ghost") == ["b"]
    assert g.to_bytes() == data  # both records are written, as the parsed GraphDef has them


def test_a_top_level_the_walk_does_not_read_is_parsed_whole_and_corrupt_bytes_are_refused():
    data = small_graph().to_bytes()
    group = bytes([(9 << 3) | 3, 8, 1, (9 << 3) | 4])  # an unknown group: valid, but not walked
    read = SerializedGraphDef.read(data + group)
    assert isinstance(read, proto.GraphDef) and indexes(Graph(read)) == indexes(small_graph())
    assert isinstance(SerializedGraphDef.read(data), SerializedGraphDef)
    for corrupt in (data[:-3], data + bytes([1 << 3 | 2, 50]), bytes([0x0A, 2, 0xFF, 0xFF])):
        with pytest.raises(DecodeError):
            Graph.from_bytes(corrupt)


def test_a_pb_whose_node_does_not_decode_is_refused_in_one_line(tmp_path):
    path = tmp_path / "bad.pb"
    path.write_bytes(small_graph().to_bytes() + bytes([0x0A, 3, 0x0A, 9, 0x41]))  # a name longer than the node
    with pytest.raises(FuseLensError, match=r"bad\.pb: not a TensorFlow GraphDef, or truncated"):
        load_model(path)
    path.write_bytes(Graph.from_nodes([make_const("c", np.ones(2, np.float32))]).to_bytes())
    assert isinstance(load_model(path).graph._graph_def, SerializedGraphDef)


def test_fused_nodes_are_found_in_a_graph_read_from_bytes_without_decoding_the_others(load_sample, monkeypatch):
    """The layout asks `fused_info` of every node; a node kept as its bytes is read for the attribute's name."""
    from fuselens.passes.pipeline import run_pipeline

    fused = run_pipeline(load_sample("demo"), explain=False).fused
    expected = {n.name: fused.fused_info(n.name) for n in fused}
    assert any(expected.values()) and not all(expected.values())
    g = Graph.from_bytes(fused.to_bytes())
    decoded = []
    parse = proto.NodeDef.FromString
    monkeypatch.setattr(proto.NodeDef, "FromString", lambda data: decoded.append(parse(data).name) or parse(data))
    assert {name: g.fused_info(name) for name in g.nodes} == expected
    assert set(decoded) == {name for name, info in expected.items() if info}
    decoded.clear()  # read once and kept: the layout asks 3-4 times of each node
    assert {name: g.fused_info(name) for name in g.nodes} == expected and not decoded


def test_the_nodes_that_may_hold_an_attribute_are_found_in_the_bytes_and_every_parsed_one_too():
    """NodeTable.holding: a superset of the holders, none left out, from one scan of the records' bytes; a key
    that spans two records or sits between them is no holder."""
    weight = make_const("big", np.arange(WRITTEN_NODE_BYTES // 4 + 1, dtype=np.float32))
    tagged = make_node("Relu", "tagged", ["add"])
    tagged.attr["_output_shapes"].list.shape.add()
    named = make_node("Relu", "_output_shapes_too", ["tagged"])  # the key in a name: may hold it
    extra = b"".join(record_head(1, n.ByteSize()) + n.SerializeToString() for n in (weight, tagged, named))
    g = Graph.from_bytes(with_everything() + extra)
    assert g.nodes.holding(b"_output_shapes") == {"big", "tagged", "_output_shapes_too"}
    assert g.nodes.holding(b"no such attribute") == {"big"}
    edited = g.editor()
    edited.mutable("mm").attr["_output_shapes"].list.shape.add()
    assert edited.build().nodes.holding(b"_output_shapes") >= {"big", "tagged", "_output_shapes_too", "mm"}
