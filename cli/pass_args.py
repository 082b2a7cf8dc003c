"""The pass-selection options of `fuse`, `run`, `ledger`, `import-profile` and `export-npu-script`.

Only the options live here: `passes.config.PassConfig.from_args` turns them into the one
configuration the pipeline, the runner and the NPU bundle take, as the window's pass panel does.
"""

from __future__ import annotations

import argparse


def flag_string(text: str) -> str:
    """The argparse `type` of an option whose value is a flag string that itself starts with `--`
    (`--autofuse-flags "--enable_autofuse=true"`): argparse would read that value as an option,
    so `main` joins such an option with the word after it (`join_flag_values` in cli/common.py)."""
    return text


def add_pass_selection_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("pass selection")
    group.add_argument("--enable", action="append", metavar="IDS",
                       help="comma-separated pass ids to switch on (on top of the defaults)")
    group.add_argument("--disable", action="append", metavar="IDS",
                       help="comma-separated pass ids to switch off")
    group.add_argument("--enable-scope-passes", action="append", metavar="NAMES",
                       help="the toolchain's enable_scope_fusion_passes: comma-separated scope pass names to switch on")
    group.add_argument("--scope-rules", action="append", metavar="FILE",
                       help="a YAML or JSON file of user scope fusion rules (repeatable)")
    group.add_argument("--py-pass", action="append", metavar="PATH",
                       help="a GE Python pass file (ge.passes) or a directory of them, loaded as GE loads "
                            "ASCEND_GE_PY_PASS_PATH (repeatable; ASCEND_GE_PY_PASS_PATH itself is read too)")
    group.add_argument("--autofuse-flags", type=flag_string, metavar="STR",
                       help="AutoFuse switches in AUTOFUSE_FLAGS syntax, e.g. "
                            '--autofuse-flags "--enable_autofuse=true;--autofuse_enable_pass=reduce"')
    group.add_argument("--switch-file", metavar="F",
                       help="a fusion switch file: JSON {\"Switch\": {\"GraphFusion\": {\"ALL\": \"off\", ...}}} "
                            "or PassName:on|off lines")
    group.add_argument("--skip-match", action="append", metavar="ID",
                       help="keep one match (PassId:anchor) out of fusion while its pass stays on (repeatable)")
    group.add_argument("--skip-file", metavar="F", help="match ids to skip, one PassId:anchor per line")
    group.add_argument("--strict", action="store_true",
                       help="fail (exit 1) when a pass or a match failed; without it the failure is reported "
                            "and its input graph goes on unchanged")
