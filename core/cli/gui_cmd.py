"""`gui [MODEL]`: open the FuseLens window (the same as `python main.py [MODEL]`)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gui", help="open the FuseLens window, optionally on a model or sample")
    p.add_argument("model", nargs="?", help="a model file or directory, or a sample name")
    p.set_defaults(func=run_gui_command)


def run_gui_command(args: argparse.Namespace) -> int:
    from gui.app import run_gui  # Qt is imported only when the window is wanted

    return run_gui(args.model)
