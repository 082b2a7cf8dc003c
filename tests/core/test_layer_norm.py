"""oneDNN's LayerNorm on CPU: TensorFlow's remapper builds it with epsilon 0.001; the runner builds it
with the graph's own, so an original BERT computes its own math and a fused one agrees with it."""

from __future__ import annotations

import numpy as np
import pytest

from fuselens.core.graph import Graph, proto
from fuselens.core.runtime import layer_norm
from fuselens.core.tfimport import import_tensorflow

EPSILON = 1e-12  # BERT's
GAMMA, BETA = "ln/batchnorm/mul/ReadVariableOp", "ln/batchnorm/ReadVariableOp"


def keras2_layer_norm_graph(rng: np.random.Generator, *, axis: int = 2, rank: int = 3) -> Graph:
    """x -> tf.nn.moments + tf.nn.batch_normalization over the last axis (Keras 2's LayerNormalization,
    TF1 BERT), epsilon 1e-12, random gamma and beta read through Identity inside the batchnorm scope,
    named as a frozen tf-keras model names them (so the scope LayerNorm pass refuses it, as the
    toolchain does, and AutoFuse takes its tail)."""
    tf = import_tensorflow()
    shape = [2, 8, 32][-rank:]
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, shape, name="x")
        gamma = tf.identity(tf.constant(rng.uniform(0.5, 1.5, shape[-1]).astype(np.float32)), name=GAMMA)
        beta = tf.identity(tf.constant(rng.normal(0, 0.5, shape[-1]).astype(np.float32)), name=BETA)
        mean, variance = tf.nn.moments(x, [axis], keepdims=True, name="ln/moments")
        y = tf.nn.batch_normalization(x, mean, variance, beta, gamma, EPSILON, name="ln/batchnorm")
        tf.identity(y, name="output")
    return Graph(proto.GraphDef.FromString(graph.as_graph_def().SerializeToString()), source="ln")


def run(graph: Graph, x: np.ndarray) -> np.ndarray:
    """One run in a default session: Grappler's remapper on, as TensorFlow runs a model."""
    tf = import_tensorflow()
    tf_graph = tf.Graph()
    with tf_graph.as_default():
        tf.graph_util.import_graph_def(proto.to_tf(graph.graph_def), name="")
    with tf.compat.v1.Session(graph=tf_graph) as session:
        return session.run("output:0", {"x:0": x})


def reference(graph: Graph, x: np.ndarray) -> np.ndarray:
    """The LayerNorm in float64 numpy from the graph's own gamma and beta."""
    gamma, beta = graph.const_value(GAMMA), graph.const_value(BETA)
    x64 = x.astype(np.float64)
    mean = x64.mean(-1, keepdims=True)
    variance = ((x64 - mean) ** 2).mean(-1, keepdims=True)
    return (x64 - mean) / np.sqrt(variance + EPSILON) * gamma + beta


@pytest.fixture(scope="module")
def case() -> tuple[Graph, np.ndarray]:
    rng = np.random.default_rng(11)
    return keras2_layer_norm_graph(rng), rng.normal(0.3, 0.01, (2, 8, 32)).astype(np.float32)


def test_tensorflows_own_layer_norm_ignores_the_graphs_epsilon(case):
    """The defect this module works around: if this fails, TensorFlow fixed it and the rebuild can go."""
    from fuselens.core.devices import backends

    graph, x = case
    assert backends.onednn_fuses_layer_norms()
    assert np.abs(run(graph, x) - reference(graph, x)).max() > 0.5  # epsilon 0.001 against variance 1e-4


def test_the_rebuilt_layer_norm_computes_the_graphs_math(case):
    graph, x = case
    rank = {"x": 3}.get
    rebuilt, found = layer_norm.replace_with_onednn(graph, keep={"output"}, rank=rank)
    assert [(n.output, n.x, n.epsilon) for n in found] == [("ln/batchnorm/add_1", "x", pytest.approx(EPSILON))]
    assert (found[0].gamma, found[0].beta) == (GAMMA, BETA)
    assert rebuilt.op("ln/batchnorm/add_1") == layer_norm.ONEDNN_OP
    assert not {"ln/moments/mean", "ln/moments/variance", "ln/batchnorm/Rsqrt"} & set(rebuilt.nodes)
    np.testing.assert_allclose(run(rebuilt, x), reference(graph, x), rtol=0, atol=1e-5)


@pytest.mark.parametrize("why", ["axis -1", "rank 4", "fetched", "read outside", "float64"])
def test_a_layer_norm_the_remapper_would_leave_alone_is_left_alone(why):
    """The remapper's own conditions: a last axis written as rank - 1, a rank-2 or -3 input, float32,
    intermediates nobody else reads (or fetches)."""
    rng = np.random.default_rng(3)
    graph = keras2_layer_norm_graph(rng, axis=-1) if why == "axis -1" else keras2_layer_norm_graph(rng)
    keep = {"output"} | ({"ln/moments/mean"} if why == "fetched" else set())
    rank = {"x": 4 if why == "rank 4" else 3}.get
    if why == "read outside":
        editor = graph.editor()
        editor.add(proto.NodeDef(name="spy", op="Identity", input=["ln/batchnorm/Rsqrt"],
                                 attr={"T": proto.AttrValue(type=proto.DT_FLOAT)}))
        graph = editor.build()
    if why == "float64":
        graph = Graph.from_nodes([_as_float64(n) for n in graph.graph_def.node], source="ln64")
    rebuilt, found = layer_norm.replace_with_onednn(graph, keep=keep, rank=rank)
    assert found == [] and rebuilt is graph


def _as_float64(node: proto.NodeDef) -> proto.NodeDef:
    copy = proto.NodeDef.FromString(node.SerializeToString())
    for key in ("T", "dtype"):
        if key in copy.attr and copy.attr[key].type == proto.DT_FLOAT:
            copy.attr[key].type = proto.tf_dtype(np.float64)
    if copy.op == "Const" and copy.attr["value"].tensor.dtype == proto.DT_FLOAT:
        value = proto.tensor_to_ndarray(copy.attr["value"].tensor).astype(np.float64)
        copy.attr["value"].tensor.CopyFrom(proto.ndarray_to_tensor(value))
    return copy
