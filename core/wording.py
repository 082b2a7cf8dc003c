"""User text inside an error message, kept on one line.

A FuseLensError is one line (the CLI prints it as one, the window as one dialog line), but names
and keys come from the user's files: a JSON key, a YAML field or a node name may hold a newline.
Such text is shown quoted and escaped, as Python's repr does; ordinary names are shown as they are.
"""

from __future__ import annotations


def shown(text: object) -> str:
    """`text` as written when every character is printable, else its escaped repr ('two\\nlines')."""
    value = str(text)
    return value if value.isprintable() else repr(value)
