"""The helper sends a value as several pickles of one stream, unpickled one at a time so that the
window's GUI thread gets the interpreter lock between them; the graph the request sent comes back as
the window's own object."""

from __future__ import annotations

from fuselens.passes.config import PassConfig
from fuselens.session import tensorflow_helper
from fuselens.session.session import FusionJob


def test_a_pipeline_arrives_in_pieces_equal_to_the_one_the_helper_built(load_sample, monkeypatch):
    monkeypatch.setattr(tensorflow_helper, "RECORDS_PER_PIECE", 2)
    graph = load_sample("demo")
    pipeline = FusionJob(1, graph, PassConfig.default()).fuse(lambda _text: None, lambda: False)
    records = [records for r in pipeline.results for records in (r.matches, r.near_misses, r.skipped, r.rewrites)]
    assert sum(len(r) for r in records) > 4, "the sample must have records to split"

    pieces = list(tensorflow_helper._pickle_pieces(pipeline, graph))
    received = tensorflow_helper.unpickle_pieces(pieces, graph)

    assert len(pieces) == 2 + sum((len(r) + 1) // 2 for r in records)  # fused graph, records by two, pipeline
    assert received.original is graph  # not a copy sent back
    assert received.fused is not graph and received.fused.to_bytes() == pipeline.fused.to_bytes()
    assert [r.to_json() for r in received.results] == [r.to_json() for r in pipeline.results]  # explanations too
    assert any(m.explanation for r in received.results for m in r.matches)


def test_a_value_without_records_is_one_piece():
    value = {"shapes": [None, {("x", 0): (1, 2)}]}
    pieces = list(tensorflow_helper._pickle_pieces(value, None))
    assert len(pieces) == 1 and tensorflow_helper.unpickle_pieces(pieces, None) == value
