"""ScopeInstanceNormPass: off by default; when enabled, each InstanceNorm scope pair fuses."""

from __future__ import annotations

from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import run_pipeline
from fuselens.passes.registry import default_pass_ids
from fuselens.passes.scope.instance_norm import ScopeInstanceNormPass
from tests.passes.scope_check import assert_same_outputs, fused_calls


def test_off_until_enabled_by_name(load_sample):
    graph = load_sample("instance_norm")
    assert "ScopeInstanceNormPass" not in default_pass_ids()
    default = run_pipeline(graph, None)
    assert default.result("ScopeInstanceNormPass") is None and not fused_calls(default.fused, "InstanceNorm")
    enabled = run_pipeline(graph, PassConfig.default().with_pass("ScopeInstanceNormPass", True))
    assert [c.name for c in fused_calls(enabled.fused, "InstanceNorm")] == ["InstanceNorm", "InstanceNorm_1"]


def test_instance_norm_scopes_fuse_with_the_toolchain_wiring_and_same_results(load_sample):
    original = load_sample("instance_norm")
    fused, result = ScopeInstanceNormPass().apply(original)
    first, second = result.matches
    assert first.bindings == {"instancenorm": "InstanceNorm/instancenorm", "moments": "InstanceNorm/moments"}
    assert first.details["inputs"] == ["input", "InstanceNorm/gamma/read", "InstanceNorm/beta/read"]
    assert first.details["outputs"] == ["InstanceNorm/instancenorm/add_1", "InstanceNorm/moments/mean",
                                        "InstanceNorm/instancenorm/Rsqrt"]
    assert second.details["inputs"][0] == "conv1"
    assert not any(op in fused.op_histogram() for op in ("Rsqrt", "SquaredDifference", "Mean"))
    assert_same_outputs(original, fused, {"InstanceNorm/moments/mean": "InstanceNorm:1",
                                          "InstanceNorm_1/instancenorm/Rsqrt": "InstanceNorm_1:2"})


def test_layernorm_scopes_are_not_instance_norms(load_sample):
    result = ScopeInstanceNormPass().dry_run(load_sample("bert_layernorm"))
    assert not result.matches and not result.near_misses
