"""`python main.py [MODEL]` (or `fuselens gui [MODEL]`) opens the window; `python main.py COMMAND ...` is the CLI.

The window is started from here rather than from a CLI command, so that neither cli/ nor core/
imports the GUI (the layers of docs/architecture.md, checked by import-linter).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

GUI_USAGE = "usage: fuselens [gui] [MODEL]   (MODEL: a model file or directory, or a sample name)"


def main(argv: Sequence[str] | None = None) -> int:
    from fuselens.cli import command_names
    from fuselens.cli import main as cli_main

    args = list(sys.argv[1:] if argv is None else argv)
    if args and (args[0] in command_names() or args[0].startswith("-")):
        return cli_main(args)
    model = args[1:] if args[:1] == ["gui"] else args
    if len(model) > 1 or (model and model[0].startswith("-")):
        print(GUI_USAGE, file=sys.stderr)
        return 0 if model[0] in ("-h", "--help") else 2
    from fuselens.gui.app import run_gui  # Qt is imported only when the window is wanted

    return run_gui(model[0] if model else None)


if __name__ == "__main__":
    sys.exit(main())
