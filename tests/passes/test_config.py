"""PassConfig: defaults, edits, and round trips through every toolchain switch form."""

from __future__ import annotations

import argparse
import json

import pytest

from fuselens.core.errors import FuseLensError
from fuselens.core.formats.switch_file import parse_switch_file
from fuselens.passes.autofuse.flags import parse_autofuse_flags
from fuselens.passes.config import PassConfig, read_skip_file
from fuselens.passes.registry import catalog, default_pass_ids

SWITCHABLE = [c.id for c in catalog() if not c.general]
NON_GENERAL_SCOPE = [c.id for c in catalog() if c.family == "scope" and not c.general]


def test_default_runs_the_default_passes_in_toolchain_order():
    config = PassConfig.default()
    assert config.pass_ids() == default_pass_ids()
    assert config.scope_list() == ""  # general passes are never listed
    assert config.autofuse_flags() == "--enable_autofuse=true"


def test_general_passes_are_on_whatever_the_configuration_says():
    assert PassConfig.from_ids([]).pass_ids() == [c.id for c in catalog() if c.general]
    with pytest.raises(FuseLensError, match="ScopeLayerNormPass is a general pass"):
        PassConfig.default().with_pass("ScopeLayerNormPass", False)
    with pytest.raises(FuseLensError, match="unknown pass 'NoSuchPass'"):
        PassConfig.default().with_pass("NoSuchPass", True)


def test_configurations_are_values():
    a = PassConfig.default()
    b = a.with_pass("ConvBatchnormFusionPass", False)
    assert a != b and a.is_enabled("ConvBatchnormFusionPass") and not b.is_enabled("ConvBatchnormFusionPass")
    assert b.with_pass("ConvBatchnormFusionPass", True) == a


# ---- enable_scope_fusion_passes --------------------------------------------------------------------
@pytest.mark.parametrize("names", [[], NON_GENERAL_SCOPE[:1], NON_GENERAL_SCOPE[::-1]])
def test_scope_list_round_trip(names):
    """The list holds the toolchain's registered names (DecodeBboxV2 under both of its), in toolchain order."""
    config = PassConfig.default().with_scope_list(",".join(names))
    text = config.scope_list()
    listed = [config.get_pass(name).id for name in filter(None, text.split(","))]
    assert set(listed) == set(names)
    assert listed == sorted(listed, key=[c.id for c in catalog()].index)
    assert ("ScopeDecodeBboxV2Pass" in text.split(",")) == ("DecodeBboxV2ScopeFusionPass" in names)
    assert PassConfig.default().with_scope_list(text) == config
    assert config.to_switch_forms().scope_passes == list(filter(None, text.split(",")))


def test_scope_list_is_the_whole_scope_switch_and_names_unknown_passes():
    config = PassConfig.default().with_scope_list(",".join(NON_GENERAL_SCOPE))
    assert config.with_scope_list(NON_GENERAL_SCOPE[0]).scope_list() == NON_GENERAL_SCOPE[0]
    assert config.with_scope_list(" ScopeLayerNormPass ,, ").scope_list() == ""  # naming a general pass is fine
    with pytest.raises(FuseLensError, match="unknown scope fusion pass 'ScopeNope'; known: ScopeLayerNormPass"):
        config.with_scope_list("ScopeNope")
    with pytest.raises(FuseLensError, match="unknown scope fusion pass 'ConvBatchnormFusionPass'"):
        config.with_scope_list("ConvBatchnormFusionPass")


# ---- AUTOFUSE_FLAGS --------------------------------------------------------------------------------
@pytest.mark.parametrize("text", [
    "--enable_autofuse=true",
    "--enable_autofuse=false",
    "--enable_autofuse=true;--autofuse_enable_pass=reduce,concat",
    "--enable_autofuse=true;--autofuse_disable_pass=broadcast;--max_fusion_size=16;--recomputation_threshold=3",
])
def test_autofuse_flags_round_trip(text):
    config = PassConfig.default().with_autofuse_flags(text)
    assert config.autofuse_flags() == text
    assert config.is_enabled("AutoFusePass") == parse_autofuse_flags(text).enable_autofuse
    assert PassConfig.default().with_autofuse_flags(config.to_switch_forms().autofuse_flags) == config


def test_autofuse_switched_off_as_a_pass_says_so_in_the_flags():
    config = PassConfig.default().with_autofuse_flags("--autofuse_enable_pass=reduce").with_pass("AutoFusePass", False)
    assert config.autofuse_flags() == "--enable_autofuse=false;--autofuse_enable_pass=reduce"
    on_again = config.with_pass("AutoFusePass", True)
    assert on_again.autofuse_flags() == "--enable_autofuse=true;--autofuse_enable_pass=reduce"


# ---- the fusion switch file ------------------------------------------------------------------------
def test_switch_file_json_with_all_round_trip():
    """FE's ConvBatchnormFusionPass folds conv and depthwise BatchNorms, so it switches both FuseLens folds;
    the file written back holds GE/FE names only, never a FuseLens id the toolchain does not know."""
    text = json.dumps({"Switch": {
        "GraphFusion": {"ALL": "off", "ConvBatchnormFusionPass": "on", "SoftmaxFusionPass": "on"},
        "UBFusion": {"ALL": "off", "TbePool2dQuantFusionPass": "on"}}})
    config = PassConfig.default().with_switch_file("sw.json", text)
    assert {p for p in SWITCHABLE if config.is_enabled(p)} == {"ConvBatchnormFusionPass",
                                                               "DepthwiseConvBatchnormFusionPass"}
    exported = config.switch_file()
    assert exported.graph_fusion == {"ALL": "off", "SoftmaxFusionPass": "on", "ConvBatchnormFusionPass": "on",
                                     "AConv2dMulFusion": "off"}
    assert exported.ub_fusion == {"ALL": "off", "TbePool2dQuantFusionPass": "on"}  # foreign entries come back
    again = PassConfig.default().with_switch_file("again.json", exported.to_json_text())
    assert again == config
    assert parse_switch_file(again.to_switch_forms().fusion_switches.to_json_text()) == exported


def test_switch_file_all_on_and_line_form_round_trip():
    config = PassConfig.from_ids([]).with_switch_file("sw.json", '{"Switch": {"GraphFusion": {"ALL": "on"}}}')
    assert all(config.is_enabled(p) for p in SWITCHABLE)
    lines = "ConvBatchnormFusionPass:off\nRequantFusionPass:off\n# comment\nAConv2dMulFusion:off\n"
    config = PassConfig.default().with_switch_file("sw.cfg", lines)
    assert not config.is_enabled("ConvBatchnormFusionPass") and not config.is_enabled("OpBiasAddMulFusionPass")
    text = config.switch_file().to_lines()
    assert text == "RequantFusionPass:off\nConvBatchnormFusionPass:off\nAConv2dMulFusion:off\n"
    assert PassConfig.default().with_switch_file("again.cfg", text) == config


def test_a_fuselens_id_refines_the_ge_pass_it_shares_and_the_export_is_stable():
    """A FuseLens switch file of old (every pass by its FuseLens id, AutoFusePass too) still loads: the shared
    FE pass switches both folds, the FuseLens id entry then its own. Written back, the device pass is on only
    when both folds are, since FE would otherwise fold on the device what FuseLens left unfolded."""
    old = "DepthwiseConvBatchnormFusionPass:off\nConvBatchnormFusionPass:on\nAutoFusePass:off\n"
    config = PassConfig.default().with_switch_file("old.cfg", old)
    assert config.is_enabled("ConvBatchnormFusionPass") and not config.is_enabled("DepthwiseConvBatchnormFusionPass")
    assert not config.is_enabled("AutoFusePass") and config.foreign_switches.graph_fusion == {}
    exported = config.switch_file()
    assert exported.graph_fusion == {"ConvBatchnormFusionPass": "off", "AConv2dMulFusion": "on"}
    assert PassConfig.default().with_switch_file("again", exported.to_lines()).switch_file() == exported


def test_switch_file_errors_name_the_file(tmp_path):
    with pytest.raises(FuseLensError, match=r"sw.cfg, line 1: expected PassName:on or PassName:off"):
        PassConfig.default().with_switch_file("sw.cfg", "Conv:maybe\n")
    with pytest.raises(FuseLensError, match=r"missing.json: cannot read the switch file"):
        PassConfig.default().with_switch_file(tmp_path / "missing.json")


# ---- the command line and saved configurations -----------------------------------------------------
def test_from_args_applies_every_form(tmp_path):
    switch = tmp_path / "sw.json"
    switch.write_text('{"Switch": {"GraphFusion": {"OpBiasAddMulFusionPass": "off"}}}')
    skips = tmp_path / "skips.txt"
    skips.write_text("# culprits\nConvBatchnormFusionPass:conv1\n\n")
    args = argparse.Namespace(enable=["ScopeInstanceNormPass"], disable=["DepthwiseConvBatchnormFusionPass"],
                              enable_scope_passes=[NON_GENERAL_SCOPE[-1]], scope_rules=None,
                              autofuse_flags="--autofuse_enable_pass=reduce", switch_file=str(switch),
                              skip_match=["AutoFusePass:relu"], skip_file=str(skips))
    config = PassConfig.from_args(args)
    assert config.is_enabled("ScopeInstanceNormPass") and config.is_enabled(NON_GENERAL_SCOPE[-1])
    assert not config.is_enabled("DepthwiseConvBatchnormFusionPass") and not config.is_enabled("OpBiasAddMulFusionPass")
    assert config.autofuse.is_enabled("reduce")
    assert config.skipped_matches == {"AutoFusePass:relu", "ConvBatchnormFusionPass:conv1"}


def test_saved_configuration_round_trip(tmp_path):
    config = (PassConfig.default().with_scope_list(NON_GENERAL_SCOPE[0]).with_autofuse_flags("--max_fusion_size=8")
              .with_switch_file("sw", "SoftmaxFusionPass:off\n").with_skipped(["AutoFusePass:exp"]))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config.to_json()))
    assert PassConfig.load(path) == config
    path.write_text("[1]")
    with pytest.raises(FuseLensError, match=r"config\.json: not a FuseLens pass configuration"):
        PassConfig.load(path)


def test_a_configuration_saved_with_an_earlier_pass_id_still_loads(tmp_path):
    saved = {"enabled": ["ScopeDecodeBboxV2Pass", "AutoFusePass"], "autofuse_flags": "--enable_autofuse=true",
             "skipped_matches": ["ScopeDecodeBboxV2Pass:Postprocessor/Decode"]}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(saved))
    config = PassConfig.load(path)
    assert config.enabled == {"DecodeBboxV2ScopeFusionPass", "AutoFusePass"}
    assert config.skipped_matches == {"DecodeBboxV2ScopeFusionPass:Postprocessor/Decode"}
    assert config.with_skipped(["ScopeDecodeBboxV2Pass:x"]).skipped_matches >= {"DecodeBboxV2ScopeFusionPass:x"}


def test_skip_file_lines_are_match_ids(tmp_path):
    path = tmp_path / "skip.txt"
    path.write_text("AutoFusePass:a/b\nnot an id\n")
    with pytest.raises(FuseLensError, match=r"skip.txt, line 2: expected a match id PassId:anchor"):
        read_skip_file(path)
