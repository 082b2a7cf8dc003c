"""Opening a file at a line in the user's own editor ($VISUAL, else $EDITOR), as a separate process.

`+LINE FILE` is what vi, vim, nvim, emacs, nano, micro, kak and joe take; the editors that read
`FILE:LINE` instead get that (VS Code and its builds with `-g`, Sublime Text, Zed). A terminal editor
started from the window has no terminal: the user's $EDITOR is what they set it to be, and a
"vim" one opens nothing visible (say `EDITOR="xterm -e vim"`, or a GUI editor) — the docs say so.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Mapping

from fuselens.core.errors import FuseLensError

GOTO_FLAG_EDITORS = frozenset({"code", "code-insiders", "codium", "cursor"})  # `-g FILE:LINE`
COLON_EDITORS = frozenset({"subl", "sublime_text", "zed", "gedit"})  # `FILE:LINE`


def editor_command(path: str, line: int, environ: Mapping[str, str] | None = None) -> list[str]:
    """The command that opens `path` at `line` in the user's editor; FuseLensError when none is set."""
    env = os.environ if environ is None else environ
    text = (env.get("VISUAL") or env.get("EDITOR") or "").strip()
    if not text:
        raise FuseLensError(f"set $EDITOR (or $VISUAL) to open {path}:{line} in your editor, e.g. "
                            "EDITOR=\"code -w\" or EDITOR=\"xterm -e vim\"")
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise FuseLensError(f"$EDITOR is not a command line ({e}): {text!r}") from None
    name = os.path.basename(words[0])
    if name in GOTO_FLAG_EDITORS:
        return [*words, "-g", f"{path}:{line}"]
    if name in COLON_EDITORS:
        return [*words, f"{path}:{line}"]
    return [*words, f"+{line}", path]


def open_in_editor(path: str, line: int, environ: Mapping[str, str] | None = None) -> subprocess.Popen:
    """Start the editor on `path` at `line` (not waited for); FuseLensError when it cannot start."""
    command = editor_command(path, line, environ)
    try:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError as e:
        raise FuseLensError(f"cannot start the editor {command[0]!r} ($EDITOR): {e.strerror or e}") from None
