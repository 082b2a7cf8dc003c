"""Watching pass files: which of them were saved since the last look, for the window and `fuse --watch`.

A poller rather than the platform's file notifications: an editor that saves by writing a new file
and renaming it over the old one (vim, many IDEs) ends the watch a notifier holds on the old inode,
while a file's (mtime, size, inode) read every POLL_S sees every kind of save. A save is reported
once the file has stood still for one more poll (the debounce): an editor that writes in several
steps, or truncates and then writes, is reported once, with the file complete. A file that is gone
(between the unlink and the rename of a save, or deleted) is not a change until it is back.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable

POLL_S = 0.15  # the window's timer and `fuse --watch` look this often: a save shows within ~2 polls
Stamp = tuple[int, int, int] | None  # (mtime_ns, size, inode); None: the file is not there


def stamp(path: str) -> Stamp:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size, info.st_ino


class FileWatch:
    """The saved state of some files; `changed()` names those saved since it last named them."""

    def __init__(self, paths: Iterable[str] = ()):
        self._reported: dict[str, Stamp] = {}  # what the last report (or the start) saw
        self._seen: dict[str, Stamp] = {}  # what the last poll saw
        self.watch(paths)

    @property
    def paths(self) -> list[str]:
        return list(self._reported)

    def watch(self, paths: Iterable[str]) -> None:
        """Watch these files too (their present state is the base: no change is reported for it)."""
        for path in paths:
            path = os.path.abspath(path)
            if path not in self._reported:
                self._reported[path] = self._seen[path] = stamp(path)

    def forget(self, path: str) -> None:
        path = os.path.abspath(path)
        self._reported.pop(path, None)
        self._seen.pop(path, None)

    def changed(self) -> list[str]:
        """The files whose state differs from the last report and stood still since the last poll."""
        found = []
        for path, reported in self._reported.items():
            now = stamp(path)
            settled = now == self._seen[path]
            self._seen[path] = now
            if settled and now is not None and now != reported:
                self._reported[path] = now
                found.append(path)
        return found


def watch_loop(watch: FileWatch, on_change: Callable[[list[str]], None], *,
               sleep: Callable[[float], None] = time.sleep, rounds: int | None = None) -> None:
    """Call `on_change(paths)` for every save, until interrupted (or for `rounds` polls: tests)."""
    done = 0
    while rounds is None or done < rounds:
        sleep(POLL_S)
        changed = watch.changed()
        if changed:
            on_change(changed)
        done += 1
