"""Atomic output: a crash mid-write never leaves a half file, and the user's model is never overwritten."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fuselens.core.errors import FuseLensError


def read_text(path: Path, what: str, *, encoding: str = "utf-8", as_directory: str | None = None) -> str:
    """The text of a file a reader parses, or one FuseLensError line: a directory, unreadable, or not UTF-8.
    `what` is what the file should have been ("a fusion_result.json"); `as_directory` words the directory case
    when it should say more."""
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise FuseLensError(f"{path}: is a directory, not {as_directory or what}") from None
    except OSError as e:
        raise FuseLensError(f"{path}: cannot read ({e.strerror})") from None
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        raise FuseLensError(f"{path}: not UTF-8 text, so not {what}") from None


def check_output_path(path: str | os.PathLike[str], *, protect: str | None = None) -> Path:
    """Refuse an output that is a directory, the input model `protect`, or a file inside it (a SavedModel)."""
    target = Path(path)
    if target.is_dir():
        raise FuseLensError(f"{target}: is a directory; give a file name")
    if protect is not None and Path(protect).exists():
        guarded = Path(protect).resolve()
        resolved = target.resolve()
        if resolved == guarded or guarded in resolved.parents:
            raise FuseLensError(f"{target}: refusing to overwrite the input model; choose another output path")
    return target


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes | Iterable[bytes], *,
                       protect: str | None = None) -> Path:
    """Write via a temp file + rename. `protect` names an input that must not be overwritten. `data` may
    come in pieces (a big graph serialized a node at a time is never held whole)."""
    target = check_output_path(path, protect=protect)
    tmp: str | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.writelines([data] if isinstance(data, bytes) else data)
        os.replace(tmp, target)
        tmp = None
    except OSError as e:
        raise FuseLensError(f"{target}: cannot write ({e.strerror})") from None
    finally:
        if tmp is not None:  # the write failed (or the pieces raised): leave no temp file behind
            Path(tmp).unlink(missing_ok=True)
    return target


def write_json_atomic(path: str | os.PathLike[str], data: Any, *, protect: str | None = None) -> Path:
    return write_bytes_atomic(path, json.dumps(data, indent=2, default=str).encode() + b"\n", protect=protect)
