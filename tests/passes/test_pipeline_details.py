"""A pipeline run with details=False (`fuse` without a report) keeps only what its summary and ledger read."""

from __future__ import annotations

import pickle

import pytest

from fuselens.passes.base import SHOWN_NEAR_MISSES, NearMiss, PassResult
from fuselens.passes.config import PassConfig
from fuselens.passes.ledger import pipeline_ledger
from fuselens.passes.pipeline import PipelineResult, run_pipeline
from fuselens.passes.report import format_pipeline


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
        assert (kept.match_count, kept.near_miss_count, kept.skipped_count) == \
               (len(full.matches), len(full.near_misses), len(full.skipped))
        assert [(n.anchor, n.reason) for n in kept.near_misses] == \
               [(n.anchor, n.reason) for n in full.near_misses[:SHOWN_NEAR_MISSES]]
        assert not kept.matches and not kept.skipped and not kept.rewrites and not kept.detailed and full.detailed
        assert not any(n.nodes or n.bindings or n.culprit.nodes for n in kept.near_misses)


def test_a_summary_counts_the_near_misses_it_does_not_keep(load_sample):
    graph = load_sample("demo")
    misses = [NearMiss("P", f"n{i}", (f"n{i}",), f"reason {i}", bindings={"x": f"n{i}"}) for i in range(8)]
    detailed = PipelineResult(graph, graph, PassConfig.default(), [PassResult("P", near_misses=misses)])
    counted = PipelineResult(graph, graph, PassConfig.default(), [PassResult("P", near_misses=list(misses))])
    counted.results[0].drop_details()
    assert counted.results[0].near_miss_count == 8 and len(counted.results[0].near_misses) == SHOWN_NEAR_MISSES
    assert format_pipeline(counted) == format_pipeline(detailed)
    assert "~ n4: reason 4" in format_pipeline(counted) and "~ ... 3 more" in format_pipeline(counted)


def test_a_pipeline_without_details_has_no_provenance(load_sample):
    pipeline = run_pipeline(load_sample("demo"), details=False)
    assert any(result.match_count for result in pipeline.results)
    with pytest.raises(ValueError, match="details=False"):
        _ = pipeline.provenance


@pytest.mark.parametrize("sample", ["conv_bn", "bert_layernorm"])
def test_explanations_made_later_are_those_made_during_the_run_and_travel_with_a_pickle(sample, load_sample):
    graph = load_sample(sample)
    now, later = run_pipeline(graph), run_pipeline(graph, explain="later")
    assert now.explained and not later.explained
    assert all(m.explanation is None for r in later.results for m in r.matches)
    pickled = pickle.loads(pickle.dumps(later))  # the graphs each pass saw are not pickled: the explanations are
    assert later.explained and pickled.explained
    for explained in (later, pickled):
        assert [m.explanation for r in explained.results for m in r.matches] == \
               [m.explanation for r in now.results for m in r.matches]
    assert any(m.explanation for r in now.results for m in r.matches)
