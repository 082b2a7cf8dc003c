"""The window's TensorFlow work in one long-lived helper process, never in the window's own.

Shape inference of a graph whose shapes protobuf cannot derive (Graph.adopt_static_shapes), SavedModel /
Keras loading, the NPU bundle and the first build of a cached Keras sample import TensorFlow, and so may
fusion (an op missing from resources/op_outputs.json); a TensorFlow abort or segfault there would close
the window with the user's work. Here they run in `python -m fuselens.session.tensorflow_helper FD`,
started in the background once the window's first model is on screen (gui.main_window), or by the first
request that needs it. A fusion
that cannot import TensorFlow (`fusion_needs_tensorflow`: the table describes its ops) runs in the window's
own worker instead, as reading a .pb does: protobuf answers
all it asks, and the helper would only add the graph's and the pipeline's pickling and its own
start-up. Most fusions need no TensorFlow, so the helper imports it only once no request has come for
IDLE_BEFORE_IMPORT_S (or when a request needs it): the first fusion of a model is not queued behind
TensorFlow's ~3 s import. If the helper dies, the call that was waiting gets one worded line, the
window keeps what it shows, and the next call starts a new helper.

Requests go one at a time (a lock) as (number, kind, payload); replies are (number, "progress",
text), (number, "error", text) or a value, and a reply to an older request (a cancelled call) is
ignored. Values travel pickled (graphs as their bytes, see `Graph.__reduce__`). A value goes as
(number, "pieces", n) and then n pickles of one stream
(`_pieces`), unpickled one at a time: pickle's C loop holds the interpreter lock through a whole
pickle (the 20k-node graph's pipeline at once: 100-211 ms in the window's worker thread, a stall of
the GUI thread), and one piece at a time lets the GUI thread in between. The graph a request sent
comes back as a reference to the window's own object, not as a copy.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import io
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from fuselens.core.errors import Cancelled, FuseLensError
from fuselens.core.formats.loaders import LoadedModel, detect_format, load_model
from fuselens.core.formats.samples import SAMPLES, is_built
from fuselens.core.formats.tfshapes import ensure_shapes
from fuselens.core.graph import Graph, opdefs
from fuselens.core.runtime.childproc import ChildProcess, exit_with_parent
from fuselens.passes.pipeline import PipelineResult
from fuselens.passes.registry import catalog, mirror_catalog
from fuselens.session.pass_files import PassFileRun, described_config, run_pass_files
from fuselens.session.session import FusionJob

if TYPE_CHECKING:
    from fuselens.core.ascend.npu_bundle import BundleReport

MODULE = "fuselens.session.tensorflow_helper"
TENSORFLOW_FORMATS = frozenset({"savedmodel", "keras", "h5"})
CANCEL_GRACE_S = 3.0  # a cancelled request may finish this long (its result is dropped) before the helper is killed
IDLE_BEFORE_IMPORT_S = 1.0  # after "warm", TensorFlow is imported once no request came for this long
# Test hook: "SIGNAL@KIND" (e.g. "SIGKILL@fuse") makes the helper kill itself on receiving a KIND request.
FAULT_ENV = "FUSELENS_HELPER_FAULT"
RECORDS_PER_PIECE = 200  # a pass's matches and near misses are unpickled this many at a time (a few ms)
REQUEST_GRAPH = "request graph"  # the persistent id of the graph the request sent

Progress = Callable[[str], None]
IsCancelled = Callable[[], bool]


def fusion_needs_tensorflow(graph: Graph) -> bool:
    """Whether fusing `graph` may import TensorFlow: for an op neither its library nor the op table describes
    (TensorFlow's registry), in the graph or in a function body. Otherwise the passes' every question is
    answered from the protobuf, a bare .pb's shapes included (core.graph.shapes derives them, as for
    `fuselens fuse`; TensorFlow's shape inference is only for the edge labels, asked afterwards)."""
    ops = graph.op_types() | {node.op for f in graph.functions.values() for node in f.node_def}
    return not all(op in graph.functions or opdefs.in_table(op) for op in ops)


def needs_tensorflow(spec: str) -> bool:
    """Whether loading `spec` imports TensorFlow (SavedModel, Keras, a Keras sample not built yet)."""
    if spec in SAMPLES and not Path(spec).exists():
        return SAMPLES[spec].cached and not is_built(spec)
    try:
        return detect_format(Path(spec)) in TENSORFLOW_FORMATS
    except FuseLensError:
        return False  # the in-process loader gives the error


class TimedOut(FuseLensError):
    """A helper request ran past its timeout and was killed with the helper."""

    def __init__(self, text: str, seconds: float):
        super().__init__(text)
        self.seconds = seconds


class TensorFlowHelper:
    """The parent's side: start the helper early, send it work, restart it after it died."""

    def __init__(self) -> None:
        self._child: ChildProcess | None = None
        self._lock = threading.Lock()
        self._what = ""
        self._requests = 0

    # ---- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Start the helper (if it is not running) and let it import TensorFlow in the background."""
        with self._lock:
            self._ensure()

    def _ensure(self) -> ChildProcess:
        if self._child is None or not self._child.alive():
            if self._child is not None:
                self._child.stop()
            self._child = ChildProcess(MODULE)
            self._requests += 1
            with contextlib.suppress(OSError):
                self._child.conn.send((self._requests, "warm", None))
        return self._child

    @property
    def pid(self) -> int | None:
        return self._child.pid if self._child is not None and self._child.alive() else None

    def stop(self) -> None:
        with self._lock:
            if self._child is not None:
                self._child.stop()
                self._child = None

    # ---- requests ----------------------------------------------------------------------------
    def call(self, kind: str, payload: Any, what: str, progress: Progress | None = None,
             cancelled: IsCancelled | None = None, request_graph: Graph | None = None,
             timeout_s: float | None = None) -> Any:
        """Send one request and wait for its value; FuseLensError when it fails or the helper dies,
        Cancelled when `cancelled()` said so and the helper did not finish within CANCEL_GRACE_S,
        TimedOut when it ran longer than `timeout_s` from its first progress line (the helper is killed and a
        new one started; the time the helper took to get to it, importing TensorFlow say, is not counted).
        `request_graph` is the graph in `payload` (see `_request_graph`), wherever the value holds it."""
        with self._lock:
            child = self._ensure()
            self._what = what
            self._requests += 1
            try:
                child.conn.send((self._requests, kind, payload))
            except OSError:
                raise self._died(child) from None
            return self._receive(child, self._requests, progress or (lambda _text: None),
                                 cancelled or (lambda: False), request_graph, timeout_s)

    def _receive(self, child: ChildProcess, number: int, progress: Progress, cancelled: IsCancelled,
                 request_graph: Graph | None, timeout_s: float | None = None) -> Any:
        cancel_seen: float | None = None
        deadline: float | None = None  # set by the request's first progress line: the helper has started it
        while True:
            if deadline is not None and time.monotonic() > deadline:
                raise self._timed_out(child, timeout_s)
            if cancelled():
                cancel_seen = cancel_seen or time.monotonic()
                if time.monotonic() - cancel_seen > CANCEL_GRACE_S:
                    child.stop()  # the next request starts a fresh helper
                    self._child = None
                    raise Cancelled()
            try:
                message = child.conn.recv() if child.conn.poll(0.1) else None
                is_value = message is not None and message[1] == "pieces"
                pieces = [child.conn.recv_bytes() for _ in range(message[2])] if is_value else []
            except (EOFError, OSError):
                raise self._died(child) from None
            if message is None:
                if not child.alive() and not child.conn.poll(0):
                    raise self._died(child)
                continue
            replied_to, kind, body = message
            if replied_to != number:
                continue
            if kind == "progress":
                if timeout_s is not None and deadline is None:
                    deadline = time.monotonic() + timeout_s
                progress(body)
            elif kind == "error":
                raise FuseLensError(body)
            elif kind == "pieces":
                return unpickle_pieces(pieces, request_graph)

    def _timed_out(self, child: ChildProcess, seconds: float) -> TimedOut:
        """A request past its deadline (an endless loop in a user's pass): this helper is killed and a new one
        started; the window keeps what it shows."""
        child.stop()
        self._child = None
        self._ensure()
        return TimedOut(f"{self._what} took longer than {seconds:g} s: cancelled", seconds)

    def _died(self, child: ChildProcess) -> FuseLensError:
        reason = child.death_reason()
        child.stop()
        self._child = None
        return FuseLensError(f"the TensorFlow helper process {reason} while {self._what}; the window keeps "
                             "what it shows, and the next action starts a new helper")

    # ---- the window's TensorFlow work ----------------------------------------------------------
    def fuse(self, job: FusionJob, progress: Progress, cancelled: IsCancelled,
             explain: bool | Literal["later"] = True) -> PipelineResult:
        """The job's fusion: right here when it needs no TensorFlow (every op is in the table or the graph's
        library: a sample, a frozen Keras model, a bare .pb of either), else in the helper, with the passes
        registered here (a plugin's or a test's too) known there. Here, it is not queued behind the helper's
        TensorFlow import, and neither the graph nor the pipeline is pickled across. With the user's pass files,
        their passes run too (in the helper, as `run_pass_files`): a bisect or a layerwise compare re-fuses
        what the window shows, not the built-in passes alone. `explain="later"` (run_pipeline) applies here only:
        the helper's pipeline comes back explained."""
        if job.pass_files:
            run = self.run_pass_files(job, progress, cancelled)
            if run.pipeline is None:
                raise FuseLensError("your pass files ran nothing: " + "; ".join(e.message for e in run.errors))
            return run.pipeline
        if not fusion_needs_tensorflow(job.graph):
            return job.fuse(progress, cancelled, explain)
        registered = [(c.__module__, c.__qualname__) for c in catalog()]
        pipeline: PipelineResult = self.call("fuse", (job, registered), "fusing", progress, cancelled, job.graph)
        pipeline.config = job.config  # the caller's own object (its original graph already is)
        return pipeline

    def run_pass_files(self, job: FusionJob, progress: Progress, cancelled: IsCancelled) -> PassFileRun:
        """The job's fusion with the user's pass files: always here in the helper (user code never runs in the
        window's process), cancelled with the helper when it runs past `job.pass_files.timeout_s` (TimedOut:
        "the pass ran longer than N s: cancelled")."""
        registered = [(c.__module__, c.__qualname__) for c in catalog()]
        try:
            run: PassFileRun = self.call("py_passes", (job, registered), "running your passes", progress, cancelled,
                                         job.graph, timeout_s=job.pass_files.timeout_s)
        except TimedOut as e:
            raise TimedOut(f"the pass ran longer than {e.seconds:g} s: cancelled", e.seconds) from None
        if run.pipeline is not None:  # the caller's configuration, with the user's passes described, not loaded
            run.pipeline.config = described_config(job.config, job.pass_files, run)
        return run

    def infer_shapes(self, graphs: list[Graph], progress: Progress, cancelled: IsCancelled) -> None:
        """Shapes for the edge labels, adopted by the caller's graphs (none where TensorFlow refuses)."""
        missing = [g for g in graphs if not g.shapes_ready]
        if missing:
            for graph, shapes in zip(missing, self.call("shapes", missing, "inferring shapes", progress, cancelled)):
                if shapes is not None:
                    graph.adopt_shapes(shapes)

    def export_npu_bundle(self, folder: str, pipeline: PipelineResult, **options: Any) -> BundleReport:
        """The NPU bundle (session/npu_export.py): its graphs are stripped for the host's TensorFlow here."""
        registered = [(c.__module__, c.__qualname__) for c in catalog()]
        return self.call("npu_bundle", (folder, pipeline, options, registered), "writing the NPU bundle")

    def load(self, spec: str, progress: Progress, cancelled: IsCancelled) -> LoadedModel:
        """A model (or a GE dump opened as one); formats that need TensorFlow are read by the helper, the rest
        right here."""
        if not needs_tensorflow(spec):
            from fuselens.core.ascend.ge.open import load_as_model  # the Ascend readers load when first used

            return load_as_model(spec)
        return self.call("load", spec, f"loading {spec}", progress, cancelled)


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: bytes, request_graph: Graph | None):
        super().__init__(io.BytesIO(data))
        self.request_graph = request_graph

    def persistent_load(self, pid: Any) -> Any:
        if pid != REQUEST_GRAPH or self.request_graph is None:
            raise pickle.UnpicklingError(f"the TensorFlow helper's reply refers to an unknown object {pid!r}")
        return self.request_graph


def unpickle_pieces(pieces: list[bytes], request_graph: Graph | None) -> Any:
    """The value `_pickle_pieces` sent: its pieces unpickled in order, letting other threads run between."""
    unpickler = _Unpickler(b"".join(pieces), request_graph)
    value = None
    for _ in pieces:
        value = unpickler.load()
        time.sleep(0)  # the interpreter lock for the GUI thread
    return value


_shared: TensorFlowHelper | None = None


def shared_helper() -> TensorFlowHelper:
    """The process's one helper (every window shares it; it stops when the process exits)."""
    global _shared
    if _shared is None:
        _shared = TensorFlowHelper()
        atexit.register(_shared.stop)
    return _shared


# ---- the helper process ----------------------------------------------------------------------------
def _serve(conn: Connection, import_tensorflow: Callable[[], Any] | None = None) -> None:
    """Answer requests until the window closes its end; "warm" asks for TensorFlow to be imported
    once the helper is idle (IDLE_BEFORE_IMPORT_S without a request), not before the next request."""
    if import_tensorflow is None:
        from fuselens.core.tfimport import import_tensorflow

    fault = os.environ.get(FAULT_ENV, "")
    warm = False
    while True:
        try:
            if warm and not conn.poll(IDLE_BEFORE_IMPORT_S):
                import_tensorflow()
                warm = False
                continue
            number, kind, payload = conn.recv()
        except (EOFError, OSError):
            return  # the window closed its end
        if fault.endswith(f"@{kind}"):
            os.kill(os.getpid(), getattr(signal, fault.split("@")[0]))
        if kind == "warm":
            warm = True
            continue  # nobody waits for its reply
        try:
            value = _work(kind, payload, lambda text, n=number: conn.send((n, "progress", text)))
            pieces = list(_pickle_pieces(value, _request_graph(kind, payload)))
            conn.send((number, "pieces", len(pieces)))
            for piece in pieces:
                conn.send_bytes(piece)
        except FuseLensError as e:
            conn.send((number, "error", str(e)))
        except Exception as e:  # a bug or a TensorFlow error: one line for the user, the helper lives on
            conn.send((number, "error", f"{type(e).__name__}: {' '.join(str(e).split())[:400]}"))


def _work(kind: str, payload: Any, progress: Progress) -> Any:
    if kind == "fuse":
        job, registered = payload
        _register(registered)
        return job.fuse(progress, lambda: False)
    if kind == "py_passes":
        progress("running your passes")  # the request's timeout starts now (TensorFlowHelper._receive)
        job, registered = payload
        _register(registered)
        return run_pass_files(job.graph, job.config, job.pass_files, progress)
    if kind == "npu_bundle":
        from fuselens.session.npu_export import export_npu_bundle

        folder, pipeline, options, registered = payload
        _register(registered)
        return export_npu_bundle(folder, pipeline, **options)
    if kind == "shapes":
        shapes = []
        for graph in payload:
            try:
                shapes.append(ensure_shapes(graph))
            except FuseLensError:
                shapes.append(None)
        return shapes
    if kind == "load":
        return load_model(payload)
    raise FuseLensError(f"the TensorFlow helper has no task {kind!r}")


def _request_graph(kind: str, payload: Any) -> Graph | None:
    """The graph a request sent that its value may hold (a fusion's original graph; the window has it)."""
    return payload[0].graph if kind in ("fuse", "py_passes") else None


def _pieces(value: Any) -> list[Any]:
    """What to pickle one after another so that no one unpickling is long: a pipeline's fused graph,
    its passes' records RECORDS_PER_PIECE at a time, then the pipeline (the records by reference)."""
    pipeline = value.pipeline if isinstance(value, PassFileRun) else value
    if not isinstance(pipeline, PipelineResult):
        return [value]
    pieces: list[Any] = [pipeline.fused]
    for result in pipeline.results:
        for records in (result.matches, result.near_misses, result.skipped, result.rewrites):
            pieces.extend(records[i:i + RECORDS_PER_PIECE] for i in range(0, len(records), RECORDS_PER_PIECE))
    return [*pieces, pipeline, *([value] if value is not pipeline else [])]


class _Pickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, request_graph: Graph | None):
        super().__init__(file, pickle.HIGHEST_PROTOCOL)
        self.request_graph = request_graph

    def persistent_id(self, obj: Any) -> str | None:
        return REQUEST_GRAPH if obj is self.request_graph and obj is not None else None


def _pickle_pieces(value: Any, request_graph: Graph | None) -> Iterator[bytes]:
    """`value` as pickles of one stream (one memo: a record in two pieces is one object), see `_pieces`."""
    buffer = io.BytesIO()
    pickler = _Pickler(buffer, request_graph)
    pieces = _pieces(value)  # held until the end: the memo knows objects by their id
    for piece in pieces:
        pickler.dump(piece)
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()


def _register(registered: list[tuple[str, str]]) -> None:
    """The passes registered in the window (plugins, tests), exactly: registered here too, and none else."""
    mirror_catalog(getattr(importlib.import_module(module), qualname) for module, qualname in registered)


if __name__ == "__main__":
    exit_with_parent()
    _serve(Connection(int(sys.argv[1])))
