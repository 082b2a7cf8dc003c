"""`fuselens passes` and `fuselens fuse` with the AMCT family: counts, op diff, report, output file, safety."""

from __future__ import annotations

import json
import shutil

import pytest

from fuselens.cli import main as cli_main
from fuselens.core.formats.loaders import load_model
from fuselens.core.formats.samples import sample_path
from tests.passes.amct_check import assert_same_outputs

AMCT_ORDER = ["SmallOpBatchnormFusionPass", "GroupConvBatchnormFusionPass", "ConvBatchnormFusionPass",
              "DepthwiseConvBatchnormFusionPass", "OpBiasAddMulFusionPass"]


def test_passes_json_lists_the_amct_family_in_toolchain_order(capsys):
    assert cli_main(["passes", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    amct = [r for r in rows if r["family"] == "amct"]
    assert [r["id"] for r in amct] == AMCT_ORDER
    assert all(r["default_enabled"] and not r["general"] for r in amct)
    conv_bn = next(r for r in amct if r["id"] == "ConvBatchnormFusionPass")
    assert "gamma / sqrt(var + eps)" in conv_bn["description"]
    families = [r["family"] for r in rows]
    assert families.index("amct") > families.index("scope")


def test_fuse_writes_the_model_and_the_report(tmp_path, capsys, load_sample):
    out, report_path = tmp_path / "fused.pb", tmp_path / "report.json"
    assert cli_main(["fuse", "conv_bn", "--disable", "AutoFusePass", "-o", str(out), "--report", str(report_path)]) == 0
    text = capsys.readouterr().out
    assert any(line.split()[:3] == ["ConvBatchnormFusionPass", "1", "matches"] for line in text.splitlines())
    assert "FusedBatchNormV3 -1 (1->0)" in text and "BiasAdd +1 (0->1)" in text

    report = json.loads(report_path.read_text())
    conv_bn = next(p for p in report["passes"] if p["pass"] == "ConvBatchnormFusionPass")
    (found,) = conv_bn["matches"]
    assert found["nodes_before"] == ["conv1", "bn1"] and "conv1/BiasAdd" in found["nodes_after"]
    assert found["details"]["epsilon"] == pytest.approx(1e-3) and conv_bn["family"] == "amct"
    assert report["ops_before"]["FusedBatchNormV3"] == 1 and "FusedBatchNormV3" not in report["ops_after"]

    fused = load_model(str(out)).graph
    assert fused.op_histogram()["BiasAdd"] == 1
    assert_same_outputs(load_sample("conv_bn"), fused)


def test_fuse_prints_near_miss_reasons(capsys):
    assert cli_main(["fuse", "conv_bn_training"]) == 0
    assert "~ bn1: bn1 (FusedBatchNormV3) is in training mode (is_training=true)" in capsys.readouterr().out


def test_disabled_pass_does_not_run(capsys):
    assert cli_main(["fuse", "conv_bn", "--disable", "ConvBatchnormFusionPass,AutoFusePass", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "ConvBatchnormFusionPass" not in [p["pass"] for p in report["passes"]]
    assert report["ops_after"]["FusedBatchNormV3"] == 1


@pytest.mark.parametrize("flag", ["-o", "--report"])
def test_fuse_never_overwrites_its_input(tmp_path, capsys, flag):
    model = tmp_path / "model.pb"
    shutil.copy(sample_path("conv_bn"), model)
    before = model.read_bytes()
    assert cli_main(["fuse", str(model), flag, str(model)]) == 2
    assert "refusing to overwrite the input model" in capsys.readouterr().err
    assert model.read_bytes() == before


def test_fuse_refuses_before_writing_any_output(tmp_path, capsys):
    model = tmp_path / "model.pb"
    shutil.copy(sample_path("conv_bn"), model)
    out = tmp_path / "fused.pb"
    assert cli_main(["fuse", str(model), "-o", str(out), "--report", str(model)]) == 2
    assert "refusing to overwrite the input model" in capsys.readouterr().err
    assert not out.exists()


def test_output_inside_an_input_savedmodel_is_refused(tmp_path):
    from fuselens.core.errors import FuseLensError
    from fuselens.core.formats.io import check_output_path

    saved = tmp_path / "saved"
    (saved / "variables").mkdir(parents=True)
    with pytest.raises(FuseLensError, match="refusing to overwrite the input model"):
        check_output_path(saved / "saved_model.pb", protect=str(saved))
    assert check_output_path(tmp_path / "other.pb", protect=str(saved)) == tmp_path / "other.pb"


def test_unknown_pass_is_a_one_line_error(capsys):
    assert cli_main(["fuse", "conv_bn", "--enable", "NoSuchPass"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fuselens: error: unknown pass 'NoSuchPass'") and len(err.strip().splitlines()) == 1


def ran(capsys, *argv: str) -> list[str]:
    """The passes `fuse --json` ran on conv_bn with these options."""
    assert cli_main(["fuse", "conv_bn", *argv, "--json"]) == 0
    return [p["pass"] for p in json.loads(capsys.readouterr().out)["passes"]]


@pytest.mark.parametrize(("text", "depthwise"), [
    # FE's ConvBatchnormFusionPass folds conv and depthwise BatchNorms alike: it switches both FuseLens folds
    ('{"Switch": {"GraphFusion": {"ALL": "off", "ConvBatchnormFusionPass": "on"}, "UBFusion": {"ALL": "on"}}}',
     ["DepthwiseConvBatchnormFusionPass"]),
    ("\n".join(f"{p}:off" for p in [*AMCT_ORDER, "AutoFusePass"] if p != "ConvBatchnormFusionPass")
     + "\nConvBatchnormFusionPass:on\nTbeConvReluFusionPass:off\n", []),  # a GE pass FuseLens does not model is kept
])
def test_switch_file_decides_which_passes_run(tmp_path, capsys, text, depthwise):
    switches = tmp_path / "fusion_switch.cfg"
    switches.write_text(text)
    assert "AutoFusePass" in ran(capsys)
    assert ran(capsys, "--switch-file", str(switches)) == ["ScopeLayerNormPass", "ConvBatchnormFusionPass",
                                                           *depthwise]
    assert ran(capsys, "--switch-file", str(switches), "--enable", "AutoFusePass")[-1] == "AutoFusePass"


@pytest.mark.parametrize("argv", [["--autofuse-flags=--autofuse_enable_pass=reduce"],
                                  ["--autofuse-flags", "--autofuse_enable_pass=reduce"]])
def test_autofuse_flags_with_or_without_equals(capsys, argv):
    assert cli_main(["fuse", "abs_reduce_sum", *argv, "--json"]) == 0
    autofuse = next(p for p in json.loads(capsys.readouterr().out)["passes"] if p["pass"] == "AutoFusePass")
    assert [m["details"]["kernel"] for m in autofuse["matches"]] == ["autofuse_reduce_0_Abs_ReduceSumD"]


def test_autofuse_flags_switch_autofuse_off(capsys):
    assert "AutoFusePass" not in ran(capsys, "--autofuse-flags", "--enable_autofuse=false")


@pytest.mark.parametrize(("name", "text", "message"), [
    ("--switch-file", "ConvBatchnormFusionPass:maybe\n", "line 1: expected PassName:on or PassName:off"),
    ("--skip-file", "ConvBatchnormFusionPass:bn1\nbn1\n", "line 2: expected a match id PassId:anchor"),
    ("--switch-file", None, "cannot read the switch file"),
    ("--skip-file", None, "cannot read the skip file"),
])
def test_bad_switch_and_skip_files_are_one_line_errors(tmp_path, capsys, name, text, message):
    path = tmp_path / "f.txt"
    if text is not None:
        path.write_text(text)
    assert cli_main(["fuse", "conv_bn", name, str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"fuselens: error: {path}") and message in err and err.count("\n") == 1

