"""Rewrite the generated pass table in docs/reference/passes.md from the catalog (`make readme`)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fuselens.passes.pass_table import with_pass_table  # noqa: E402

PASS_TABLE_PAGE = ROOT / "docs" / "reference" / "passes.md"

if __name__ == "__main__":
    PASS_TABLE_PAGE.write_text(with_pass_table(PASS_TABLE_PAGE.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"{PASS_TABLE_PAGE}: pass table updated")
