"""What a record (or all of them) says of a prediction: a module of its own, so the window's table
reads the statuses without the evidence readers (GE dumps, msprof) that the verdicts need."""

from __future__ import annotations

from enum import Enum


class Finding(str, Enum):
    """What a record (or all of them) says of a prediction."""

    FOUND = "found"
    NOT_FOUND = "not_found"
    UNKNOWN = "unknown"


FOUND, NOT_FOUND, UNKNOWN = Finding.FOUND, Finding.NOT_FOUND, Finding.UNKNOWN
