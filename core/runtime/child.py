"""The runner's child process: `python -m core.runtime.child FD`.

It receives one job over the connection on FD, runs the original and the fused GraphDef with
TensorFlow (or through the Ascend adapter), reports progress, and sends back the outputs and
the profile. Anything that goes wrong inside TensorFlow stays in this process; the parent sees
an ("error", message) or, if this process dies, the exit signal.
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

from core import proto
from core.errors import FuseLensError
from core.graph import Graph
from core.runtime import lowering
from core.runtime.profile import KernelEvent, build_graph_run, label_op

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
    report.progress("", "starting")
    from core.runtime import backends

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
    graphs, outputs = {}, {}
    for label, data, fetches in job["graphs"]:
        graph = Graph.from_bytes(data, source=label, validate=False)
        execution = lowering.execution_plan(graph, backend)  # the graph as named; a lowered copy runs
        events, times, values = _run_graph(tf, label, lowering.lower(graph, execution), fetches, job,
                                           config_for(label), report)
        if npu_dir is not None:
            from core.runtime import msprof, npu_session

            report.progress(label, "export")
            npu_session.msprof_export(str(npu_dir / label))
            run = msprof.import_graph_run(npu_dir / label, label, graph)
            run.step_times_us = [round(t, 3) for t in times]
        else:
            run = build_graph_run(label, graph, events, times, job["steps"])
        run.execution = execution
        graphs[label] = run
        outputs[label] = values
    return {"graphs": graphs, "outputs": outputs}


def _npu_configs(tf: Any, job: dict[str, Any], root: Path) -> Any:
    from core.runtime import backends, npu_session

    npu_session.import_npu(backends.npu_mode())
    switches = job["switches"]
    npu_session.set_autofuse_flags(switches.autofuse_flags)
    switch_file = root / "fusion_switch.json"
    switch_file.write_text(switches.fusion_switches.to_json_text())
    return lambda label: npu_session.npu_session_config(tf, switches.scope_passes, str(switch_file),
                                                        str(root / label))


def _run_graph(tf: Any, label: str, graph: Graph, fetches: list[str], job: dict[str, Any], config: Any,
               report: Reporter) -> tuple[list[KernelEvent], list[float], dict[str, Any]]:
    report.progress(label, "import")
    tf_graph = tf.Graph()
    try:
        with tf_graph.as_default():
            tf.graph_util.import_graph_def(proto.to_tf(graph.graph_def), name="")
    except (ValueError, TypeError, tf.errors.OpError) as e:
        raise JobError(tf_error_message(label, e)) from None
    feeds = {f"{name}:0": value for name, value in job["feeds"].items() if name in graph}
    trace = job["trace"] and job["backend"] != "npu"
    options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE) if trace else None
    events: list[KernelEvent] = []
    times: list[float] = []
    values: list[Any] = []
    try:
        with tf.compat.v1.Session(graph=tf_graph, config=config) as session:
            for step in range(job["warmup"]):
                report.progress(label, "warmup", step + 1, job["warmup"])
                session.run(fetches, feeds)
            for step in range(job["steps"]):
                report.progress(label, "run", step + 1, job["steps"])
                metadata = tf.compat.v1.RunMetadata() if trace else None
                start = time.perf_counter()
                values = session.run(fetches, feeds, options=options, run_metadata=metadata)
                times.append((time.perf_counter() - start) * 1e6)
                if trace:
                    events += step_events(step, metadata.step_stats)
    except tf.errors.OpError as e:
        raise JobError(tf_error_message(label, e)) from None
    return events, times, dict(zip(fetches, values))


def main(fd: int) -> int:
    conn = Connection(fd)
    job = conn.recv()
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
