"""A pass or a match that raises fails alone: an error in the report, its input graph goes on;
a skipped match stays as it was while the other matches of its pass still fuse."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fuselens.passes import registry
from fuselens.passes.amct.conv_bn import ConvBatchnormFusionPass
from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import run_pipeline
from tests.passes.amct_check import assert_same_outputs

SAMPLE = "keras_bn_small_ops"


class BrokenEverywhere(ConvBatchnormFusionPass):
    """A test-only pass whose matching itself raises."""

    id = "BrokenEverywherePass"
    order = 998

    def candidates(self, graph):
        raise RuntimeError("pattern table corrupt")


class BrokenOnOneMatch(ConvBatchnormFusionPass):
    """A test-only Conv+BN fold that raises on one match only."""

    id = "BrokenOnOneMatchPass"
    order = 997
    victim = ""

    def rewrite(self, graph, editor, match):
        if match.anchor == self.victim:
            raise ValueError("cannot fold this one")
        return super().rewrite(graph, editor, match)


@pytest.fixture
def test_passes(monkeypatch):
    for cls in (BrokenEverywhere, BrokenOnOneMatch):
        monkeypatch.setitem(registry._REGISTRY, cls.id, cls)


def small_op_first(load_sample):
    """The sample with its small-op BNs turned into FusedBatchNormV3, so Conv+BN folds find matches."""
    return run_pipeline(load_sample(SAMPLE), ["SmallOpBatchnormFusionPass"]).fused


def test_a_pass_that_raises_is_an_error_and_the_pipeline_goes_on(test_passes, load_sample):
    graph = small_op_first(load_sample)
    pipeline = run_pipeline(graph, ["BrokenEverywherePass", "ConvBatchnormFusionPass"])
    broken = pipeline.result("BrokenEverywherePass")
    assert broken.errors == ["BrokenEverywherePass failed: RuntimeError: pattern table corrupt; the pass was skipped"]
    assert pipeline.errors == broken.errors
    assert len(pipeline.result("ConvBatchnormFusionPass").matches) >= 2  # the next pass saw the unchanged graph
    assert_same_outputs(graph, pipeline.fused)


def test_a_match_that_raises_fails_alone(test_passes, load_sample, monkeypatch):
    graph = small_op_first(load_sample)
    anchors = [m.anchor for m in ConvBatchnormFusionPass().dry_run(graph).matches]
    assert len(anchors) >= 2
    monkeypatch.setattr(BrokenOnOneMatch, "victim", anchors[0])
    pipeline = run_pipeline(graph, ["BrokenOnOneMatchPass"])
    result = pipeline.result("BrokenOnOneMatchPass")
    assert result.errors == [f"BrokenOnOneMatchPass failed on {anchors[0]}: ValueError: cannot fold this one; "
                             "left as it was"]
    assert [m.anchor for m in result.matches] == anchors[1:]
    assert [m.index for m in result.matches] == list(range(len(anchors) - 1))  # renumbered
    assert anchors[0] in pipeline.fused and pipeline.fused.op(anchors[0]) == graph.op(anchors[0])
    assert pipeline.fused.op_histogram().get("FusedBatchNormV3", 0) == 1  # only the victim's BN is left
    assert_same_outputs(graph, pipeline.fused)


def test_a_skipped_match_stays_and_the_others_fuse(load_sample):
    graph = small_op_first(load_sample)
    first, *others = ConvBatchnormFusionPass().dry_run(graph).matches
    config = PassConfig.from_ids(["ConvBatchnormFusionPass"]).with_skipped([first.id])
    result = run_pipeline(graph, config).result("ConvBatchnormFusionPass")
    assert [m.id for m in result.skipped] == [first.id] and first.id == f"ConvBatchnormFusionPass:{first.anchor}"
    assert [m.anchor for m in result.matches] == [m.anchor for m in others]
    fused = run_pipeline(graph, config).fused
    assert all(node in fused for node in first.nodes) and fused.op_histogram()["FusedBatchNormV3"] == 1
    assert_same_outputs(graph, fused)


def test_cli_reports_the_failure_and_fails_only_with_strict(tmp_path):
    plugin = tmp_path / "broken_plugin.py"
    plugin.write_text("from fuselens.passes.registry import register\n"
                      "from tests.passes.test_failing_pass import BrokenEverywhere\n"
                      "register(BrokenEverywhere)\n")
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import broken_plugin; from fuselens.cli import main; "
              "sys.exit(main(sys.argv[2:]))")
    base = [sys.executable, "-c", script, str(tmp_path), "fuse", "conv_bn", "--enable", "BrokenEverywherePass"]
    lenient = subprocess.run(base, capture_output=True, text=True, timeout=300)
    assert lenient.returncode == 0 and "! BrokenEverywherePass failed: RuntimeError" in lenient.stdout
    assert "Traceback" not in lenient.stderr
    strict = subprocess.run([*base, "--strict"], capture_output=True, text=True, timeout=300)
    assert strict.returncode == 1 and "Traceback" not in strict.stderr
