"""A pipeline's provenance is composed from its results when first read, and only then."""

from __future__ import annotations

import pickle

import fuselens.passes.pipeline
from fuselens.cli import main as cli_main
from fuselens.passes.pipeline import run_pipeline


def test_provenance_follows_every_rewrite_and_survives_pickling(load_sample):
    pipeline = run_pipeline(load_sample("demo"))
    rewrites = [r for result in pipeline.results for r in result.rewrites]
    assert rewrites and pipeline.provenance.rewrites == rewrites
    for rewrite in rewrites:
        for name in rewrite.after:
            if name in pipeline.fused:
                assert pipeline.provenance.status(name) in ("modified", "new")
                assert set(rewrite.before) & pipeline.provenance.origins(name) or name in rewrite.before
    removed = {n for r in rewrites for n in r.removed if n in pipeline.original}
    assert removed and all(pipeline.provenance.original_status(n) == "removed" for n in removed)
    unchanged = next(n for n in pipeline.original.nodes if n in pipeline.fused and n not in removed
                     and pipeline.provenance.status(n) == "unchanged")
    assert pipeline.provenance.descendants(unchanged) == [unchanged]
    received = pickle.loads(pickle.dumps(run_pipeline(load_sample("demo"))))
    assert received.provenance.original_to_final() == pipeline.provenance.original_to_final()


def test_provenance_is_composed_once_and_never_by_fuse(tmp_path, monkeypatch, capsys, load_sample):
    composed = []
    provenance = fuselens.passes.pipeline.Provenance
    monkeypatch.setattr(fuselens.passes.pipeline, "Provenance",
                        lambda nodes: composed.append(nodes) or provenance(nodes))
    out = [str(tmp_path / name) for name in ("fused.pb", "report.json", "ledger.json")]
    assert cli_main(["fuse", "conv_bn", "-o", out[0], "--report", out[1], "--ledger", out[2]]) == 0
    assert composed == []
    pipeline = run_pipeline(load_sample("conv_bn"))
    assert pipeline.provenance is pipeline.provenance and len(composed) == 1
    capsys.readouterr()
