"""`python main.py [MODEL] [--py-pass PATH]...` (or `fuselens gui ...`) opens the window;
`python main.py COMMAND ...` is the CLI.

The window is started from here rather than from a CLI command, so that neither cli/ nor core/
imports the GUI (the layers of docs/architecture.md, checked by import-linter).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

GUI_USAGE = ("usage: fuselens [gui] [MODEL] [--py-pass PATH]...   (MODEL: a model file or directory, or a sample "
             "name; PATH: a ge.passes file or folder, watched: its passes run again on every save)")


def window_args(words: Sequence[str]) -> tuple[list[str], list[str]] | None:
    """The window's words as (models, --py-pass paths), None for a word it does not take."""
    models, passes = [], []
    words = list(words)
    while words:
        word = words.pop(0)
        if word == "--py-pass" and words:
            passes.append(words.pop(0))
        elif word.startswith("--py-pass=") and len(word) > len("--py-pass="):
            passes.append(word.partition("=")[2])
        elif word.startswith("-"):
            return None
        else:
            models.append(word)
    return models, passes


def main(argv: Sequence[str] | None = None) -> int:
    from fuselens.cli import command_names
    from fuselens.cli import main as cli_main

    args = list(sys.argv[1:] if argv is None else argv)
    if args and (args[0] in command_names() or args[0].startswith("-")):
        return cli_main(args)
    words = args[1:] if args[:1] == ["gui"] else args
    parsed = window_args(words)
    if parsed is None or len(parsed[0]) > 1:
        print(GUI_USAGE, file=sys.stderr)
        return 0 if words[0] in ("-h", "--help") else 2
    model, passes = parsed
    from fuselens.gui.app import run_gui  # Qt is imported only when the window is wanted

    return run_gui(model[0] if model else None, passes)


if __name__ == "__main__":
    sys.exit(main())
