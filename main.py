"""`python main.py [MODEL]` opens the GUI; `python main.py <subcommand> ...` is the CLI."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from core.cli import command_names
    from core.cli import main as cli_main

    args = list(sys.argv[1:] if argv is None else argv)
    if args and (args[0] in command_names() or args[0].startswith("-")):
        return cli_main(args)
    model = args[1:] if args[:1] == ["gui"] else args
    if "gui" in command_names():
        return cli_main(["gui", *model])
    print("fuselens: the GUI is not built yet; printing the inspect summary instead", file=sys.stderr)
    return cli_main(["inspect", *(model or ["demo"])])


if __name__ == "__main__":
    sys.exit(main())
