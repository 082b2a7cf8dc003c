"""Run an audit's tasks: N worker processes on this machine, or the same tasks on a Dask cluster.

Either way each model runs in a worker process of its own (session/audit/worker.py), and rows come back
as models finish; `on_row` and `on_stage` are called from the pool's threads. `cancelled()` turning
true (Ctrl+C) stops the models in flight: the rows done so far are the audit's.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

from fuselens.core.errors import FuseLensError
from fuselens.session.audit.model import AuditTask
from fuselens.session.audit.worker import AuditWorker, Interrupted, audit_isolated

Row = dict[str, Any]


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def run_local(tasks: Sequence[AuditTask], jobs: int, *, on_row: Callable[[int, Row], None],
              on_stage: Callable[[int, str], None] = lambda i, s: None,
              cancelled: Callable[[], bool] = lambda: False) -> None:
    """`jobs` threads, each with its worker process, take the tasks in order; `on_row(index, row)` as each ends."""
    pending: queue.Queue[int] = queue.Queue()
    for i in range(len(tasks)):
        pending.put(i)
    errors: list[BaseException] = []
    interrupted = threading.Event()

    def stopped() -> bool:
        return interrupted.is_set() or cancelled()

    def work(finished: threading.Event) -> None:
        try:
            serve()
        finally:
            finished.set()

    def serve() -> None:
        with AuditWorker() as worker:
            while not stopped():
                try:
                    i = pending.get_nowait()
                except queue.Empty:
                    return
                try:
                    row = worker.audit(tasks[i], on_stage=lambda text, i=i: on_stage(i, text), cancelled=stopped)
                except Interrupted:
                    return
                except BaseException as e:  # the thread's failure is the caller's, not a silent lost row
                    errors.append(e)
                    return
                on_row(i, row)

    # Each thread sets its event once its worker process is gone. Waited on instead of Thread.join: a join
    # that Ctrl+C interrupts can leave the thread counted as ended while it runs (and its worker with it).
    finished = [threading.Event() for _ in range(max(1, min(jobs, len(tasks))))]
    for n, event in enumerate(finished):
        threading.Thread(target=work, args=(event,), name=f"fuselens-audit-{n}", daemon=True).start()
    try:
        _wait_all(finished)
    except KeyboardInterrupt:  # Ctrl+C: the models in flight stop, their workers with them
        interrupted.set()
        _wait_all(finished)
        raise
    if errors:
        raise errors[0]


def _wait_all(events: Sequence[threading.Event]) -> None:
    for event in events:
        while not event.wait(0.2):
            continue


def run_dask(tasks: Sequence[AuditTask], scheduler: str, *, on_row: Callable[[int, Row], None],
             on_stage: Callable[[int, str], None] = lambda i, s: None,
             cancelled: Callable[[], bool] = lambda: False) -> None:
    """The same per-model tasks sent to the Dask scheduler at `scheduler`; each runs `audit_isolated`
    there, so a model that kills TensorFlow kills a worker process of the audit's, not the Dask worker."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise FuseLensError("--scheduler needs Dask distributed (pip install 'fuselens[cluster]')") from None
    try:
        client = Client(scheduler, timeout=30)
    except (OSError, TimeoutError, ValueError) as e:
        raise FuseLensError(f"cannot reach the Dask scheduler at {scheduler} ({str(e).splitlines()[0][:200]})") \
            from None
    with client:
        futures = {client.submit(audit_isolated, task, key=f"fuselens-audit-{i}-{task.name}", pure=False,
                                 retries=0): i for i, task in enumerate(tasks)}
        for i in futures.values():
            on_stage(i, f"sent to {scheduler}")
        try:
            for future in as_completed(list(futures)):
                if cancelled():
                    client.cancel(list(futures))
                    return
                on_row(futures[future], _dask_row(tasks[futures[future]], future))
        except KeyboardInterrupt:
            client.cancel(list(futures))
            raise


def _dask_row(task: AuditTask, future: Any) -> Row:
    try:
        return future.result()
    except Exception as e:  # the Dask worker itself died under the task, or the task could not be sent
        return {"model": task.name, "spec": task.spec, "status": "crashed",
                "reason": f"crashed: the Dask task failed ({type(e).__name__}: {str(e)[:200]})", "seconds": 0.0}
