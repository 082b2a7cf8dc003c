"""`fuselens import-profile` on the profile corpus: files told apart by content whatever their names,
op_statistic printed as per-type totals, refusals one line on stderr with exit code 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from fuselens.cli import main as cli_main

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "profiles"


def test_a_renamed_op_statistic_prints_its_per_type_totals(tmp_path, capsys):
    path = tmp_path / "stats from the cluster.txt"
    shutil.copyfile(CORPUS / "op_statistic_0_1_20250109120000.csv", path)
    assert cli_main(["import-profile", str(path)]) == 0
    out = capsys.readouterr().out
    assert "time per op type (op_statistic: 4 types, no per-kernel rows):" in out
    assert "20.00 us  59.26% x2      avg      10.00 us  Conv2D (AI_CORE)" in out
    assert cli_main(["import-profile", str(path), "--json"]) == 0
    fused = json.loads(capsys.readouterr().out)["graphs"]["fused"]
    assert [t["op_type"] for t in fused["op_types"]] == ["Conv2D", "AscBackend", "TransData", "Cast"]
    assert fused["kernels"] == []


def test_torch_npu_trace_view_and_a_refusal(tmp_path, capsys):
    assert cli_main(["import-profile", str(CORPUS / "trace_view.json")]) == 0
    assert "aclnnMatmul_MatMulCommon_MatMulV2_1f9a0c" in capsys.readouterr().out
    bad = tmp_path / "op_summary_0_1.csv"
    bad.write_text("Foo,Bar\n1,2\n")
    assert cli_main(["import-profile", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"fuselens: error: {bad}: a CSV with columns Foo, Bar: not a profile FuseLens reads (expected "
                   "op_summary, op_statistic, task_time, kernel_details or fusion_op columns)")
