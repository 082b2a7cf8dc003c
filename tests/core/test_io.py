"""Atomic writes: the target is whole or untouched, and no temp file is left behind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fuselens.core.errors import FuseLensError
from fuselens.core.formats.io import write_bytes_atomic


def test_pieces_are_written_whole(tmp_path: Path) -> None:
    target = write_bytes_atomic(tmp_path / "out.pb", iter([b"ab", b"", b"cd"]))
    assert target.read_bytes() == b"abcd"
    assert [p.name for p in tmp_path.iterdir()] == ["out.pb"]


def test_failing_pieces_leave_the_old_file_and_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "out.pb"
    target.write_bytes(b"previous")

    def pieces() -> Iterator[bytes]:
        yield b"half"
        raise ValueError("serialization failed")

    with pytest.raises(ValueError):
        write_bytes_atomic(target, pieces())
    assert target.read_bytes() == b"previous"
    assert [p.name for p in tmp_path.iterdir()] == ["out.pb"]


def test_an_unwritable_folder_is_a_worded_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    with pytest.raises(FuseLensError, match="cannot write"):
        write_bytes_atomic(blocker / "out.pb", b"x")


def test_the_input_model_is_never_overwritten(tmp_path: Path) -> None:
    model = tmp_path / "model.pb"
    model.write_bytes(b"model")
    with pytest.raises(FuseLensError):
        write_bytes_atomic(model, b"fused", protect=str(model))
    assert model.read_bytes() == b"model"
