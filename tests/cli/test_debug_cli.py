"""`diff-config` (two pass selections side by side, with a run) and `run --layerwise` on small samples."""

from __future__ import annotations

import json

from fuselens.cli import main as cli_main
from fuselens.passes.amct.conv_bn import ConvBatchnormFusionPass
from fuselens.passes.autofuse.autofuse_pass import AutoFusePass


def test_diff_config_counts_gained_and_lost_matches_and_runs_both(capsys):
    assert cli_main(["diff-config", "conv_bn", "--a", f"--disable {AutoFusePass.id}", "--run", "--steps", "3",
                     "--json"]) == 0
    diff = json.loads(capsys.readouterr().out)
    by_pass = {p["pass_id"]: p for p in diff["passes"]}
    assert by_pass[AutoFusePass.id]["gained"] == [f"{AutoFusePass.id}:relu1"] and not by_pass[AutoFusePass.id]["lost"]
    assert by_pass[ConvBatchnormFusionPass.id]["a"] == by_pass[ConvBatchnormFusionPass.id]["b"] == 1
    assert diff["nodes"][0] > diff["nodes"][1] and diff["allclose"] is True
    assert all(t > 0 for t in diff["step_us"]) and diff["kernel_diffs"]


def test_diff_config_refuses_what_is_not_a_pass_selection(capsys):
    assert cli_main(["diff-config", "conv_bn", "--b", "--steps 3"]) == 2
    assert "not a pass selection option: --steps 3" in capsys.readouterr().err


def test_run_layerwise_gives_every_match_an_error_figure(capsys):
    assert cli_main(["run", "conv_bn", "--layerwise", "--steps", "2", "--warmup", "0", "--no-trace", "--json"]) == 0
    layerwise = json.loads(capsys.readouterr().out)["layerwise"]
    assert [m["id"] for m in layerwise["matches"]] == [f"{ConvBatchnormFusionPass.id}:bn1", f"{AutoFusePass.id}:relu1"]
    assert all(m["allclose"] and m["max_abs"] < 1e-4 for m in layerwise["matches"])
    assert layerwise["first_divergent"] is None and layerwise["unpaired"] == ["conv1:0"]  # the folded conv
