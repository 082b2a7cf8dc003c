"""OpBiasAddMulFusionPass: the scalar Mul disappears into weights and bias; a vector Mul is a near miss."""

from __future__ import annotations

import numpy as np
import pytest

from fuselens.core.graph.nodes import make_const, make_node
from fuselens.passes.amct.op_bias_mul import OpBiasAddMulFusionPass
from tests.passes.amct_check import FLOAT, assert_same_outputs, conv, placeholder, toy_graph


@pytest.mark.parametrize(("sample", "op", "factor"), [("conv_bias_mul", "conv1", 0.75),
                                                      ("matmul_mul", "dense/MatMul", 1.5)])
def test_scalar_mul_folds_into_weights_and_bias(load_sample, sample, op, factor):
    original = load_sample(sample)
    fused, result = OpBiasAddMulFusionPass().apply(original)
    (found,) = result.matches
    assert found.anchor == "mul" and found.details["factor"] == factor
    rewrite = result.rewrites[0]
    assert rewrite.modified[:2] == (op, found.bindings["bias_add"]) and "mul" in rewrite.modified
    assert fused.op("mul") == "Identity" and "Mul" not in fused.op_histogram()  # the output keeps its name
    bias = found.bindings["bias"]
    np.testing.assert_allclose(fused.const_value(f"{op}/folded_bias"), original.const_value(bias) * factor, rtol=1e-6)
    assert_same_outputs(original, fused)


def test_vector_mul_is_a_near_miss(load_sample):
    result = OpBiasAddMulFusionPass().dry_run(load_sample("mul_vector"))
    assert not result.matches
    (miss,) = result.near_misses
    assert miss.anchor == "mul" and "of shape [16], not a scalar (empty shape)" in miss.reason


def test_mul_without_bias_and_scalar_first():
    graph = toy_graph(placeholder("x", (1, 4, 4, 2)), make_const("w", np.full((1, 1, 2, 3), 0.5, np.float32)),
                      conv("conv", "x", "w"), make_const("two", np.float32(2.0)),
                      make_node("Mul", "scaled", ["two", "conv"], {"T": FLOAT}), make_node("Relu", "out", ["scaled"],
                                                                                          {"T": FLOAT}))
    fused, result = OpBiasAddMulFusionPass().apply(graph)
    assert len(result.matches) == 1 and "BiasAdd" not in fused.op_histogram()
    assert fused.input_node("out", 0) == "conv"
    assert_same_outputs(graph, fused)


def test_mul_by_a_tensor_is_a_near_miss():
    graph = toy_graph(placeholder("x", (1, 4, 4, 2)), placeholder("y", (1, 4, 4, 3)),
                      make_const("w", np.ones((1, 1, 2, 3), np.float32)), conv("conv", "x", "w"),
                      make_node("Mul", "gate", ["conv", "y"], {"T": FLOAT}))
    (miss,) = OpBiasAddMulFusionPass().dry_run(graph).near_misses
    assert miss.reason == "gate multiplies by y (Placeholder), which is not a constant"
