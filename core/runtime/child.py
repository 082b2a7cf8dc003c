"""The runner's child process: `python -m fuselens.core.runtime.child FD`.

It receives jobs over the connection on FD (one for a run; many for a bisect, which so imports
TensorFlow once), runs the original and the fused GraphDef with TensorFlow (or through the
Ascend adapter), reports progress, and sends back the outputs, the profile and any probed
tensors' comparison (a layerwise compare). Anything that goes wrong inside TensorFlow stays in
this process; the parent sees an ("error", message) or, if this process dies, the exit signal.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import Graph, TensorRef, proto
from fuselens.core.measure.profile import KernelEvent, build_graph_run, label_op
from fuselens.core.runtime import layer_norm, lowering
from fuselens.core.runtime.childproc import exit_with_parent

# Test hook: "SIGNAL@PHASE" (e.g. "SIGSEGV@run") makes the child kill itself with SIGNAL on
# entering PHASE, to prove a crashing TensorFlow cannot take the caller down.
FAULT_ENV = "FUSELENS_RUNNER_FAULT"
PROGRESS_INTERVAL_S = 0.1
_NODE_IN_MESSAGE = re.compile(r"\{\{node ([^}]+)\}\}|[Nn]ode '([^']+)'|node ([\w/.\-]+)")


class JobError(Exception):
    """A failure worded for the user; the parent raises it as a FuseLensError."""


class Reporter:
    """Sends progress: every phase change and last step, otherwise at most every PROGRESS_INTERVAL_S."""

    def __init__(self, conn: Connection):
        self.conn = conn
        self._last = 0.0
        self._phase = ("", "")

    def progress(self, graph: str, phase: str, step: int = 0, total: int = 0) -> None:
        now = time.monotonic()
        if (graph, phase) != self._phase or step == total or now - self._last >= PROGRESS_INTERVAL_S:
            self._last, self._phase = now, (graph, phase)
            self.conn.send(("progress", {"graph": graph, "phase": phase, "step": step, "total": total}))
        _fault(phase)


def _fault(phase: str) -> None:
    spec = os.environ.get(FAULT_ENV, "")
    name, _, at = spec.partition("@")
    if name and at == phase:
        os.kill(os.getpid(), getattr(signal, name))


def tf_error_message(label: str, error: Exception) -> str:
    """One line naming the graph and the node TensorFlow refused, and TensorFlow's reason."""
    text = str(getattr(error, "message", None) or error).strip()
    node = getattr(getattr(error, "node_def", None), "name", "") or ""
    found = _NODE_IN_MESSAGE.search(text)
    if not node and found:
        node = next(g for g in found.groups() if g)
    reason = text.splitlines()[0] if text else type(error).__name__
    reason = re.sub(r"\s*\[\[.*", "", reason)[:300]
    where = f" at node {node}" if node else ""
    return f"TensorFlow refused to run the {label} graph{where}: {reason}"


def _device(name: str) -> str:
    return name.rsplit("/device:", 1)[-1] if "/device:" in name else name


def step_events(step: int, step_stats: Any) -> list[KernelEvent]:
    events = []
    for dev in step_stats.dev_stats:
        if dev.device.endswith("/stream:all"):  # GPU: the per-stream devices list the same kernels
            continue
        device = _device(dev.device)
        for ns in dev.node_stats:
            start = ns.all_start_nanos / 1000 if ns.all_start_nanos else float(ns.all_start_micros)
            dur = ns.all_end_rel_nanos / 1000 if ns.all_end_rel_nanos else float(ns.all_end_rel_micros)
            events.append(KernelEvent(step, device, ns.node_name, label_op(ns.timeline_label, ns.node_name),
                                      start, dur))
    return events


def run_job(job: dict[str, Any], report: Reporter) -> dict[str, Any]:
    """Run every graph of the job; timed ones get warm-up and timed steps (one after the other, or
    step by step in turn with `interleave`, so drift on a busy machine hits both alike), probe-only
    ones (a layerwise compare's stage graphs) one step. Probed tensors are compared here, so only
    the figures travel back."""
    report.progress("", "starting")
    from fuselens.core.devices import backends

    backend = job["backend"]
    backends.require(backend)  # before importing TensorFlow: an absent NPU adapter fails fast
    import tensorflow as tf

    npu_dir = None
    if backend == "npu":
        npu_dir = Path(job.get("profiling_dir") or tempfile.mkdtemp(prefix="fuselens-npu-"))
        config_for = _npu_configs(tf, job, npu_dir)
    else:
        config = backends.session_config(backend, grappler=job["grappler"])
        config_for = lambda label: config  # noqa: E731
    graphs, outputs, probed = {}, {}, {}
    timed = [spec for spec in job["graphs"] if spec.get("timed", True)]
    together = job.get("interleave") and len(timed) > 1
    if together:
        sides: list[_Side] = []
        try:
            for spec in timed:
                sides.append(_Side(tf, spec, job, config_for(spec["label"]), report))
            for side in sides:
                side.warm_up()
            for step in range(job["steps"]):
                for side in sides:
                    side.step(step)
            for side in sides:
                outputs[side.label], graphs[side.label] = side.values, side.graph_run(job)
                probed[side.label] = side.probe()
        finally:
            for side in sides:
                side.close()
    for spec in job["graphs"]:
        if together and spec.get("timed", True):
            continue
        side = _Side(tf, spec, job, config_for(spec["label"]), report)
        try:
            if spec.get("timed", True):
                side.warm_up()
                for step in range(job["steps"]):
                    side.step(step)
            probed[side.label] = side.probe()
        finally:
            side.close()
        outputs[side.label] = side.values
        if not spec.get("timed", True):
            continue
        if npu_dir is not None:
            from fuselens.core.devices import npu_session
            from fuselens.core.measure import msprof

            report.progress(side.label, "export")
            npu_session.msprof_export(str(npu_dir / side.label))
            run = msprof.import_graph_run(npu_dir / side.label, side.label, side.graph)
            run.step_times_us = [round(t, 3) for t in side.times]
        else:
            run = side.graph_run(job)
        graphs[side.label] = run
    return {"graphs": graphs, "outputs": outputs, "probes": _compare_probes(job, probed)}


def _compare_probes(job: dict[str, Any], probed: dict[str, dict[str, Any]]) -> list[Any]:
    """One comparison per (original label, tensor, other label, tensor) pair the job asked for."""
    from fuselens.core.measure.compare import compare_arrays

    found = []
    for original_label, original, label, tensor in job.get("probe_pairs", []):
        a, b = probed.get(original_label, {}).get(original), probed.get(label, {}).get(tensor)
        found.append(None if a is None or b is None else
                     compare_arrays(a, b, original_name=original, fused_name=tensor, tolerances=job.get("tolerances")))
    return found


class _Side:
    """One graph in its own TensorFlow session: warm-up, timed steps (wall time, step stats), probes."""

    def __init__(self, tf: Any, spec: dict[str, Any], job: dict[str, Any], config: Any, report: Reporter):
        self.tf, self.spec, self.report = tf, spec, report
        self.label, self.fetches = spec["label"], list(spec["fetches"])
        self.graph = Graph.from_bytes(spec["data"], source=self.label, validate=False)
        self.execution = lowering.execution_plan(self.graph, job["backend"])  # a lowered copy runs
        self.notes: list[str] = []
        self.warmup = job["warmup"]
        self.steps = job["steps"]
        self.trace = job["trace"] and job["backend"] != "npu"
        self.events: list[KernelEvent] = []
        self.times: list[float] = []
        self.values: dict[str, Any] = {}
        report.progress(self.label, "import")
        tf_graph = tf.Graph()
        try:
            with tf_graph.as_default():
                tf.graph_util.import_graph_def(proto.to_tf(self._executed(job).graph_def), name="")
        except (ValueError, TypeError, tf.errors.OpError) as e:
            raise JobError(tf_error_message(self.label, e)) from None
        self.feeds = {f"{name}:0": value for name, value in job["feeds"].items() if name in self.graph}
        self.options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE) if self.trace else None
        self.session = tf.compat.v1.Session(graph=tf_graph, config=config)

    def _executed(self, job: dict[str, Any]) -> Graph:
        """The copy TensorFlow runs (core.runtime.lowering): kernels planned as their original ops
        inlined, and on a oneDNN CPU with Grappler on, LayerNorms built with the graph's epsilon."""
        from fuselens.core.devices import backends

        keep = {TensorRef.parse(t).node for t in [*self.fetches, *self.spec.get("probes", ())]}
        executed = lowering.lower(self.graph, self.execution, keep)
        if note := lowering.contraction_tail_note(self.graph, self.execution, executed):
            self.notes.append(note)
        if not (job["backend"] == "cpu" and job["grappler"] and backends.onednn_fuses_layer_norms()):
            return executed
        executed, norms = layer_norm.replace_with_onednn(executed, keep, _ranks(self.tf, executed))
        if norms:
            epsilons = ", ".join(f"{e:g}" for e in sorted({n.epsilon for n in norms}))
            self.notes.append(f"{len(norms)} LayerNorm{'s' * (len(norms) > 1)} built as oneDNN's _MklLayerNorm "
                              f"with the graph's epsilon {epsilons} (TensorFlow's remapper would use 0.001)")
        return executed

    def _run(self, fetches: list[str], **kwargs: Any) -> list[Any]:
        try:
            return self.session.run(fetches, self.feeds, **kwargs)
        except self.tf.errors.OpError as e:
            raise JobError(tf_error_message(self.label, e)) from None

    def warm_up(self) -> None:
        for step in range(self.warmup):
            self.report.progress(self.label, "warmup", step + 1, self.warmup)
            self._run(self.fetches)

    def step(self, step: int) -> None:
        """One timed step: its wall time, its step stats when traced, the fetched outputs."""
        self.report.progress(self.label, "run", step + 1, self.steps)
        metadata = self.tf.compat.v1.RunMetadata() if self.trace else None
        start = time.perf_counter()
        values = self._run(self.fetches, options=self.options, run_metadata=metadata)
        self.times.append((time.perf_counter() - start) * 1e6)
        if self.trace:
            self.events += step_events(step, metadata.step_stats)
        self.values = dict(zip(self.fetches, values))

    def probe(self) -> dict[str, Any]:
        """The probed tensors of one more (untimed) step: fetching inner tensors changes what
        Grappler may fuse, so they are never fetched in a timed step."""
        tensors = list(self.spec.get("probes", ()))
        if not tensors:
            return {}
        self.report.progress(self.label, "layers")
        return dict(zip(tensors, self._run(tensors)))

    def graph_run(self, job: dict[str, Any]) -> Any:
        run = build_graph_run(self.label, self.graph, self.events, self.times, job["steps"])
        run.execution = self.execution
        run.execution_notes = self.notes
        return run

    def close(self) -> None:
        self.session.close()


def _ranks(tf: Any, graph: Graph) -> Any:
    """A tensor's static rank (None when unknown), from TensorFlow's shape inference on `graph`,
    imported on the first question only."""
    imported: list[Any] = []

    def rank(tensor: str) -> int | None:
        if not imported:
            imported.append(tf.Graph())
            with imported[0].as_default():
                tf.graph_util.import_graph_def(proto.to_tf(graph.graph_def), name="")
        ref = TensorRef.parse(tensor)
        return imported[0].get_operation_by_name(ref.node).outputs[ref.port].shape.rank

    return rank


def _npu_configs(tf: Any, job: dict[str, Any], root: Path) -> Any:
    from fuselens.core.devices import backends, npu_session

    npu_session.import_npu(backends.npu_mode())
    switches = job["switches"]
    npu_session.set_autofuse_flags(switches.autofuse_flags)
    switch_file = root / "fusion_switch.json"
    switch_file.write_text(switches.fusion_switches.to_json_text())
    return lambda label: npu_session.npu_session_config(tf, switches.scope_passes, str(switch_file),
                                                        str(root / label))


def main(fd: int) -> int:
    """Serve jobs until the parent closes the connection: a bisect sends many, importing TensorFlow once."""
    exit_with_parent()  # a graph that never ends must not outlive a parent killed past its timeout
    conn = Connection(fd)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            break
        report = Reporter(conn)
        try:
            conn.send(("result", run_job(job, report)))
        except (JobError, FuseLensError) as e:
            conn.send(("error", str(e)))
        except Exception as e:  # the parent must get a worded error, not a silent exit
            conn.send(("error", f"the run failed: {type(e).__name__}: {str(e).strip()[:500]}"))
    conn.close()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.exit(main(int(sys.argv[1])))
