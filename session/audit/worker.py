"""The audit's worker process: `python -m fuselens.session.audit.worker FD` audits models one at a time,
so a model that kills TensorFlow or hangs ends that process only, and its row says so.

`AuditWorker` is the parent's end: it sends a task, forwards the worker's stages, and turns a death
into a row "crashed (SIGSEGV)" and a timeout into "timed out after N s" (the worker is then replaced).
Test hook (the worker itself dying; a real model that kills TensorFlow does so in the runner's child):
FAULT_ENV="NAME=abort,OTHER=hang" makes the worker call os.abort() for the model named NAME, or sleep
past any timeout for OTHER, once it has loaded it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from fuselens.core.runtime.childproc import ChildProcess, exit_with_parent
from fuselens.session.audit.model import AuditTask, audit_model

FAULT_ENV = "FUSELENS_AUDIT_FAULT"
MODULE = "fuselens.session.audit.worker"


class Interrupted(Exception):
    """The audit was stopped while this model was in flight; it gets no row."""


def failed_row(task: AuditTask, status: str, reason: str, seconds: float) -> dict[str, Any]:
    return {"model": task.name, "spec": task.spec, "status": status, "reason": reason, "seconds": round(seconds, 3)}


class AuditWorker:
    """A worker process kept for model after model (TensorFlow and the runner's child start once), and
    started afresh after a model crashed it or ran out of time."""

    def __init__(self) -> None:
        self._child: ChildProcess | None = None

    def audit(self, task: AuditTask, *, on_stage: Callable[[str], None] = lambda _: None,
              cancelled: Callable[[], bool] = lambda: False) -> dict[str, Any]:
        """The model's row, whatever happens to the worker; raises Interrupted when `cancelled()` turns true."""
        if self._child is None or not self._child.alive():
            self.close()
            self._child = ChildProcess(MODULE)
        child, start = self._child, time.monotonic()
        with contextlib.suppress(OSError):  # a worker that died at start-up: its exit status says why
            child.conn.send(task)
        while True:
            if cancelled():
                self.close()
                raise Interrupted(task.name)
            left = start + task.timeout - time.monotonic()
            if left <= 0:
                self.close()
                return failed_row(task, "timed out", f"timed out after {task.timeout:g} s", task.timeout)
            try:
                message = child.conn.recv() if child.conn.poll(min(0.1, left)) else None
            except (EOFError, OSError):
                message = None
            if message is None:
                if child.alive():
                    continue
                return self._died(task, time.monotonic() - start)
            kind, body = message
            if kind == "stage":
                on_stage(body)
            else:
                return body

    def _died(self, task: AuditTask, seconds: float) -> dict[str, Any]:
        child = self._child
        assert child is not None
        why = child.death_reason()
        code = child.process.returncode
        status = f"crashed ({signal.Signals(-code).name})" if code is not None and code < 0 else "crashed"
        self.close()
        return failed_row(task, status, f"{status}: the worker {why}", seconds)

    def close(self) -> None:
        if self._child is not None:
            self._child.stop()
            self._child = None

    def __enter__(self) -> AuditWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_kept = threading.local()


def audit_isolated(task: AuditTask) -> dict[str, Any]:
    """One model in an audit worker process: the task a Dask worker runs (it must survive the model too).
    Each of its threads keeps its audit worker for the next task (TensorFlow starts once per thread, not per
    model); the worker exits with the Dask worker (`_exit_with_parent`)."""
    if getattr(_kept, "worker", None) is None:
        _kept.worker = AuditWorker()
    return _kept.worker.audit(task)


def _fault(name: str) -> None:
    for item in os.environ.get(FAULT_ENV, "").split(","):
        model, _, what = item.partition("=")
        if model and model == name:
            if what == "abort":
                os.abort()
            if what == "hang":
                time.sleep(1e6)


def main(fd: int) -> int:
    """Serve tasks until the parent closes the connection."""
    from fuselens.core.runtime.runner import RunnerProcess

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the parent's: it stops this process itself
    exit_with_parent()  # a hanging model would keep an orphaned worker forever
    conn = Connection(fd)
    with RunnerProcess() as runner:
        while True:
            try:
                task = conn.recv()
            except (EOFError, OSError):
                break
            start = time.perf_counter()

            def stage(text: str, task: AuditTask = task) -> None:
                conn.send(("stage", text))
                if text == "fusing":
                    _fault(task.name)

            try:
                row = audit_model(task, stage, runner)
            except Exception as e:  # a bug on one model is that model's row, not the audit's end
                where = traceback.extract_tb(e.__traceback__)[-1]
                row = failed_row(task, "error", f"{type(e).__name__}: {str(e).strip()[:300]} "
                                 f"(at {os.path.basename(where.filename)}:{where.lineno})",
                                 time.perf_counter() - start)
            conn.send(("row", row))
    conn.close()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.exit(main(int(sys.argv[1])))
