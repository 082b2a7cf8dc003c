"""`import ge` inside a user's pass file, and nowhere else: FuseLens's `ge` (passes/ge_python/api/ge) is
made importable under that name only while FuseLens loads or runs pass files (`ge_importable()`), in
the process that runs them. Outside that scope `import ge` finds what it always finds: a real CANN
installation if there is one (`real_ge()` says where), else nothing. FuseLens never installs a
top-level `ge`.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from fuselens.passes.ge_python.api.missing import unsupported

API_PACKAGE = "fuselens.passes.ge_python.api.ge"
API_NAME = "FuseLens's ge (fuselens.passes.ge_python.api.ge)"


def _is_ge(name: str) -> bool:
    return name == "ge" or name.startswith("ge.")


class _GeAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `ge` and `ge.x.y` as FuseLens's modules of the same path (the same module objects, so a
    class imported from ge.passes is the class the engine knows); a `ge` module FuseLens lacks is
    reported by name (UnsupportedGeApi)."""

    def find_spec(self, fullname: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        if not _is_ge(fullname):
            return None
        real = API_PACKAGE + fullname[2:]
        try:
            found = importlib.util.find_spec(real)
        except ModuleNotFoundError:
            found = None
        if found is None:
            unsupported(fullname)
        module = importlib.import_module(real)
        spec = importlib.machinery.ModuleSpec(fullname, self, is_package=hasattr(module, "__path__"))
        spec.loader_state = module
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return spec.loader_state

    def exec_module(self, module: ModuleType) -> None:
        """The module is FuseLens's, already imported."""


_ALIAS = _GeAlias()
_depth = 0
_hidden: dict[str, ModuleType] = {}


@contextlib.contextmanager
def ge_importable() -> Iterator[None]:
    """Within: `import ge...` gives FuseLens's `ge` (a real `ge` already imported is set aside and put
    back after). Re-entrant."""
    global _depth
    if _depth == 0:
        _hidden.update({name: module for name, module in sys.modules.items() if _is_ge(name)})
        for name in _hidden:
            del sys.modules[name]
        sys.meta_path.insert(0, _ALIAS)
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            sys.meta_path.remove(_ALIAS)
            for name in [n for n in sys.modules if _is_ge(n)]:
                del sys.modules[name]
            sys.modules.update(_hidden)
            _hidden.clear()


def real_ge() -> str | None:
    """Where a real `ge` package would be imported from in this process (None: there is none)."""
    if _depth:
        return None  # asked from inside the scope: the question is about the outside
    spec = importlib.machinery.PathFinder.find_spec("ge")
    if spec is None:
        return None
    location = spec.origin if spec.origin not in (None, "namespace") else \
        next(iter(spec.submodule_search_locations or []), "")
    return str(Path(location).parent if str(location).endswith("__init__.py") else location)
