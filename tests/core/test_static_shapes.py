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
    derived = infer_static_shapes(bare(graph))
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
