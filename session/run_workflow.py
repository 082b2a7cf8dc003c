"""One run of the original and the fused graph, as both front ends make it: the request, the
layerwise plan (when asked for), the child-process run and its result.

`fuselens run` and the window's "Compile and run" differ only in where the settings come from
(options or the run panel's fields), how progress shows and who cancels; the steps between are here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fuselens.core.errors import Cancelled, FuseLensError
from fuselens.core.graph import Graph
from fuselens.passes.pipeline import PipelineResult

if TYPE_CHECKING:  # the runner and the layerwise plan are imported by a run, not by the window's start
    from fuselens.core.runtime import Progress, RunHandle, RunRequest, RunResult
    from fuselens.session.layerwise import Fuse, LayerwiseReport


@dataclass
class RunSettings:
    """What the user chose for a run (the CLI's options, the run panel's fields); defaults are the CLI's."""

    backend: str = "cpu"
    steps: int = 100
    warmup: int = 10
    input_shapes: Mapping[str, Sequence[int]] = field(default_factory=dict)
    inputs: str | None = None  # .npz with one array per placeholder (default: seeded random)
    seed: int = 0
    timeout: float | None = 600.0
    trace: bool = True
    grappler: bool = True


@dataclass
class RunOutcome:
    """A finished run and, when it was layerwise, its per-match report."""

    result: RunResult
    layerwise: LayerwiseReport | None = None


def run_request(original: Graph, pipeline: PipelineResult, model: str, settings: RunSettings) -> RunRequest:
    """The request of `original` vs `pipeline.fused`; provenance pairs the outputs a fusion renamed."""
    from fuselens.core.runtime import RunRequest

    return RunRequest(
        original=original, fused=pipeline.fused, model=model, config=pipeline.config, backend=settings.backend,
        steps=settings.steps, warmup=settings.warmup, input_shapes=settings.input_shapes, inputs=settings.inputs,
        seed=settings.seed, timeout=settings.timeout, trace=settings.trace, grappler=settings.grappler,
        original_to_final=pipeline.provenance.original_to_final() if pipeline.provenance else None)


def run_both(request: RunRequest, pipeline: PipelineResult, *, layerwise: Fuse | None = None,
             on_progress: Callable[[Progress], None] | None = None, on_stage: Callable[[str], None] | None = None,
             on_started: Callable[[RunHandle], None] | None = None,
             cancelled: Callable[[], bool] = lambda: False) -> RunOutcome:
    """Plan the layerwise stages when `layerwise` (the fusion to re-run up to each pass) is given, run both
    graphs in a child process and wait; `cancelled()` or Ctrl-C stops the child and raises Cancelled /
    KeyboardInterrupt."""
    from fuselens.core.runtime import start_run
    from fuselens.session.layerwise import build_report, plan_layers

    plan = None
    if layerwise is not None:
        if on_stage:
            on_stage("layerwise: fusing up to each pass")
        plan = plan_layers(pipeline, layerwise, cancelled=cancelled)
        if cancelled():
            raise Cancelled()
        request.layers = plan.probes()
    handle = start_run(request, on_progress)
    if on_started:
        on_started(handle)
    try:
        result = wait_cancellable(handle, cancelled)
    except KeyboardInterrupt:
        handle.cancel()
        with contextlib.suppress(FuseLensError):  # "run cancelled", once the child is gone
            handle.result()
        raise
    return RunOutcome(result, build_report(plan, handle.layers) if plan is not None else None)


def wait_cancellable(handle: RunHandle, cancelled: Callable[[], bool]) -> RunResult:
    """The run's result; `cancelled()` turning true kills the child, and the run ends as Cancelled."""
    while True:
        if cancelled():
            handle.cancel()
        try:
            return handle.result(timeout=0.1)
        except TimeoutError:
            continue
        except FuseLensError:
            if cancelled():
                raise Cancelled() from None
            raise
