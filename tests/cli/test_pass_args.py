"""The pass-selection options reach one PassConfig; flag-string values may follow their option as a word."""

from __future__ import annotations

import pytest

from fuselens.cli import build_parser, flag_string_options, join_flag_values, parse_args
from fuselens.passes.config import PassConfig

COMMANDS_WITH_PASSES = ["fuse", "run", "import-profile", "export-npu-script", "audit"]


def test_flag_string_options_are_found_in_every_subcommand():
    assert flag_string_options(build_parser()) == {"--autofuse-flags", "--a", "--b"}  # diff-config's selections
    for command in COMMANDS_WITH_PASSES:
        extra = ["-o", "x.py"] if command == "export-npu-script" else []
        args = parse_args([command, "m", "--autofuse-flags", "--max_fusion_size=8", *extra])
        assert args.autofuse_flags == "--max_fusion_size=8"


@pytest.mark.parametrize(("argv", "joined"), [
    (["fuse", "m", "--autofuse-flags", "--a=1;--b=2"], ["fuse", "m", "--autofuse-flags=--a=1;--b=2"]),
    (["fuse", "m", "--autofuse-flags=--a=1"], ["fuse", "m", "--autofuse-flags=--a=1"]),
    (["fuse", "--", "--autofuse-flags", "--a"], ["fuse", "--", "--autofuse-flags", "--a"]),
    (["fuse", "m", "--autofuse-flags"], ["fuse", "m", "--autofuse-flags"]),  # argparse says a value is missing
])
def test_join_flag_values(argv, joined):
    assert join_flag_values(argv, {"--autofuse-flags"}) == joined


def test_both_spellings_give_the_same_configuration():
    spaced = parse_args(["fuse", "m", "--autofuse-flags", "--enable_autofuse=true;--autofuse_enable_pass=reduce"])
    joined = parse_args(["fuse", "m", "--autofuse-flags=--enable_autofuse=true;--autofuse_enable_pass=reduce"])
    assert spaced == joined
    assert PassConfig.from_args(spaced) == PassConfig.from_args(joined) != PassConfig.default()


def test_every_option_reaches_the_configuration(tmp_path):
    rules, more, skips, switches = (tmp_path / n for n in ("a.yaml", "b.yaml", "skip.txt", "sw.cfg"))
    rule = "rules:\n  - {{name: {}, op_type: X, suffix: x, census: {{Exp: 1}}, outputs: [{{node: exp}}]}}\n"
    rules.write_text(rule.format("ScopeMinePass"))
    more.write_text(rule.format("ScopeOursPass"))
    skips.write_text("# comment\nConvBatchnormFusionPass:bn1\n")
    switches.write_text("OpBiasAddMulFusionPass:off\n")
    config = PassConfig.from_args(parse_args([
        "fuse", "m", "--scope-rules", str(rules), "--scope-rules", str(more), "--enable-scope-passes", "ScopeMinePass",
        "--switch-file", str(switches), "--disable", "AutoFusePass", "--skip-match", "AutoFusePass:x",
        "--skip-file", str(skips)]))
    assert config.scope_rule_files == (str(rules), str(more))
    assert {"ScopeMinePass", "ScopeOursPass"} <= {c.id for c in config.catalog()}
    assert "ScopeMinePass" in config.pass_ids() and "ScopeOursPass" not in config.pass_ids()
    assert not {"OpBiasAddMulFusionPass", "AutoFusePass"} & set(config.pass_ids())
    assert config.skipped_matches == {"AutoFusePass:x", "ConvBatchnormFusionPass:bn1"}


def test_the_command_table_names_the_words_each_module_registers():
    import argparse
    import importlib

    from fuselens.cli import COMMANDS

    for module, words in COMMANDS.items():
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(module).register(sub)
        assert tuple(sub.choices) == words, module
    assert set(build_parser()._subparsers._group_actions[0].choices) == {w for ws in COMMANDS.values() for w in ws}


def test_a_command_imports_its_own_module_and_not_the_others():
    """`fuselens fuse` paid for every command's imports (~5 MB of its peak memory on the 20k graph)."""
    import json
    import subprocess
    import sys

    code = ("import json, sys; from fuselens.cli import parse_args; args = parse_args(['fuse', 'demo']); "
            "print(json.dumps([args.command, sorted(m for m in sys.modules if m.startswith('fuselens.cli.'))]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    command, modules = json.loads(out)
    assert command == "fuse" and [m for m in modules if m.endswith("_cmd")] == ["fuselens.cli.fuse_cmd"]
