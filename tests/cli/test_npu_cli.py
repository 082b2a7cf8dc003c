"""The NPU records on the command line: `stages`, `diff`, `inspect` of a dump, `ledger`, `fuse --ledger`
and `import-profile --model`'s predicted vs actual, on folders laid out as the toolchain lays them out
(tests/npu_artifacts.py) from FuseLens's own samples. Round trips: what FuseLens predicts is found; a
toolchain that did otherwise is reported as a disagreement; bad input is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuselens.cli import main as cli_main
from fuselens.passes.pipeline import run_pipeline
from tests.npu_artifacts import FINAL_STAGE, GE_ONLY_PASS, fusion_result_text, write_npu_run

FUSED = "autofuse_pointwise_0_Abs_Relu_Exp"


@pytest.fixture(scope="module")
def pipelines(load_sample):
    return {name: run_pipeline(load_sample(name)) for name in ("abs_relu_exp", "bert_layernorm", "conv_bn", "demo")}


def run_cli(capsys, *argv):
    code = cli_main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_stages_lists_every_stage_in_order(tmp_path, capsys, pipelines):
    write_npu_run(tmp_path, pipelines["abs_relu_exp"])
    code, out, _ = run_cli(capsys, "stages", tmp_path / "dumps")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].endswith("2 stages in 1 graph") and lines[1] == "pid_4242_deviceid_0 graph 0:"
    assert lines[2].split()[:4] == ["0", "PreRunBegin", "proto+onnx", "5"]
    assert lines[3].split()[:2] == ["1", FINAL_STAGE] and "1 fused by the toolchain" in lines[3]
    code, out, _ = run_cli(capsys, "stages", tmp_path / "dumps", "--json")
    stages = json.loads(out)["timelines"][0]["stages"]
    assert [(s["stage"], s["nodes"], s["fused_nodes"]) for s in stages] == [("PreRunBegin", 5, 0), (FINAL_STAGE, 3, 1)]


def test_a_bad_stage_is_one_line_and_exit_2_while_the_others_still_load(tmp_path, capsys, pipelines):
    write_npu_run(tmp_path, pipelines["abs_relu_exp"])
    bad = tmp_path / "dumps" / "pid_4242_deviceid_0" / "ge_proto_00000000_graph_0_PreRunBegin.txt"
    bad.write_text(bad.read_text().replace('input: "data1:0"', 'input: "ghost:0"', 2))
    code, out, err = run_cli(capsys, "stages", tmp_path / "dumps")
    assert code == 2 and "not readable" in out and FINAL_STAGE in out and "3 nodes" in out
    [line] = err.strip().splitlines()
    assert line.startswith(f"fuselens: error: {bad}, line 19: node abs_0 reads 'ghost:0'") and "dangling" in line


def test_diff_of_two_stages_names_the_autofuse_kernel_and_its_originals(tmp_path, capsys, pipelines):
    write_npu_run(tmp_path, pipelines["abs_relu_exp"])
    dumps = tmp_path / "dumps"
    code, out, _ = run_cli(capsys, "diff", f"{dumps}:PreRunBegin", f"{dumps}:{FINAL_STAGE}")
    assert code == 0 and "AutoFusePass:" in out
    assert f"+ {FUSED} (AscBackend) <- abs_0, relu_0, exp_0" in out
    code, out, _ = run_cli(capsys, "diff", "abs_relu_exp", f"{dumps}:{FINAL_STAGE}", "--json")
    data = json.loads(out)
    assert data["added"] == 2 and data["removed"] == 3  # GE's NetOutput is new next to the TF model
    added = {c["node"]: c["related"] for c in data["by_pass"]["AutoFusePass"] if c["change"] == "added"}
    assert added == {FUSED: ["abs_0", "relu_0", "exp_0"]}


def test_inspect_reads_a_dump_file(tmp_path, capsys, pipelines):
    write_npu_run(tmp_path, pipelines["conv_bn"])
    dump = tmp_path / "dumps" / "pid_4242_deviceid_0" / f"ge_onnx_00000001_graph_0_{FINAL_STAGE}.pbtxt"
    code, out, _ = run_cli(capsys, "inspect", dump)
    assert code == 0 and "AscBackend" in out and "dump: ge_onnx, graph ge_default, without weights" in out
    assert "inputs:  input float32 [1,16,16,8]" in out
    code, out, _ = run_cli(capsys, "inspect", str(dump).replace("ge_onnx", "ge_proto").replace(".pbtxt", ".txt"),
                           "--json")
    fusions = json.loads(out)["toolchain_fusions"]
    assert {f["node"]: f["pass_name"] for f in fusions}["conv1"] == ["ConvBatchnormFusionPass"]


@pytest.mark.parametrize("form", ["current", "concatenated"])
def test_ledger_of_demo_agrees_on_the_passes_fuselens_models(tmp_path, capsys, pipelines, form):
    write_npu_run(tmp_path, pipelines["demo"])
    text = (tmp_path / "fusion_result.json").read_text()
    if form == "concatenated":
        graphs = {k.removeprefix("session_and_graph_id_"): {p: (int(c["match_times"]), int(c["effect_times"]))
                                                            for p, c in v.get("graph_fusion", {}).items()}
                  for k, v in json.loads(text).items()}
        (tmp_path / "fusion_result.json").write_text(fusion_result_text(graphs, form="concatenated"))
    code, out, _ = run_cli(capsys, "ledger", tmp_path / "fusion_result.json", "--model", "demo")
    assert code == 0 and f"({form} form)" in out
    assert "vs session_and_graph_id_0_0 (match/effect): 1 agree, 0 disagree, 6 unverifiable, 1 not modelled" in out
    code, out, _ = run_cli(capsys, "ledger", tmp_path / "fusion_result.json", "--model", "demo", "--json")
    rows = {r["pass"]: r for r in json.loads(out)["comparison"]["rows"]}
    assert rows["ConvBatchnormFusionPass"]["predicted"] == rows["ConvBatchnormFusionPass"]["actual"] == \
        {"match_times": 1, "effect_times": 1}
    assert rows[GE_ONLY_PASS]["status"] == "not_modelled" and rows["AutoFusePass"]["status"] == "unverifiable"


def test_fuselens_ledger_round_trips_through_ledger(tmp_path, capsys):
    code, _, err = run_cli(capsys, "fuse", "demo", "--ledger", tmp_path / "mine.json")
    assert code == 0 and "wrote" in err
    data = json.loads((tmp_path / "mine.json").read_text())
    # 3 kernels, plus the Reshape that splits a chain in two (a near miss counts as matched, not effected)
    assert data["session_and_graph_id_0_0"]["graph_fusion"]["AutoFusePass"] == {"effect_times": "3",
                                                                                 "match_times": "4"}
    code, out, _ = run_cli(capsys, "ledger", tmp_path / "mine.json", "--model", "demo", "--json")
    rows = json.loads(out)["comparison"]["rows"]
    assert {r["status"] for r in rows} == {"agree"} and len(rows) == 7


def test_predicted_fusions_of_each_sample_are_found_with_their_npu_time(tmp_path, capsys, pipelines):
    for name in ("abs_relu_exp", "bert_layernorm", "conv_bn"):
        root = write_npu_run(tmp_path / name, pipelines[name])
        code, out, _ = run_cli(capsys, "import-profile", root, "--model", name, "--check", "-")
        assert code == 0
        report = json.loads(out)
        assert run_cli(capsys, "import-profile", root, "--model", name, "--check", tmp_path / f"{name}.json")[0] == 0
        assert report == json.loads((tmp_path / f"{name}.json").read_text())
        assert report["summary"]["evidence"] == ["dumps", "fusion_op", "fusion_result", "profile"]
        assert {r["verdict"] for r in report["predicted"]} == {"found"}, name
        assert all(r["npu_time_us"] == 10.0 for r in report["predicted"])
        assert report["summary"]["ledger_disagreements"] == 0
        assert [u["name"] for u in report["unpredicted"]] == [GE_ONLY_PASS]
    autofuse = next(r for r in report["predicted"] if r["pass"] == "AutoFusePass")
    assert autofuse["node"] == "autofuse_pointwise_0_BiasAdd_Relu"
    code, out, _ = run_cli(capsys, "import-profile", tmp_path / "abs_relu_exp", "--model", "abs_relu_exp")
    assert code == 0 and f"found     AutoFusePass: {FUSED} (AscBackend) <- abs_0, relu_0, exp_0, 10.0 us/step" in out


def test_a_toolchain_that_did_not_fuse_is_a_disagreement(tmp_path, capsys, pipelines):
    root = write_npu_run(tmp_path, pipelines["conv_bn"], toolchain_fuses=False,
                         ledger={"ConvBatchnormFusionPass": (1, 0), GE_ONLY_PASS: (2, 2)})
    code, out, _ = run_cli(capsys, "import-profile", root, "--model", "conv_bn", "--check", "-")
    assert code == 0
    report = json.loads(out)
    conv = next(r for r in report["predicted"] if r["pass"] == "ConvBatchnormFusionPass")
    assert conv["verdict"] == "not_found"
    details = {e["source"]: e["detail"] for e in conv["evidence"]}
    assert details["profile"] == "bn1 ran as kernels of their own"
    assert details["dump"] == f"{FINAL_STAGE}: conv1, bn1 separate"
    [row] = [r for r in report["ledger"] if r["status"] == "disagree"]
    assert row["pass"] == "ConvBatchnormFusionPass" and row["note"].startswith("FuseLens rewrites 1, the toolchain 0")
    _, out, _ = run_cli(capsys, "import-profile", root, "--model", "conv_bn")
    assert "NOT FOUND ConvBatchnormFusionPass: conv1" in out and "ledger disagreements" in out


def test_a_toolchain_fusion_fuselens_did_not_predict_is_listed(tmp_path, capsys, pipelines):
    root = write_npu_run(tmp_path, pipelines["abs_relu_exp"])
    # the toolchain fused the Data's consumer chain differently: one more kernel FuseLens did not predict
    dump = root / "dumps" / "pid_4242_deviceid_0" / f"ge_proto_00000001_graph_0_{FINAL_STAGE}.txt"
    dump.write_text(dump.read_text().replace('s: "exp_0"\n', 's: "exp_0"\n          s: "data1"\n', 1))
    _, out, _ = run_cli(capsys, "import-profile", root, "--model", "abs_relu_exp", "--check", "-")
    report = json.loads(out)
    extra = next(u for u in report["unpredicted"] if u["name"] == FUSED)
    assert extra["original_nodes"] == ["abs_0", "relu_0", "exp_0", "data1"] and extra["sources"] == [
        f"dump {FINAL_STAGE}"]
    assert "overlaps FuseLens's " + FUSED in extra["detail"]


@pytest.mark.parametrize(("argv", "message"), [
    (["stages", "{tmp}/empty"], "{tmp}/empty: no GE graph dumps"),
    (["ledger", "{tmp}/neither.json"],
     "{tmp}/neither.json, line 1: an object with keys passes: not a fusion_result.json"),
    (["diff", "{tmp}/empty:PreRunBegin", "abs_relu_exp"], "{tmp}/empty: no GE graph dumps"),
    (["diff", "{tmp}/nowhere:PreRunBegin", "abs_relu_exp"], "{tmp}/nowhere: no such directory"),
    (["inspect", "{tmp}/ge_proto_00000000_graph_0_Broken.txt"],
     "{tmp}/ge_proto_00000000_graph_0_Broken.txt, line 1, column 20: not a readable ge.proto.ModelDef text dump "
     "(Expected string but found: '')"),
    (["ledger", "{tmp}/empty.json", "--model", "demo", "--graph", "9_9"], "{tmp}/empty.json: no graph '9_9'"),
    (["import-profile", "{tmp}", "--check", "-"], "--check: set the NPU's records against a prediction"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, message):
    (tmp_path / "neither.json").write_text('{"passes": {}}')
    (tmp_path / "empty.json").write_text("{}")
    (tmp_path / "empty").mkdir()
    (tmp_path / "ge_proto_00000000_graph_0_Broken.txt").write_text("graph { op { name: ")
    code, out, err = run_cli(capsys, *[a.format(tmp=tmp_path) for a in argv])
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("fuselens: error: " + message.format(tmp=tmp_path))


CORPUS = Path(__file__).resolve().parents[1] / "corpus"


@pytest.mark.parametrize("spelling", ["0_11", "session_and_graph_id_0_11", "11", "0/11"])
def test_ledger_graph_takes_any_spelling(capsys, spelling):
    path = CORPUS / "fusion_result" / "id_fields" / "fusion_result.json"
    code, out, _ = run_cli(capsys, "ledger", path, "--graph", spelling)
    assert code == 0 and out.splitlines() == [
        f"{path}: 2 graphs (id fields form), 2 with rewrites",
        "session_and_graph_id_0_11: 3 passes, 6 matches, 5 rewrites",
        "  graph_fusion ConvBatchnormFusionPass" + " " * 26 + "match    2  effect    2",
        "  graph_fusion TransdataCastFusionPass" + " " * 26 + "match    1  effect    0",
        "  ub_fusion    TbeConvElemwiseFusionPass" + " " * 24 + "match    3  effect    3  repository hits 0"]
    code, out, _ = run_cli(capsys, "ledger", path, "--graph", spelling, "--json")
    data = json.loads(out)
    assert data["graphs"] == [{"graph": "0_11", "key": "session_and_graph_id_0_11", "passes": 3, "matches": 6,
                               "rewrites": 5}] and list(data["fusion_result"]) == ["session_and_graph_id_0_11"]


def test_ledger_of_hundreds_of_graphs_lists_the_ones_with_rewrites_first(tmp_path, capsys):
    items = [{"session_and_graph_id": f"0_{i}", **({"graph_fusion": {"ConvBatchnormFusionPass": {
        "effect_times": str(i), "match_times": str(i)}}} if i in (3, 211, 590) else {})} for i in range(628)]
    path = tmp_path / "fusion_result.json"
    path.write_text(json.dumps(sorted(items, key=lambda item: item["session_and_graph_id"]), indent=4))
    code, out, _ = run_cli(capsys, "ledger", path)
    lines = out.splitlines()
    assert code == 0 and lines[0] == f"{path}: 628 graphs (list form), 3 with rewrites"
    assert [line.split(":")[0] for line in lines[1::2][:3]] == [
        "session_and_graph_id_0_590", "session_and_graph_id_0_211", "session_and_graph_id_0_3"]
    assert lines[-1].startswith("625 graphs with no pass recorded: session_and_graph_id_0_0, ")
    assert lines[-1].endswith(" and 615 more (--json for all)") and len(lines) == 8
    code, out, _ = run_cli(capsys, "ledger", path, "--json")
    assert [g["graph"] for g in json.loads(out)["graphs"][:4]] == ["0_590", "0_211", "0_3", "0_0"]


def test_ledger_of_null_is_empty_and_has_no_graph_to_compare(capsys):
    path = CORPUS / "fusion_result" / "null" / "fusion_result.json"
    code, out, _ = run_cli(capsys, "ledger", path)
    assert code == 0 and out == f"{path}: 0 graphs (null: nothing was compiled)\n"
    code, out, err = run_cli(capsys, "ledger", path, "--model", "demo")
    assert code == 2 and err == f"fuselens: error: {path}: holds no graph to compare with\n"


def test_stages_reads_dumps_in_every_name_form(capsys):
    code, out, err = run_cli(capsys, "stages", CORPUS / "ge_dumps")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].endswith("10 stages in 4 graphs")
    assert [line for line in lines if not line.startswith(" ")][1:] == [
        "current graph 11:", "five_digits graph (no id: old GE):", "no_graph_part graph (no id in the file names):",
        "renamed graph (no id in the file names):"]
    assert lines[6].split()[:4] == ["56", "Build", "proto", "5"]
    assert lines[-1].split()[:4] == ["-", "final", "onnx", "5"]
