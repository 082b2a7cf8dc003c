"""The built-in pass catalog and the pipeline that runs a configuration's passes in toolchain order.

One table (each pass class's metadata) drives the CLI, the GUI pass panel and the docs.
Order follows the toolchain: scope fusion (TF parser) -> AMCT -> AutoFuse. User scope rules
are not registered here: they belong to the `PassConfig` that loads them.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.errors import Cancelled, FuseLensError
from core.graph import Graph
from core.provenance import Provenance
from passes.base import FusionPass, PassResult, describe_error

if TYPE_CHECKING:
    from passes.config import PassConfig

FAMILIES = ("scope", "amct", "autofuse")
FAMILY_TITLES = {"scope": "Scope fusion (TF parser)", "amct": "AMCT pre-quantization", "autofuse": "AutoFuse"}
_PASS_PACKAGES = ("passes.scope", "passes.amct", "passes.autofuse")
_REGISTRY: dict[str, type[FusionPass]] = {}


def register(cls: type[FusionPass]) -> type[FusionPass]:
    """Class decorator: add a built-in pass to the catalog."""
    if cls.family not in FAMILIES:
        raise ValueError(f"{cls.__name__}: unknown family {cls.family!r}")
    _REGISTRY[cls.id] = cls
    return cls


def pass_order(cls: type[FusionPass]) -> tuple[int, int, str]:
    """Toolchain order: family, then the order inside the family."""
    return FAMILIES.index(cls.family), cls.order, cls.id


def catalog() -> list[type[FusionPass]]:
    """Every built-in pass, in toolchain order."""
    for package in _PASS_PACKAGES:
        importlib.import_module(package)
    return sorted(_REGISTRY.values(), key=pass_order)


def get_pass(pass_id: str) -> type[FusionPass]:
    """A built-in pass by id (a configuration's user rules: `PassConfig.get_pass`)."""
    known = {c.id: c for c in catalog()}
    if pass_id not in known:
        raise FuseLensError(f"unknown pass {pass_id!r}; known passes: {', '.join(known)}")
    return known[pass_id]


def catalog_rows(passes: Iterable[type[FusionPass]] | None = None) -> list[dict[str, object]]:
    """The catalog as rows (the CLI's `passes --json`, the README's table)."""
    return [{"id": c.id, "family": c.family, "title": c.title, "general": c.general,
             "default_enabled": c.general or c.default_enabled, "order": c.order, "description": c.description}
            for c in (catalog() if passes is None else passes)]


def catalog_markdown() -> str:
    """The README's pass table, generated from the catalog (`fuselens passes --markdown`)."""
    lines = ["| pass | family | default | what it does |", "|---|---|---|---|"]
    for row in catalog_rows():
        state = "general (always on)" if row["general"] else ("on" if row["default_enabled"] else "off")
        description = " ".join(str(row["description"]).split()).replace("|", "\\|")
        lines.append(f"| `{row['id']}` | {FAMILY_TITLES[str(row['family'])]} | {state} | {description} |")
    return "\n".join(lines) + "\n"


PASS_TABLE_BEGIN, PASS_TABLE_END = "<!-- pass-table:begin -->", "<!-- pass-table:end -->"


def with_pass_table(markdown: str) -> str:
    """`markdown` with the text between the pass-table markers replaced by `catalog_markdown()`."""
    head, begin, rest = markdown.partition(PASS_TABLE_BEGIN)
    _old, end, tail = rest.partition(PASS_TABLE_END)
    if not begin or not end:
        raise FuseLensError(f"no {PASS_TABLE_BEGIN} ... {PASS_TABLE_END} markers to fill")
    return f"{head}{begin}\n{catalog_markdown()}{end}{tail}"


def default_pass_ids() -> list[str]:
    return [c.id for c in catalog() if c.general or c.default_enabled]


@dataclass
class PipelineResult:
    original: Graph
    fused: Graph
    config: PassConfig
    results: list[PassResult] = field(default_factory=list)
    provenance: Provenance | None = None
    seconds: float = 0.0

    def result(self, pass_id: str) -> PassResult | None:
        return next((r for r in self.results if r.pass_id == pass_id), None)

    @property
    def errors(self) -> list[str]:
        """Every pass's and match's failure, in pipeline order (empty when all went well)."""
        return [error for result in self.results for error in result.errors]


def run_pipeline(
    graph: Graph,
    config: PassConfig | Iterable[str] | None = None,
    *,
    progress: Callable[[str, int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> PipelineResult:
    """Apply a configuration's passes in toolchain order; the input graph is not modified.

    `config` is a PassConfig, or pass ids to switch on (a shorthand for `PassConfig.from_ids`), or
    None for the defaults. `progress(pass_id, i, n)` is called before each pass; `cancelled()` is
    checked between passes.
    """
    from passes.config import PassConfig

    if config is None:
        config = PassConfig.default()
    elif not isinstance(config, PassConfig):
        config = PassConfig.from_ids(config)
    start = time.perf_counter()
    ids = config.pass_ids()
    provenance = Provenance(tuple(graph.nodes))
    pipeline = PipelineResult(graph, graph, config, provenance=provenance)
    current = graph
    options = config.options()
    for i, pass_id in enumerate(ids):
        if cancelled and cancelled():
            raise Cancelled()
        if progress:
            progress(pass_id, i, len(ids))
        try:
            current, result = config.get_pass(pass_id)(options).apply(current)
        except Cancelled:
            raise
        except Exception as e:  # one pass that fails fails alone; its input graph goes on
            result = PassResult(pass_id, errors=[f"{pass_id} failed: {describe_error(e)}; the pass was skipped"])
        for rewrite in result.rewrites:
            provenance.record(rewrite)
        pipeline.results.append(result)
    pipeline.fused = current
    pipeline.seconds = time.perf_counter() - start
    return pipeline
