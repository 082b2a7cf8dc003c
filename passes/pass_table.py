"""The pass table of the docs, generated from the catalog (`fuselens passes --markdown`,
scripts/update_readme.py): a new pass module shows in it with no edit of the table."""

from __future__ import annotations

from fuselens.core.errors import FuseLensError
from fuselens.passes.registry import FAMILY_TITLES, catalog_rows


def catalog_markdown() -> str:
    """The README's pass table, generated from the catalog (`fuselens passes --markdown`)."""
    lines = ["| pass | family | default | toolchain switch | what it does |", "|---|---|---|---|---|"]
    for row in catalog_rows():
        state = "general (always on)" if row["general"] else ("on" if row["default_enabled"] else "off")
        description = " ".join(str(row["description"]).split()).replace("|", "\\|")
        if row["aliases"]:
            description += " Earlier id: " + ", ".join(f"`{a}`" for a in row["aliases"]) + " (still accepted)."
        lines.append(f"| `{row['id']}` | {FAMILY_TITLES[str(row['family'])]} | {state} | {row['toolchain']} "
                     f"| {description} |")
    return "\n".join(lines) + "\n"


PASS_TABLE_BEGIN, PASS_TABLE_END = "<!-- pass-table:begin -->", "<!-- pass-table:end -->"


def with_pass_table(markdown: str) -> str:
    """`markdown` with the text between the pass-table markers replaced by `catalog_markdown()`."""
    head, begin, rest = markdown.partition(PASS_TABLE_BEGIN)
    _old, end, tail = rest.partition(PASS_TABLE_END)
    if not begin or not end:
        raise FuseLensError(f"no {PASS_TABLE_BEGIN} ... {PASS_TABLE_END} markers to fill")
    return f"{head}{begin}\n{catalog_markdown()}{end}{tail}"
