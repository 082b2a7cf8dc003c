"""A GE Python pass tried on a GE graph dump: the very graph the host's GE produced at a stage, whose op
types and attribute names are GE's already (no TF-parser table between)."""

from __future__ import annotations

from fuselens.core.ascend.ge.dump import load_dump
from fuselens.passes.ge_python.proof import prove
from tests.npu_artifacts import ge_ops, ge_proto_text
from tests.passes.ge_python_check import GEMM_EXPRESSION, SAMPLE, ge_result, run_files


def test_the_gemm_template_on_a_dump_stage(load_sample, tmp_path):
    """dense2's matmul as GE's TF parser writes tf.matmul (MatMulV2); dense1's left as a GE MatMul, which a
    dump's op type is taken as: not renamed, so the MatMulV2 pattern does not bind it."""
    ops = ge_ops(load_sample(SAMPLE))
    for op in ops:
        if op.name == "dense2/MatMul":
            op.type = "MatMulV2"
            op.attrs["transpose_x1"] = op.attrs.pop("transpose_a")
            op.attrs["transpose_x2"] = op.attrs.pop("transpose_b")
    path = tmp_path / "ge_proto_00000001_graph_0_RunCustomPassBeforeInfershape.txt"
    path.write_text(ge_proto_text(ops), encoding="utf-8")
    graph = load_dump(path, weights=True).graph
    pipeline, _ = run_files(graph, GEMM_EXPRESSION)
    result = ge_result(pipeline, "MatMulAddToGemmPass")
    assert (result.match_times, result.effect_times) == (1, 1)
    assert [m.anchor for m in result.matches] == ["dense2/Add"]
    miss = next(n for n in result.near_misses if n.anchor == "dense1/BiasAdd")
    assert miss.reason.endswith("pattern node MatMulV2_0 (input of BiasAdd_0, slot 0): dense1/MatMul is MatMul, "
                                "the pattern needs MatMulV2")
    assert pipeline.fused.op_type("dense2/Add") == "GEMM"
    assert prove(pipeline).text == "structure only: a GE graph dump runs on the host, not in TensorFlow"
