"""core.graph.shapes derives, without TensorFlow, the shapes TensorFlow recorded: on every sample and on Keras
models taken bare (their `_output_shapes` removed), every output it gives equals the recorded one, and it
gives every one of them; an op it does not know is None, and so is what depends on it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fuselens.core.graph import Graph, proto
from fuselens.core.graph.nodes import make_const, make_node
from fuselens.core.graph.shapes import UNKNOWN_TO_TENSORFLOW, broadcast, infer_static_shapes
from tests.zoo.models import zoo_model

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "resources" / "samples").glob("*.pb"))


def bare(graph: Graph) -> Graph:
    graph_def = proto.GraphDef()
    graph_def.CopyFrom(graph.graph_def)
    for node in graph_def.node:
        if "_output_shapes" in node.attr:
            del node.attr["_output_shapes"]
    return Graph(graph_def, source=f"{graph.source} (bare)")


def assert_derives_what_tensorflow_recorded(graph: Graph) -> None:
    derived = infer_static_shapes(bare(graph)).shapes
    recorded = {(node.name, port): shape for node in graph
                for port, shape in enumerate(graph.recorded_shapes(node.name) or [])}
    wrong = {key: (derived.get(key), shape) for key, shape in recorded.items() if derived.get(key) != shape}
    assert not wrong, f"{len(wrong)} of {len(recorded)} outputs differ (derived, recorded): {list(wrong.items())[:5]}"


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_every_sample_bare_gets_tensorflows_shapes(path):
    assert_derives_what_tensorflow_recorded(Graph.from_bytes(path.read_bytes(), source=path.name))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["MobileNetV3Small", "EfficientNetB0"])
def test_keras_models_bare_get_tensorflows_shapes(name):
    """EfficientNetB0's squeeze-and-excite reshapes read their batch size through Shape -> StridedSlice -> Pack."""
    path = zoo_model(name)
    assert_derives_what_tensorflow_recorded(Graph.from_bytes(path.read_bytes(), source=path.name))


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_a_bare_sample_adopts_its_derived_shapes_since_tensorflow_would_know_no_more(path):
    """Every output derived, but those TensorFlow leaves unknown too (each sample's recorded shapes say which):
    the bare graph's shapes are ready without the TensorFlow helper, and they are TensorFlow's."""
    graph = Graph.from_bytes(path.read_bytes(), source=path.name)
    assert all(graph.recorded_shapes(n.name)[port] is None for n in graph for op, port in UNKNOWN_TO_TENSORFLOW
               if n.op == op)
    stripped = bare(graph)
    assert not stripped.shapes_ready and stripped.adopt_static_shapes() and stripped.shapes_ready
    assert {key: shape for key, shape in stripped.known_shapes().items() if shape is not None} == {
        (n.name, port): shape for n in graph for port, shape in enumerate(graph.recorded_shapes(n.name))
        if shape is not None}


def test_an_op_without_an_entry_is_unknown_and_so_is_what_reads_it():
    x = make_node("Placeholder", "x", [], {"dtype": proto.AttrValue(type=proto.DT_FLOAT),
                                          "shape": proto.AttrValue(shape=proto.shape_proto((None, 8)))})
    odd = make_node("Cumsum", "odd", ["x", "axis"], {"T": proto.AttrValue(type=proto.DT_FLOAT)})
    relu = make_node("Relu", "relu", ["odd"], {"T": proto.AttrValue(type=proto.DT_FLOAT)})
    graph = Graph.from_nodes([x, make_const("axis", np.int32(1)), odd, relu])
    assert graph.output_shape("x") == (None, 8)
    assert graph.output_shape("odd") is None and graph.output_shape("relu") is None
    assert not graph.adopt_static_shapes() and not graph.shapes_ready  # TensorFlow may know them: ask it


def test_broadcast_follows_numpy_and_keeps_unknown_dimensions():
    assert broadcast((None, 1, 3), (4, 1)) == (None, 4, 3)
    assert broadcast((2, 3), None) is None
    assert broadcast((None,), (5,)) == (5,)


def _reshape_graph(shape_op: str) -> Graph:
    """x (None, 12) -> Reshape to the Const `target` read through `shape_op` -> Relu; and a Relu on x beside."""
    float_t = {"T": proto.AttrValue(type=proto.DT_FLOAT)}
    x = make_node("Placeholder", "x", [], {"dtype": proto.AttrValue(type=proto.DT_FLOAT),
                                          "shape": proto.AttrValue(shape=proto.shape_proto((None, 12)))})
    forward = make_node(shape_op, "forward", ["target"], {"T": proto.AttrValue(type=proto.DT_INT32)})
    reshape = make_node("Reshape", "reshape", ["x", "forward"], float_t)
    return Graph.from_nodes([x, make_const("target", np.array([-1, 3, 4], np.int32)), forward, reshape,
                             make_node("Relu", "relu", ["reshape"], float_t),
                             make_node("Relu", "beside", ["x"], float_t)])


@pytest.mark.parametrize("shape_op", ["Identity", "Snapshot"])
def test_an_edit_that_changes_a_constant_derives_again_what_reads_it_through_a_forwarding_op(shape_op):
    """A graph an edit built keeps the shapes derived for the graph it came from where nothing it reads
    changed; a Const given another value under its name changes the shape of the Reshape two nodes on."""
    graph = _reshape_graph(shape_op)
    assert graph.output_shape("relu") == (None, 3, 4)
    editor = graph.editor()
    editor.mutable("target").attr["value"].tensor.CopyFrom(proto.ndarray_to_tensor(np.array([-1, 2, 6], np.int32)))
    edited = editor.build()
    assert edited.output_shape("relu") == (None, 2, 6) and edited.output_shape("beside") == (None, 12)
    assert edited._derived == infer_static_shapes(Graph.from_bytes(edited.to_bytes()))
    assert edited._derived.fresh == 4  # target, forward, reshape, relu; x and beside carried over


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_each_pass_graph_of_a_bare_sample_derives_what_a_fresh_derivation_gives(path):
    """Every pass's graph carries over the shapes derived for the graph before it (see infer_static_shapes):
    the default pipeline's fused graph, derived that way, knows exactly what deriving its bytes afresh does."""
    from fuselens.passes.pipeline import run_pipeline

    graph = bare(Graph.from_bytes(path.read_bytes(), source=path.name))
    graph.output_shape(graph.topological_order()[0])  # derived before any pass asks (as the window does)
    fused = run_pipeline(graph).fused
    afresh = infer_static_shapes(Graph.from_bytes(fused.to_bytes()))
    assert fused.output_shape(fused.topological_order()[0]) is not None and fused._derived == afresh
    if fused is not graph:
        assert fused._derived.fresh < afresh.fresh, "nothing carried over"
