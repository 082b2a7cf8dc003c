"""The shipped GE Python pass templates (both styles of each) on the sample that holds their patterns:
GE's counts, what the rewrite made, and the fused graph numerically equal to the original."""

from __future__ import annotations

import pytest

from fuselens.passes.ge_python import load_env_passes
from fuselens.passes.ge_python.proof import prove
from tests.passes.ge_python_check import (
    ADD_ZERO_BUILDER,
    ADD_ZERO_EXPRESSION,
    GEMM_BUILDER,
    GEMM_EXPRESSION,
    SAMPLE,
    TEMPLATES,
    ge_result,
    run_files,
)

# template -> (pass name, match_times, effect_times, the anchors rewritten)
EXPECTED = {
    GEMM_EXPRESSION: ("MatMulAddToGemmPass", 2, 2, ["dense2/Add", "dense1/BiasAdd"]),
    GEMM_BUILDER: ("MatMulAddToGemmCapturePass", 1, 1, ["dense2/Add"]),
    ADD_ZERO_EXPRESSION: ("AddZeroPass", 2, 1, ["add_zero"]),  # dense2/Add + bias matches, meet_requirements refuses
    ADD_ZERO_BUILDER: ("AddZeroConstValuePass", 1, 1, ["add_zero"]),  # the bias's value does not match 0.0
}


@pytest.mark.parametrize("template", list(EXPECTED), ids=lambda p: p.stem)
def test_template_counts_and_rewrite(load_sample, template):
    name, match_times, effect_times, anchors = EXPECTED[template]
    pipeline, _ = run_files(load_sample(SAMPLE), template)
    result = ge_result(pipeline, name)
    assert (result.match_times, result.effect_times) == (match_times, effect_times)
    assert [m.anchor for m in result.matches] == anchors
    assert result.errors == [] and result.unsupported == []
    assert len(result.rewrites) == effect_times


def test_gemm_replaces_the_matmul_and_its_add(load_sample):
    pipeline, _ = run_files(load_sample(SAMPLE), GEMM_EXPRESSION)
    fused = pipeline.fused
    assert fused.op_type("dense2/Add") == "GEMM" and fused.op_type("dense1/BiasAdd") == "GEMM"
    assert "dense2/MatMul" not in fused and "dense1/MatMul" not in fused
    assert fused.inputs("dense1/Relu")[0].node == "dense1/BiasAdd"
    provenance = pipeline.provenance
    assert provenance.origins("dense2/Add") >= {"dense2/MatMul", "dense2/Add"}
    assert provenance.original_status("dense2/MatMul") == "removed"


def test_add_zero_reads_its_input(load_sample):
    pipeline, _ = run_files(load_sample(SAMPLE), ADD_ZERO_EXPRESSION)
    assert "add_zero" not in pipeline.fused and pipeline.fused.outputs() == ["dense2/Add"]


@pytest.mark.parametrize("template", list(EXPECTED), ids=lambda p: p.stem)
def test_fused_graph_numerically_equal(load_sample, template):
    pipeline, _ = run_files(load_sample(SAMPLE), template)
    proof = prove(pipeline, seed=3)
    assert proof.status == "equal", proof.text
    assert proof.fetched == {"add_zero": "dense2/Add" if template in (ADD_ZERO_EXPRESSION, ADD_ZERO_BUILDER)
                             else "add_zero"}


def test_all_templates_from_ascend_ge_py_pass_path(load_sample, monkeypatch):
    """The directory on ASCEND_GE_PY_PASS_PATH: every template, in name order; run together, in that order."""
    monkeypatch.setenv("ASCEND_GE_PY_PASS_PATH", f"{TEMPLATES}:")
    load = load_env_passes()
    assert load.errors == []
    assert [p.name for p in load.passes] == ["AddZeroPass", "AddZeroConstValuePass", "MatMulAddToGemmPass",
                                             "MatMulAddToGemmCapturePass"]
    assert {p.stage for p in load.passes} == {"BeforeInferShape"}
    pipeline, _ = run_files(load_sample(SAMPLE), TEMPLATES)
    counts = {r.pass_id: (r.match_times, r.effect_times) for r in pipeline.results if hasattr(r, "match_times")}
    # AddZeroPass takes add_zero first, so the other Add(x, 0) pass finds nothing; the GEMM passes likewise
    assert counts == {"AddZeroPass": (2, 1), "AddZeroConstValuePass": (0, 0), "MatMulAddToGemmPass": (2, 2),
                      "MatMulAddToGemmCapturePass": (0, 0)}
    assert prove(pipeline).status == "equal"
