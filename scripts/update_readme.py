"""Rewrite the README's generated pass table from the catalog (`make readme`)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from passes.registry import with_pass_table  # noqa: E402

README = ROOT / "README.md"

if __name__ == "__main__":
    README.write_text(with_pass_table(README.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"{README}: pass table updated")
