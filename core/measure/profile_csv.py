"""The one CSV layer under every profile reader: msprof's and torch_npu's cell quirks handled here.

Quirks seen in real files: a trailing TAB inside quoted timestamps (`"1736413971558972.912\t"`),
shapes triple-quoted (three double quotes each side, of which the csv module leaves one), `N/A` (and
the 4294967295 "invalid" sentinel) for values msprof did not have, quoted cells holding newlines
(call stacks), a row with one cell fewer than the header (a trailing empty metric), a trailing
comma after every row, integers where newer files write decimals, a UTF-8 byte-order mark.
A reader names the columns it needs; what is wrong is a FuseLensError naming the file and line.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuselens.core.errors import FuseLensError

HEAD_BYTES = 65536  # what a content test reads of a file
INVALID = 4294967295
MISSING = ("", "N/A", "NA", "n/a", "-")


def read_head(path: str | os.PathLike[str]) -> bytes:
    """A file's first HEAD_BYTES, what every `recognises` decides from."""
    try:
        with open(path, "rb") as f:
            return f.read(HEAD_BYTES)
    except OSError as e:
        raise FuseLensError(f"{path}: cannot read ({e.strerror})") from None


def _text(head: bytes) -> str | None:
    """A head as text (a multi-byte character cut at the end is dropped), None when it is not UTF-8."""
    try:
        return head.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        if e.start < len(head) - 3:
            return None
        return head[:e.start].decode("utf-8-sig", "ignore")


def header_of(head: bytes) -> tuple[str, ...] | None:
    """The column names of a CSV whose first bytes are `head` (cleaned as `clean` does), None when the
    head is not text or its first line is not a row of at least two names."""
    text = _text(head)
    if text is None or "\x00" in text:
        return None
    first = text.splitlines()[0] if text.strip() else ""
    try:
        row = next(csv.reader([first]), [])
    except csv.Error:
        return None
    names = [clean(c) or "" for c in row]
    while names and not names[-1]:
        names.pop()
    return tuple(names) if len(names) >= 2 and all(names) else None


def has_columns(header: Sequence[str] | None, *groups: Sequence[str]) -> bool:
    """Whether the header holds one column of every group (each group: its accepted spellings)."""
    return header is not None and all(any(name in header for name in group) for group in groups)


def clean(value: str | None) -> str | None:
    """A cell's text without padding, trailing tabs and the extra quotes of a triple-quoted cell; None when missing."""
    text = (value or "").strip().strip("\t").strip()
    while len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1].strip()
    return None if text in MISSING else text


def number(value: str | None, where: str, column: str) -> float | None:
    """A cell as a number (integers and decimals alike); None when missing or msprof's invalid sentinel."""
    text = clean(value)
    if text is None:
        return None
    try:
        found = float(text)
    except ValueError:
        raise FuseLensError(f"{where}: column {column!r} holds {text!r}, not a number") from None
    if found != found or found in (float("inf"), float("-inf")):
        raise FuseLensError(f"{where}: column {column!r} holds {text!r}, not a finite number")
    return None if found == INVALID else found


@dataclass(frozen=True)
class Row:
    """One data row: its first line in the file, "file, line N" for messages, and its cells by column."""

    line: int
    where: str
    cells: dict[str, str]

    def text(self, column: str) -> str | None:
        return clean(self.cells.get(column))

    def number(self, column: str) -> float | None:
        return number(self.cells.get(column), self.where, column)


@dataclass(frozen=True)
class Table:
    """A CSV's cleaned header and its rows (blank rows left out)."""

    path: Path
    header: tuple[str, ...]
    rows: tuple[Row, ...]

    def first(self, *spellings: str) -> str | None:
        """The first of these column spellings the header has."""
        return next((name for name in spellings if name in self.header), None)

    def need(self, *spellings: str) -> str:
        """The first of these spellings the header has; none is a one-line error naming them."""
        found = self.first(*spellings)
        if found is None:
            names = [repr(c) for c in spellings]
            rest = f" (nor {', '.join(names[2:])})" if len(names) > 2 else ""
            raise FuseLensError(f"{self.path}: no {' or '.join(names[:2])} column{rest} in the header")
        return found


def read_table(path: str | os.PathLike[str], aliases: dict[str, str] | None = None,
               required: Sequence[str] = ()) -> Table:
    """A CSV file as a Table, every column renamed through `aliases` (a scheme's names -> the reader's);
    a `required` column missing from the header is a one-line error naming it.

    A row one cell short of the header gets an empty last cell (msprof leaves a trailing metric out);
    empty cells past the header (a trailing comma) are dropped; any other count is an error.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as e:
        raise FuseLensError(f"{path}: cannot read ({e.strerror})") from None
    except UnicodeDecodeError:
        raise FuseLensError(f"{path}: not a text CSV file") from None
    if "\x00" in text:
        raise FuseLensError(f"{path}: not a text CSV file (it holds NUL bytes)")
    reader = csv.reader(io.StringIO(text, newline=""))
    rows = _rows(reader, path)
    try:
        line, header_row = next(rows)
    except StopIteration:
        raise FuseLensError(f"{path}: empty file (no header line)") from None
    header = [clean(c) or "" for c in header_row]
    while header and not header[-1]:
        header.pop()
    header = [(aliases or {}).get(name, name) for name in header]
    if not any(header):
        raise FuseLensError(f"{path}, line {line}: an empty header row")
    table = []
    for line, row in rows:
        where = f"{path}, line {line}"
        while len(row) > len(header) and not row[-1].strip():
            row = row[:-1]
        if len(row) == len(header) - 1:
            row = [*row, ""]
        if len(row) != len(header):
            raise FuseLensError(f"{where}: {len(row)} cells, the header has {len(header)}")
        table.append(Row(line, where, dict(zip(header, row))))
    found = Table(path, tuple(header), tuple(table))
    for column in required:
        found.need(column)
    return found


def _rows(reader: Any, path: Path) -> Iterator[tuple[int, list[str]]]:
    """Non-blank rows with the line each starts on (a quoted cell may span lines)."""
    start = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise FuseLensError(f"{path}, line {reader.line_num}: bad CSV ({e})") from None
        if any(c.strip() for c in row):
            yield start, row
        start = reader.line_num + 1
