"""A pipeline run with details=False (`fuse` without a report) keeps only what its summary and ledger read."""

from __future__ import annotations

import pytest

from passes.ledger import pipeline_ledger
from passes.registry import run_pipeline
from passes.report import format_pipeline


@pytest.mark.parametrize("sample", ["demo", "keras_bn_small_ops", "conv_shared"])
def test_counts_summary_ledger_and_fused_graph_are_those_of_a_detailed_run(sample, load_sample):
    graph = load_sample(sample)
    detailed, counted = run_pipeline(graph, explain=False), run_pipeline(graph, explain=False, details=False)
    counted.seconds = detailed.seconds
    assert format_pipeline(counted) == format_pipeline(detailed)
    assert pipeline_ledger(counted) == pipeline_ledger(detailed)
    assert counted.fused.to_bytes() == detailed.fused.to_bytes()
    assert counted.errors == detailed.errors
    for full, kept in zip(detailed.results, counted.results, strict=True):
        assert [(m.anchor, m.summary, m.index) for m in kept.matches] == \
               [(m.anchor, m.summary, m.index) for m in full.matches]
        assert [(n.anchor, n.reason) for n in kept.near_misses] == [(n.anchor, n.reason) for n in full.near_misses]
        assert not kept.rewrites and not any(m.nodes or m.details or m.bindings for m in kept.matches)
        assert not any(n.nodes or n.bindings or n.culprit.nodes for n in kept.near_misses)


def test_a_pipeline_without_details_has_no_provenance(load_sample):
    pipeline = run_pipeline(load_sample("demo"), details=False)
    assert any(result.matches for result in pipeline.results)
    with pytest.raises(ValueError, match="details=False"):
        _ = pipeline.provenance
