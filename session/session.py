"""Session: what the user has open and where its work stands, with no Qt in it.

The window used to steer load -> draw -> fuse -> shapes -> redraw with booleans and a timer;
here it is one explicit `Stage` and a job number. Every fusion the session hands out is a
`FusionJob`; a result is accepted only for the newest job, so a fusion superseded by a pass
toggle (or by opening another model) is dropped, never raced against the current one. Front
ends listen with `subscribe` and run the jobs wherever they like (the window: one worker slot).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from fuselens.core.errors import FuseLensError
from fuselens.core.formats.io import write_bytes_atomic, write_json_atomic
from fuselens.core.formats.loaders import LoadedModel
from fuselens.core.graph import Graph
from fuselens.core.graph.provenance import Provenance
from fuselens.core.measure.result import RunResult
from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import PipelineResult, run_pipeline
from fuselens.passes.report import build_report
from fuselens.session.pass_files import PassFileRun, PassFiles

if TYPE_CHECKING:
    from fuselens.session.bisect import BisectResult
    from fuselens.session.layerwise import LayerwiseReport

SIDES = ("before", "after")


class Stage(str, Enum):
    EMPTY = "empty"  # no model open
    LOADING = "loading"  # a model is being read (the previous one, if any, stays open until it is)
    DRAWING = "drawing"  # the model is open; its original graph is drawn first, fusion waits for that
    FUSING = "fusing"  # a fusion job is out
    SHAPES = "shapes"  # fused; tensor shapes for the edge labels are being inferred
    READY = "ready"  # nothing pending


@dataclass(frozen=True)
class FusionJob:
    """One fusion to run: this graph with this configuration; `number` tells stale results apart.

    `fuse` is the job's work, in the `(progress, cancelled)` form a worker calls; it may import
    TensorFlow (the window runs it in its TensorFlow helper process).
    """

    number: int
    graph: Graph
    config: PassConfig
    pass_files: PassFiles = field(default_factory=PassFiles)  # the user's ge.passes files (run in the helper)

    def fuse(self, progress: Callable[[str], None], cancelled: Callable[[], bool],
             explain: bool | Literal["later"] = True) -> PipelineResult:
        return run_pipeline(self.graph, self.config, cancelled=cancelled, explain=explain,
                            progress=lambda pass_id, i, n: progress(f"fusing: {pass_id} ({i + 1}/{n})"))


Listener = Callable[[str], None]  # called with what changed: "model", "config", "pipeline", "stage", "run", ...


class Session:
    def __init__(self, config: PassConfig | None = None):
        self.model: LoadedModel | None = None
        self.config = config if config is not None else PassConfig.default()
        self.pipeline: PipelineResult | None = None
        # per pane, the collapsed name scopes; None = automatic (a big graph's overview, or for the
        # after pane the before pane's scopes)
        self.collapsed: dict[str, frozenset[str] | None] = dict.fromkeys(SIDES)
        self.last_run: RunResult | None = None
        self.stage = Stage.EMPTY
        self.comparison: tuple[str, str] | None = None  # (before, after) labels while two given graphs are shown
        self._job: FusionJob | None = None
        self._jobs = 0
        self._resume = Stage.EMPTY  # the stage a failed load returns to
        self._listeners: list[Listener] = []
        self._layerwise: tuple[PipelineResult | None, LayerwiseReport | None] = (None, None)
        self._bisect: tuple[LoadedModel | None, BisectResult | None] = (None, None)
        self.pass_files = PassFiles()  # the user's ge.passes files every fusion loads
        self.pass_run: PassFileRun | None = None  # what the last run of them gave (errors included)

    # ---- observing ---------------------------------------------------------------------------
    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def _emit(self, *what: str) -> None:
        for item in what:
            for listener in list(self._listeners):
                listener(item)

    def _set_stage(self, stage: Stage) -> None:
        if stage is not self.stage:
            self.stage = stage
            self._emit("stage")

    def _advance(self, stage: Stage) -> None:
        """Work for the open model moved on; while another model loads, that is where a failed load returns."""
        if self.stage is Stage.LOADING:
            self._resume = stage
        else:
            self._set_stage(stage)

    def graph(self, side: str) -> Graph | None:
        """The original graph ("before") or the fused one ("after"), when there is one."""
        if side == "before":
            return self.model.graph if self.model else None
        return self.pipeline.fused if self.pipeline else None

    @property
    def busy(self) -> bool:
        return self.stage not in (Stage.EMPTY, Stage.READY)

    # ---- loading -----------------------------------------------------------------------------
    def start_loading(self) -> None:
        if self.stage is not Stage.LOADING:
            self._resume = self.stage
        self._set_stage(Stage.LOADING)

    def load_failed(self) -> None:
        """The open model (if any) stays, as it was, with any work it had under way."""
        self._set_stage(self._resume)

    def set_model(self, model: LoadedModel) -> None:
        """A newly opened model: everything derived from the previous one goes; fusion waits for `drawn()`."""
        self.model = model
        self.pipeline = None
        self.comparison = None
        self.last_run = None
        self.collapsed = dict.fromkeys(SIDES)
        self._job = None  # a fusion still out for the previous model is stale now
        self._set_stage(Stage.DRAWING)
        self._emit("model", "pipeline", "run")

    def first_fusion(self) -> FusionJob | None:
        """The loaded model's first fusion job, once (None before the model is loaded and after): the window asks
        when the original graph is on screen, or at once for a graph small enough to fuse beside its drawing. It
        starts while another model loads too: were that load to fail, the open model would come back to a
        drawing stage whose paint had passed, and wait for a fusion that no one would start (the chaos driver
        found it, seed 1: the window never idle again)."""
        drawing = self.stage is Stage.DRAWING or (self.stage is Stage.LOADING and self._resume is Stage.DRAWING)
        return self._new_job() if drawing else None

    # ---- fusion ------------------------------------------------------------------------------
    def set_config(self, config: PassConfig) -> FusionJob | None:
        """A new configuration; returns the fusion job that brings the after graph up to date
        (None while the model is still loading or being drawn: that fusion starts at `first_fusion()`)."""
        changed = config != self.config or config.rules != self.config.rules
        self.config = config
        if changed:
            self._emit("config")
        return self._job_if_ready()

    def set_pass_files(self, files: PassFiles) -> FusionJob | None:
        """The user's pass files (opened, saved again, a pass switched): like `set_config`, the fusion that
        brings the after graph up to date (the files' new text), or None while there is none to run."""
        self.pass_files = files
        if not files:
            self.pass_run = None  # its passes and errors were the closed files'
        self._emit("pass_files")
        return self._job_if_ready()

    def pass_files_ran(self, job: FusionJob, run: PassFileRun) -> bool:
        """A run of the pass files ended (its pipeline, if any, goes to `fusion_done` next); False when stale."""
        if not self.is_current(job):
            return False
        self.pass_run = run
        self._emit("pass_run")
        return True

    def _job_if_ready(self) -> FusionJob | None:
        """A new fusion job, unless there is no model to fuse, two given graphs are shown, or the model is still
        loading or being drawn (its first fusion starts at `first_fusion()`)."""
        if self.model is None or self.comparison is not None or self.stage in (Stage.LOADING, Stage.DRAWING):
            return None
        return self._new_job()

    def _new_job(self) -> FusionJob:
        assert self.model is not None
        self._jobs += 1
        self._job = FusionJob(self._jobs, self.model.graph, self.config, self.pass_files)
        self._advance(Stage.FUSING)
        return self._job

    def is_current(self, job: FusionJob) -> bool:
        return job is self._job

    def fusion_done(self, job: FusionJob, pipeline: PipelineResult) -> bool:
        """Take a job's result; False (and nothing changes) when a newer job superseded it."""
        if not self.is_current(job):
            return False
        self.pipeline = pipeline
        self._advance(Stage.SHAPES)
        self._emit("pipeline")
        return True

    def shapes_done(self, job: FusionJob) -> bool:
        """Shape inference for a job's graphs finished (or gave up): the session is ready."""
        if not self.is_current(job):
            return False
        self._job = None
        self._advance(Stage.READY)
        self._emit("shapes")
        return True

    def job_failed(self, job: FusionJob) -> bool:
        """A job's fusion or shape inference failed or was cancelled; False when it was stale anyway."""
        if not self.is_current(job):
            return False
        self._job = None
        self._advance(Stage.READY)
        return True

    # ---- comparing two given graphs (e.g. two stages of the toolchain's own dumps) ----------------
    def compare(self, before: LoadedModel, after: Graph, provenance: Provenance, after_label: str) -> None:
        """Show `before` and `after` side by side, mapped by `provenance`, instead of a fusion: no
        fusion job runs until another model is opened (the passes do not apply to a GE graph)."""
        self.model = before
        self.pipeline = PipelineResult(before.graph, after, self.config, provenance=provenance)
        self.comparison = (before.name, after_label)
        self.last_run = None
        self.collapsed = dict.fromkeys(SIDES)
        self._job = None
        self._set_stage(Stage.READY)
        self._emit("model", "pipeline", "run")

    # ---- views and runs ----------------------------------------------------------------------
    def set_collapsed(self, side: str, scopes: frozenset[str]) -> None:
        self.collapsed[side] = frozenset(scopes)
        self._emit("collapsed")

    def set_run(self, result: RunResult | None) -> None:
        self.last_run = result
        self._emit("run")

    @property
    def layerwise(self) -> LayerwiseReport | None:
        """The last layerwise compare, while the pipeline it was made for is the one shown."""
        pipeline, report = self._layerwise
        return report if pipeline is self.pipeline and pipeline is not None else None

    def set_layerwise(self, report: LayerwiseReport | None) -> None:
        self._layerwise = (self.pipeline, report)
        self._emit("layerwise")

    @property
    def bisect(self) -> BisectResult | None:
        """The last bisect, while its model is the one open."""
        model, result = self._bisect
        return result if model is self.model and model is not None else None

    def set_bisect(self, result: BisectResult | None) -> None:
        self._bisect = (self.model, result)
        self._emit("bisect")

    # ---- exports -----------------------------------------------------------------------------
    def _need_pipeline(self) -> PipelineResult:
        if self.model is None or self.pipeline is None:
            raise FuseLensError("nothing fused yet: open a model and let the passes run")
        return self.pipeline

    def export_fused_pb(self, path: str | Path) -> Path:
        """The fused GraphDef, written atomically; never over the model it came from."""
        pipeline = self._need_pipeline()
        protect = self.model.path if Path(self.model.path).exists() else None
        return write_bytes_atomic(path, pipeline.fused.serialized(), protect=protect)

    def export_report(self, path: str | Path) -> Path:
        """The fuse report (matches, near misses, op histograms) as JSON."""
        pipeline = self._need_pipeline()
        pipeline.explain_matches()  # the window explains its matches after drawing them: maybe not yet
        return write_json_atomic(path, build_report(pipeline, model=self.model.name))

    def export_lesson(self, path: str | Path, match_ids: list[str] | None = None) -> Path:
        """The lesson page (session/lesson.py) for this model and configuration: HTML, or Markdown for .md."""
        from fuselens.session.lesson import write_lesson

        pipeline = self._need_pipeline()
        pipeline.explain_matches()  # as export_report
        protect = self.model.path if Path(self.model.path).exists() else None
        return write_lesson(path, pipeline, model=self.model.name, match_ids=match_ids, protect=protect)
