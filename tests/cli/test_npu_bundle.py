"""The NPU bundle end to end on a stand-in Ascend host (tests/npu_host.py: stub npu_bridge / npu_device and a
stub msprof that record what they were given and leave what the toolchain would): export, run both sides
as the host would, import what came back into the predicted-vs-actual report. Each run starts two side
processes that import TensorFlow."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fuselens.cli import main as cli_main
from tests.npu_host import host_environment, read_log, write_stub_host

RUN_S = 300


def run_bundle(bundle: Path, host: Path, *args: str) -> tuple[str, list[dict]]:
    """`python BUNDLE/run_on_npu.py` from the bundle's parent folder, as a user on the host would."""
    log = write_stub_host(host)
    done = subprocess.run([sys.executable, str(bundle / "run_on_npu.py"), "--steps", "2", "--warmup", "1", *args],
                          env=host_environment(host), cwd=bundle.parent, capture_output=True, text=True, timeout=RUN_S)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout, read_log(log)


def by_side(events: list[dict], kind: str) -> dict[str, dict]:
    """The events of one kind per side (the side is the folder its DUMP_GRAPH_PATH / profiling output names)."""
    found = {}
    for event in events:
        if event["event"] == kind:
            where = json.dumps(event)
            found["fused" if "/results/fused/" in where else "original"] = event
    return found


def test_demo_bundle_runs_both_sides_apart_and_comes_back_as_predicted_vs_actual(tmp_path, capsys):
    """The issue's definition of done: export demo for TF 1.15, run it on the (stub) host, import the results."""
    bundle = tmp_path / "bundle"
    assert cli_main(["export-npu-script", "demo", "--mode", "tf1", "-o", str(bundle)]) == 0
    capsys.readouterr()
    out, events = run_bundle(bundle, tmp_path / "host")
    assert "fuselens import-profile bundle/results --model demo" in out.splitlines()[-1]

    adapters, sessions = by_side(events, "adapter"), by_side(events, "session")
    assert adapters["original"]["pid"] != adapters["fused"]["pid"]  # two processes
    assert {e["module"] for e in adapters.values()} == {"npu_bridge"}
    env = {side: e["environment"] for side, e in adapters.items()}
    assert env["original"]["AUTOFUSE_FLAGS"] == "--enable_autofuse=false"
    assert env["fused"]["AUTOFUSE_FLAGS"] == "--enable_autofuse=true"
    results = bundle / "results"
    for side in ("original", "fused"):
        assert env[side]["DUMP_GE_GRAPH"] == "2" and "FeGraphFusionAfter" in env[side]["DUMP_GRAPH_LEVEL"]
        assert env[side]["DUMP_GRAPH_PATH"] == str(results / side / "ge_dumps")
        assert env[side]["ASCEND_WORK_PATH"] == str(results / side / "ascend_work")
        assert env[side]["ASCEND_PROCESS_LOG_PATH"] == str(results / side / "log")
        session = sessions[side]
        assert session["scope_passes"] == "" and session["use_off_line"] and session["export_compile_stat"] == 2
        assert session["profiling_options"]["output"] == str(results / side / "profiling")
        assert session["fusion_switch_file"] == str(bundle / "switches" / side / "fusion_switch.json")
    switched = {side: json.loads(s["fusion_switch_text"])["Switch"]["GraphFusion"] for side, s in sessions.items()}
    assert switched == {"original": {"ConvBatchnormFusionPass": "off", "AConv2dMulFusion": "off"},
                        "fused": {"ConvBatchnormFusionPass": "on", "AConv2dMulFusion": "on"}}
    # the graphs read: the model as it is, and AMCT's rewrite of it (no FuseLens library-function calls)
    assert "FusedBatchNormV3" in sessions["original"]["ops"] and "BiasAdd" not in sessions["original"]["ops"]
    assert "FusedBatchNormV3" not in sessions["fused"]["ops"] and "BiasAdd" in sessions["fused"]["ops"]
    assert all(op[0].isupper() and not op.startswith("fused_") for op in sessions["fused"]["ops"])
    exports = [e["argv"] for e in events if e["event"] == "msprof"]
    assert sorted(a[1].split("/results/")[1].split("/")[0] for a in exports) == ["fused", "original"]

    for side in ("original", "fused"):
        folder = results / side
        assert (folder / "fusion_result.json").exists() and (folder / "outputs.npz").exists()
        assert list(folder.glob("ge_dumps/pid_*_deviceid_0/ge_proto_*_PreRunBegin.txt"))
        assert list(folder.glob("profiling/PROF_*/mindstudio_profiler_output/op_summary_*.csv"))
        assert list(folder.glob("profiling/PROF_*/mindstudio_profiler_output/msprof_*.json"))  # the timeline
        assert json.loads((folder / "run.json").read_text())["steps"] == 2

    assert cli_main(["import-profile", str(results), "--model", "demo"]) == 0
    report = capsys.readouterr().out
    assert "Predicted vs actual for demo (evidence: dumps, fusion_op, fusion_result, log, profile)" in report
    # the toolchain's logs at INFO (ASCEND_GLOBAL_LOG_LEVEL=1) under results/<side>/log say which scope passes ran
    assert "agree        the log says ScopeLayerNormPass matched in 1 of 1 run; FuseLens predicts 1 match" in report
    assert "7 predicted fusions: 7 found, 0 not found, 0 unknown" in report
    assert "0 ledger disagreements" in report  # AMCT's folds were done before GE: FE found none left, as predicted
    assert "fused differently" not in report  # the records name the folded graph's nodes (stem/conv/BiasAdd)
    assert "found     AutoFusePass: autofuse_pointwise_2_Abs_Sigmoid_Sub_Relu_Exp (AscBackend)" in report
    assert f"fusion_result: {results / 'fused' / 'fusion_result.json'}" in report
    # did each fusion pay? The stub's kernels take 10 us each: Abs, Sigmoid, Sub, Relu, Exp against one AutoFuse
    # kernel; fusion_op names the AMCT-folded graph's BiasAdd, traced back to the conv and its BN
    assert "did each fusion pay? 5 of 5 fusions measured: 4 faster, 0 slower; +70.0 us/step in all" in report
    assert "+40.0 us   5.00x     50.0 -> 10.0  autofuse_pointwise_2_Abs_Sigmoid_Sub_Relu_Exp" in report
    assert "the toolchain names stem/conv/BiasAdd, not in the original graph" in report
    assert cli_main(["import-profile", str(results), "--model", "demo", "--json"]) == 0
    rows = {r["label"]: r for r in json.loads(capsys.readouterr().out)["fusion_gain"]["rows"]}
    stem = rows["autofuse_pointwise_0_BiasAdd_Relu6 (+1 more)"]
    assert stem["source"] == "toolchain" and stem["matches"] == ["AutoFusePass:stem/relu6",
                                                                 "ConvBatchnormFusionPass:stem/bn"]
    assert (stem["baseline_us"], stem["fused_us"], stem["missing"]) == (30.0, 20.0, {})  # conv, bn, relu6 -> 2
    assert "the baseline ran it as one kernel too" in rows["encoder/LayerNorm"]["notes"][0]  # a general scope pass

    # the same two sides as two profiles, without a model: kernels by name, the fused side's fusion_op map
    assert cli_main(["import-profile", str(results / "fused"), "--baseline", str(results / "original"), "--json"]) == 0
    rows = {r["label"]: r for r in json.loads(capsys.readouterr().out)["fusion_gain"]["rows"]}
    assert rows["autofuse_pointwise_2_Abs_Sigmoid_Sub_Relu_Exp"]["gain_us"] == 40.0
    assert rows["autofuse_pointwise_0_BiasAdd_Relu6"]["missing_text"] == \
        "1 of 2 original nodes has no kernel in the baseline: stem/conv/BiasAdd"


def test_one_side_by_hand_sets_its_own_environment_and_the_skip_reaches_autofuse(tmp_path, capsys):
    """tf2-compat (npu_device), the fused side started by hand (`--side fused`, one process): it sets the side's
    variables itself, so the skip reaches AutoFuse as AUTOFUSE_DFX_FLAGS' [ByNodeName] file; the graph read is
    AMCT's, Abs/Relu/Exp as they are, and the import command keeps the skip."""
    bundle = tmp_path / "bundle"
    assert cli_main(["export-npu-script", "abs_relu_exp", "--mode", "tf2-compat", "--skip-match",
                     "AutoFusePass:exp_0", "-o", str(bundle)]) == 0
    capsys.readouterr()
    out, events = run_bundle(bundle, tmp_path / "host", "--side", "fused")
    assert out.startswith("fused: 2 steps")
    [adapter] = [e for e in events if e["event"] == "adapter"]
    [session] = [e for e in events if e["event"] == "session"]
    assert adapter["module"] == "npu_device" and any(e["event"] == "enable_v1" for e in events)
    ini = bundle / "switches" / "fused" / "autofuse_skip.ini"
    assert adapter["environment"]["AUTOFUSE_DFX_FLAGS"] == f"--skip_node_names_cfg={ini}"
    assert adapter["environment"]["AUTOFUSE_FLAGS"] == "--enable_autofuse=true"
    assert adapter["environment"]["DUMP_GRAPH_PATH"] == str(bundle / "results" / "fused" / "ge_dumps")
    assert ini.read_text().splitlines()[1:] == ["[ByNodeName]", "abs_0", "relu_0", "exp_0"]
    assert set(session["ops"]) == {"Placeholder", "Abs", "Relu", "Exp"}  # no AscBackend call: AutoFuse's to do
    dumps = list((bundle / "results" / "fused").glob("ge_dumps/pid_*/ge_proto_*_PreRunAfterAfterPrecisionRefine.txt"))
    assert dumps and "autofuse" not in dumps[0].read_text()  # the stand-in toolchain honoured the skip
    spec = json.loads((bundle / "bundle.json").read_text())
    assert spec["import_command"] == ("fuselens import-profile {results} --model abs_relu_exp "
                                      "--skip-match=AutoFusePass:exp_0")
