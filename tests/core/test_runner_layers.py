"""A long-lived run child (bisect runs dozens of jobs), inner tensors compared on the same inputs
(layerwise), and interleaved timing: one child process for the whole module."""

from __future__ import annotations

import pytest

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import TensorRef
from fuselens.core.runtime import RunRequest, run
from fuselens.core.runtime.runner import LayerProbe, RunnerProcess, start_run
from tests.core.test_runner import log_graph


@pytest.fixture(scope="module")
def process():
    with RunnerProcess() as shared:
        yield shared


def with_exp_replaced(graph, op: str):
    editor = graph.editor()
    editor.mutable("out").op = op
    return editor.build()


def test_one_child_serves_several_runs_and_compares_inner_tensors(process):
    original = log_graph(abs_first=True)  # x -> a = abs(x) -> out = log(a)
    wrong = with_exp_replaced(original, "Exp")
    handle = start_run(RunRequest(original, original, steps=1, warmup=0, trace=False,
                                  layers=[LayerProbe("fused", [("a:0", "a:0"), ("out:0", "out:0")]),
                                          LayerProbe("stage: wrong", [("out:0", "out:0")], wrong)]),
                       process=process)
    assert handle.result(120).allclose
    first_pid = process.pid
    same, differs = handle.layers["fused"]
    assert same.allclose and same.max_abs == 0 and differs.allclose
    [broken] = handle.layers["stage: wrong"]
    assert (broken.original, broken.fused) == ("out:0", "out:0") and not broken.allclose and broken.max_abs > 0.1

    result = run(RunRequest(original, wrong, steps=3, warmup=1, trace=False, interleave=True), process=process)
    assert process.pid == first_pid  # the same child: TensorFlow imported once
    assert not result.allclose
    assert [len(g.step_times_us) for g in result.graphs.values()] == [3, 3]


def test_a_failed_run_leaves_the_child_serving_a_probe_naming_no_graph_fails_first(process):
    original = log_graph(abs_first=True)
    bad = original.editor()
    bad.set_input("out", 0, TensorRef("x", 3))
    with pytest.raises(FuseLensError, match="TensorFlow refused to run the fused graph"):
        run(RunRequest(original, bad.build(validate=False), steps=1, warmup=0, trace=False), process=process)
    pid = process.pid
    assert run(RunRequest(original, original, steps=1, warmup=0, trace=False), process=process).allclose
    assert process.pid == pid
    with pytest.raises(FuseLensError, match="names the fused graph, but the run has none"):
        start_run(RunRequest(original, layers=[LayerProbe("fused", [("a:0", "a:0")])]), process=process)
