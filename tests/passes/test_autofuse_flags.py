"""AUTOFUSE_FLAGS: the toolchain's syntax in and out, FuseLens defaults, and worded errors."""

from __future__ import annotations

import pytest

from fuselens.core.errors import FuseLensError
from fuselens.passes.autofuse.flags import AutofuseFlags, as_autofuse_flags, parse_autofuse_flags


def test_defaults_fuse_pointwise_and_broadcast_only_and_autofuse_is_on():
    flags = parse_autofuse_flags("")
    assert flags == AutofuseFlags()
    assert flags.enable_autofuse and flags.max_fusion_size == 64 and flags.recomputation_threshold == 1
    assert flags.categories == {"pointwise", "broadcast"}
    assert flags.to_string() == "--enable_autofuse=true"


def test_parses_the_toolchain_example_and_opt_in_categories():
    flags = parse_autofuse_flags("--enable_autofuse=true;--autofuse_enable_pass=reduce,concat")
    assert flags.categories == {"pointwise", "broadcast", "reduce", "concat"}
    flags = parse_autofuse_flags(" --autofuse_disable_pass=broadcast ; --max_fusion_size=8;"
                                 "--recomputation_threshold=0;")
    assert flags.categories == {"pointwise"} and flags.max_fusion_size == 8 and flags.recomputation_threshold == 0
    assert parse_autofuse_flags("--autofuse_enable_pass=elementwise,Reduce").enable_pass == ("pointwise", "reduce")


def test_switched_off_master_flag_fuses_nothing():
    flags = parse_autofuse_flags("--enable_autofuse=false;--autofuse_enable_pass=reduce")
    assert not flags.fuses_anything and flags.categories == frozenset()
    assert not parse_autofuse_flags("--max_fusion_size=0").fuses_anything


@pytest.mark.parametrize("text", [
    "--enable_autofuse=false",
    "--enable_autofuse=true;--autofuse_enable_pass=reduce,concat;--autofuse_disable_pass=broadcast;"
    "--max_fusion_size=16;--recomputation_threshold=3",
])
def test_produced_string_round_trips_and_always_states_enable_autofuse(text):
    flags = parse_autofuse_flags(text)
    produced = flags.to_string()
    assert produced.startswith("--enable_autofuse=")
    assert parse_autofuse_flags(produced) == flags
    assert produced == text


@pytest.mark.parametrize(("text", "quoted", "problem"), [
    ("--enable_autofuse=true;autofuse_enable_pass=reduce", "autofuse_enable_pass=reduce", "expected --key=value"),
    ("--enable_autofuse", "--enable_autofuse", "expected --key=value"),
    ("--enable_autofuse=yes", "--enable_autofuse=yes", "expected true or false"),
    ("--autofuse_enable_pass=reduce,fancy", "--autofuse_enable_pass=reduce,fancy", "unknown category 'fancy'"),
    ("--max_fusion_size=-1", "--max_fusion_size=-1", "expected an integer >= 0"),
    ("--max_fusion_size=big", "--max_fusion_size=big", "expected an integer >= 0"),
    ("--recomputation_threshold=256", "--recomputation_threshold=256", "between 0 and 255"),
    ("--fuse_everything=true", "--fuse_everything=true", "unknown flag --fuse_everything"),
    ("--max_fusion_size=4;--max_fusion_size=8", "--max_fusion_size=8", "given twice"),
])
def test_malformed_string_is_an_error_quoting_the_bad_item(text, quoted, problem):
    with pytest.raises(FuseLensError) as error:
        parse_autofuse_flags(text)
    assert f"bad item {quoted!r}" in str(error.value) and problem in str(error.value)


def test_a_category_both_enabled_and_disabled_is_an_error():
    with pytest.raises(FuseLensError, match=r"reduce is both enabled .* and disabled"):
        parse_autofuse_flags("--autofuse_enable_pass=reduce;--autofuse_disable_pass=reduce")


def test_near_miss_hint_says_how_to_switch_a_category_on():
    assert AutofuseFlags().how_to_enable("reduce") == "enable it with --autofuse_enable_pass=reduce"
    flags = parse_autofuse_flags("--autofuse_disable_pass=broadcast")
    assert flags.how_to_enable("broadcast") == "remove broadcast from --autofuse_disable_pass"


def test_pass_options_take_a_string_or_parsed_flags():
    parsed = parse_autofuse_flags("--autofuse_enable_pass=reduce")
    assert as_autofuse_flags(parsed) is parsed
    assert as_autofuse_flags("--autofuse_enable_pass=reduce") == parsed
    assert as_autofuse_flags(None) == AutofuseFlags()
    with pytest.raises(FuseLensError, match="autofuse_flags"):
        as_autofuse_flags(3)  # type: ignore[arg-type]
