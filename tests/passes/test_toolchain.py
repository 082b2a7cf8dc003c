"""Every pass and its real toolchain switch: the table, the two sides' switch forms, and the choices the
toolchain cannot switch (a user rule, a general pass, per-match skips, pointwise/broadcast off)."""

from __future__ import annotations

import pytest

from fuselens.core.formats.switch_file import skip_node_names_cfg
from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import run_pipeline
from fuselens.passes.registry import catalog
from fuselens.passes.switch import AMCT, NO_SWITCH, NONE, SCOPE
from fuselens.passes.toolchain import baseline_forms, fused_forms, limits, modelled_ge_passes, switch_of


def test_every_builtin_pass_has_a_cited_switch_and_scope_ids_are_registered_names():
    assert all(switch_of(c) is not NO_SWITCH for c in catalog())  # each built-in module declares its switch
    for cls in catalog():
        switch = switch_of(cls)
        assert switch.sources and all(" " in s for s in switch.sources)  # "repository path (what)" or a URL
        assert (switch.kind == SCOPE) == (cls.family == "scope")
        if switch.kind == SCOPE:
            assert cls.id == switch.names[0] and switch.general == cls.general  # the id is the toolchain's
    assert modelled_ge_passes(catalog()) == ("ConvBatchnormFusionPass", "AConv2dMulFusion")
    assert switch_of(catalog()[3]).names == ("DecodeBboxV2ScopeFusionPass", "ScopeDecodeBboxV2Pass")


def test_the_baseline_closes_everything_fuselens_models_and_keeps_foreign_entries():
    config = PassConfig.default().with_switch_file("sw", "TbeConvReluFusionPass:off\n")
    forms = baseline_forms(config)
    assert forms.scope_passes == [] and forms.autofuse_flags == "--enable_autofuse=false"
    assert forms.fusion_switches.graph_fusion == {"TbeConvReluFusionPass": "off", "ConvBatchnormFusionPass": "off",
                                                  "AConv2dMulFusion": "off"}


@pytest.mark.parametrize(("off", "expected"), [
    ([], {"ConvBatchnormFusionPass": "on", "AConv2dMulFusion": "on"}),
    (["DepthwiseConvBatchnormFusionPass"], {"ConvBatchnormFusionPass": "off", "AConv2dMulFusion": "on"}),
    (["OpBiasAddMulFusionPass"], {"ConvBatchnormFusionPass": "on", "AConv2dMulFusion": "off"}),
])
def test_a_device_pass_is_on_only_when_every_fold_it_stands_for_is_on(load_sample, off, expected):
    """AMCT did the enabled folds offline; FE must not fold on the device what FuseLens left unfolded."""
    pipeline = run_pipeline(load_sample("demo"), PassConfig.default().with_passes(off, on=False))
    assert fused_forms(pipeline).fusion_switches.graph_fusion == expected


def test_the_fused_side_lists_registered_scope_names_and_autofuse_skips(load_sample):
    config = (PassConfig.default().with_scope_list("DecodeBboxV2ScopeFusionPass,ScopeInstanceNormPass")
              .with_autofuse_flags("--autofuse_enable_pass=reduce").with_skipped(["AutoFusePass:exp_0"]))
    pipeline = run_pipeline(load_sample("abs_relu_exp"), config)
    forms = fused_forms(pipeline)
    assert forms.scope_passes == ["ScopeInstanceNormPass", "DecodeBboxV2ScopeFusionPass", "ScopeDecodeBboxV2Pass"]
    assert forms.autofuse_flags == "--enable_autofuse=true;--autofuse_enable_pass=reduce"
    assert forms.autofuse_skip_nodes == ("abs_0", "relu_0", "exp_0")
    assert skip_node_names_cfg(forms.autofuse_skip_nodes).splitlines()[1:] == ["[ByNodeName]", "abs_0", "relu_0",
                                                                               "exp_0"]
    assert limits(pipeline) == ["skip AutoFusePass:exp_0: AutoFuse's --skip_node_names_cfg keeps its nodes out of "
                                "every kernel, not only this group."]


def test_what_the_toolchain_cannot_switch_is_said(load_sample, tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - name: ScopeMyNormPass\n    op_type: MyNorm\n    suffix: mynorm\n"
                     "    census: {Mul: 3}\n    inputs: [{node: mynorm/mul}]\n    outputs: [{node: mynorm/mul}]\n")
    config = (PassConfig.default().with_scope_rules(rules).with_autofuse_flags("--autofuse_disable_pass=broadcast")
              .with_skipped(["ConvBatchnormFusionPass:stem/bn", "ScopeLayerNormPass:encoder/LayerNorm"]))
    user = next(c for c in config.catalog() if c.id == "ScopeMyNormPass")
    assert switch_of(user).kind == NONE and switch_of(config.get_pass("ConvBatchnormFusionPass")).kind == AMCT
    pipeline = run_pipeline(load_sample("demo"), config)
    said = limits(pipeline)
    assert [line.split(":")[0] for line in said] == [
        "skip ScopeLayerNormPass", "ScopeMyNormPass (off)", "skip ConvBatchnormFusionPass",
        "AUTOFUSE_FLAGS --autofuse_disable_pass=broadcast"]
    assert said[0].endswith("the parser's scope passes have no per-scope switch, so the toolchain fuses this scope "
                            "whenever ScopeLayerNormPass runs.")
    assert said[1].startswith("ScopeMyNormPass (off): no toolchain switch; a FuseLens user scope rule")
    assert said[2].startswith("skip ConvBatchnormFusionPass:stem/bn: left unfolded in the AMCT graph; "
                              "ConvBatchnormFusionPass is switched off on the fused side")
    assert said[3].endswith("AutoFuse takes only its opt-in kinds there; pointwise and broadcast fuse whenever "
                            "AutoFuse is on.")
    general = limits(run_pipeline(load_sample("demo"), PassConfig.default()))
    assert general == ["ScopeLayerNormPass: a general scope pass, which the parser always runs: the baseline fuses "
                       "its 1 match(es) too, so only the fused side's other fusions differ."]
    assert fused_forms(pipeline).fusion_switches.graph_fusion["ConvBatchnormFusionPass"] == "off"
    assert "ScopeMyNormPass" not in fused_forms(pipeline).scope_passes


def test_a_user_rule_with_a_builtin_name_is_switched_by_that_name(tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - name: ScopeInstanceNormPass\n    op_type: InstanceNorm\n    suffix: instancenorm\n"
                     "    census: {Mul: 3}\n    inputs: [{node: instancenorm/mul}]\n"
                     "    outputs: [{node: instancenorm/mul}]\n")
    config = PassConfig.default().with_scope_rules(rules).with_scope_list("ScopeInstanceNormPass")
    switch = switch_of(config.get_pass("ScopeInstanceNormPass"))
    assert switch.kind == SCOPE and switch.names == ("ScopeInstanceNormPass",) and "built-in rule" in switch.note
    assert config.scope_list() == "ScopeInstanceNormPass"


def test_a_subclass_with_an_id_of_its_own_is_a_pass_the_toolchain_does_not_know():
    """A switch belongs to the class that declares it: a variant of a built-in (a test's, a plugin's) is not
    switched by the built-in's names, and does not close the built-in's device pass."""
    from fuselens.passes.amct.conv_bn import ConvBatchnormFusionPass

    class VariantConvBn(ConvBatchnormFusionPass):
        id = "VariantConvBnPass"

    assert switch_of(VariantConvBn) is NO_SWITCH
    assert switch_of(ConvBatchnormFusionPass).ge_passes == ("ConvBatchnormFusionPass",)
    assert modelled_ge_passes([VariantConvBn]) == ()
