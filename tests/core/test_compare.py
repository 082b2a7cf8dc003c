"""Numeric comparison: error figures, dtype tolerances, NaN/Inf, and pairing outputs across a fusion."""

from __future__ import annotations

import numpy as np
import pytest

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import Graph, proto
from fuselens.core.graph.nodes import make_node
from fuselens.core.measure.compare import compare_arrays, compare_outputs, pair_outputs, tolerance


def test_error_figures_and_verdict():
    a = np.array([1.0, 2.0, 4.0], np.float32)
    c = compare_arrays(a, a + np.array([0.0, 1e-5, -2e-4], np.float32), original_name="y:0")
    assert c.max_abs == pytest.approx(2e-4, rel=1e-3) and c.max_rel == pytest.approx(5e-5, rel=1e-3)
    assert c.mean_abs == pytest.approx((1e-5 + 2e-4) / 3, rel=1e-3)
    assert c.allclose and c.fused == "y:0" and (c.rtol, c.atol) == tolerance("float32")
    assert not compare_arrays(a, a * 1.01).allclose


def test_float16_is_judged_more_loosely_than_float32():
    a = np.linspace(1, 2, 50)
    off = a * (1 + 3e-3)
    assert compare_arrays(a.astype(np.float16), off.astype(np.float16)).allclose
    assert not compare_arrays(a.astype(np.float32), off.astype(np.float32)).allclose
    assert tolerance("float16")[0] > tolerance("float32")[0] > tolerance("float64")[0]


def test_integers_must_match_exactly():
    assert compare_arrays(np.arange(4), np.arange(4)).allclose
    assert not compare_arrays(np.arange(4), np.array([0, 1, 2, 4])).allclose


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nonfinite_values_are_flagged(bad):
    a = np.ones(4, np.float32)
    b = a.copy()
    b[2] = bad
    c = compare_arrays(a, b)
    assert not c.allclose and c.nonfinite and (c.nonfinite_original, c.nonfinite_fused) == (0, 1)
    assert "at different positions" in c.note and c.max_abs == 0.0  # errors over values finite in both
    same = compare_arrays(b, b.copy())
    assert same.allclose and same.nonfinite and "1 in the original, 1 in the fused" in same.note


def test_shape_mismatch_is_not_allclose_and_says_why():
    c = compare_arrays(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32))
    assert not c.allclose and c.max_abs is None and "[3, 2]" in c.note


def test_compare_outputs_names_missing_tensors():
    with pytest.raises(FuseLensError, match="outputs missing from the run: b:0"):
        compare_outputs({"a:0": np.ones(1)}, {}, [("a:0", "b:0")])


def _graph(*nodes):
    return Graph.from_nodes(nodes, source="t", validate=False)


def test_pairing_by_name_then_provenance():
    x = make_node("Placeholder", "x", attrs={"dtype": proto.AttrValue(type=proto.DT_FLOAT)})
    original = _graph(x, make_node("Relu", "bn", ["x"]), make_node("Relu", "head", ["x"]))
    fused = _graph(x, make_node("Relu", "bn_folded", ["x"]), make_node("Relu", "head", ["x"]))
    assert pair_outputs(original, fused, {"bn": ["bn_folded"]}) == [("bn:0", "bn_folded:0"), ("head:0", "head:0")]
    with pytest.raises(FuseLensError, match="original output\\(s\\) bn"):
        pair_outputs(original, fused)
