"""Run the original and the fused graph in a child process: timeout, cancel, progress, clear errors.

A model that crashes TensorFlow, hangs or runs out of memory kills only the child; the caller
(the GUI, the CLI) gets a FuseLensError saying what happened. The child is a fresh interpreter
(`python -m fuselens.core.runtime.child`), so nothing of the caller (Qt, its threads) is inherited.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fuselens.core.devices.backends import BACKENDS
from fuselens.core.errors import FuseLensError
from fuselens.core.formats.execute import random_feeds, resolve_input_shape
from fuselens.core.formats.switch_file import PassChoice
from fuselens.core.graph import Graph, proto
from fuselens.core.measure.compare import compare_outputs, pair_outputs
from fuselens.core.measure.result import OutputComparison, RunResult
from fuselens.core.runtime.childproc import ChildProcess


@dataclass(frozen=True)
class Progress:
    """Which graph, which phase (starting, import, warmup, run, export), which step of how many."""

    graph: str
    phase: str
    step: int = 0
    total: int = 0

    def __str__(self) -> str:
        where = f"{self.graph}: " if self.graph else ""
        return f"{where}{self.phase}" + (f" {self.step}/{self.total}" if self.total else "")


@dataclass
class RunRequest:
    """What to run. `original` / `fused` are a Graph, GraphDef bytes or a model path; the parent
    runs the passes (core never imports passes), so the fused graph comes ready-made, with the
    pass configuration that made it (`config`: the result records its passes, the NPU backend
    takes its switch forms)."""

    original: Graph | bytes | str | os.PathLike[str]
    fused: Graph | bytes | str | os.PathLike[str] | None = None
    model: str = ""
    config: PassChoice | None = None
    backend: str = "cpu"
    steps: int = 100
    warmup: int = 10
    input_shapes: Mapping[str, Sequence[int]] = field(default_factory=dict)
    inputs: str | os.PathLike[str] | None = None  # .npz with one array per placeholder
    seed: int = 0
    timeout: float | None = 600.0
    trace: bool = True  # RunOptions FULL_TRACE step stats (the kernel table); off: wall times only
    grappler: bool = True  # off: the graphs run as written (Grappler would compose Abs+Relu into one kernel)
    original_to_final: Mapping[str, Sequence[str]] | None = None  # provenance, to pair renamed outputs
    profiling_dir: str | None = None  # NPU: where msprof data goes (default: a temp folder)
    layers: Sequence[LayerProbe] = ()  # a layerwise compare: inner tensors compared after the timed steps
    interleave: bool = False  # time both graphs step by step in turn (a time bisect), not one after the other
    tolerances: tuple[float, float] | None = None  # (rtol, atol) for every comparison instead of the dtype's


@dataclass(frozen=True)
class LayerProbe:
    """Inner tensors to compare with the original's on the same inputs: `pairs` of (original tensor,
    tensor of `graph`); `graph` None is the fused graph itself, else a graph run once for it (the
    graph after one pass, so a match is judged with only the passes before it applied)."""

    label: str
    pairs: Sequence[tuple[str, str]]
    graph: Graph | bytes | None = None


def as_graph(value: Graph | bytes | str | os.PathLike[str], what: str) -> Graph:
    if isinstance(value, Graph):
        return value
    if isinstance(value, bytes):
        return Graph.from_bytes(value, source=what)
    from fuselens.core.formats.loaders import load_model

    return load_model(value).graph


def load_npz_inputs(path: str | os.PathLike[str], graph: Graph,
                    shapes: Mapping[str, Sequence[int]] | None = None) -> dict[str, np.ndarray]:
    """One array per placeholder from an .npz (keys `name` or `name:0`), cast to the placeholder dtype."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {key.removesuffix(":0"): data[key] for key in data.files}
    except (OSError, ValueError) as e:
        raise FuseLensError(f"{path}: cannot read as .npz ({str(e)[:200]})") from None
    feeds = {}
    for name in graph.placeholders():
        if name not in arrays:
            raise FuseLensError(f"{path}: no array for input {name} (arrays: {', '.join(sorted(arrays)) or 'none'})")
        dtype = proto.np_dtype(graph.node(name).attr["dtype"].type)
        array = arrays[name]
        _, static = graph.placeholder_spec(name)
        if static is not None and (len(static) != array.ndim or
                                   any(d is not None and d != a for d, a in zip(static, array.shape))):
            shown = ",".join("?" if d is None else str(d) for d in static)
            raise FuseLensError(f"{path}: array {name} has shape {list(array.shape)}, the input takes [{shown}]")
        if name in (shapes or {}) and tuple(array.shape) != tuple(shapes[name]):
            raise FuseLensError(f"{path}: array {name} has shape {list(array.shape)}, "
                                f"--input-shape says {list(shapes[name])}")
        feeds[name] = array.astype(dtype, copy=False)
    return feeds


def prepare_job(request: RunRequest) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Everything the child needs, checked here first so bad input fails before a process starts."""
    if request.backend not in BACKENDS:
        raise FuseLensError(f"unknown backend {request.backend!r} (backends: {', '.join(BACKENDS)})")
    if request.steps < 1 or request.warmup < 0:
        raise FuseLensError(f"steps must be >= 1 and warmup >= 0 (got steps={request.steps}, "
                            f"warmup={request.warmup})")
    original = as_graph(request.original, "original")
    fused = as_graph(request.fused, "fused") if request.fused is not None else None
    unknown = sorted(set(request.input_shapes) - set(original.placeholders()))
    if unknown:
        raise FuseLensError(f"--input-shape names {', '.join(unknown)}, which is not an input of the model "
                            f"(inputs: {', '.join(original.placeholders())})")
    if request.inputs is not None:
        feeds = load_npz_inputs(request.inputs, original, request.input_shapes)
    else:
        for name in original.placeholders():
            resolve_input_shape(original, name, request.input_shapes)
        feeds = random_feeds(original, request.seed, request.input_shapes)
    if fused is not None:
        extra = sorted(set(fused.placeholders()) - set(feeds))
        if extra:
            raise FuseLensError(f"the fused graph has inputs the original lacks: {', '.join(extra)}")
        pairs = pair_outputs(original, fused, request.original_to_final)
        graphs = [("original", original, [o for o, _ in pairs]), ("fused", fused, [f for _, f in pairs])]
    else:
        pairs = []
        graphs = [("original", original, [f"{o}:0" for o in original.outputs()])]
    if request.backend == "npu" and request.config is None:
        raise FuseLensError("the npu backend needs the pass configuration (RunRequest.config) for its switches")
    if request.backend == "npu" and (request.layers or request.interleave):
        raise FuseLensError("a layerwise compare or an interleaved timing runs on the cpu or gpu backend")
    specs = [{"label": label, "data": g.graph_def.SerializeToString(), "fetches": fetches, "probes": []}
             for label, g, fetches in graphs]
    probe_pairs = []
    for layer in request.layers:
        if layer.graph is None:
            if fused is None:
                raise FuseLensError(f"layer probe {layer.label!r} names the fused graph, but the run has none")
            spec = specs[1]
        else:
            spec = {"label": layer.label, "data": as_graph(layer.graph, layer.label).graph_def.SerializeToString(),
                    "fetches": [], "probes": [], "timed": False}
            specs.append(spec)
        for original_tensor, tensor in layer.pairs:
            specs[0]["probes"].append(original_tensor)
            spec["probes"].append(tensor)
            probe_pairs.append(("original", original_tensor, spec["label"], tensor))
    for spec in specs:
        spec["probes"] = list(dict.fromkeys(spec["probes"]))
    job = {
        "graphs": specs, "probe_pairs": probe_pairs, "interleave": request.interleave,
        "tolerances": request.tolerances,
        "feeds": feeds, "backend": request.backend, "steps": request.steps, "warmup": request.warmup,
        "trace": request.trace, "grappler": request.grappler,
        "switches": request.config.to_switch_forms() if request.backend == "npu" else None,
        "profiling_dir": request.profiling_dir,
    }
    return job, pairs


class RunnerProcess:
    """A run child kept for several runs (a bisect sends dozens): TensorFlow is imported once.

    One run at a time. A run that fails inside TensorFlow leaves the child serving; one that is
    cancelled, times out or kills the child stops it, and the next run starts a fresh one.
    """

    def __init__(self) -> None:
        self._child: ChildProcess | None = None
        self.pid: int | None = None  # the last child's, kept after it ended (tests check it is gone)

    def execute(self, job: dict[str, Any], *, deadline: float | None, timeout: float | None,
                cancelled: Callable[[], bool], on_progress: Callable[[Progress], None]) -> dict[str, Any]:
        """Send one job and wait for its payload; FuseLensError worded for the user otherwise."""
        if self._child is None or not self._child.alive():
            self.close()
            self._child = ChildProcess("fuselens.core.runtime.child")
            self.pid = self._child.pid
        child = self._child
        progress: list[Progress] = []

        def where() -> str:
            return f" (at {progress[-1]})" if progress else ""

        def fail(message: str) -> FuseLensError:
            self.close()
            return FuseLensError(message)

        with contextlib.suppress(OSError):  # a child that died before reading: its exit status says why
            child.conn.send(job)
        while True:
            if cancelled():
                raise fail(f"run cancelled{where()}; the child process was stopped")
            wait = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
            if wait <= 0:
                raise fail(f"run timed out after {timeout:g} s{where()}; the child process was stopped")
            try:
                message = child.conn.recv() if child.conn.poll(wait) else None
            except (EOFError, OSError):
                raise fail(f"the run's child process {child.death_reason()}{where()}") from None
            if message is None:
                if not child.alive() and not child.conn.poll(0):
                    raise fail(f"the run's child process {child.death_reason()}{where()}")
                continue
            kind, body = message
            if kind == "progress":
                progress.append(Progress(**body))
                on_progress(progress[-1])
            elif kind == "error":
                raise FuseLensError(body)
            else:
                return body

    def close(self) -> None:
        if self._child is not None:
            self._child.stop()
            self._child = None

    def __enter__(self) -> RunnerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RunHandle:
    """A run in progress: `cancel()`, `done()`, `progress`, `result(timeout)`; after it, `layers`.

    `on_progress` is called from the handle's worker thread (a GUI forwards it to its own thread).
    With a `process`, the run goes to that long-lived child (left running afterwards).
    """

    def __init__(self, request: RunRequest, on_progress: Callable[[Progress], None] | None = None,
                 process: RunnerProcess | None = None):
        self.request = request
        self.progress: Progress | None = None
        self.layers: dict[str, list[OutputComparison | None]] = {}  # per LayerProbe label, as its pairs
        self._on_progress = on_progress
        self._cancel = threading.Event()
        self._result: RunResult | None = None
        self._error: FuseLensError | None = None
        self._process = process or RunnerProcess()
        self._own_process = process is None
        self._started = time.monotonic()
        job, pairs = prepare_job(request)
        self._thread = threading.Thread(target=self._work, args=(job, pairs), name="fuselens-run", daemon=True)
        self._thread.start()

    def cancel(self) -> None:
        """Stop the run: the child is killed; `result()` then raises 'run cancelled'."""
        self._cancel.set()

    def done(self) -> bool:
        return not self._thread.is_alive()

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def result(self, timeout: float | None = None) -> RunResult:
        """Wait for the run; raises FuseLensError if it failed, TimeoutError if still running after `timeout`."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError("the run is still going")
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    # ---- worker thread ------------------------------------------------------------------
    def _work(self, job: dict[str, Any], pairs: list[tuple[str, str]]) -> None:
        process = self._process
        timeout = self.request.timeout
        try:
            payload = process.execute(job, deadline=self._started + timeout if timeout else None, timeout=timeout,
                                      cancelled=self._cancel.is_set, on_progress=self._progressed)
            self._result = self._build_result(payload, pairs)
            self.layers = self._split_layers(job, payload.get("probes", []))
        except FuseLensError as e:
            self._error = e
        except Exception as e:  # a bug here must still end the run with an error, not a hung handle
            self._error = FuseLensError(f"the run failed: {type(e).__name__}: {e}")
        finally:
            if self._own_process:
                process.close()

    def _progressed(self, progress: Progress) -> None:
        self.progress = progress
        if self._on_progress:
            self._on_progress(progress)

    def _split_layers(self, job: dict[str, Any], found: list[OutputComparison | None]
                      ) -> dict[str, list[OutputComparison | None]]:
        layers: dict[str, list[OutputComparison | None]] = {layer.label: [] for layer in self.request.layers}
        labels = [layer.label for layer in self.request.layers for _ in layer.pairs]
        for label, comparison in zip(labels, found):
            layers[label].append(comparison)
        return layers

    def _build_result(self, payload: dict[str, Any], pairs: list[tuple[str, str]]) -> RunResult:
        request = self.request
        outputs = payload["outputs"]
        comparison = (compare_outputs(outputs["original"], outputs["fused"], pairs, request.tolerances)
                      if "fused" in outputs else [])
        return RunResult(model=request.model, backend=request.backend, steps=request.steps, warmup=request.warmup,
                         traced=request.trace, pass_ids=request.config.pass_ids() if request.config else [],
                         graphs=payload["graphs"], comparison=comparison,
                         seconds=round(time.monotonic() - self._started, 3))


def start_run(request: RunRequest, on_progress: Callable[[Progress], None] | None = None,
              process: RunnerProcess | None = None) -> RunHandle:
    """Start a run in a child process and return at once; bad input raises FuseLensError here."""
    return RunHandle(request, on_progress, process)


def wait(handle: RunHandle) -> RunResult:
    """Wait for a run (the CLI; Ctrl-C stops the child)."""
    try:
        while not handle.done():
            handle._thread.join(0.2)
    except KeyboardInterrupt:
        handle.cancel()
        handle._thread.join()
        raise
    return handle.result()


def run(request: RunRequest, on_progress: Callable[[Progress], None] | None = None,
        process: RunnerProcess | None = None) -> RunResult:
    """Start a run and wait for it."""
    return wait(start_run(request, on_progress, process))
