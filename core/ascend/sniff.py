"""What a file is, from its content: the one place FuseLens decides a file's kind, for every format it reads.

Users rename files and tools disagree on names (torch_npu writes `op_statistic.csv`, msprof
`op_statistic_0_1_20260101.csv`), so a file's name is never looked at: each reader module says
whether a file's first 64 KiB are its kind (`recognises(head)`), and KINDS asks them in order. A
file none recognises gets one line saying what it looked like and what was expected.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from fuselens.core.ascend import om_json, toolchain_log
from fuselens.core.ascend.ge import dump, fusion_result
from fuselens.core.errors import FuseLensError
from fuselens.core.formats import switch_file
from fuselens.core.measure import result
from fuselens.core.measure.msprof import (
    READERS,
    fusion_op,
    kernel_details,
    op_statistic,
    op_summary,
    task_time,
    timeline,
)
from fuselens.core.measure.profile_csv import header_of, read_head


@dataclass(frozen=True)
class Kind:
    """A kind of file: its name, what it is in words, how to tell it, and the command that reads it."""

    name: str
    title: str
    recognises: Callable[[bytes], bool]
    command: str


# In the order asked; no two recognise the same head.
KINDS: tuple[Kind, ...] = (
    Kind("run_file", "a FuseLens run file", result.recognises, "import-profile"),
    Kind(op_summary.KIND, "an msprof op_summary", op_summary.recognises, "import-profile"),
    Kind(kernel_details.KIND, "a torch_npu kernel_details", kernel_details.recognises, "import-profile"),
    Kind(op_statistic.KIND, "an op_statistic (time per op type)", op_statistic.recognises, "import-profile"),
    Kind(task_time.KIND, "an msprof task_time", task_time.recognises, "import-profile"),
    Kind(fusion_op.KIND, "an msprof fusion_op (fused op -> original ops)", fusion_op.recognises, "import-profile"),
    Kind(timeline.KIND, "a profiling timeline (msprof_*.json / trace_view.json)", timeline.recognises,
         "import-profile"),
    Kind("fusion_result", "a fusion_result.json", fusion_result.recognises, "ledger"),
    Kind("ge_dump", "a GE graph dump", dump.recognises, "inspect"),
    Kind("om_json", "an OM model as JSON (atc --mode=1)", om_json.recognises, "import-log"),
    Kind("switch_file", "a fusion switch file", switch_file.recognises, "fuse --switch-file"),
    Kind("toolchain_log", "a toolchain log (plog / host log)", toolchain_log.recognises, "import-log"),
)
BY_NAME = {kind.name: kind for kind in KINDS}
PROFILES = frozenset(reader.KIND for reader in READERS)
_JSONISH = re.compile(rb'\A[\[{]\s*(?:[\[{"\]}\d-]|true|false|null|\Z)')
PROFILE_COLUMNS = "op_summary, op_statistic, task_time, kernel_details or fusion_op columns"


def kind_of(head: bytes) -> str | None:
    """The kind whose reader recognises these first bytes of a file, None when none does."""
    return next((kind.name for kind in KINDS if kind.recognises(head)), None)


def sniff(path: str | os.PathLike[str]) -> str | None:
    """The kind of a file by its content (None when FuseLens reads no such file); unreadable is an error."""
    return kind_of(read_head(path))


def require(path: str | os.PathLike[str], accepted: Collection[str], wanted: str) -> str:
    """The kind of `path` when it is one of `accepted`; else a one-line FuseLensError saying what the file is
    (and which command reads it) or what it looked like, and `wanted`, what was expected."""
    head = read_head(path)
    found = kind_of(head)
    if found in accepted:
        return found  # type: ignore[return-value]
    if found is not None:
        kind = BY_NAME[found]
        raise FuseLensError(f"{path}: {kind.title}, not {wanted} (`fuselens {kind.command}` reads it)")
    if _csv_header(head) is not None:
        raise FuseLensError(f"{path}: {describe(head)}: not a profile FuseLens reads (expected {PROFILE_COLUMNS})")
    raise FuseLensError(f"{path}: {describe(head)}: not {wanted}")


def describe(head: bytes) -> str:
    """What a file that no reader recognises looks like, in a few words."""
    text = head.removeprefix(b"\xef\xbb\xbf").strip()
    if not text:
        return "an empty file"
    if b"\x00" in head or _undecodable(head):
        return "binary data (not text)"
    header = _csv_header(head)
    if header is not None:
        more = f" … ({len(header)} columns)" if len(header) > 8 else ""
        return f"a CSV with columns {', '.join(_short(name) for name in header[:8])}{more}"
    if _JSONISH.match(text):
        return _describe_json(text, truncated=len(head) >= 65536)
    first = text.decode("utf-8", "replace").splitlines()[0]
    return f"a text file starting {_short(first, 60)!r}"


def _csv_header(head: bytes) -> tuple[str, ...] | None:
    """The header of a head that reads as a CSV (not JSON, which a comma-split first line may also be)."""
    if head.removeprefix(b"\xef\xbb\xbf").lstrip()[:1] in (b"{", b"["):
        return None
    return header_of(head)


def _describe_json(text: bytes, truncated: bool) -> str:
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        what = "a JSON object" if text[:1] == b"{" else "a JSON list"
        if truncated:
            return f"{what} whose first 64 KiB name nothing FuseLens reads"
        return f"{what} that is not valid JSON"
    if isinstance(data, dict):
        keys = ", ".join(_short(str(k)) for k in list(data)[:6]) + (" …" if len(data) > 6 else "")
        return f"a JSON object with keys {keys}" if data else "an empty JSON object"
    if isinstance(data, list):
        objects = [item for item in data if isinstance(item, dict)]
        if not data:
            return "an empty JSON list"
        if len(objects) == len(data):
            keys = sorted({str(k) for item in objects for k in item})
            shown = ", ".join(_short(k) for k in keys[:6]) + (" …" if len(keys) > 6 else "")
            return f"a JSON list of {len(data)} objects with keys {shown}" if keys else \
                f"a JSON list of {len(data)} empty objects"
        return f"a JSON list of {len(data)} items, not all objects"
    return f"a JSON {type(data).__name__} value"


def _undecodable(head: bytes) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start < len(head) - 3  # a character cut by the 64 KiB head is no sign of binary data
    return False


def _short(text: str, width: int = 32) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 1] + "…"


def profile_or_run(path: str | os.PathLike[str]) -> str:
    """The kind of a file `import-profile` and the window's import take: a profile or a FuseLens run file."""
    return require(Path(path), PROFILES | {"run_file"}, "a FuseLens run file or a profile")
