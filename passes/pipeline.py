"""The pipeline: a configuration's passes applied in toolchain order, each match explained, and what
each pass did (`PipelineResult`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from fuselens.core.errors import Cancelled
from fuselens.core.graph import Graph
from fuselens.core.graph.provenance import Provenance
from fuselens.passes import explain as explanations
from fuselens.passes.base import PassResult, describe_error
from fuselens.passes.config import PassConfig
from fuselens.passes.registry import FAMILIES


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


_DONE = object()
_EXPLAINING = threading.Lock()  # the window's slices and an export's worker explaining at once


@dataclass
class PipelineResult:
    original: Graph
    fused: Graph
    config: PassConfig
    results: list[PassResult] = field(default_factory=list)
    provenance: Provenance | None = _ComposedProvenance()  # type: ignore[assignment]  # composed when first read
    seconds: float = 0.0
    # with explain="later": per pass run, its matches' explanations still to make (passes/explain.explain_each,
    # holding the graph the pass saw and the one it produced until then)
    unexplained: list[Iterator[None]] = field(default_factory=list, repr=False)

    @property
    def explained(self) -> bool:
        return not self.unexplained

    def explanation_steps(self) -> Iterator[None]:
        """A match explained a step, for a pipeline run with `explain="later"` (none otherwise): the window runs
        them in slices once the fused graph is drawn. Safe beside `explain_matches` in another thread."""
        while True:
            with _EXPLAINING:
                if not self.unexplained:
                    return
                if next(self.unexplained[0], _DONE) is _DONE:
                    del self.unexplained[0]
                    continue
            yield

    def explain_matches(self) -> None:
        """Every match's explanation now (an export, a pickle); nothing to do when they are made already."""
        for _ in self.explanation_steps():
            pass

    def __getstate__(self) -> dict[str, Any]:
        self.explain_matches()  # a pickled pipeline carries its explanations, not the graphs they were made from
        return dict(self.__dict__)

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
    explain: bool | Literal["later"] = True,
    details: bool = True,
) -> PipelineResult:
    """Apply a configuration's passes in toolchain order; the input graph is not modified.

    `config` is a PassConfig, or pass ids to switch on (a shorthand for `PassConfig.from_ids`), or
    None for the defaults. `progress(pass_id, i, n)` is called before each pass; `cancelled()` is
    checked between passes. `families` keeps only those passes (the NPU bundle's fused graph is the
    AMCT passes' alone: the toolchain does scope fusion and AutoFuse itself). `explain` sets each
    match's explanation (passes/explain.py) while the graph each pass saw is still at hand; "later" keeps
    those graphs instead, for `PipelineResult.explain_matches()` (the window draws the fused graph first:
    explanations are 15-20 % of a fusion).
    `details=False` keeps of each pass's result only what is counted and printed (PassResult.drop_details),
    dropped as soon as the pass has run: for a caller that prints a summary (`fuse` without a report).
    """
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
            if explain == "later":
                pipeline.unexplained.append(explanations.explain_each(seen, current, result, config.get_pass(pass_id)))
            elif explain:
                explanations.attach_explanations(seen, current, result, config.get_pass(pass_id))
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
