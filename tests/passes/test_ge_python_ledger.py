"""GE's counts of a GE Python pass in FuseLens's predicted ledger, checked against a fusion_result.json."""

from __future__ import annotations

from fuselens.core.ascend.ge.fusion_result import GRAPH_FUSION, GraphLedger, PassCount, read_fusion_result
from fuselens.passes.ledger import compare_with_toolchain, pipeline_ledger
from tests.passes.ge_python_check import ADD_ZERO_EXPRESSION, SAMPLE, run_files


def test_the_ledger_counts_refusals_as_matches(load_sample):
    pipeline, _ = run_files(load_sample(SAMPLE), ADD_ZERO_EXPRESSION)
    count = pipeline_ledger(pipeline).get("AddZeroPass")
    assert (count.match_times, count.effect_times) == (2, 1)


def test_checked_against_the_hosts_fusion_result(load_sample, tmp_path):
    pipeline, _ = run_files(load_sample(SAMPLE), ADD_ZERO_EXPRESSION)
    host = GraphLedger("0_1")
    host.add(PassCount("AddZeroPass", GRAPH_FUSION, 2, 1))
    rows = {row.name: row for row in compare_with_toolchain(pipeline, host)}
    assert rows["AddZeroPass"].status == "agree"
    other = GraphLedger("0_1")
    other.add(PassCount("AddZeroPass", GRAPH_FUSION, 2, 2))
    assert {row.name: row for row in compare_with_toolchain(pipeline, other)}["AddZeroPass"].status == "disagree"
    absent = {row.name: row for row in compare_with_toolchain(pipeline, GraphLedger("0_1"))}
    assert absent["AddZeroPass"].status == "disagree"  # GE records a Python pass: absent means it never ran


def test_fuse_writes_the_ledger_the_host_writes(load_sample, tmp_path):
    from fuselens.cli import main

    ledger = tmp_path / "fusion_result.json"
    assert main(["fuse", SAMPLE, "--py-pass", str(ADD_ZERO_EXPRESSION), "--ledger", str(ledger)]) == 0
    (graph,) = read_fusion_result(ledger).graphs
    count = graph.get("AddZeroPass")
    assert (count.match_times, count.effect_times) == (2, 1)
