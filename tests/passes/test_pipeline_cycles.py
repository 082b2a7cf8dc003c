"""The passes make no reference cycles, so the window runs a fusion with cyclic collection paused
(gui.model_jobs): all they drop is freed by reference counting. A cycle (a nested function that calls itself,
as GraphEditor.build's did) kept a whole edit alive until a full collection: +75 MB at the peak of the
100k-node graph's fusion with collection paused."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from benchmarks.bench_amct import bare, synthetic
from fuselens.core.graph import Graph
from fuselens.passes.pipeline import run_pipeline

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "resources" / "samples").glob("*.pb"))


def cyclic_garbage_of_a_fusion(graph: Graph) -> list[object]:
    """What a cyclic collection finds unreachable after the window's fusion of `graph` (run, explained later,
    shapes adopted) and the results dropped: FuseLens's own objects and functions among it."""
    gc.collect()
    gc.disable()
    try:
        pipeline = run_pipeline(graph, explain="later")
        pipeline.provenance.touched_from()
        for result in (pipeline.original, pipeline.fused):
            result.adopt_static_shapes()
        pipeline.explain_matches()
        del pipeline
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        garbage = list(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    return [item for item in garbage
            if (getattr(item, "__module__", None) or type(item).__module__ or "").startswith("fuselens")]


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_fusing_a_sample_makes_no_reference_cycle(path):
    graph = Graph.from_bytes(path.read_bytes(), source=path.name)
    assert cyclic_garbage_of_a_fusion(graph) == []


def test_fusing_a_bare_graph_of_every_block_kind_makes_no_reference_cycle():
    """Shapes derived (not recorded) and carried from pass to pass, the fold of every AMCT kind, AutoFuse."""
    assert cyclic_garbage_of_a_fusion(Graph.from_bytes(bare(synthetic(400)))) == []
