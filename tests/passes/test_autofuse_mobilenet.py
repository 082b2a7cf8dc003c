"""AutoFuse on a real model: Keras MobileNetV2 (random weights and BN statistics), alone and after AMCT."""

from __future__ import annotations

import pytest
from autofuse_check import assert_same_outputs

from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import run_pipeline
from fuselens.passes.report import build_report, format_report

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def mobilenet(load_sample):
    return load_sample("mobilenet_v2")


def autofuse_entry(report: dict) -> dict:
    return next(p for p in report["passes"] if p["pass"] == "AutoFusePass")


def test_autofuse_alone_fuses_every_batchnorm_tail_and_keeps_the_numbers(mobilenet):
    pipeline = run_pipeline(mobilenet, ["AutoFusePass"])
    entry = autofuse_entry(build_report(pipeline, model="mobilenet_v2"))
    kernels = [m["details"]["kernel"] for m in entry["matches"]]
    # 52 frozen small-op BatchNorms: each x*scale+shift tail (with its Relu6 or residual Add) is one kernel;
    # the scale and shift are constant subexpressions left to constant folding.
    assert len(kernels) == 52
    assert sum(k.endswith("_Mul_Add_Relu6") for k in kernels) == 35
    assert kernels[0] == "autofuse_pointwise_0_Mul_Add_Relu6"
    assert_same_outputs(mobilenet, pipeline.fused, pipeline.results)


def test_amct_then_autofuse_keeps_the_numbers_and_the_report_lists_groups_and_near_misses(mobilenet):
    pipeline = run_pipeline(mobilenet, PassConfig.default().with_autofuse_flags("--autofuse_enable_pass=reduce"))
    assert [r.pass_id for r in pipeline.results if r.matches][-1] == "AutoFusePass"
    assert any(r.matches for r in pipeline.results if r.pass_id != "AutoFusePass")  # AMCT folded something
    assert_same_outputs(mobilenet, pipeline.fused, pipeline.results)

    report = build_report(pipeline, model="mobilenet_v2")
    entry = autofuse_entry(report)
    kernels = [m["details"]["kernel"] for m in entry["matches"]]
    assert kernels and all(k.startswith("autofuse_") for k in kernels)
    assert sum("ReduceMeanD" in k for k in kernels) == 1  # the global average pool joins its Relu6 producer
    reasons = [n["reason"] for n in entry["near_misses"]]
    assert any("has a consumer outside the group" in r and "cycle" in r for r in reasons)  # residual shortcuts
    assert any("a single-op group is lifted back" in r for r in reasons)
    assert "AutoFusePass" in format_report(report)
    # nothing fusible is left behind silently: every unfused vector op is named by a near miss
    explained = {node for n in entry["near_misses"] for node in n["nodes"]}
    left = [n.name for n in pipeline.fused if n.op in ("BiasAdd", "AddV2", "Relu6", "Mean")]
    assert left and set(left) <= explained
