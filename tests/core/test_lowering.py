"""CPU lowering: conv/matmul epilogue kernels run as their original ops, outputs and names unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from fuselens.core.formats.execute import random_feeds, run_graph
from fuselens.core.graph import Graph, proto
from fuselens.core.measure.profile import NodeMapper
from fuselens.core.runtime import layer_norm
from fuselens.core.runtime.lowering import (
    CONTRACTION_TAIL,
    EPILOGUE,
    FUNCTION_CALL,
    LAYER_NORM,
    XLA_KERNEL,
    contraction_tail_note,
    execution_plan,
    lower,
)
from fuselens.core.tfimport import import_tensorflow
from fuselens.passes.pipeline import run_pipeline
from tests.core.test_layer_norm import keras2_layer_norm_graph


@pytest.fixture(scope="module")
def fused() -> tuple[Graph, Graph]:
    """Conv2D + inference BN (random weights and statistics) + Relu6, then MatMul + BiasAdd + Relu,
    then an Abs/Exp tail that no conv or matmul precedes; fused with the default passes."""
    tf = import_tensorflow()
    rng = np.random.default_rng(7)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [1, 8, 8, 4], name="x")
        conv = tf.nn.conv2d(x, rng.normal(0, 0.5, (3, 3, 4, 6)).astype(np.float32), 1, "SAME", name="conv")
        bn, *_ = tf.compat.v1.nn.fused_batch_norm(
            conv, rng.uniform(0.5, 1.5, 6).astype(np.float32), rng.normal(0, 0.5, 6).astype(np.float32),
            mean=rng.normal(0, 0.5, 6).astype(np.float32), variance=rng.uniform(0.5, 2, 6).astype(np.float32),
            is_training=False, name="bn")
        act = tf.nn.relu6(bn, name="relu6")
        flat = tf.reshape(act, [1, 8 * 8 * 6], name="flat")
        dense = tf.matmul(flat, rng.normal(0, 0.1, (384, 10)).astype(np.float32), name="dense")
        biased = tf.nn.bias_add(dense, rng.normal(0, 0.5, 10).astype(np.float32), name="dense_bias")
        relu = tf.nn.relu(biased, name="dense_relu")
        tail = tf.exp(tf.abs(tf.nn.softmax(relu, name="softmax"), name="abs"), name="exp")
        tf.identity(tail, name="output")
    original = Graph(proto.GraphDef.FromString(graph.as_graph_def().SerializeToString()), source="lowering")
    return original, run_pipeline(original).fused


def test_plan_lowers_epilogues_on_cpu_only(fused):
    _, graph = fused
    cpu, gpu = execution_plan(graph, "cpu"), execution_plan(graph, "gpu")
    epilogues = sorted(how for how in cpu.values() if how != XLA_KERNEL)
    assert epilogues == [EPILOGUE.format("conv"), EPILOGUE.format("matmul")]
    assert list(cpu.values()).count(XLA_KERNEL) == 1  # the Abs/Exp tail stays one XLA kernel
    assert set(gpu.values()) == {XLA_KERNEL} and set(gpu) == set(cpu)


def test_lowering_keeps_outputs_allclose_and_every_name(fused):
    original, graph = fused
    before = graph.graph_def.SerializeToString(deterministic=True)
    lowered = lower(graph, execution_plan(graph, "cpu"))
    assert graph.graph_def.SerializeToString(deterministic=True) == before  # the fused graph is untouched
    assert set(graph.nodes) <= set(lowered.nodes)  # call nodes keep their names (IdentityN), readers too
    mapper = NodeMapper(graph)
    for name, how in execution_plan(graph, "cpu").items():
        inner = graph.fused_info(name).nodes
        if how != XLA_KERNEL:
            assert lowered.op(name) == "IdentityN" and set(inner) <= set(lowered.nodes)
            assert all(mapper.node(n) == name for n in inner)  # kernels of inner ops map to the fused node
    feeds = random_feeds(original, seed=3)
    want = run_graph(original, feeds, ["output"])["output"]
    for g in (graph, lowered):
        np.testing.assert_allclose(run_graph(g, feeds, ["output"])["output"], want, rtol=1e-4, atol=1e-5)


def test_layer_norms_run_as_their_original_ops_on_cpu(load_sample):
    """An AutoFuse LayerNorm tail (moments outside the kernel) and a scope-fused LayerNorm both run as
    the ops TensorFlow would fuse into oneDNN's LayerNorm; on a GPU they stay a kernel / a call."""
    tail = run_pipeline(keras2_layer_norm_graph(np.random.default_rng(5))).fused
    [kernel] = [n for n in tail.nodes if tail.fused_info(n)]
    assert "Rsqrt" in kernel
    assert execution_plan(tail, "cpu") == {kernel: LAYER_NORM} and execution_plan(tail, "gpu") == {kernel: XLA_KERNEL}
    lowered = lower(tail, execution_plan(tail, "cpu"), keep={"output"})
    rebuilt, [norm] = layer_norm.replace_with_onednn(lowered, {"output"}, {"x": 3}.get)
    assert rebuilt.op(norm.output) == layer_norm.ONEDNN_OP and lowered.op(kernel) == "IdentityN"

    scope = run_pipeline(load_sample("bert_layernorm")).fused
    plan = execution_plan(scope, "cpu")
    norms = [n for n in scope.nodes if scope.fused_info(n) and scope.fused_info(n).op_type == "LayerNorm"]
    assert len(norms) == 2 and all(plan[n] == LAYER_NORM for n in norms)
    assert all(execution_plan(scope, "gpu")[n] == FUNCTION_CALL for n in norms)
    lowered = lower(scope, plan)
    assert all(len(lowered.node(n).input) == 1 for n in norms)  # the unread mean and rsqrt are not passed on
    feeds = random_feeds(scope, seed=1)
    np.testing.assert_allclose(run_graph(lowered, feeds)["sequence_output"], run_graph(scope, feeds)["sequence_output"],
                               rtol=1e-5, atol=1e-6)


def test_adds_and_multiplies_after_a_contraction_run_as_their_original_ops_on_cpu():
    """A BERT's query scaling after an Einsum, and a bias plus residual after a Tensordot's MatMul, run as
    their ops on CPU (XLA's CPU code is slower for them); an Exp after an Einsum stays an XLA kernel."""
    tf = import_tensorflow()
    rng = np.random.default_rng(11)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2, 8, 16], name="x")
        query = tf.einsum("abc,cd->abd", x, rng.normal(0, 0.3, (16, 16)).astype(np.float32), name="query")
        scaled = tf.multiply(query + rng.normal(0, 0.5, 16).astype(np.float32), 0.25, name="scaled")
        dense = tf.tensordot(scaled, rng.normal(0, 0.3, (16, 16)).astype(np.float32), axes=1, name="dense")
        residual = tf.add(tf.nn.bias_add(dense, rng.normal(0, 0.5, 16).astype(np.float32)), x, name="residual")
        key = tf.einsum("abc,cd->abd", residual, rng.normal(0, 0.3, (16, 16)).astype(np.float32), name="key")
        tf.identity(tf.exp(key + rng.normal(0, 0.1, 16).astype(np.float32)), name="output")
    original = Graph(proto.GraphDef.FromString(graph.as_graph_def().SerializeToString()), source="contraction")
    fused = run_pipeline(original).fused
    plan = execution_plan(fused, "cpu")
    assert sorted(plan.values()) == sorted([CONTRACTION_TAIL.format("a matmul"), CONTRACTION_TAIL.format("an einsum"),
                                            XLA_KERNEL])
    assert set(execution_plan(fused, "gpu").values()) == {XLA_KERNEL}
    lowered = lower(fused, plan, keep={"output"})
    tails = [name for name, how in plan.items() if how != XLA_KERNEL]
    assert all(lowered.op(name) == "IdentityN" for name in tails)
    note = contraction_tail_note(fused, plan, lowered)
    assert note.startswith("2 AutoFuse kernels ran as their 4 original ops on CPU") and all(n in note for n in tails)
    feeds = random_feeds(original, seed=2)
    want = run_graph(original, feeds, ["output"])["output"]
    np.testing.assert_allclose(run_graph(lowered, feeds, ["output"])["output"], want, rtol=1e-5, atol=1e-6)
