"""AutoFuse's kernels on every sample are exactly those recorded before the linear-time rework:
same kernel names, same original nodes in each (tests/passes/autofuse_kernels.json, written by the
code before it). A change to the grouping that moves a kernel shows here by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuselens.passes.pipeline import run_pipeline

RECORDED = json.loads((Path(__file__).with_name("autofuse_kernels.json")).read_text())


@pytest.mark.parametrize("sample", [pytest.param(s, marks=pytest.mark.slow) if s == "mobilenet_v2" else s
                                    for s in sorted(RECORDED)])
def test_default_pipeline_builds_the_recorded_kernels(load_sample, sample):
    fused = run_pipeline(load_sample(sample)).fused
    kernels = {node.name: list(info.nodes) for node in fused
               if (info := fused.fused_info(node.name)) is not None and info.pass_id == "AutoFusePass"}
    assert kernels == RECORDED[sample]
