"""Qt calls a widget's overrides (paint, events, a model's data) from C++, and an exception escaping
one of them can take the whole process down under PySide (a KeyError in a box's paint did). Every
override in gui/ is wrapped by `safe_override`: a bug in one shows as a line in the window's status bar
and a log entry with its traceback, the override returns a harmless default, and the window lives
on. tests/gui/test_guard.py fails on an override that is not guarded."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

log = logging.getLogger("fuselens.gui")
Method = TypeVar("Method", bound=Callable[..., Any])
_reporters: list[Callable[[str], None]] = []  # the windows' status bars, newest last
_logged: set[tuple[str, str, str]] = set()  # (class, method, exception type) already logged in full


def add_reporter(report: Callable[[str], None]) -> Callable[[], None]:
    """Show guarded failures with `report` (a window's status bar); returns the call that stops it."""
    _reporters.append(report)
    return lambda: _reporters.remove(report) if report in _reporters else None


def safe_override(default: Any = None) -> Callable[[Method], Method]:
    """An override that never lets an exception reach Qt: it logs it, reports it and returns `default`."""
    def wrap(method: Method) -> Method:
        @functools.wraps(method)
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return method(self, *args, **kwargs)
            except Exception as e:
                where = f"{type(self).__name__}.{method.__name__}"
                key = (type(self).__name__, method.__name__, type(e).__name__)
                if key not in _logged:  # a paint that fails fails on every frame: its traceback once
                    _logged.add(key)
                    log.exception("%s failed", where)
                for report in _reporters[-1:]:
                    report(f"Internal error in {where}: {type(e).__name__}: {e} (the window goes on; see the log)")
                return default
        return call  # type: ignore[return-value]
    return wrap
