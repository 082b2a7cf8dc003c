"""What a user's pass asked of `ge` that FuseLens's `ge` does not provide, by name.

Every module of the `ge` tree ends with `__getattr__ = missing_names(__name__)`, and the classes that
stand for GE's own (GraphBuilder, Node, ...) look unknown attributes up the same way: the name is
recorded (`asked()`, read by the loader and `py-pass check`) and the caller gets an `UnsupportedGeApi`
that says what is missing. Never a silent None: a pass that needs an API FuseLens lacks must say so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

_ASKED: dict[str, None] = {}  # in the order asked; cleared per load (`take_asked`)


class UnsupportedGeApi(ImportError):
    """An API of the real `ge` that FuseLens's `ge` does not provide. An ImportError, so a pass that tries
    `from ge.es.math import X` and falls back on `except ImportError` behaves as on a host without it."""

    __module__ = "builtins"  # shown in the user's traceback as `UnsupportedGeApi: ...`, like Python's own errors

    def __init__(self, api: str, hint: str = ""):
        self.api = api
        super().__init__(f"{api} is not provided by FuseLens's ge (it covers the ge.passes subset of "
                         f"docs/guide/write-a-pass.md){'; ' + hint if hint else ''}")


def unsupported(api: str, hint: str = "") -> NoReturn:
    """Record `api` as asked for and raise UnsupportedGeApi."""
    _ASKED[api] = None
    raise UnsupportedGeApi(api, hint)


def missing_names(module: str) -> Callable[[str], object]:
    """A module `__getattr__`: a private or dunder name is a plain AttributeError (Python's own machinery
    probes those), any other name is an API FuseLens does not provide."""

    def __getattr__(name: str) -> object:
        if name.startswith("_"):
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        unsupported(f"{module}.{name}")

    return __getattr__


def missing_attribute(owner: object, name: str) -> NoReturn:
    """The same for an attribute of one of our classes (`GraphBuilder.set_graph_attr_int64`)."""
    cls = owner if isinstance(owner, type) else type(owner)
    if name.startswith("_"):
        raise AttributeError(f"{cls.__name__!r} object has no attribute {name!r}")
    unsupported(f"{cls.__name__}.{name}")


def take_asked() -> list[str]:
    """The APIs asked for since the last call, in order; the record starts again empty."""
    asked = list(_ASKED)
    _ASKED.clear()
    return asked
