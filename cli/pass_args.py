"""Pass selection flags shared by `fuse` and `run` (and what they turn into)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any


@dataclass
class PassSelection:
    pass_ids: list[str]
    options: dict[str, Any] = field(default_factory=dict)


def split_ids(values: list[str] | None) -> list[str]:
    return [item.strip() for value in values or [] for item in value.split(",") if item.strip()]


def add_pass_selection_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("pass selection")
    group.add_argument("--enable", action="append", metavar="IDS",
                       help="comma-separated pass ids to switch on (on top of the defaults)")
    group.add_argument("--disable", action="append", metavar="IDS",
                       help="comma-separated pass ids to switch off")
    group.add_argument("--autofuse-flags", metavar="STR",
                       help='AutoFuse switches in AUTOFUSE_FLAGS syntax; write it with = since it starts with --: '
                            '--autofuse-flags="--autofuse_enable_pass=reduce,concat"')
    group.add_argument("--enable-scope-passes", action="append", metavar="NAMES",
                       help="the toolchain's enable_scope_fusion_passes: comma-separated scope pass names to switch on")
    group.add_argument("--scope-rules", metavar="FILE", help="a YAML or JSON file of user scope fusion rules")


def selection_from_args(args: argparse.Namespace) -> PassSelection:
    from passes.autofuse.flags import parse_autofuse_flags
    from passes.registry import resolve_pass_ids
    from passes.scope.switches import select_scope_passes

    flags = getattr(args, "autofuse_flags", None)
    options = {"autofuse_flags": parse_autofuse_flags(flags)} if flags is not None else {}
    scope_ids = select_scope_passes(args.enable_scope_passes, args.scope_rules)
    return PassSelection(resolve_pass_ids(split_ids(args.enable) + scope_ids, split_ids(args.disable)), options)
