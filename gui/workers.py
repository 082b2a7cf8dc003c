"""Off-GUI-thread work (load, layout, fuse) with progress, cancel, and results back on the GUI thread.

A task is a plain function `fn(progress, cancelled) -> result`; it reports with `progress(text)`
and checks `cancelled()` between steps. Signals are emitted from the pool thread and delivered
queued to the GUI thread, so slots never run concurrently with the widgets.
"""

from __future__ import annotations

import gc
import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from PySide6.QtCore import QObject, QThreadPool, QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QToolButton, QWidget

from fuselens.core.errors import Cancelled, FuseLensError

log = logging.getLogger(__name__)

Task = Callable[[Callable[[str], None], Callable[[], bool]], Any]


def run_in_slices(context: QObject, steps: Iterator[object], *, seconds: float, at_least: int,
                  current: Callable[[], bool], done: Callable[[], None]) -> None:
    """GUI-thread work too big for one go (a scene's items, a list's rows): `steps` run about `seconds`
    at a time (at least `at_least` steps a slice), the event loop runs between slices, and `done()`
    follows the last step. Newer work replacing this one makes `current()` false: the rest is dropped.

    The next slice waits on a 1 ms timer, not `QTimer.singleShot(0, ...)`: that one is a posted call,
    which Qt delivers ahead of due timers, so timers (a heartbeat, an animation) ran only every second
    slice, every fourth with two lists of slices at once (tests/gui/test_workers.py).
    """
    if not current():
        return
    deadline = time.perf_counter() + seconds
    for count, _step in enumerate(steps, 1):
        if count >= at_least and time.perf_counter() > deadline:
            QTimer.singleShot(1, context, lambda: run_in_slices(context, steps, seconds=seconds, at_least=at_least,
                                                                current=current, done=done))
            return
    done()


def frozen_as_made(steps: Iterator[None], every: int) -> Iterator[None]:
    """GUI-thread steps that make lasting objects (a scene build's items, the matches' explanations), what was made
    so far taken out of the collector's view every `every` steps and at the end, as the pane does with the graph
    and layout it shows (Pane._show; unfrozen at the next model). Built unfrozen, the 100k graph's 45k items made
    each full collection walk them all: 80-170 ms, one after another, in the build's slices and in the workers
    beside them; its 15k explanations set off one of 150 ms."""
    for count, step in enumerate(steps, 1):
        if count % every == 0:
            gc.freeze()
        yield step
    gc.freeze()


# Releaser: how many entries of a container go in one piece, the pause after each, how often it looks whether the
# objects it holds are held elsewhere too, and for how long.
RELEASE_PIECE = 2000
RELEASE_PAUSE_S = 0.005  # after each piece (taken apart without a pause, the 20k graph's Expand all stalled 2x longer)
RELEASE_POLL_S = 0.1
RELEASE_WAIT_S = 30.0


class Releaser:
    """Big Qt-free objects the window lets go of (a superseded pipeline, the fused graph and layout a pane showed),
    freed a piece at a time on a thread of their own. Dropped at once on the GUI thread, on the 100k-node graph each
    one's freeing was one deallocation run of 15-90 ms with the interpreter lock held (a pipeline's 15k matches and
    explanations, a graph's tables): a GUI-thread stall after each fusion. Freed in pieces, the interpreter lock
    changes hands between them; freed in the GUI thread's slices instead, the checks cost more than the freeing.

    An object is taken apart only once this releaser holds the only reference to it (a pane or the view may still
    draw from it for a moment); one still held elsewhere after RELEASE_WAIT_S is let go as it is, for its last holder
    to free. Nothing with a Qt object in it: those must go on the GUI thread."""

    def __init__(self) -> None:
        self._held: list[tuple[object, float]] = []
        self._lock = threading.Condition()
        self._stopped = False
        self._thread: threading.Thread | None = None

    def release(self, *objects: object) -> None:
        """Let go of these (None is skipped): freed in pieces once nothing else holds them."""
        deadline = time.monotonic() + RELEASE_WAIT_S
        with self._lock:
            if self._stopped:
                return
            self._held.extend((held, deadline) for held in objects if held is not None)
            if self._held and self._thread is None:
                self._thread = threading.Thread(target=self._run, name="fuselens-releaser", daemon=True)
                self._thread.start()
            self._lock.notify()

    @property
    def holding(self) -> int:
        """How many objects wait to be freed."""
        with self._lock:
            return len(self._held)

    def stop(self, timeout_s: float = 5.0) -> None:
        """Free what is held as it is and end the thread (the window closes)."""
        with self._lock:
            self._stopped = True
            self._held.clear()
            self._lock.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout_s)

    def _run(self) -> None:
        while True:
            with self._lock:
                if self._stopped:
                    self._thread = None
                    return
                batch, self._held = self._held, []
            waiting = []
            while batch:
                held, deadline = batch.pop()
                alone = sys.getrefcount(held) <= _SOLE_REFERENCES  # `held` is its only reference
                if alone and _has_parts(held, among_few=True):
                    for _ in _taken_apart(held):
                        time.sleep(RELEASE_PAUSE_S)  # the GUI thread's turn: beside a busy thread its Qt calls wait
                elif not alone and time.monotonic() < deadline:
                    waiting.append((held, deadline))
                del held
            with self._lock:
                arrived = bool(self._held)
                self._held.extend(waiting)
                if not arrived and not self._stopped:  # look again in a while at those held elsewhere
                    self._lock.wait(RELEASE_POLL_S if waiting else None)


def _has_parts(value: object, *, among_few: bool = False) -> bool:
    """Whether `value` is worth taking apart: a big dict or list (any one among few: an object's attributes, a
    pipeline's list of pass results), or an object (not a class) among few with such a list or dict among its own
    attributes (a graph, a pass's result). The entries of a big list or dict are freed whole, unless they are big
    lists or dicts themselves: looking into each of them (the 100k graph's 15k matches, a layout's boxes) cost more
    than freeing them."""
    if isinstance(value, (dict, list)):
        return len(value) > (0 if among_few else RELEASE_PIECE // 10)
    attributes = getattr(value, "__dict__", None) if among_few else None
    return isinstance(attributes, dict) and not isinstance(value, type) and any(
        isinstance(part, (dict, list)) and len(part) > RELEASE_PIECE // 10 for part in attributes.values())


def _references_of_a_sole_local() -> int:
    """What sys.getrefcount reports for an object that only a local name holds (the count includes its own
    argument, and the interpreter has counted one more or not across versions)."""
    probe = object()
    return sys.getrefcount(probe)


_SOLE_REFERENCES = _references_of_a_sole_local()


def _taken_apart(root: object) -> Iterator[None]:
    """Steps that free `root` (held by nothing else) a piece at a time: the entries of each big dict or list, and
    the attributes of each object, held by nothing but what is taken apart, RELEASE_PIECE a step, depth first.
    What has neither (an array, a protobuf message, a tuple) is freed whole, as it is let go."""
    stack = [root]
    del root
    while stack:
        held = stack[-1]
        entries = held if isinstance(held, (dict, list)) else vars(held)
        if not entries:
            stack.pop()
            del held, entries
            continue
        few = len(entries) <= RELEASE_PIECE // 10
        for _ in range(min(RELEASE_PIECE, len(entries))):
            value = entries.pop() if isinstance(entries, list) else entries.popitem()[1]
            if sys.getrefcount(value) <= _SOLE_REFERENCES and _has_parts(value, among_few=few):
                stack.append(value)
            del value
        del held, entries
        yield


_PAUSE_LOCK = threading.Lock()
_pausing = 0  # collection_paused() blocks running


@contextmanager
def collection_paused() -> Iterator[None]:
    """No cyclic garbage collection while a worker lays a big graph out or fuses it; what is alive at the end is
    frozen (gc.freeze) before collection resumes, as the pane freezes a layout it shows anyway. A full collection
    walks every object not frozen, the layout being made among them: on the 100k graph, Expand all's worker
    set off four of 160-240 ms, and each held the interpreter lock, the GUI thread stalled. Layouts and
    fusions hold no reference cycles (tests/passes/test_pipeline_cycles.py), so what they drop is still freed;
    what is frozen is unfrozen at the next model."""
    global _pausing
    with _PAUSE_LOCK:
        _pausing += 1
        if _pausing == 1:
            gc.disable()
    try:
        yield
    finally:
        with _PAUSE_LOCK:
            _pausing -= 1
            if _pausing == 0:
                gc.freeze()  # before enable(): else the first young collection walks everything made meanwhile
                gc.enable()


class WorkerSignals(QObject):
    started = Signal()
    progress = Signal(str)
    finished = Signal(object)  # the task's result
    errored = Signal(str)  # one line for the user
    cancelled = Signal()


class Worker:
    """Runs one task on a pool thread. `cancel()` sets a flag the task polls between steps.

    Not a QRunnable: PySide's QThreadPool.start(runnable) keeps a reference to every runnable it was
    given, for the pool's life, so each worker and what its task held (a model, its fused graph) stayed
    alive. The pool is given the bound `run` instead, which it lets go when it has run.
    """

    def __init__(self, name: str, task: Task):
        self.name = name
        self.task = task
        self.signals = WorkerSignals()
        self._cancel = False

    def cancel(self) -> None:
        self._cancel = True

    @property
    def is_cancelled(self) -> bool:
        return self._cancel

    def run(self) -> None:
        signals = self.signals
        signals.started.emit()
        try:
            result = self.task(signals.progress.emit, lambda: self._cancel)
        except FuseLensError as e:
            signals.errored.emit(str(e))
            return
        except Cancelled:
            signals.cancelled.emit()
            return
        except Exception as e:  # any failure in a worker must reach the user, not kill the thread
            if self._cancel:
                signals.cancelled.emit()
                return
            log.error("%s failed:\n%s", self.name, traceback.format_exc())
            signals.errored.emit(f"{self.name} failed: {type(e).__name__}: {e}")
            return
        if self._cancel:
            signals.cancelled.emit()
        else:
            signals.finished.emit(result)


class WorkerPool(QObject):
    """The window's workers, one lane per slot ("load", "tf", "layout-before", ...).

    A slot runs one task at a time: a new task cancels the running one and starts only when that
    one has ended, replacing any task still waiting. Work in one slot therefore never overlaps,
    which is what TensorFlow needs (two graph imports at once in one process crash it), and a
    superseded task's result is dropped (its `on_finished` is not called).
    """

    busy_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(3)
        self._running: dict[str, Worker] = {}
        self._waiting: dict[str, Worker] = {}
        self._shut = False  # after shutdown nothing starts (see start)
        self.releaser = Releaser()  # what the workers' results replace is freed in pieces

    def start(self, slot: str, name: str, task: Task, *, on_finished: Callable[[Any], None],
              on_error: Callable[[str], None], on_progress: Callable[[str], None] | None = None,
              on_cancelled: Callable[[], None] | None = None) -> Worker:
        """Queue `task` in `slot`; `on_cancelled` runs when this task is cancelled or superseded.

        After `shutdown` the task never starts (it is returned cancelled): a timer or a queued callback of the
        closed window asking for its next task must not start a thread that outlives the window.
        """
        worker = Worker(name, task)
        if self._shut:
            worker.cancel()
            return worker

        def done(handler: Callable[..., None] | None, *args: Any) -> None:
            # The connections below hold this function, which holds the worker and its task (a model, its
            # fused graph): a reference cycle through Qt's connections, which the garbage collector cannot
            # see, so every worker and what its task held stayed alive (~25 MB per MobileNetV2 opened).
            for connection in connections:
                QObject.disconnect(connection)
            if self._running.get(slot) is worker:
                del self._running[slot]
                waiting = self._waiting.pop(slot, None)
                if waiting is not None:
                    self._launch(slot, waiting)
            self.busy_changed.emit(self.busy())
            if worker.is_cancelled:  # a superseded worker's result is stale
                handler = on_cancelled
                args = ()
            if handler is not None:
                handler(*args)

        signals = worker.signals
        connections = [signals.finished.connect(lambda result: done(on_finished, result)),
                       signals.errored.connect(lambda text: done(on_error, text)),
                       signals.cancelled.connect(lambda: done(on_cancelled))]
        if on_progress is not None:
            connections.append(signals.progress.connect(on_progress))
        # The window's busy indicator first: its Python slots, run after the worker had started, each
        # waited for the interpreter lock that worker held (~100 ms when a 20k-node model began loading).
        self.busy_changed.emit(True)
        if slot in self._running:
            self._running[slot].cancel()
            self._drop_waiting(slot)
            self._waiting[slot] = worker
        else:
            self._launch(slot, worker)
        return worker

    def _launch(self, slot: str, worker: Worker) -> None:
        self._running[slot] = worker
        self.pool.start(worker.run)

    def busy(self) -> bool:
        return bool(self._running or self._waiting)

    def running(self, slot: str) -> bool:
        """Whether a task of `slot` runs or waits to."""
        return slot in self._running or slot in self._waiting

    def _drop_waiting(self, slot: str) -> None:
        """A task that never started is told it was cancelled, like one that had."""
        waiting = self._waiting.pop(slot, None)
        if waiting is not None:
            waiting.cancel()
            waiting.signals.cancelled.emit()

    def cancel_all(self) -> None:
        for slot in list(self._waiting):
            self._drop_waiting(slot)
        for worker in self._running.values():
            worker.cancel()

    def shutdown(self, timeout_ms: int = 30000) -> bool:
        """Cancel everything and wait for the threads; True when none is left running. Nothing starts after."""
        self._shut = True
        self.cancel_all()
        self.releaser.stop()
        return self.pool.waitForDone(timeout_ms)


class WorkIndicator(QWidget):
    """A busy bar and a Cancel button for the status bar, shown while the pool has work."""

    def __init__(self, pool: WorkerPool, parent: QWidget | None = None):
        super().__init__(parent)
        self.progress = QProgressBar(self)
        self.progress.setRange(0, 0)
        self.progress.setMaximumWidth(160)
        self.cancel_button = QToolButton(self)
        self.cancel_button.setText("Cancel")
        self.cancel_button.clicked.connect(pool.cancel_all)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.progress)
        layout.addWidget(self.cancel_button)
        pool.busy_changed.connect(self.setVisible)
        self.hide()
