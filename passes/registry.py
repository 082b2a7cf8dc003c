"""The built-in pass catalog and the pipeline that runs a configuration's passes in toolchain order.

One table (each pass class's metadata) drives the CLI, the GUI pass panel and the docs.
Order follows the toolchain: scope fusion (TF parser) -> AMCT -> AutoFuse. User scope rules
are not registered here: they belong to the `PassConfig` that loads them.
"""

from __future__ import annotations

import importlib
import logging
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.errors import Cancelled, FuseLensError
from core.graph import Graph
from core.graph.provenance import Provenance
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


def mirror_catalog(classes: Iterable[type[FusionPass]]) -> None:
    """Make exactly these the registered passes: a helper process mirrors its window's catalog
    (plugins and test passes included, and none left over from an earlier request)."""
    catalog()  # the built-in packages register on import; import them before replacing
    _REGISTRY.clear()
    for cls in classes:
        register(cls)


def pass_order(cls: type[FusionPass]) -> tuple[int, int, str]:
    """Toolchain order: family, then the order inside the family."""
    return FAMILIES.index(cls.family), cls.order, cls.id


def catalog() -> list[type[FusionPass]]:
    """Every built-in pass, in toolchain order."""
    for package in _PASS_PACKAGES:
        importlib.import_module(package)
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
    """The catalog as rows (the CLI's `passes --json`, the README's table)."""
    from passes.toolchain import switch_of

    return [{"id": c.id, "family": c.family, "title": c.title, "general": c.general,
             "default_enabled": c.general or c.default_enabled, "order": c.order, "description": c.description,
             "aliases": list(c.aliases), "toolchain": switch_of(c).describe()}
            for c in (catalog() if passes is None else passes)]


def catalog_markdown() -> str:
    """The README's pass table, generated from the catalog (`fuselens passes --markdown`)."""
    lines = ["| pass | family | default | toolchain switch | what it does |", "|---|---|---|---|---|"]
    for row in catalog_rows():
        state = "general (always on)" if row["general"] else ("on" if row["default_enabled"] else "off")
        description = " ".join(str(row["description"]).split()).replace("|", "\\|")
        if row["aliases"]:
            description += " Earlier id: " + ", ".join(f"`{a}`" for a in row["aliases"]) + " (still accepted)."
        lines.append(f"| `{row['id']}` | {FAMILY_TITLES[str(row['family'])]} | {state} | {row['toolchain']} "
                     f"| {description} |")
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


class _ComposedProvenance:
    """`PipelineResult.provenance`: the one given, else composed from the original graph's nodes and
    the results' rewrites when first read. A per-node origin table costs ~6 MB on a 20k-node graph,
    and `fuse` never reads it (its report and ledger do not need it)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}"

    def __get__(self, pipeline: PipelineResult | None, owner: type | None = None) -> Provenance | None:
        if pipeline is None:
            return None  # the dataclass field's default
        provenance = pipeline.__dict__.get(self.slot)
        if provenance is None:
            if not all(result.detailed for result in pipeline.results):
                raise ValueError("this pipeline ran with details=False: its rewrites, hence its provenance, are gone")
            provenance = Provenance(tuple(pipeline.original.nodes))
            for result in pipeline.results:
                for rewrite in result.rewrites:
                    provenance.record(rewrite)
            pipeline.__dict__[self.slot] = provenance
        return provenance

    def __set__(self, pipeline: PipelineResult, provenance: Provenance | None) -> None:
        pipeline.__dict__[self.slot] = provenance


@dataclass
class PipelineResult:
    original: Graph
    fused: Graph
    config: PassConfig
    results: list[PassResult] = field(default_factory=list)
    provenance: Provenance | None = _ComposedProvenance()  # type: ignore[assignment]  # composed when first read
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
    families: Iterable[str] = FAMILIES,
    explain: bool = True,
    details: bool = True,
) -> PipelineResult:
    """Apply a configuration's passes in toolchain order; the input graph is not modified.

    `config` is a PassConfig, or pass ids to switch on (a shorthand for `PassConfig.from_ids`), or
    None for the defaults. `progress(pass_id, i, n)` is called before each pass; `cancelled()` is
    checked between passes. `families` keeps only those passes (the NPU bundle's fused graph is the
    AMCT passes' alone: the toolchain does scope fusion and AutoFuse itself). `explain` sets each
    match's explanation (passes/explain.py) while the graph each pass saw is still at hand.
    `details=False` keeps of each pass's result only what is counted and printed (PassResult.drop_details),
    dropped as soon as the pass has run: for a caller that prints a summary (`fuse` without a report).
    """
    from passes.config import PassConfig

    if config is None:
        config = PassConfig.default()
    elif not isinstance(config, PassConfig):
        config = PassConfig.from_ids(config)
    start = time.perf_counter()
    kept = set(families)
    ids = [pass_id for pass_id in config.pass_ids() if config.get_pass(pass_id).family in kept]
    pipeline = PipelineResult(graph, graph, config)
    current = graph
    options = config.options()
    for i, pass_id in enumerate(ids):
        if cancelled and cancelled():
            raise Cancelled()
        if progress:
            progress(pass_id, i, len(ids))
        try:
            seen = current
            current, result = config.get_pass(pass_id)(options).apply(current)
            if explain:
                from passes.explain import attach_explanations

                attach_explanations(seen, current, result, config.get_pass(pass_id))
        except Cancelled:
            raise
        except Exception as e:  # one pass that fails fails alone; its input graph goes on
            result = PassResult(pass_id, errors=[f"{pass_id} failed: {describe_error(e)}; the pass was skipped"])
        if not details:
            result.drop_details()
        pipeline.results.append(result)
    pipeline.fused = current
    pipeline.seconds = time.perf_counter() - start
    return pipeline
