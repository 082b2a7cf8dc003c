"""Exports: Chrome trace JSON (Perfetto / chrome://tracing) of the recorded step, CSV of the kernel tables.

Trace layout: one process per graph (original, fused), one thread per device; each kernel is a
complete event (`ph: "X"`, `ts`/`dur` in microseconds) whose args name the graph node and the
fusion pass that made it.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import fields
from pathlib import Path
from typing import Any

from fuselens.core.formats.io import write_bytes_atomic, write_json_atomic
from fuselens.core.measure.result import KernelStat, RunResult

CSV_COLUMNS = ["graph"] + [f.name for f in fields(KernelStat)]


def chrome_trace(result: RunResult) -> dict[str, Any]:
    events: list[dict[str, Any]] = []
    for pid, (label, run) in enumerate(result.graphs.items(), 1):
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                       "args": {"name": f"{label} graph" + (f" ({result.model})" if result.model else "")}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
        tids = {device: tid for tid, device in enumerate(sorted({e.device for e in run.timeline}), 1)}
        for device, tid in tids.items():
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": device}})
        for e in run.timeline:
            events.append({"ph": "X", "name": e.kernel, "cat": e.op_type, "ts": e.start_us, "dur": e.dur_us,
                           "pid": pid, "tid": tids[e.device],
                           "args": {"node": e.node, "op_type": e.op_type, "pass": e.pass_id, "graph": label}})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"model": result.model, "backend": result.backend, "steps": result.steps,
                          "note": "one step per graph; times in microseconds from the step's first kernel"}}


def write_chrome_trace(result: RunResult, path: str | os.PathLike[str]) -> Path:
    return write_json_atomic(path, chrome_trace(result))


def kernel_csv(result: RunResult) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for label, run in result.graphs.items():
        for kernel in run.kernels:
            writer.writerow({"graph": label, **{f.name: getattr(kernel, f.name) for f in fields(KernelStat)}})
    return out.getvalue()


def write_kernel_csv(result: RunResult, path: str | os.PathLike[str]) -> Path:
    return write_bytes_atomic(path, kernel_csv(result).encode())
