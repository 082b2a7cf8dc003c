"""GE graph dumps (ge_proto text and ge_onnx text, written here as GE writes them) load into a Graph:
nodes, edges with shapes and dtypes, control edges, attributes, provenance, subgraphs, weights-free
dumps; and every kind of bad file is one error naming the file (and line)."""

from __future__ import annotations

import numpy as np
import pytest

from fuselens.core.ascend.ge.dump import (
    GE_ONNX,
    GE_PROTO,
    dump_summary,
    is_dump,
    load_dump,
    recognises,
    sniff_format,
)
from fuselens.core.ascend.ge.protoparse import message_classes, parse_proto
from fuselens.core.ascend.ge.provenance import toolchain_provenance
from fuselens.core.errors import FuseLensError
from fuselens.core.graph import Graph, proto
from fuselens.core.graph.nodes import make_const, make_node
from tests.npu_artifacts import GeOp, dump_name, ge_onnx_text, ge_ops, ge_proto_text, toolchain_fusions

FUSED = "autofuse_pointwise_0_Abs_Relu_Exp"


@pytest.fixture(scope="module")
def abs_relu_exp(load_sample):
    from fuselens.passes.pipeline import run_pipeline

    graph = load_sample("abs_relu_exp")
    pipeline = run_pipeline(graph)
    return graph, pipeline.fused, toolchain_fusions(pipeline)


def write(tmp_path, fmt, ops, stage="PreRunBegin", index=0, level=2):
    path = tmp_path / dump_name(fmt, index, 0, stage)
    path.write_text((ge_proto_text if fmt == GE_PROTO else ge_onnx_text)(ops, level=level))
    return path


@pytest.mark.parametrize("fmt", [GE_PROTO, GE_ONNX])
def test_original_stage_loads_with_shapes_dtypes_and_ge_types(tmp_path, abs_relu_exp, fmt):
    graph, _, _ = abs_relu_exp
    dump = load_dump(write(tmp_path, fmt, ge_ops(graph)))
    g = dump.graph
    assert dump.format == fmt and sniff_format(dump.path) == fmt and is_dump(dump.path)
    assert [n.op for n in g] == ["Data", "Abs", "Relu", "Exp", "NetOutput"]  # "ge:" prefix gone in onnx
    assert g.inputs("relu_0")[0].node == "abs_0" and g.inputs("NetOutput")[0].node == "exp_0"
    assert g.output_shape("abs_0") == (128, 192)
    assert g.attr("abs_0", "_output_dtypes") == ["DT_FLOAT16"] and g.attr("abs_0", "_input_layouts") == ["ND"]
    assert g.records_shapes  # drawing never asks TensorFlow to infer shapes of GE ops
    assert dump_summary(dump)["inputs"] == [{"name": "data1", "dtype": "float16", "shape": [128, 192]}]


def test_the_content_decides_the_form_over_a_name_that_says_the_other(tmp_path, abs_relu_exp):
    """An onnx-form dump renamed ge_proto_*.txt (a user's copy, a script's) is still read as onnx text."""
    graph, _, _ = abs_relu_exp
    onnx = write(tmp_path, GE_ONNX, ge_ops(graph))
    misnamed = onnx.rename(tmp_path / "ge_proto_00000001_graph_0_PreRunBegin.txt")
    assert sniff_format(misnamed) == GE_ONNX
    assert [n.op for n in load_dump(misnamed).graph][1:4] == ["Abs", "Relu", "Exp"]
    (tmp_path / "ge_onnx_00000002_graph_0_Cut.pbtxt").write_text("")
    assert sniff_format(tmp_path / "ge_onnx_00000002_graph_0_Cut.pbtxt") == GE_ONNX  # nothing to read: the name


def test_fused_stage_keeps_toolchain_provenance_in_ge_proto_and_in_onnx_at_level_1(tmp_path, abs_relu_exp):
    _, fused, fusions = abs_relu_exp
    for fmt, level in ((GE_PROTO, 2), (GE_ONNX, 1)):
        dump = load_dump(write(tmp_path, fmt, ge_ops(fused, fusions), stage="Fused", level=level))
        record = toolchain_provenance(dump.graph, FUSED)
        assert dump.graph.op(FUSED) == "AscBackend"
        assert record.original_names == ("abs_0", "relu_0", "exp_0")
        assert record.original_types == ("Abs", "Relu", "Exp") and record.pass_names == ("AutoFusePass",)
        assert record.fused and list(dump.provenance()) == [FUSED]


def test_onnx_below_level_1_has_no_strings_and_level_3_no_attributes(tmp_path, abs_relu_exp):
    _, fused, fusions = abs_relu_exp
    level2 = load_dump(write(tmp_path, GE_ONNX, ge_ops(fused, fusions), level=2))
    assert toolchain_provenance(level2.graph, FUSED) is None  # GE drops string attributes below DUMP_GE_GRAPH=1
    level3 = load_dump(write(tmp_path, GE_ONNX, ge_ops(fused, fusions), stage="Bare", level=3))
    assert level3.graph.output_shape(FUSED) is None  # unknown, yet recorded: no TF shape inference
    assert level3.graph.inputs(FUSED)[0].node == "data1"


def test_control_edges_unconnected_inputs_ports_and_attribute_kinds(tmp_path):
    ops = [GeOp("x", "Data", [], outputs_desc=[("DT_FLOAT", (2, 3))]),
           GeOp("split", "SplitD", ["x:0"], {"num_split": 2, "split_dim": 1, "ratio": 0.5, "flag": True,
                                             "names": ["a", "b"], "axes": [0, 1]},
                outputs_desc=[("DT_FLOAT", (2, 1)), ("DT_FLOAT", (2, -1))]),
           GeOp("add", "Add", ["split:0", "split:1", "", "x:-1"]),
           GeOp("NetOutput", "NetOutput", ["add:0"])]
    g = load_dump(write(tmp_path, GE_PROTO, ops)).graph
    assert [str(r) for r in g.inputs("add")] == ["split", "split:1"] and g.control_inputs("add") == ["x"]
    assert g.attr("add", "_unconnected_inputs") == [2]
    assert g.output_shape("split", 1) == (2, None)
    assert (g.attr("split", "num_split"), g.attr("split", "ratio"), g.attr("split", "flag")) == (2, 0.5, True)
    assert g.attr("split", "names") == ["a", "b"] and g.attr("split", "axes") == [0, 1]


def test_weights_are_read_on_request_skipped_by_default_and_weights_free_dumps_load(tmp_path):
    weights = np.arange(4096, dtype=np.float32).reshape(64, 64)
    f32 = proto.AttrValue(type=proto.DT_FLOAT)
    shape = proto.AttrValue(shape=proto.shape_proto((4, 64)))
    graph = Graph.from_nodes([make_node("Placeholder", "x", attrs={"dtype": f32, "shape": shape}),
                              make_const("w", weights), make_node("MatMul", "mm", ["x", "w"], {"T": f32})])
    for fmt in (GE_PROTO, GE_ONNX):
        path = write(tmp_path, fmt, ge_ops(graph), level=1)
        skipped = load_dump(path)
        assert skipped.with_weights and "the values of 1 weights" in skipped.notes[0]
        assert skipped.graph.inputs("mm")[1].node == "w"
        assert np.array_equal(load_dump(path, weights=True).graph.const_value("w"), weights)
        assert skipped.graph.const_value("w").shape == (0,)  # no values, readable: not zeros, not an error
    bare = load_dump(write(tmp_path, GE_PROTO, ge_ops(graph), stage="NoWeights", level=2))
    assert not bare.with_weights and not bare.notes
    assert bare.graph.const_value("w").dtype == np.float32 and bare.graph.output_shape("w") == (64, 64)


def test_subgraphs_are_listed(tmp_path):
    text = ('graph { name: "root" op { name: "x" type: "Data" } op { name: "loop" type: "While" input: "x:0" '
            'subgraph_name: "body" } }\ngraph { name: "body" op { name: "arg" type: "Data" } '
            'op { name: "out" type: "NetOutput" input: "arg:0" } }\n')
    path = tmp_path / "ge_proto_00000003_graph_1_PreRunBegin.txt"
    path.write_text(text)
    dump = load_dump(path)
    assert dump.name == "root" and list(dump.subgraphs) == ["body"] and len(dump.subgraphs["body"]) == 2
    assert dump.graph.attr("loop", "subgraph_name") == ["body"]
    assert dump.summary()["subgraphs"] == {"body": 2}


def test_a_field_this_schema_does_not_know_is_skipped_with_a_note(tmp_path):
    path = tmp_path / "ge_proto_00000000_graph_0_X.txt"
    path.write_text('graph { name: "g" op { name: "x" type: "Data" future_field: 7 } }\n')
    dump = load_dump(path)
    assert len(dump.graph) == 1 and "line 1" in dump.notes[0] and "future_field" in dump.notes[0]


@pytest.mark.parametrize(("name", "text", "message"), [
    ("ge_proto_00000000_graph_0_Truncated.txt", 'graph { name: "g" op { name: "x" type: "Da',
     r"ge_proto_00000000_graph_0_Truncated.txt, line 1, column \d+: not a readable ge.proto.ModelDef"),
    ("ge_proto_00000000_graph_0_Syntax.txt", 'graph {\n  op {\n    name "x"\n  }\n}\n',
     r"Syntax.txt, line 3, column \d+: not a readable"),
    ("ge_proto_00000000_graph_0_Dangling.txt",
     'graph {\n  op {\n    name: "a"\n    type: "Abs"\n    input: "ghost:0"\n  }\n}\n',
     r"Dangling.txt, line 5: node a reads 'ghost:0', but no node of that name is in the graph"),
    ("ge_proto_00000000_graph_0_AttrKind.txt",
     'graph {\n  op {\n    name: "a"\n    attr {\n      key: "k"\n      value { quantum: 1 }\n    }\n  }\n}\n',
     r"AttrKind.txt, line 6, column \d+: unknown attribute kind 'quantum'"),
    ("ge_onnx_00000000_graph_0_AttrKind.pbtxt",
     'graph {\n  node {\n    name: "a"\n    attribute {\n      name: "k"\n      type: QUBIT\n    }\n  }\n}\n',
     r"AttrKind.pbtxt, line 6, column \d+: unknown attribute kind 'QUBIT'"),
    ("ge_proto_00000000_graph_0_Empty.txt", "   \n", r"Empty.txt: the file is empty"),
    ("ge_proto_00000000_graph_0_NoGraph.txt", 'name: "m"\n', r"NoGraph.txt: holds no graph"),
    ("ge_proto_00000000_graph_0_Port.txt", 'graph { op { name: "a" } op { name: "b" input: "a:x" } }',
     r"Port.txt, line 1: node b: input 'a:x' is not 'producer:port'"),
])
def test_bad_dumps_are_one_error_naming_the_file_and_line(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(FuseLensError, match=message):
        load_dump(path)


def test_random_bytes_and_duplicates(tmp_path):
    path = tmp_path / "ge_proto_00000000_graph_0_Bytes.txt"
    path.write_bytes(b"\xff\xfe\x00\x81" * 10)
    with pytest.raises(FuseLensError, match=r"Bytes\.txt: not UTF-8 text"):
        load_dump(path)
    path = tmp_path / "ge_proto_00000000_graph_0_Twice.txt"
    path.write_text('graph { op { name: "a" } op { name: "a" } }')
    with pytest.raises(FuseLensError, match=r"Twice\.txt: duplicate node names: a"):
        load_dump(path)


def test_the_shipped_schema_parses_and_the_reader_refuses_what_it_cannot_read():
    classes = message_classes("core/ascend/ge/ge_ir.proto")
    assert {"ModelDef", "GraphDef", "OpDef", "AttrDef", "AttrDef.ListValue", "TensorDescriptor"} <= set(classes)
    fields = {f.name: f.number for f in classes["OpDef"].DESCRIPTOR.fields}
    assert (fields["input"], fields["attr"], fields["input_desc"], fields["output_desc"]) == (5, 10, 33, 34)
    with pytest.raises(ValueError, match="line 1: unknown type 'Missing'"):
        parse_proto('syntax = "proto3"; message A { Missing m = 1; }', "x.proto")
    with pytest.raises(ValueError, match="line 2: unsupported statement 'import'"):
        parse_proto('syntax = "proto3";\nimport "other.proto";', "x.proto")


def test_recognises_a_dump_by_its_head_alone(abs_relu_exp):
    graph, _, _ = abs_relu_exp
    ops = ge_ops(graph)
    proto_text = ge_proto_text(ops)
    assert recognises(proto_text.encode()) and recognises(ge_onnx_text(ops).encode())
    assert recognises(f'name: "model"\nversion: 2\n{proto_text}attr {{\n  key: "soc_version"\n}}\n'.encode())
    assert recognises(proto_text.encode()[:200])  # the head of a dump larger than 64 KiB
    assert not recognises(b'node {\n  name: "a"\n  op: "Const"\n}\n')  # a TF GraphDef in text
    assert not recognises(b'ir_version: 6\ngraph {\n  node {\n    op_type: "Relu"\n  }\n}\n')  # plain ONNX text
    assert not recognises(b"") and not recognises(b"\x00\xff" * 100)
