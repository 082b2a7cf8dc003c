"""The pass catalog: register a pass, find it by id, list every pass in toolchain order.

One table (each pass class's metadata) drives the CLI, the GUI pass panel and the docs.
Order follows the toolchain: scope fusion (TF parser) -> AMCT -> AutoFuse. A built-in pass is a
module of its family's package (passes/scope/, passes/amct/, passes/autofuse/) whose class is
`@register`ed; every module of those packages is imported when the catalog is first read, so a new
pass module needs no list to join. User scope rules and GE Python pass files are not registered here:
they belong to the `PassConfig` that loads them (passes/ge_python/ has no built-in pass).
"""

from __future__ import annotations

import functools
import importlib
import logging
import pkgutil
import sys
from collections.abc import Iterable

from fuselens.core.errors import FuseLensError
from fuselens.passes.base import FusionPass

FAMILIES = ("scope", "amct", "ge_python", "autofuse")
FAMILY_TITLES = {"scope": "Scope fusion (TF parser)", "amct": "AMCT pre-quantization",
                 "ge_python": "GE Python passes (ge.passes)", "autofuse": "AutoFuse"}
_REGISTRY: dict[str, type[FusionPass]] = {}


def register(cls: type[FusionPass]) -> type[FusionPass]:
    """Class decorator: add a built-in pass to the catalog."""
    if cls.family not in FAMILIES:
        raise ValueError(f"{cls.__name__}: unknown family {cls.family!r}")
    _REGISTRY[cls.id] = cls
    return cls


def mirror_catalog(classes: Iterable[type[FusionPass]]) -> None:
    """Make exactly these the registered passes: a helper process mirrors its window's catalog
    (plugins and test passes included, and none left over from an earlier request)."""
    catalog()  # the built-in packages register on import; import them before replacing
    _REGISTRY.clear()
    for cls in classes:
        register(cls)


def pass_order(cls: type[FusionPass]) -> tuple[float, int, str]:
    """Toolchain order: family, then the order inside the family. A GE Python pass has the position of
    its stage instead (`pipeline_position`: AfterOriginGraphOptimize runs after AutoFuse)."""
    return getattr(cls, "pipeline_position", FAMILIES.index(cls.family)), cls.order, cls.id


@functools.cache
def _import_builtin_passes() -> None:
    """Import every module of the family packages (passes/<family>/), once: each pass module registers its pass."""
    for family in FAMILIES:
        package = importlib.import_module(f"{__package__}.{family}")
        for module in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
            importlib.import_module(module.name)


def catalog() -> list[type[FusionPass]]:
    """Every built-in pass, in toolchain order."""
    _import_builtin_passes()
    return sorted(_REGISTRY.values(), key=pass_order)


def get_pass(pass_id: str) -> type[FusionPass]:
    """A built-in pass by id or earlier id (a configuration's user rules: `PassConfig.get_pass`)."""
    found = find_pass(catalog(), pass_id)
    if found is None:
        raise FuseLensError(f"unknown pass {pass_id!r}; known passes: {', '.join(c.id for c in catalog())}")
    return found


class _StderrNotice(logging.Handler):
    """One bare line on the stderr of the moment (pytest's capture, a redirected CLI), whoever set up logging."""

    def emit(self, record: logging.LogRecord) -> None:
        print(record.getMessage(), file=sys.stderr)


_NOTICE = logging.getLogger("fuselens.notice")
if not _NOTICE.handlers:
    _NOTICE.addHandler(_StderrNotice())
    _NOTICE.propagate = False
_noticed: set[str] = set()


def find_pass(passes: Iterable[type[FusionPass]], pass_id: str) -> type[FusionPass] | None:
    """The pass with this id, else the one that had it as an earlier id (`FusionPass.aliases`): saved
    configurations and switch files keep working, and the first use of an old id in a process says so
    in one line on stderr (the `fuselens.notice` logger)."""
    passes = list(passes)
    found = next((c for c in passes if c.id == pass_id), None)
    if found is not None:
        return found
    found = next((c for c in passes if pass_id in c.aliases), None)
    if found is not None and pass_id not in _noticed:
        _noticed.add(pass_id)
        _NOTICE.warning(f"fuselens: notice: pass {pass_id} is now called {found.id} (the toolchain's registered "
                        f"name); the old id still works")
    return found


def catalog_rows(passes: Iterable[type[FusionPass]] | None = None) -> list[dict[str, object]]:
    """The catalog as rows (the CLI's `passes --json`, the docs' pass table)."""
    return [{"id": c.id, "family": c.family, "title": c.title, "general": c.general,
             "default_enabled": c.general or c.default_enabled, "order": c.order, "description": c.description,
             "aliases": list(c.aliases), "toolchain": c.switch.describe()}
            for c in (catalog() if passes is None else passes)]


def default_pass_ids() -> list[str]:
    return [c.id for c in catalog() if c.general or c.default_enabled]
