"""`fuselens import-log`: the toolchain's logs and OM models as JSON on the command line (tests/corpus), alone and
set against FuseLens's prediction for a sample; bad input is one line and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fuselens.cli import LIGHT_COMMANDS
from fuselens.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
NOT_MATCHED = CORPUS / "logs" / "plog-4913_20201105095233.log"
BERT_OM = CORPUS / "om_json" / "bert_layernorm_one_fused.json"


def run_cli(capsys, *argv):
    code = cli_main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_folder_of_logs_says_what_ran(capsys) -> None:
    code, out, _ = run_cli(capsys, "import-log", CORPUS / "logs")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("4 logs (atc_stdout.log, host-0_20240603102001.log, ")
    assert lines[2].split() == ["ScopeLayerNormPass", "registered", "on", "(general)", "matched", "in", "2", "of",
                                "3", "runs"]
    assert any(line.split()[:3] == ["ConvBatchnormFusionPass", "2", "runs"] and line.endswith("500 us")
               for line in lines)
    assert any(line.startswith("  [NF1002] it will create cycle after fuse") and "abs (Abs) and exp (Exp)" in line
               for line in lines)
    assert "import-log" in LIGHT_COMMANDS


def test_the_log_against_the_prediction(capsys) -> None:
    code, out, _ = run_cli(capsys, "import-log", NOT_MATCHED, "--model", "bert_layernorm")
    assert code == 0
    assert "Predicted vs actual for bert_layernorm (evidence: log)" in out
    assert ("  missing      the log says ScopeLayerNormPass did not match (1 time); FuseLens predicts 2 matches: "
            "check the graph's scope names") in out
    assert "1 log disagreements" in out


def test_the_om_model_and_the_log_as_json(capsys) -> None:
    code, out, _ = run_cli(capsys, "import-log", BERT_OM, NOT_MATCHED, "--model", "bert_layernorm", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["om_json"]["fused_ops"][0]["node"] == "bert/encoder/layer_0/attention/output/LayerNorm"
    assert data["log"]["scope_passes"][0] == {"name": "ScopeLayerNormPass", "registered_enabled": True,
                                              "matched": 0, "not_matched": 1}
    check = data["check"]
    assert check["summary"]["evidence"] == ["log", "om_json"] and check["summary"]["found"] == 2
    assert check["log"][0]["status"] == "missing" and check["log"][0]["predicted_matches"] == 2
    assert check["unpredicted"][0]["sources"] == ["om_json"]


def test_the_pass_selection_counts(capsys) -> None:
    """The 2020 log registered ScopeInstanceNormPass off and never ran it: news only where FuseLens switches it on."""
    def instance_rows(*options):
        code, out, _ = run_cli(capsys, "import-log", NOT_MATCHED, "--model", "instance_norm", "--json", *options)
        assert code == 0
        return [r for r in json.loads(out)["check"]["log"] if r["pass"] == "ScopeInstanceNormPass"]

    assert instance_rows() == []
    [row] = instance_rows("--enable-scope-passes", "ScopeInstanceNormPass")
    assert row["status"] == "missing" and row["predicted_matches"] > 0
    assert row["log"] == "the log says ScopeInstanceNormPass was registered off (is_enable = false) and never ran"
    assert row["note"].endswith("add ScopeInstanceNormPass to enable_scope_fusion_passes")


def test_bad_input_is_one_line(capsys, tmp_path) -> None:
    for bad in (CORPUS / "logs" / "not_a_log.csv", tmp_path / "missing.log", tmp_path):
        code, out, err = run_cli(capsys, "import-log", bad)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and str(bad) in err


def test_import_log_with_a_model_never_imports_tensorflow() -> None:
    driver = ("import io, contextlib, sys\nfrom fuselens.cli import main\n"
              "with contextlib.redirect_stdout(io.StringIO()):\n"
              f"    code = main(['import-log', {str(CORPUS / 'logs')!r}, '--model', 'bert_layernorm'])\n"
              "print(code, 'tensorflow' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", driver], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout.split() == ["0", "False"], done.stderr[-2000:]
