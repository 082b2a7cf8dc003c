"""The pass-file watch: every kind of save is seen once the file stands still, a rename-save included, and a
file that is briefly gone is not a change."""

from __future__ import annotations

import os

from fuselens.session.watch import FileWatch, watch_loop


def _save_by_rename(path, text: str) -> None:
    """What vim and many IDEs do: write a new file beside it, rename it over the old one (a new inode)."""
    temporary = path.with_name(path.name + ".swp")
    temporary.write_text(text)
    os.replace(temporary, path)


def test_a_save_is_reported_once_the_file_stands_still(tmp_path):
    path = tmp_path / "my_pass.py"
    path.write_text("a = 1\n")
    watch = FileWatch([str(path)])
    assert watch.changed() == []  # the state it started from is no change
    path.write_text("a = 2  # longer\n")
    assert watch.changed() == []  # just written: one more poll to stand still (the debounce)
    assert watch.changed() == [str(path)]
    assert watch.changed() == []  # reported once


def test_a_save_by_rename_and_a_gap_while_the_file_is_gone(tmp_path):
    path = tmp_path / "my_pass.py"
    path.write_text("a = 1\n")
    watch = FileWatch([str(path)])
    path.unlink()  # between an editor's unlink and its rename
    assert watch.changed() == [] and watch.changed() == []
    _save_by_rename(path, "a = 1\n")  # the same text, a new file: still a save
    watch.changed()
    assert watch.changed() == [str(path)]
    _save_by_rename(path, "a = 3\n")
    watch.changed()
    assert watch.changed() == [str(path)]


def test_watch_loop_calls_back_for_each_save(tmp_path):
    path = tmp_path / "my_pass.py"
    path.write_text("a = 1\n")
    watch, saves, seen = FileWatch([str(path)]), iter(["a = 2\n", None, None, "a = 33\n", None, None]), []

    def sleep(_seconds: float) -> None:
        text = next(saves)
        if text is not None:
            path.write_text(text)

    watch_loop(watch, seen.append, sleep=sleep, rounds=6)
    assert seen == [[str(path)], [str(path)]]
