"""`fuselens py-pass check` and `--py-pass` on the pass-selection commands."""

from __future__ import annotations

import json

from fuselens.cli import main
from tests.passes.ge_python_check import GEMM_EXPRESSION, TEMPLATES, write_pass


def test_check_lists_passes_and_runs_them(capsys):
    assert main(["py-pass", "check", str(GEMM_EXPRESSION), "--model", "matmul_add_chain"]) == 0
    out = capsys.readouterr().out
    assert "1 GE Python pass(es)" in out and "ran against FuseLens's ge" in out
    assert "MatMulAddToGemmPass  pattern_fusion  BeforeInferShape" in out
    assert "MatMulAddToGemmPass_matmul_add_pattern: Add(MatMulV2(input0, input1), input2)" in out
    assert "MatMulAddToGemmPass: match_times 2, effect_times 2" in out
    assert "match dense2/Add: MatMulAddToGemmPass_matmul_add_pattern: MatMulV2 + Add -> GEMM" in out
    assert "proof: numerically equal" in out


def test_check_json(capsys):
    assert main(["py-pass", "check", str(TEMPLATES), "--no-proof", "--json", "--model", "matmul_add_chain"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [p["name"] for p in report["passes"]] == ["AddZeroPass", "AddZeroConstValuePass", "MatMulAddToGemmPass",
                                                     "MatMulAddToGemmCapturePass"]
    assert report["errors"] == [] and report["unsupported"] == [] and report["real_ge"] is None
    assert [r["pass"] for r in report["run"]["results"]][:1] == ["AddZeroPass"]


def test_check_reports_errors_and_missing_apis(tmp_path, capsys):
    path = write_pass(tmp_path, "needs_more.py", """
        from ge.passes import PassStage, infer_shape
    """)
    assert main(["py-pass", "check", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}, line 1: UnsupportedGeApi: ge.passes.infer_shape is not provided" in out
    assert "ge APIs FuseLens does not provide: ge.passes.infer_shape" in out


def test_fuse_with_py_pass(capsys):
    assert main(["fuse", "matmul_add_chain", "--py-pass", str(GEMM_EXPRESSION), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "MatMulAddToGemmPass" in json.dumps(report)


def test_a_broken_pass_file_is_an_error_before_fusing(tmp_path, capsys):
    path = write_pass(tmp_path, "broken.py", "import ge.passes\nraise ValueError('half written')\n")
    assert main(["fuse", "matmul_add_chain", "--py-pass", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fuselens: error: 1 error(s) in GE Python pass files:")
    assert f"{path}, line 2: ValueError: half written" in err


def test_check_on_a_dump_file(load_sample, tmp_path, capsys):
    from tests.npu_artifacts import ge_ops, ge_proto_text

    dump = tmp_path / "ge_proto_00000001_graph_0_RunCustomPassBeforeInfershape.txt"
    dump.write_text(ge_proto_text(ge_ops(load_sample("matmul_add_chain"))), encoding="utf-8")
    assert main(["py-pass", "check", str(GEMM_EXPRESSION), "--model", str(dump)]) == 0
    out = capsys.readouterr().out
    assert "dense2/MatMul is MatMul, the pattern needs MatMulV2" in out  # a dump's types are GE's: not renamed
    assert "proof: structure only: a GE graph dump runs on the host" in out
