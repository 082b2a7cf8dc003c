"""What a record (or all of them) says of a prediction, and the records' names: a module of its own, so the
window's table reads the statuses without the evidence readers (GE dumps, msprof) that the verdicts need."""

from __future__ import annotations

from enum import Enum


class Finding(str, Enum):
    """What a record (or all of them) says of a prediction."""

    FOUND = "found"
    NOT_FOUND = "not_found"
    UNKNOWN = "unknown"


FOUND, NOT_FOUND, UNKNOWN = Finding.FOUND, Finding.NOT_FOUND, Finding.UNKNOWN

# Each kind of record as the window and the CLI name it (a Verdict's or Unpredicted's `source`, first word).
SOURCE_LABELS = {"profile": "profile", "fusion_op": "fusion_op.csv", "dump": "dump", "om_json": "OM JSON",
                 "log": "log", "fusion_result": "fusion_result.json", "amct": "AMCT"}


def source_label(source: str) -> str:
    """"dump PreRunAfterBuild" -> "dump"; "om_json" -> "OM JSON"."""
    word = source.split(" ", 1)[0]
    return SOURCE_LABELS.get(word, word)
