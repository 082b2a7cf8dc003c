"""The session's jobs that use TensorFlow, run by the window's TensorFlow helper in workers: loading a
model, and fusion then shape inference on both graphs, those two one at a time in ONE worker slot so
they never overlap. TensorFlow never runs in the window's own process."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from PySide6.QtWidgets import QStatusBar

from fuselens.core.formats.loaders import LoadedModel
from fuselens.gui.workers import WorkerPool, collection_paused
from fuselens.passes.pipeline import PipelineResult
from fuselens.session import FusionJob, Session
from fuselens.session.pass_files import PassFileRun, cancelled_run
from fuselens.session.tensorflow_helper import TensorFlowHelper

TF_SLOT = "tf"  # the one worker slot for work that uses TensorFlow


def adopt_static_shapes(pipeline: PipelineResult) -> None:
    """In the fusion's worker: the provenance composed and indexed, and a bare .pb's fused graph's shapes, which the
    passes derived without TensorFlow (core.graph.shapes), taken as its shapes where TensorFlow's inference would
    know no more: its edge labels then need no TensorFlow helper (its import, the graphs pickled across). The
    original graph's are taken in the shape job (`ModelJobs._fused`): the after pane waits for none of it."""
    pipeline.provenance.touched_from()
    pipeline.fused.adopt_static_shapes()


class ModelJobs:
    """Loads and fuses; `on_shapes()` once a fusion's graphs have their shapes, `on_error(title, text)` when a
    job failed."""

    def __init__(self, session: Session, workers: WorkerPool, tensorflow: TensorFlowHelper, status: QStatusBar,
                 on_shapes: Callable[[], None], on_error: Callable[[str, str], None]):
        self.session, self.workers, self.tensorflow, self.status = session, workers, tensorflow, status
        self.on_shapes, self.on_error = on_shapes, on_error

    def load(self, spec: str, on_loaded: Callable[[LoadedModel], None]) -> None:
        def load(progress: Callable[[str], None], cancelled: Callable[[], bool]) -> LoadedModel:
            model = self.tensorflow.load(spec, progress, cancelled)
            # Walked here rather than on the GUI thread, where the first layout asks: every node's attrs
            # (45 ms on the 20k graph, beside the layout worker: most of the longest stall while opening).
            _ = model.graph.records_shapes
            return model

        self.workers.start("load", f"loading {spec}", load, on_finished=on_loaded, on_error=self._load_failed,
                           on_cancelled=self.session.load_failed)

    def _load_failed(self, text: str) -> None:
        self.session.load_failed()
        self.on_error("Cannot open model", text)

    def fuse(self, job: FusionJob) -> None:
        if job.pass_files:
            self._run_pass_files(job)
            return

        def fuse(progress: Callable[[str], None], cancelled: Callable[[], bool]) -> PipelineResult:
            # No cyclic collection meanwhile (the passes make no reference cycles, see
            # tests/passes/test_pipeline_cycles.py), and the results, which live until the next fusion, are then
            # out of the collector's view, as a pane's shown graph is (see Pane._show). On the 100k graph the
            # fusion set off 13 full collections of 130-220 ms, each holding the interpreter lock (a GUI-thread
            # stall); collections over the 20k graph's ~5k records as the match list built its rows took up to
            # 120 ms.
            with collection_paused():
                # Its matches are explained once the fused graph is drawn (MainWindow._explain): 15-20 % of a
                # fusion.
                pipeline = self.tensorflow.fuse(job, progress, cancelled, explain="later")
                # Here rather than on the GUI thread: the provenance (37 ms on the 20k graph), the shapes (a
                # pass over every node).
                adopt_static_shapes(pipeline)
            return pipeline

        self.workers.start(TF_SLOT, "fusion", fuse, on_finished=lambda pipeline: self._fused(job, pipeline),
                           on_error=lambda text: self._failed(job, "Fusion failed", text),
                           on_cancelled=lambda: self.session.job_failed(job),
                           on_progress=self.status.showMessage)

    def _run_pass_files(self, job: FusionJob) -> None:
        """The fusion with the user's pass files, in the TensorFlow helper: its errors (in their code, a run that
        never ended) go to the session's pass run, not to a dialog: the window keeps its last good result and
        the user goes on editing."""
        def run(progress: Callable[[str], None], cancelled: Callable[[], bool]) -> PassFileRun:
            outcome = self.tensorflow.run_pass_files(job, progress, cancelled)
            if outcome.pipeline is not None:
                adopt_static_shapes(outcome.pipeline)  # as `fuse` above
            return outcome

        def failed(text: str) -> None:
            last = self.session.pass_run.passes if self.session.pass_run is not None else []
            if self.session.pass_files_ran(job, cancelled_run(text, last)):
                self.session.job_failed(job)

        self.workers.start(TF_SLOT, "your passes", run, on_finished=lambda outcome: self._ran(job, outcome),
                           on_error=failed, on_cancelled=lambda: self.session.job_failed(job),
                           on_progress=self.status.showMessage)

    def _ran(self, job: FusionJob, run: PassFileRun) -> None:
        if not self.session.pass_files_ran(job, run):
            return
        if run.pipeline is None:
            self.session.job_failed(job)  # nothing ran (a file that does not load): the last result stays
        else:
            self._fused(job, run.pipeline)

    def _fused(self, job: FusionJob, pipeline: PipelineResult) -> None:
        replaced = self.session.pipeline
        if not self.session.fusion_done(job, pipeline):
            return  # superseded by a newer configuration or model
        self.workers.releaser.release(replaced)
        shapes = partial(self._infer_shapes, pipeline)
        self.workers.start(TF_SLOT, "shape inference", shapes, on_finished=lambda _: self._shaped(job),
                           on_error=lambda text: self._failed(job, "Shape inference failed", text),
                           on_cancelled=lambda: self.session.job_failed(job),
                           on_progress=self.status.showMessage)

    def _infer_shapes(self, pipeline: PipelineResult, progress: Callable[[str], None],
                      cancelled: Callable[[], bool]) -> None:
        """The original graph's shapes where the table derives all TensorFlow would (Graph.adopt_static_shapes; the
        fused graph's were taken in the fusion's worker), then the rest of both graphs' from the TensorFlow helper."""
        pipeline.original.adopt_static_shapes()
        self.tensorflow.infer_shapes([pipeline.original, pipeline.fused], progress, cancelled)

    def _shaped(self, job: FusionJob) -> None:
        if self.session.shapes_done(job):
            self.on_shapes()

    def _failed(self, job: FusionJob, title: str, text: str) -> None:
        if self.session.job_failed(job):
            self.on_error(title, text)
