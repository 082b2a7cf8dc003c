"""The pass catalog and the pipeline that runs enabled passes in toolchain order.

One table (each pass class's metadata) drives the CLI, the GUI pass panel and the docs.
Order follows the toolchain: scope fusion (TF parser) -> AMCT -> AutoFuse.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.errors import Cancelled, FuseLensError
from core.graph import Graph
from core.provenance import Provenance
from passes.base import FusionPass, PassResult

FAMILIES = ("scope", "amct", "autofuse")
FAMILY_TITLES = {"scope": "Scope fusion (TF parser)", "amct": "AMCT pre-quantization", "autofuse": "AutoFuse"}
_PASS_PACKAGES = ("passes.scope", "passes.amct", "passes.autofuse")
_REGISTRY: dict[str, type[FusionPass]] = {}


def register(cls: type[FusionPass]) -> type[FusionPass]:
    """Class decorator: add a pass to the catalog (a later class with the same id replaces it)."""
    if cls.family not in FAMILIES:
        raise ValueError(f"{cls.__name__}: unknown family {cls.family!r}")
    _REGISTRY[cls.id] = cls
    return cls


def unregister(pass_id: str) -> None:
    """Remove a pass added at run time (user scope rules that are no longer loaded)."""
    _REGISTRY.pop(pass_id, None)


def catalog() -> list[type[FusionPass]]:
    """Every registered pass, in toolchain order."""
    for package in _PASS_PACKAGES:
        try:
            importlib.import_module(package)
        except ModuleNotFoundError as e:
            if e.name != package:
                raise
    return sorted(_REGISTRY.values(), key=lambda c: (FAMILIES.index(c.family), c.order, c.id))


def get_pass(pass_id: str) -> type[FusionPass]:
    known = {c.id: c for c in catalog()}
    if pass_id not in known:
        raise FuseLensError(f"unknown pass {pass_id!r}; known passes: {', '.join(known)}")
    return known[pass_id]


def default_pass_ids() -> list[str]:
    return [c.id for c in catalog() if c.general or c.default_enabled]


def resolve_pass_ids(enable: Iterable[str] = (), disable: Iterable[str] = (),
                     base: Iterable[str] | None = None) -> list[str]:
    """The enabled pass ids, in toolchain order: `base` (default: the defaults) + enable - disable.

    General passes are always on: disabling one is an error that says so.
    """
    enabled = set(default_pass_ids() if base is None else base)
    for pass_id in enable:
        enabled.add(get_pass(pass_id).id)
    for pass_id in disable:
        cls = get_pass(pass_id)
        if cls.general:
            raise FuseLensError(f"{pass_id} is a general pass: it is always on and cannot be switched off")
        enabled.discard(pass_id)
    enabled.update(c.id for c in catalog() if c.general)
    return [c.id for c in catalog() if c.id in enabled]


@dataclass
class PipelineResult:
    original: Graph
    fused: Graph
    results: list[PassResult] = field(default_factory=list)
    provenance: Provenance | None = None
    seconds: float = 0.0

    def result(self, pass_id: str) -> PassResult | None:
        return next((r for r in self.results if r.pass_id == pass_id), None)


def run_pipeline(
    graph: Graph,
    pass_ids: Iterable[str] | None = None,
    options: Mapping[str, Any] | None = None,
    *,
    progress: Callable[[str, int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> PipelineResult:
    """Apply the enabled passes in toolchain order; the input graph is not modified.

    `options` go to every pass (e.g. AutoFuse flags, user scope rules). `progress(pass_id, i, n)`
    is called before each pass; `cancelled()` is checked between passes.
    """
    start = time.perf_counter()
    ids = resolve_pass_ids(base=pass_ids) if pass_ids is not None else resolve_pass_ids()
    provenance = Provenance(tuple(graph.nodes))
    pipeline = PipelineResult(graph, graph, provenance=provenance)
    current = graph
    for i, pass_id in enumerate(ids):
        if cancelled and cancelled():
            raise Cancelled()
        if progress:
            progress(pass_id, i, len(ids))
        current, result = get_pass(pass_id)(options).apply(current)
        for rewrite in result.rewrites:
            provenance.record(rewrite)
        pipeline.results.append(result)
    pipeline.fused = current
    pipeline.seconds = time.perf_counter() - start
    return pipeline
