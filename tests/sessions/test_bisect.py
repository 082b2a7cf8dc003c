"""Bisect finds injected faults: one mis-folded match of 40, a fault that needs two matches together, and
two slow matches of 24 by time; in fewer runs than one per match, with a reproduction that fixes it."""

from __future__ import annotations

import json

import pytest

from fuselens.cli import main as cli_main
from fuselens.core.formats.loaders import load_model
from fuselens.core.graph import Graph
from fuselens.core.runtime.runner import RunnerProcess
from fuselens.passes import registry
from fuselens.passes.amct.conv_bn import ConvBatchnormFusionPass
from fuselens.passes.autofuse.autofuse_pass import AutoFusePass
from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import run_pipeline
from fuselens.session.bisect import BisectOptions, Bisector, minimal_failing
from tests.passes.amct_check import assert_same_outputs
from tests.sessions.fault_models import (
    BLOCKS,
    MisfoldingConvBn,
    PairFaultConvBn,
    SlowMatMulFold,
    conv_bn_chain,
    matmul_chain,
)


@pytest.fixture
def faults(monkeypatch):
    for cls in (MisfoldingConvBn, PairFaultConvBn, SlowMatMulFold):
        monkeypatch.setitem(registry._REGISTRY, cls.id, cls)


@pytest.fixture(scope="module")
def process():
    """One run child for the module's bisects (TensorFlow imported once)."""
    with RunnerProcess() as shared:
        yield shared


def test_minimal_failing_takes_about_log2_runs_per_culprit():
    items = [f"m{i}" for i in range(64)]
    asked = []

    def fails(subset):
        asked.append(frozenset(subset))
        return {"m9", "m50"} <= set(subset)

    assert minimal_failing(items, fails) == ["m9", "m50"]
    assert len(set(asked)) <= 2 * 6 + 2


@pytest.mark.slow
def test_cli_bisect_names_the_misfolded_match_and_its_skip_file_fixes_the_model(faults, tmp_path, capsys):
    model = tmp_path / "chain.pb"
    model.write_bytes(conv_bn_chain().graph_def.SerializeToString())
    selection = ["--disable", f"{ConvBatchnormFusionPass.id},{AutoFusePass.id}", "--enable", MisfoldingConvBn.id]
    fast = ["--no-grappler"]
    assert cli_main(["bisect", str(model), *selection, *fast, "--export", str(tmp_path / "repro"), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    victim = f"{MisfoldingConvBn.id}:block_23/bn"
    assert result["matches"] == BLOCKS and result["skip_list"] == [victim]
    assert result["runs"] <= 12 < BLOCKS  # whole, ~log2(40) searches, checks, the skip list and the pass switch
    [culprit] = result["culprits"]
    assert culprit["nodes"] == ["block_23/conv", "block_23/bn"] and culprit["pass_id"] == MisfoldingConvBn.id
    assert result["whole"]["failed"] and not result["fixed"]["failed"]
    assert result["pass_switches"]["off"] == [MisfoldingConvBn.id]
    assert result["pass_switches"]["matches_lost"] == BLOCKS
    skip = tmp_path / "repro" / "skip.txt"
    assert skip.read_text().splitlines()[1:] == [victim]
    assert (tmp_path / "repro" / "autofuse_skip.ini").read_text().splitlines()[-1] == "[ByNodeName]"

    fused = tmp_path / "fused.pb"
    assert cli_main(["fuse", str(model), *selection, "--skip-file", str(skip), "-o", str(fused)]) == 0
    assert_same_outputs(load_model(str(model)).graph, load_model(str(fused)).graph)
    assert cli_main(["bisect", str(model), *selection, *fast, "--skip-file", str(skip)]) == 0
    assert "nothing to bisect: outputs agree with the original" in capsys.readouterr().out


@pytest.mark.slow
def test_a_fault_that_needs_two_matches_names_both(faults, process):
    result = Bisector(conv_bn_chain(), PassConfig.from_ids([PairFaultConvBn.id]), BisectOptions(grappler=False),
                      run_pipeline, process=process).run()
    assert result.skip_ids() == [f"{PairFaultConvBn.id}:block_6/bn", f"{PairFaultConvBn.id}:block_31/bn"]
    assert [c.group for c in result.culprits] == [0, 0]  # one group: they fail only together
    assert result.runs < BLOCKS
    assert not result.fixed.failed


@pytest.mark.slow
def test_time_bisect_names_the_slow_matches_with_the_noise_it_measured(faults, process):
    graph: Graph = matmul_chain(blocks=24)
    options = BisectOptions(by="time", slowdown=100, steps=10)
    result = Bisector(graph, PassConfig.from_ids([SlowMatMulFold.id]), options, run_pipeline, process=process).run()
    assert sorted(result.skip_ids()) == sorted(f"{SlowMatMulFold.id}:{v}" for v in SlowMatMulFold.victims)
    assert result.noise is not None  # the original timed against itself, before the search
    assert all(trial.slowdown > 100 for trial in result.groups)
    assert result.fixed.slowdown < 100 and result.runs < 24
