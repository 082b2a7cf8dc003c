from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fuselens.cli import main as cli_main
from fuselens.core.formats.samples import SAMPLES

ROOT = Path(__file__).resolve().parents[2]


def test_inspect_abs_relu_exp_json(capsys):
    assert cli_main(["inspect", "abs_relu_exp", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["nodes"] == 4
    assert set(summary["ops"]) == {"Placeholder", "Abs", "Relu", "Exp"}
    assert summary["inputs"] == [{"name": "data1", "dtype": "float16", "shape": [128, 192]}]
    assert summary["outputs"] == ["exp_0"]


def test_inspect_text_lists_scopes(capsys):
    assert cli_main(["inspect", "bert_layernorm"]) == 0
    out = capsys.readouterr().out
    assert "top scopes:" in out and "bert" in out and "SquaredDifference" in out


def test_samples_lists_every_sample(capsys):
    assert cli_main(["samples", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == list(SAMPLES)
    assert all(r["description"] for r in rows)


def test_export_sample_writes_a_loadable_pb(tmp_path, capsys):
    out = tmp_path / "sub" / "x.pb"
    assert cli_main(["export-sample", "conv_bn", "-o", str(out)]) == 0
    assert cli_main(["inspect", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out.split("\n", 1)[1])["ops"]["Conv2D"] == 1


def test_console_entry_point_exits_2_on_bad_model_without_traceback(tmp_path):
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n")
    proc = subprocess.run([sys.executable, str(ROOT / "main.py"), "inspect", str(bad)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"fuselens: error: {bad}: is a PNG image, not a TensorFlow model"
