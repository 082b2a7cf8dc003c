"""The `fuselens` command line. Each subcommand lives in its own module listed in COMMANDS.

A FuseLensError prints as one line on stderr and exits 2; never a traceback for bad input.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from core.errors import FuseLensError
from core.tfimport import import_tensorflow

# Commands that never need TensorFlow for a GraphDef; every other command imports it up front, quietly.
LIGHT_COMMANDS = {"inspect", "samples", "export-sample", "passes", "import-profile"}
# Modules with `register(subparsers)`; each parser sets `func(args) -> int`.
COMMANDS = [
    "cli.inspect_cmd",
    "cli.fuse_cmd",
    "cli.run_cmd",
]


@functools.cache
def build_parser() -> argparse.ArgumentParser:
    """The parser, built once per process (main.py asks for the command words, then parses)."""
    parser = argparse.ArgumentParser(
        prog="fuselens",
        description="Inspect, fuse and run TensorFlow models with Ascend CANN-style fusion passes.",
        epilog="With no COMMAND, or as `fuselens gui [MODEL]`, it opens the FuseLens window.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        importlib.import_module(module).register(sub)
    return parser


def command_names() -> list[str]:
    """The subcommand words, so `main.py` can tell a command from a model path."""
    return [name for action in build_parser()._subparsers._group_actions for name in action.choices]


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        if args.command not in LIGHT_COMMANDS:
            import_tensorflow()
        return int(args.func(args) or 0)
    except FuseLensError as e:
        print(f"fuselens: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fuselens: interrupted", file=sys.stderr)
        return 130
