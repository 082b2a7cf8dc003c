"""`fuselens run`, `import-profile` and `export-npu-script` end to end (real child processes)."""

from __future__ import annotations

import json

import pytest

from fuselens.cli import main as cli_main
from fuselens.core.measure.result import RunResult

FUSED = "autofuse_pointwise_0_Abs_Relu_Exp"


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_run_abs_relu_exp(capsys, tmp_path):
    args = ["run", "abs_relu_exp", "--steps", "100", "--json", "--trace", str(tmp_path / "t.json"),
            "--csv", str(tmp_path / "k.csv"), "--save", str(tmp_path / "run.json")]
    assert cli_main(args) == 0
    result = _json(capsys)
    original, fused = result["graphs"]["original"], result["graphs"]["fused"]
    assert [k["kernel"] for k in fused["kernels"]] == [FUSED]
    assert fused["kernels"][0]["count"] == 100 and fused["kernels"][0]["pass_id"] == "AutoFusePass"
    assert {k["op_type"] for k in original["kernels"]} == {"_UnaryOpsComposition", "Exp"}  # Grappler: Abs+Relu
    assert FUSED not in {k["kernel"] for k in original["kernels"]}
    assert result["allclose"] is True and result["comparison"][0]["fused"] == f"{FUSED}:0"
    assert result["speedup"] > 0 and result["summary"]["fused"]["kernel_count"] == 1

    trace = json.loads((tmp_path / "t.json").read_text())
    assert {e["pid"] for e in trace["traceEvents"] if e["ph"] == "X"} == {1, 2}
    assert [row.split(",")[:2] for row in (tmp_path / "k.csv").read_text().splitlines()
            if row.startswith("fused,")] == [["fused", FUSED]]
    assert RunResult.load(tmp_path / "run.json").to_json()["graphs"] == result["graphs"]


def test_run_without_grappler_shows_each_elementwise_kernel(capsys):
    assert cli_main(["run", "abs_relu_exp", "--steps", "3", "--warmup", "1", "--no-grappler"]) == 0
    out = capsys.readouterr().out
    for op in ("Abs", "Relu", "Exp"):
        assert f" {op} " in out
    assert "allclose" in out and "speedup fused vs original" in out and "AscBackend" in out


def test_run_bad_input_exits_2_with_one_line(capsys):
    assert cli_main(["run", "abs_relu_exp", "--input-shape", "data1=1,x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--input-shape: 'data1=1,x' is not NAME=D1,D2,..." in err


def test_npu_backend_says_why_it_is_unavailable_and_points_to_the_bundle(capsys):
    assert cli_main(["run", "abs_relu_exp", "--backend", "npu", "--steps", "1"]) == 2
    err = capsys.readouterr().err
    assert "backend npu is not available here: npu_bridge not importable" in err and "npu_device not importable" in err
    assert "FuseLens runs on TensorFlow 2.21" in err and "fuselens export-npu-script MODEL" in err
    assert err.count("\n") == 1


def write_op_summary(path, rows) -> None:
    path.write_text("Device_id,Op Name,OP Type,Task Type,Task Start Time(us),Task Duration(us),Block Dim\n"
                    + "".join(f"0,{name},{op},AI_VECTOR_CORE,{start}\t,{dur},8\n" for name, op, start, dur in rows))


def test_import_profile_maps_to_the_graph_the_window_would(capsys, tmp_path, load_sample):
    from fuselens.core.ascend.profile_import import import_run_file
    from fuselens.passes.pipeline import run_pipeline

    path = tmp_path / "op_summary_0_1.csv"
    write_op_summary(path, [(FUSED, "AscBackend", 100.0, 4.5), (FUSED, "AscBackend", 1100.0, 5.5)])
    assert cli_main(["import-profile", str(path), "--model", "abs_relu_exp", "--json"]) == 0
    printed = _json(capsys)
    [kernel] = printed["graphs"]["fused"]["kernels"]  # a profile of the fused model lands on the fused graph
    assert (kernel["count"], kernel["mean_us"], kernel["node"], kernel["pass_id"]) == (2, 5.0, FUSED, "AutoFusePass")
    original = load_sample("abs_relu_exp")
    window = import_run_file(path, original, run_pipeline(original).fused).to_json()
    assert {k: v for k, v in printed.items() if k != "seconds"} == {k: v for k, v in window.items() if k != "seconds"}

    write_op_summary(path, [("abs_0", "Abs", 100.0, 1.0), ("exp_0", "Exp", 101.0, 1.5)])
    assert cli_main(["import-profile", str(path), "--model", "abs_relu_exp", "--json"]) == 0
    assert {k["node"] for k in _json(capsys)["graphs"]["original"]["kernels"]} == {"abs_0", "exp_0"}
    assert cli_main(["import-profile", str(path), "--json"]) == 0
    assert list(_json(capsys)["graphs"]) == ["fused"]  # no model: shown as the (usual) fused run, as in the window

    path.write_text(path.read_text().replace("1.5", "five"))
    assert cli_main(["import-profile", str(path)]) == 2
    assert "op_summary_0_1.csv, line 3: column 'Task Duration(us)' holds 'five'" in capsys.readouterr().err


@pytest.mark.parametrize("flags", [["--autofuse-flags=--autofuse_enable_pass=reduce"],
                                   ["--autofuse-flags", "--autofuse_enable_pass=reduce"]])
def test_export_npu_script_writes_a_bundle_switched_by_toolchain_names(tmp_path, capsys, flags):
    bundle = tmp_path / "bundle"
    assert cli_main(["export-npu-script", "abs_relu_exp", "--enable", "DecodeBboxV2ScopeFusionPass", *flags,
                     "--mode", "tf2-compat", "-o", str(bundle)]) == 0
    spec = json.loads((bundle / "bundle.json").read_text())
    assert spec["mode"] == "tf2-compat" and spec["tensorflow"] == "2.6.5" and spec["adapter"] == "npu_device"
    original, fused = spec["sides"]["original"], spec["sides"]["fused"]
    assert original["scope_passes"] == [] and original["autofuse_flags"] == "--enable_autofuse=false"
    assert fused["scope_passes"] == ["DecodeBboxV2ScopeFusionPass", "ScopeDecodeBboxV2Pass"]
    assert fused["autofuse_flags"] == "--enable_autofuse=true;--autofuse_enable_pass=reduce"
    assert fused["fetches"] == ["exp_0:0"] == original["fetches"]  # the fused graph is AMCT's: nothing renamed
    switches = json.loads((bundle / fused["fusion_switch_file"]).read_text())["Switch"]["GraphFusion"]
    assert switches == {"ConvBatchnormFusionPass": "on", "AConv2dMulFusion": "on"}  # GE/FE names only
    compile((bundle / "run_on_npu.py").read_text(), "run_on_npu.py", "exec")
    out = capsys.readouterr().out
    assert f"wrote {bundle}/ for TensorFlow 2.6.5 with npu_device" in out
    assert f"then, here: fuselens import-profile {bundle / 'results'} --model abs_relu_exp" in out
    assert "'--autofuse-flags=--enable_autofuse=true;--autofuse_enable_pass=reduce'" in out


def test_export_npu_script_keeps_foreign_switches_and_reports_what_cannot_be_switched(tmp_path, capsys, monkeypatch):
    from fuselens.passes import registry

    monkeypatch.setattr(registry, "_noticed", set())  # the notice comes once per process: let it come here
    switches, bundle = tmp_path / "fusion_switch.cfg", tmp_path / "bundle"
    switches.write_text("AutoFusePass:off\nScopeDecodeBboxV2Pass:on\nTbeConvReluFusionPass:off\n")
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - name: ScopeMyNormPass\n    op_type: MyNorm\n    suffix: mynorm\n"
                     "    census: {Mul: 3}\n    inputs: [{node: mynorm/mul}]\n    outputs: [{node: mynorm/mul}]\n")
    assert cli_main(["export-npu-script", "abs_relu_exp", "--switch-file", str(switches), "--scope-rules", str(rules),
                     "--enable-scope-passes", "ScopeMyNormPass", "-o", str(bundle)]) == 0
    spec = json.loads((bundle / "bundle.json").read_text())
    fused = spec["sides"]["fused"]
    assert fused["scope_passes"] == ["DecodeBboxV2ScopeFusionPass", "ScopeDecodeBboxV2Pass"]  # no user rule
    assert fused["autofuse_flags"].startswith("--enable_autofuse=false")
    for side in ("original", "fused"):  # a GE pass FuseLens does not model is kept on both sides
        assert json.loads((bundle / spec["sides"][side]["fusion_switch_file"]).read_text())["Switch"][
            "GraphFusion"]["TbeConvReluFusionPass"] == "off"
    out, err = capsys.readouterr()
    assert "ScopeDecodeBboxV2Pass is now called DecodeBboxV2ScopeFusionPass" in err
    assert ("the toolchain cannot switch:\n  - ScopeMyNormPass (on): no toolchain switch; a FuseLens user scope "
            "rule") in out
    assert "ScopeMyNormPass (on): no toolchain switch" in (bundle / "README.md").read_text()
    assert spec["import_command"].startswith(f"fuselens import-profile {{results}} --model abs_relu_exp "
                                             f"--scope-rules={rules} --enable=")


def test_export_npu_script_refuses_an_output_that_is_a_file(tmp_path, capsys):
    (tmp_path / "taken").write_text("x")
    assert cli_main(["export-npu-script", "abs_relu_exp", "-o", str(tmp_path / "taken")]) == 2
    assert capsys.readouterr().err.strip().endswith("taken: is a file; give a folder for the NPU bundle")
    assert cli_main(["export-npu-script", "abs_relu_exp", "-o", str(tmp_path / "run_on_npu.py")]) == 2
    err = capsys.readouterr().err
    assert "the NPU export writes a bundle folder" in err and err.count("\n") == 1
    assert not (tmp_path / "run_on_npu.py").exists()


def test_mode_and_backend_choices_come_from_the_runtime_tables():
    from fuselens.cli import build_parser
    from fuselens.core.ascend.npu_script import MODES
    from fuselens.core.devices.backends import BACKENDS

    commands = build_parser()._subparsers._group_actions[0].choices

    def choices(command: str, option: str) -> list[str]:
        return next(list(a.choices) for a in commands[command]._actions if option in a.option_strings)

    assert choices("run", "--backend") == list(BACKENDS)
    assert choices("export-npu-script", "--mode") == list(MODES)


@pytest.mark.slow
def test_run_mobilenet_v2(capsys):
    assert cli_main(["run", "mobilenet_v2", "--steps", "3", "--warmup", "1", "--json"]) == 0
    result = _json(capsys)
    assert result["allclose"] is True and result["speedup"] > 0
    before, after = (result["summary"][g]["kernel_count"] for g in ("original", "fused"))
    assert after < before
    fused_kernels = result["graphs"]["fused"]["kernels"]
    # BiasAdd+Relu6 kernels after a conv run as their original ops (oneDNN's fused conv), mapped to the kernel
    assert any(k["node"].startswith("autofuse_") and k["pass_id"] == "AutoFusePass" for k in fused_kernels)
    assert set(result["graphs"]["fused"]["execution"].values()) == {"as its original ops: conv epilogue on CPU"}
    assert all(k["node"] is not None for k in fused_kernels)
