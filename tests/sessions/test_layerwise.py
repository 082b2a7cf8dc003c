"""Layerwise compare on MobileNetV2 with one depthwise+BN fold made wrong: every fused node has an
error figure or is listed as having no original counterpart, and the fault is the first divergent match."""

from __future__ import annotations

import pytest

from fuselens.core.runtime.runner import RunRequest, start_run, wait
from fuselens.passes import registry
from fuselens.passes.amct.depthwise_bn import DepthwiseConvBatchnormFusionPass
from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import run_pipeline
from fuselens.session.layerwise import build_report, format_report, fused_nodes, plan_layers
from tests.sessions.fault_models import MOBILENET_VICTIM, MisfoldingDepthwiseBn


@pytest.mark.slow
def test_layerwise_names_the_injected_fault_as_the_first_divergent_match(monkeypatch, load_sample):
    monkeypatch.setitem(registry._REGISTRY, MisfoldingDepthwiseBn.id, MisfoldingDepthwiseBn)
    graph = load_sample("mobilenet_v2")
    config = (PassConfig.default().with_pass(DepthwiseConvBatchnormFusionPass.id, False)
              .with_pass(MisfoldingDepthwiseBn.id, True))
    pipeline = run_pipeline(graph, config)
    plan = plan_layers(pipeline, run_pipeline)
    assert plan.stages[-1].graph is None  # the fused graph is probed in the run itself
    handle = start_run(RunRequest(graph, pipeline.fused, steps=1, warmup=0, trace=False, layers=plan.probes(),
                                  original_to_final=pipeline.provenance.original_to_final()))
    wait(handle)
    report = build_report(plan, handle.layers)

    victim = f"{MisfoldingDepthwiseBn.id}:{MOBILENET_VICTIM}"
    assert report.first_divergent == victim, format_report(report)
    matches = [m for r in pipeline.results for m in r.matches]
    assert len(matches) > 100 and set(report.matches) == {m.id for m in matches}
    assert all(m.max_abs is not None and m.compared for m in report.matches.values())
    before = [m for m in report.matches.values() if m.position < report.matches[victim].position]
    assert before and all(m.allclose for m in before)  # upstream of the fault everything agrees
    for node in fused_nodes(pipeline.fused, pipeline.provenance):
        assert node in report.nodes or any(t.startswith(f"{node}:") for t in report.unpaired), node
    assert report.node_error("autofuse_pointwise_0_BiasAdd_Relu6") < 1e-4  # block 1, before the fault
    assert {t.rsplit("/", 1)[-1] for t in report.unpaired} <= {"convolution:0", "depthwise:0"}  # folded convs
