"""The AMCT folds in float16, bfloat16, float32 and float64 (and an integer Mul fold), with random weights
and random BatchNorm statistics: a fold that fits is fused and agrees with the original; one whose folded
values overflow or underflow the weights' dtype is refused with a near miss that names the node, the value
and the dtype, and leaves the graph as it was. No numpy warning escapes (warnings are errors here).

Which dtypes TensorFlow runs (TF 2.21, CPU): Conv2D, DepthwiseConv2dNative, MatMul, BiasAdd and
FusedBatchNormV3 all run in float16 and bfloat16; FusedBatchNorm* has no float64 at all (its op def
allows half, bfloat16 and float only), so a float64 BatchNorm graph is compared against a float64 numpy
reference of the original (amct_check.reference_outputs) instead of a TensorFlow run of it.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from functools import partial

import ml_dtypes
import numpy as np
import pytest

from fuselens.core.formats.execute import run_graph
from fuselens.core.graph import Graph
from fuselens.core.graph.nodes import make_const
from fuselens.passes.amct.conv_bn import ConvBatchnormFusionPass
from fuselens.passes.amct.depthwise_bn import DepthwiseConvBatchnormFusionPass
from fuselens.passes.amct.folding import dtype_info, short
from fuselens.passes.amct.group_conv_bn import GroupConvBatchnormFusionPass
from fuselens.passes.amct.op_bias_mul import OpBiasAddMulFusionPass
from fuselens.passes.amct.small_op_bn import SmallOpBatchnormFusionPass
from fuselens.passes.base import FusionPass, NearMiss
from tests.passes.amct_check import (
    Magnitudes,
    apply_passes,
    conv_bias_bn_graph,
    depthwise_bn_graph,
    dtype_feeds,
    group_conv_bn_graph,
    op_bias_mul_graph,
    reference_outputs,
    small_op_bn_graph,
)

DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32, "float64": np.float64}
# rtol, and atol relative to the output's largest value: 8 epsilons of the dtype (float16 7.8e-3,
# bfloat16 6.2e-2, float32 9.5e-7, float64 1.8e-15). Measured: at most 0.6, 0.4, 1.5 and 1.5 epsilons.
TOLERANCE = {name: 8 * float(dtype_info(dtype).eps) for name, dtype in DTYPES.items()}

# fold -> (graph builder, the passes that fold it, the node read as its output)
FOLDS: dict[str, tuple[Callable[..., Graph], tuple[type[FusionPass], ...], str]] = {
    "conv_bn": (conv_bias_bn_graph, (ConvBatchnormFusionPass,), "bn"),
    "depthwise_bn": (depthwise_bn_graph, (DepthwiseConvBatchnormFusionPass,), "bn"),
    "group_conv_bn": (group_conv_bn_graph, (GroupConvBatchnormFusionPass,), "bn"),
    "conv_bias_mul": (op_bias_mul_graph, (OpBiasAddMulFusionPass,), "mul"),
    "matmul_bias_mul": (partial(op_bias_mul_graph, op="MatMul"), (OpBiasAddMulFusionPass,), "mul"),
    "small_op_bn": (small_op_bn_graph, (SmallOpBatchnormFusionPass, ConvBatchnormFusionPass), "out"),
}
# FusedBatchNormV3 has no float64: the small-op pass refuses it for its dtype (test below).
GRID = [(fold, dtype) for fold in FOLDS for dtype in DTYPES if (fold, dtype) != ("small_op_bn", "float64")]

FITS = Magnitudes(scale=1.0, weights=0.3)
# Folded filter ~ weights * scale beyond the dtype's largest value; the original's output (inputs *
# weights * scale) stays finite. float64's BatchNorm parameters are float32, so its weights are huge.
OVERFLOW = {"float16": Magnitudes(1e4, weights=10, inputs=1e-3),
            "bfloat16": Magnitudes(1e37, weights=100, inputs=1e-3),
            "float32": Magnitudes(1e37, weights=100, inputs=1e-3),
            "float64": Magnitudes(1e37, weights=1e300, inputs=1e-300)}
# Folded filter ~ weights * scale below the dtype's smallest normal, all of it (so the values matter).
UNDERFLOW = {"float16": Magnitudes(1e-6), "bfloat16": Magnitudes(1e-36, weights=1e-3),
             "float32": Magnitudes(1e-36, weights=1e-3), "float64": Magnitudes(1e-30, weights=1e-280)}
# The small-op BatchNorm computes its own scale in the dtype: that scale overflows (gamma itself fits) or
# underflows. Small inputs keep beta (~ inputs * weights * scale) inside the dtype.
SMALL_OP_OVERFLOW = {"float16": Magnitudes(2e5, inputs=1e-3, variance=1e-4),
                     "bfloat16": Magnitudes(1e40, inputs=1e-6, variance=1e-8, epsilon=1e-6),
                     "float32": Magnitudes(1e40, inputs=1e-6, variance=1e-8, epsilon=1e-6)}
SMALL_OP_UNDERFLOW = {"float16": Magnitudes(1e-6), "bfloat16": Magnitudes(1e-40), "float32": Magnitudes(1e-40)}


def folded(fold: str, dtype: str, size: Magnitudes) -> tuple[Graph, Graph, list[NearMiss], int]:
    """(original, fused, near misses, matches) of the fold's passes, numpy warnings raised as errors."""
    build, passes, _ = FOLDS[fold]
    original = build(DTYPES[dtype], size)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fused, results = apply_passes(original, *passes)
    return original, fused, [n for r in results for n in r.near_misses], sum(len(r.matches) for r in results)


def tf_runs(graph: Graph) -> bool:
    return not any(node.op.startswith("FusedBatchNorm") and node.attr["T"].type == 2 for node in graph)  # DT_DOUBLE


def outputs(original: Graph, fused: Graph, fetch: str, inputs: float) -> tuple[np.ndarray, np.ndarray]:
    """(original, fused) outputs as float64 on the same random feeds; the original by TensorFlow if it can
    run it, else by the float64 numpy reference."""
    feeds = dtype_feeds(original, inputs)
    before = run_graph(original, feeds, [fetch]) if tf_runs(original) else reference_outputs(original, feeds, [fetch])
    after = run_graph(fused, feeds, [fetch])
    return np.asarray(before[fetch], np.float64), np.asarray(after[fetch], np.float64)


def size_of(fold: str, dtype: str, sizes: dict[str, Magnitudes], small_op_sizes: dict[str, Magnitudes]) -> Magnitudes:
    return (small_op_sizes if fold == "small_op_bn" else sizes)[dtype]


@pytest.mark.parametrize(("fold", "dtype"), GRID)
def test_a_fold_that_fits_is_fused_and_agrees_with_the_original(fold, dtype):
    original, fused, near_misses, matches = folded(fold, dtype, FITS)
    assert not near_misses and matches == len(FOLDS[fold][1])
    folded_filters = [n.name for n in fused if n.name.endswith("/folded_filter")]
    assert folded_filters and all(fused.const_value(n).dtype == DTYPES[dtype] for n in folded_filters)
    before, after = outputs(original, fused, FOLDS[fold][2], FITS.inputs)
    assert np.isfinite(before).all() and np.abs(before).max() > 0
    tolerance = TOLERANCE[dtype]
    np.testing.assert_allclose(after, before, rtol=tolerance, atol=tolerance * np.abs(before).max())


def assert_left_as_it_was(original: Graph, fused: Graph, fold: str, inputs: float) -> None:
    """Nothing was rewritten, and (where TensorFlow runs it) the outputs are the same numbers."""
    assert fused.graph_def.SerializeToString() == original.graph_def.SerializeToString()
    if tf_runs(original):
        before, after = outputs(original, fused, FOLDS[fold][2], inputs)
        np.testing.assert_array_equal(after, before)


@pytest.mark.parametrize(("fold", "dtype"), GRID)
def test_a_fold_that_overflows_is_refused_with_the_value_and_the_dtype(fold, dtype):
    size = size_of(fold, dtype, OVERFLOW, SMALL_OP_OVERFLOW)
    original, fused, near_misses, matches = folded(fold, dtype, size)
    assert matches == 0
    (miss,) = near_misses
    largest = short(float(dtype_info(DTYPES[dtype]).max), 6)
    found = re.search(rf"reaches (\S+), beyond {dtype}'s {largest}", miss.reason)
    assert found and float(found[1]) > float(dtype_info(DTYPES[dtype]).max), miss.reason
    if fold == "small_op_bn":
        assert miss.reason.startswith("the scale gamma / sqrt(variance + epsilon) of bn/batchnorm reaches")
    else:
        assert re.match(rf"folding {miss.anchor} into (conv|dw|op|conv0|conv1): the folded filter reaches",
                        miss.reason)
        if tf_runs(original):  # the original's output is finite: a fold written anyway would give inf and NaN
            before, _ = outputs(original, fused, FOLDS[fold][2], size.inputs)
            assert np.isfinite(before).all()
    assert_left_as_it_was(original, fused, fold, size.inputs)


@pytest.mark.parametrize(("fold", "dtype"), GRID)
def test_a_fold_that_underflows_is_refused_with_the_value_and_the_dtype(fold, dtype):
    if dtype == "float64" and np.finfo(np.longdouble).max <= np.finfo(np.float64).max:
        pytest.skip("np.longdouble is float64 here: a float64 underflow cannot be seen before it happens")
    size = size_of(fold, dtype, UNDERFLOW, SMALL_OP_UNDERFLOW)
    original, fused, near_misses, matches = folded(fold, dtype, size)
    assert matches == 0
    (miss,) = near_misses
    smallest_normal = short(float(dtype_info(DTYPES[dtype]).smallest_normal))
    found = re.search(rf"has values down to (\S+) \(its largest is (\S+)\) that {dtype} (flushes to 0|keeps only "
                      rf"as subnormals) \(its smallest normal is {re.escape(smallest_normal)}\)", miss.reason)
    assert found and float(found[1]) < float(smallest_normal), miss.reason
    assert_left_as_it_was(original, fused, fold, size.inputs)


def test_small_op_batchnorm_in_float64_is_refused_for_its_dtype():
    original, fused, near_misses, matches = folded("small_op_bn", "float64", FITS)
    assert matches == 0
    (miss,) = near_misses
    assert miss.reason == "bn/batchnorm/mul_1 computes in float64, which FusedBatchNormV3 does not support"
    assert_left_as_it_was(original, fused, "small_op_bn", FITS.inputs)


@pytest.mark.parametrize(("factor", "fits"), [(7, True), (3_000_000, False)])
def test_an_integer_mul_fold_is_exact_and_keeps_the_range(factor, fits):
    """int32 MatMul + BiasAdd + Mul: the fold is exact in Python integers; one beyond int32 is refused."""
    original = op_bias_mul_graph(np.int32, Magnitudes(factor, weights=1000, inputs=3), op="MatMul")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fused, (result,) = apply_passes(original, OpBiasAddMulFusionPass)
    if fits:
        assert len(result.matches) == 1 and not result.near_misses
        before, after = outputs(original, fused, "mul", 3)
        assert np.abs(before).max() > 0
        np.testing.assert_array_equal(after, before)
        return
    (miss,) = result.near_misses
    found = re.fullmatch(r"folding mul into op: the folded filter reaches (-?\d+), beyond int32's range "
                         r"\[-2147483648, 2147483647\]", miss.reason)
    assert found and abs(int(found[1])) > 2**31 - 1, miss.reason
    assert_left_as_it_was(original, fused, "matmul_bias_mul", 3)


def test_a_folded_bias_beyond_float16_is_refused_even_when_the_filter_fits():
    """beta = 1e5 (a float32 BatchNorm parameter) makes b' = (b - mean) * s + beta too large for a float16 bias."""
    fitting = conv_bias_bn_graph(np.float16, FITS)
    original = Graph.from_nodes([make_const("bn/beta", np.full(4, 1e5, np.float32)) if node.name == "bn/beta"
                                 else node for node in fitting.graph_def.node], source="toy")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fused, (result,) = apply_passes(original, ConvBatchnormFusionPass)
    (miss,) = result.near_misses
    assert re.fullmatch(r"folding bn into conv: the folded bias reaches 1e5, beyond float16's 65504", miss.reason)
    assert miss.culprit.nodes == ("w", "bn")
    assert_left_as_it_was(original, fused, "conv_bn", FITS.inputs)
