"""The README's pass table is the catalog's: regenerate it with `make readme` when this fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuselens.core.errors import FuseLensError
from fuselens.passes.pass_table import catalog_markdown, with_pass_table
from fuselens.passes.registry import catalog

README = Path(__file__).resolve().parents[2] / "docs" / "reference" / "passes.md"


def test_readme_pass_table_matches_the_catalog():
    text = README.read_text(encoding="utf-8")
    assert with_pass_table(text) == text, "the README's pass table is stale: run `make readme`"


def test_the_table_has_every_pass_once_and_needs_its_markers():
    table = catalog_markdown()
    assert all(table.count(f"| `{c.id}` |") == 1 for c in catalog())
    with pytest.raises(FuseLensError, match="markers"):
        with_pass_table("# no table here\n")
