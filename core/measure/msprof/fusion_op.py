"""msprof's fusion_op: the toolchain's own fused op -> original ops map (graph mode), not a timing.

`Device_id, Model Name, Model ID, Fusion Op, Original Ops, Memory Input(KB), Memory Output(KB),
Memory Weight(KB), Memory Workspace(KB), Memory Total(KB)`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from fuselens.core.errors import FuseLensError
from fuselens.core.measure.profile_csv import has_columns, header_of, read_table

KIND = "fusion_op"
REQUIRED = ("Fusion Op", "Original Ops")


@dataclass(frozen=True)
class FusionOpRecord:
    """One row of fusion_op: a fused op the toolchain built and the original ops it replaced."""

    line: int
    model: str
    fusion_op: str
    original_ops: tuple[str, ...]
    memory_total_kb: float | None


def recognises(head: bytes) -> bool:
    """A CSV header with `Fusion Op` and `Original Ops`."""
    return has_columns(header_of(head), *((c,) for c in REQUIRED))


def read_fusion_op(path: str | os.PathLike[str]) -> list[FusionOpRecord]:
    """fusion_op rows; `Original Ops` is `;`-separated (older exports used `,`)."""
    table = read_table(path, required=REQUIRED)
    records = []
    for row in table.rows:
        fused = row.text("Fusion Op")
        if fused is None:
            raise FuseLensError(f"{row.where}: empty 'Fusion Op'")
        originals = tuple(o.strip() for o in (row.text("Original Ops") or "").replace(",", ";").split(";")
                          if o.strip())
        records.append(FusionOpRecord(row.line, row.text("Model Name") or "", fused, originals,
                                      row.number("Memory Total(KB)")))
    return records
