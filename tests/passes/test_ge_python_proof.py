"""The numeric proof of a GE Python pass's rewrite can fail, and says "structure only" where a replacement op
has no TensorFlow equivalent."""

from __future__ import annotations

from fuselens.passes.ge_python import splice
from fuselens.passes.ge_python.proof import prove
from tests.passes.ge_python_check import GEMM_EXPRESSION, SAMPLE, ge_result, run_files, write_pass


def test_a_wrong_replacement_differs(tmp_path, load_sample):
    wrong = write_pass(tmp_path, "wrong_gemm.py", GEMM_EXPRESSION.read_text().replace("GEMM(a, b, c, 1.0, 1.0)",
                                                                                       "GEMM(a, b, c, 1.0, 2.0)"))
    pipeline, _ = run_files(load_sample(SAMPLE), wrong)
    proof = prove(pipeline)
    assert proof.status == "differs" and proof.text.startswith("output add_zero differs after the rewrite")
    assert proof.max_abs_diff > 0.01


def test_an_op_without_a_tensorflow_equivalent_is_structure_only(tmp_path, load_sample, monkeypatch):
    monkeypatch.setattr(splice, "EXPANSIONS", {})
    pipeline, _ = run_files(load_sample(SAMPLE), GEMM_EXPRESSION)
    assert ge_result(pipeline, "MatMulAddToGemmPass").structure_only == ["GEMM"]
    assert pipeline.fused.op_type("dense2/Add") == "GEMM"
    proof = prove(pipeline)
    assert (proof.status, proof.text) == ("structure_only", "structure only: GEMM has no TensorFlow equivalent here")


def test_a_decomposition_into_an_op_without_a_tensorflow_equivalent_is_structure_only(tmp_path, load_sample,
                                                                                       monkeypatch):
    """A DecomposePass counts its GE-only ops as a pattern pass does (it once left them out: "equal" unproven)."""
    monkeypatch.setattr(splice, "EXPANSIONS", {})
    path = write_pass(tmp_path, "matmul_as_gemm.py", """
        from ge.es.all import GEMM
        from ge.es.graph_builder import GraphBuilder
        from ge.passes import DecomposePass, PassStage, register_decompose_pass


        @register_decompose_pass(name="MatMulAsGemmPass", stage=PassStage.AFTER_INFER_SHAPE, op_types=["MatMulV2"])
        class MatMulAsGemmPass(DecomposePass):
            def replacement(self, node):
                builder = GraphBuilder("gemm")
                a, b = builder.create_input(0), builder.create_input(1)
                zero = builder.create_scalar_float(0.0)
                return builder.build_and_reset([GEMM(a, b, zero, 1.0, 0.0)])
    """)
    pipeline, _ = run_files(load_sample(SAMPLE), path)
    result = ge_result(pipeline, "MatMulAsGemmPass")
    assert result.effect_times >= 1 and result.structure_only == ["GEMM"]
    assert prove(pipeline).status == "structure_only"
