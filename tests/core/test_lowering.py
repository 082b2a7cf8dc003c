"""CPU lowering: conv/matmul epilogue kernels run as their original ops, outputs and names unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from core.formats.execute import random_feeds, run_graph
from core.graph import Graph, proto
from core.measure.profile import NodeMapper
from core.runtime.lowering import EPILOGUE, XLA_KERNEL, execution_plan, lower
from core.tfimport import import_tensorflow
from passes.registry import run_pipeline


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
