"""Workers: results and errors arrive on the GUI thread; cancel is honoured between steps."""

from __future__ import annotations

import gc
import threading
import time
import weakref
from itertools import pairwise

from PySide6.QtCore import QObject, QTimer

from fuselens.core.errors import FuseLensError
from fuselens.gui.workers import WorkerPool, run_in_slices


def test_nothing_starts_after_shutdown(qtbot):
    """A timer or a queued callback of a closed window (the after pane's layout, asked once the match list is
    filled) may still ask for a task: no thread may start that would outlive the window."""
    pool = WorkerPool()
    started, late = threading.Event(), []
    assert pool.shutdown()
    QTimer.singleShot(0, lambda: late.append(pool.start("a", "late", lambda progress, cancelled: started.set(),
                                                        on_finished=lambda _v: None, on_error=lambda _t: None)))
    qtbot.waitUntil(lambda: bool(late))
    time.sleep(0.05)
    assert pool.pool.activeThreadCount() == 0 and not started.is_set() and late[0].is_cancelled and not pool.busy()


def test_result_error_and_cancel(qtbot):
    pool = WorkerPool()
    got, errors, gui_thread = [], [], threading.current_thread()

    def on_result(value):
        got.append((value, threading.current_thread() is gui_thread))

    pool.start("a", "sum", lambda progress, cancelled: sum(range(10)), on_finished=on_result, on_error=errors.append)
    qtbot.waitUntil(lambda: not pool.busy())
    assert got == [(45, True)]

    def bad(progress, cancelled):
        raise FuseLensError("model.pb: truncated")

    pool.start("a", "bad", bad, on_finished=on_result, on_error=errors.append)
    qtbot.waitUntil(lambda: not pool.busy())
    assert errors == ["model.pb: truncated"]

    steps = []

    def long_task(progress, cancelled):
        while not cancelled():
            steps.append(1)
            progress(f"step {len(steps)}")
            time.sleep(0.005)
        return "finished anyway"

    worker = pool.start("b", "long", long_task, on_finished=on_result, on_error=errors.append)
    qtbot.waitUntil(lambda: len(steps) > 3)
    pool.cancel_all()
    assert pool.shutdown(5000)
    qtbot.wait(20)
    assert worker.is_cancelled and got == [(45, True)] and errors == ["model.pb: truncated"]


def test_a_newer_task_in_the_same_slot_supersedes_the_older(qtbot):
    pool = WorkerPool()
    got = []
    release = threading.Event()

    def slow(progress, cancelled):
        release.wait(5)
        return "old"

    pool.start("layout", "old", slow, on_finished=got.append, on_error=got.append)
    pool.start("layout", "new", lambda p, c: "new", on_finished=got.append, on_error=got.append)
    release.set()
    qtbot.waitUntil(lambda: not pool.busy())
    assert pool.pool.waitForDone(5000)
    qtbot.wait(20)
    assert got == ["new"]


def test_tasks_of_one_slot_never_overlap_and_only_the_newest_waiting_one_runs(qtbot):
    pool = WorkerPool()
    running, overlaps, finished, cancelled = [], [], [], []
    release = threading.Event()

    def task(label):
        def run(progress, is_cancelled):
            running.append(label)
            overlaps.append(len(running) > 1)
            if label == "first":
                release.wait(5)  # ignores cancel, as a TensorFlow import in progress does
            running.remove(label)
            return label
        return run

    for label in ("first", "second", "third"):
        pool.start("tf", label, task(label), on_finished=finished.append, on_error=finished.append,
                   on_cancelled=lambda label=label: cancelled.append(label))
    qtbot.wait(50)
    assert running == ["first"]  # the others wait for it to end
    release.set()
    qtbot.waitUntil(lambda: not pool.busy())
    assert pool.pool.waitForDone(5000)
    assert finished == ["third"] and sorted(cancelled) == ["first", "second"] and not any(overlaps)


def test_timers_run_between_every_two_slices(qtbot):
    """A due timer (a repaint, an animation, a heartbeat) runs between a list's slices of GUI work, also
    with two lists of slices at once: else the window stalls for several slices."""
    events: list[str] = []
    heartbeat = QTimer(interval=5)
    heartbeat.timeout.connect(lambda: events.append("tick"))
    context, finished = QObject(), []

    def slow_steps(name: str):
        for _ in range(6):
            end = time.perf_counter() + 0.012  # one step a slice, each longer than the heartbeat's interval
            while time.perf_counter() < end:
                pass
            events.append(name)
            yield

    heartbeat.start()
    for name in ("a", "b"):
        run_in_slices(context, slow_steps(name), seconds=0.001, at_least=1, current=lambda: True,
                      done=lambda name=name: finished.append(name))
    qtbot.waitUntil(lambda: len(finished) == 2, timeout=5000)
    heartbeat.stop()
    assert events.count("a") == events.count("b") == 6
    for name in ("a", "b"):  # the first slice runs inside run_in_slices, each later one after a tick
        slices = [i for i, event in enumerate(events) if event == name]
        assert all("tick" in events[before + 1:after] for before, after in pairwise(slices)), events


def test_a_task_that_ended_lets_go_of_what_it_held(qtbot):
    """A finished, failed or superseded task frees what it and its handlers held (in the window: a model and
    its fused graph). PySide's QThreadPool kept every QRunnable it had run, and the handlers' connections
    made a cycle through Qt that the garbage collector cannot see: ~25 MB per MobileNetV2 opened."""
    pool = WorkerPool()

    class Held:
        pass

    def run(outcome: str) -> weakref.ref:
        held = Held()

        def task(progress, cancelled):
            progress(f"holding {held}")
            if outcome == "error":
                raise FuseLensError("bad")
            while outcome == "cancel" and not cancelled():
                time.sleep(0.002)
            return held

        pool.start("a", outcome, task, on_finished=lambda value: (held, value), on_error=lambda text: (held, text),
                   on_cancelled=lambda: held, on_progress=lambda text: (held, text))
        if outcome == "cancel":
            pool.cancel_all()
        return weakref.ref(held)

    refs = [run(outcome) for outcome in ("finish", "error", "cancel")]
    qtbot.waitUntil(lambda: not pool.busy())
    assert pool.shutdown(5000)
    qtbot.wait(20)
    gc.collect()
    assert [ref() is None for ref in refs] == [True, True, True]


class _Part:
    """An object of attributes, as a pipeline or a graph is."""

    def __init__(self, size: int):
        self.rows = [_Leaf() for _ in range(size)]
        self.table = {f"n{i}": (i, i + 1) for i in range(size)}


class _Leaf:
    pass


def test_the_releaser_frees_an_object_in_pieces_once_nothing_else_holds_it(qtbot, monkeypatch):
    """A big object let go is freed a piece per step, no step freeing more than RELEASE_PIECE entries of one
    container, and only once the releaser is its last holder: while a pane still holds it, it stays whole."""
    import fuselens.gui.workers as workers

    monkeypatch.setattr(workers, "RELEASE_POLL_S", 0.01)
    pool = WorkerPool()
    big = _Part(3 * workers.RELEASE_PIECE)
    freed, rows = weakref.ref(big), [weakref.ref(row) for row in big.rows]
    still_held = [big]  # another holder (a pane still drawing from it)
    pool.releaser.release(big)
    del big
    qtbot.wait(100)
    assert freed() is not None and all(row() is not None for row in rows)  # whole while held elsewhere
    alive: list[int] = []
    real_taken_apart = workers._taken_apart

    def counted(root):
        for step in real_taken_apart(root):
            yield step
            alive.append(sum(row() is not None for row in rows))

    monkeypatch.setattr(workers, "_taken_apart", counted)
    still_held.clear()
    qtbot.waitUntil(lambda: freed() is None, timeout=5000)
    assert pool.releaser.holding == 0 and not any(row() for row in rows)
    drops = [before - after for before, after in pairwise([len(rows), *alive])]
    assert max(drops) <= workers.RELEASE_PIECE and sum(1 for d in drops if d) >= 3  # a piece a step
    pool.shutdown()


def test_the_releaser_lets_go_of_an_object_still_held_elsewhere_after_a_while(qtbot, monkeypatch):
    """One still held after RELEASE_WAIT_S is dropped as it is: its other holder's object is left whole."""
    import fuselens.gui.workers as workers

    monkeypatch.setattr(workers, "RELEASE_POLL_S", 0.01)
    monkeypatch.setattr(workers, "RELEASE_WAIT_S", 0.05)
    pool = WorkerPool()
    size = 3 * workers.RELEASE_PIECE
    kept = _Part(size)
    pool.releaser.release(kept, None)
    qtbot.waitUntil(lambda: pool.releaser.holding == 0, timeout=5000)
    assert len(kept.rows) == size and len(kept.table) == size
    pool.shutdown()
    assert not any(thread.name == "fuselens-releaser" for thread in threading.enumerate())
