"""The `fuselens` command line. Each subcommand lives in its own module listed in COMMANDS.

A FuseLensError prints as one line on stderr and exits 2; never a traceback for bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import os
import sys
from collections.abc import Sequence

from fuselens.cli.common import flag_string_options, join_flag_values
from fuselens.core.errors import FuseLensError
from fuselens.core.tfimport import import_tensorflow

# Commands that never need TensorFlow for a GraphDef; every other command imports it up front, quietly.
# `fuse` needs it only for a SavedModel or Keras file, a graph without `_output_shapes` or an op missing from
# resources/op_outputs.json, and then imports it itself (quietly, through core.tfimport).
LIGHT_COMMANDS = {"inspect", "samples", "export-sample", "passes", "fuse", "import-profile", "stages", "diff",
                  "ledger", "import-log", "hosts", "runs", "audit"}
# Modules with `register(subparsers)` and the command words each registers; each parser sets
# `func(args) -> int`. A command's parser is built from its own module only: importing every module
# cost each command ~5 MB and their imports (tests/cli/test_pass_args.py holds the words to the modules).
COMMANDS: dict[str, tuple[str, ...]] = {
    "fuselens.cli.inspect_cmd": ("inspect", "samples", "export-sample"),
    "fuselens.cli.fuse_cmd": ("passes", "fuse"),
    "fuselens.cli.lesson_cmd": ("lesson",),
    "fuselens.cli.run_cmd": ("run", "import-profile", "export-npu-script"),
    "fuselens.cli.npu_cmd": ("stages", "diff", "ledger"),
    "fuselens.cli.log_cmd": ("import-log",),
    "fuselens.cli.hosts_cmd": ("hosts", "runs"),
    "fuselens.cli.debug_cmd": ("bisect", "diff-config"),
    "fuselens.cli.py_pass_cmd": ("py-pass",),
    "fuselens.cli.audit_cmd": ("audit",),
}


@functools.cache
def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of `command` alone (the other words are not known to it);
    built once per process and command."""
    parser = argparse.ArgumentParser(
        prog="fuselens",
        description="Inspect, fuse and run TensorFlow models with Ascend CANN-style fusion passes.",
        epilog="With no COMMAND, or as `fuselens gui [MODEL]`, it opens the FuseLens window.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module, words in COMMANDS.items():
        if command is None or command in words:
            importlib.import_module(module).register(sub)
    return parser


def command_names() -> list[str]:
    """The subcommand words, so `main.py` can tell a command from a model path (no module imported)."""
    return [word for words in COMMANDS.values() for word in words]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line as argparse reads it once flag-string values are joined to their options."""
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(words[0] if words and words[0] in command_names() else None)
    return parser.parse_args(join_flag_values(words, flag_string_options(parser)))


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command and return its exit code: 2 with one line for anything the user got wrong."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    args = parse_args(argv)
    if not getattr(args, "func", None):
        build_parser().print_help()
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
    except BrokenPipeError:  # `fuselens passes --json | head`: the reader left; say nothing more
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
