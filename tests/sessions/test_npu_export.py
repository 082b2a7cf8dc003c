"""The import command a bundle prints rebuilds the configuration it was exported with, so the prediction set
against the NPU's records is the one the bundle ran; the fused side is AMCT's graph alone."""

from __future__ import annotations

import shlex

import pytest

from fuselens.cli import parse_args
from fuselens.core.formats.loaders import load_model
from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import run_pipeline
from fuselens.session.npu_export import export_npu_bundle, import_command


def _rules(tmp_path):
    path = tmp_path / "my rules.yaml"
    path.write_text("rules:\n  - name: ScopeMyNormPass\n    op_type: MyNorm\n    suffix: mynorm\n"
                    "    census: {Mul: 3}\n    inputs: [{node: mynorm/mul}]\n    outputs: [{node: mynorm/mul}]\n")
    return path


@pytest.mark.parametrize("edit", [
    lambda c, rules: c,
    lambda c, rules: c.with_autofuse_flags("--autofuse_enable_pass=reduce;--max_fusion_size=8"),
    lambda c, rules: c.with_autofuse_flags("--enable_autofuse=false").with_pass("ScopeInstanceNormPass", True),
    lambda c, rules: c.with_passes(["ConvBatchnormFusionPass", "OpBiasAddMulFusionPass"], on=False)
    .with_skipped(["AutoFusePass:head/exp", "SmallOpBatchnormFusionPass:a b"]),
    lambda c, rules: c.with_scope_rules(rules).with_scope_list("ScopeMyNormPass,DecodeBboxV2ScopeFusionPass",
                                                               exclusive=False),
])
def test_the_import_command_rebuilds_the_configuration(tmp_path, edit):
    config = edit(PassConfig.default(), _rules(tmp_path))
    command = import_command("my model.pb", config, results="res")
    words = shlex.split(command)
    assert words[:5] == ["fuselens", "import-profile", "res", "--model", "my model.pb"]
    assert PassConfig.from_args(parse_args(words[1:])) == config
    if config == PassConfig.default():
        assert command == "fuselens import-profile res --model 'my model.pb'"


def test_the_fused_side_is_amct_alone_and_the_baseline_the_model(load_sample, tmp_path):
    pipeline = run_pipeline(load_sample("abs_relu_exp"), PassConfig.default())
    assert "AscBackend" in pipeline.fused.op_histogram()  # FuseLens's own prediction fuses the chain
    report = export_npu_bundle(tmp_path / "b", pipeline, model="abs_relu_exp", mode="tf1", steps=3, warmup=1)
    for side in ("original", "fused"):
        ops = load_model(str(report.folder / f"{side}.pb")).graph.op_histogram()
        assert set(ops) == {"Placeholder", "Abs", "Relu", "Exp"}, side  # the toolchain's AutoFuse fuses them
    assert report.switches["fused"].startswith(
        "enable_scope_fusion_passes=(none); AUTOFUSE_FLAGS=--enable_autofuse=true")
    assert report.limits == [] and "Nothing: every choice reaches the toolchain." in (
        report.folder / "README.md").read_text()
