"""A seeded chaos driver: the window's own actions in random order, as fast as the event loop takes them.

    driver = Chaos(window, seed=7, files=ChaosFiles.make(tmp))
    report = driver.run(200)

Each step picks one action: trigger an enabled QAction of the window (menus, toolbars, panels;
Quit excepted; File > Open pass file… and the pass templates among them, file dialogs offering the
shipped ge.passes templates too), open a sample or a file (good ones and bad ones: random bytes, a truncated .pb,
an empty file, a folder, a missing path), toggle a checkbox or pick a combo entry of a panel,
resize the window, show or hide a dock, type in the find box. Every dialog answers at once from
the seeded pool (file dialogs pick a path, message boxes are recorded, input dialogs return a
random item, other modal dialogs close), so nothing blocks. Between steps the event loop runs for
a slice of the seeded budget; now and then the driver waits until the window is idle.

The report counts the actions by kind, the exceptions that reached `sys.excepthook` and the
warnings Qt printed, and the longest GUI-thread stall (the widest gap between two ticks of a
5 ms heartbeat timer). A failing seed is replayed from the line the driver logs
(`benchmarks/bench_chaos.py --seed S --actions N`); `log` lists every step taken.
"""

from __future__ import annotations

import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import QElapsedTimer, QEventLoop, QTimer, qInstallMessageHandler
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDockWidget,
    QFileDialog,
    QInputDialog,
    QLineEdit,
    QMessageBox,
)

from fuselens.core.formats.samples import SAMPLES, sample_path
from fuselens.gui.py_passes import pass_templates

# Actions a chaos run never takes: they end the application or wait on the user's desktop.
SKIPPED_ACTIONS = frozenset({"Quit"})
HEARTBEAT_MS = 5


@dataclass
class ChaosFiles:
    """The paths file dialogs answer with: models that load, inputs that must be refused, output paths."""

    good: list[str]
    bad: list[str]
    out_dir: Path
    samples: tuple[str, ...]  # the built-in samples `open` picks from (the small ones: no model build)
    passes: tuple[str, ...] = ()  # ge.passes files (File > Open pass file…; a model dialog refuses them)

    @classmethod
    def make(cls, root: Path, files: tuple[str, ...] = ("demo", "abs_relu_exp", "conv_bn")) -> ChaosFiles:
        root.mkdir(parents=True, exist_ok=True)
        good = []
        for name in files:
            path = root / f"{name}.pb"
            path.write_bytes(sample_path(name).read_bytes())
            good.append(str(path))
        data = Path(good[0]).read_bytes()
        (root / "random.pb").write_bytes(random.Random(0).randbytes(4096))
        (root / "truncated.pb").write_bytes(data[: len(data) // 2])
        (root / "empty.pb").write_bytes(b"")
        (root / "text.json").write_text('{"not": "a profile"}')
        (root / "folder").mkdir(exist_ok=True)
        bad = [str(root / n) for n in ("random.pb", "truncated.pb", "empty.pb", "text.json", "folder", "missing.pb")]
        out = root / "out"
        out.mkdir(exist_ok=True)
        passes = []
        for template in pass_templates():
            passes.append(str(root / template.name))
            (root / template.name).write_text(template.read_text())
        return cls(good, bad, out, tuple(name for name, sample in SAMPLES.items() if not sample.cached),
                   tuple(passes))


@dataclass
class ChaosReport:
    seed: int
    actions: int
    kinds: Counter = field(default_factory=Counter)
    exceptions: list[str] = field(default_factory=list)
    qt_warnings: list[str] = field(default_factory=list)
    stuck: list[str] = field(default_factory=list)  # waits for an idle window that timed out, and what was busy
    longest_stall_ms: float = 0.0
    seconds: float = 0.0
    log: list[str] = field(default_factory=list)

    @property
    def replay(self) -> str:
        return f"python benchmarks/bench_chaos.py --seed {self.seed} --actions {self.actions}"

    def summary(self) -> str:
        rate = self.actions / self.seconds if self.seconds else 0.0
        return (f"seed {self.seed}: {self.actions} actions in {self.seconds:.1f} s ({rate:.1f}/s), "
                f"longest stall {self.longest_stall_ms:.0f} ms, {len(self.exceptions)} exceptions, "
                f"{len(self.qt_warnings)} Qt warnings, {len(self.stuck)} never idle; kinds {dict(self.kinds)}")


class Chaos:
    def __init__(self, window: Any, seed: int, files: ChaosFiles, *, budget_ms: int = 30,
                 idle_every: int = 25, idle_timeout_s: float = 60.0):
        self.window, self.seed, self.files = window, seed, files
        self.rng = random.Random(seed)
        self.budget_ms, self.idle_every, self.idle_timeout_s = budget_ms, idle_every, idle_timeout_s
        self.report = ChaosReport(seed, 0)
        self._last_tick = 0.0
        self._clock = QElapsedTimer()

    # ---- the run -----------------------------------------------------------------------
    def run(self, actions: int) -> ChaosReport:
        self.report.actions = actions
        start = time.perf_counter()
        with self._answering_dialogs(), self._recording_errors(), self._heartbeat():
            for step in range(actions):
                kind, what, act = self._pick()
                self.report.kinds[kind] += 1
                self.report.log.append(f"{step}: {kind} {what}")
                began = time.perf_counter()
                try:
                    act()
                except Exception as e:  # an action's own exception is a finding, like one in a slot
                    self.report.exceptions.append(f"step {step} ({kind} {what}): {type(e).__name__}: {e}")
                self._spin(self.rng.randint(0, self.budget_ms))
                if (step + 1) % self.idle_every == 0:
                    self._wait_idle()
                self.report.log[-1] += f" ({(time.perf_counter() - began) * 1000:.0f} ms)"
            self._wait_idle()
        self.report.seconds = time.perf_counter() - start
        return self.report

    def _pick(self) -> tuple[str, str, Callable[[], object]]:
        choices: list[tuple[str, Callable[[], tuple[str, Callable[[], object]]]]] = [
            ("action", self._an_action), ("action", self._an_action), ("action", self._an_action),
            ("open", self._an_open), ("toggle", self._a_checkbox), ("combo", self._a_combo),
            ("resize", self._a_resize), ("dock", self._a_dock), ("find", self._a_find),
        ]
        kind, chooser = self.rng.choice(choices)
        what, act = chooser()
        return kind, what, act

    # ---- the actions ---------------------------------------------------------------------
    def _an_action(self) -> tuple[str, Callable[[], object]]:
        actions = [a for a in self.window.findChildren(QAction)
                   if a.text() and a.isEnabled() and a.menu() is None and a.text() not in SKIPPED_ACTIONS
                   and not _in_plot_menu(a)]
        if not actions:
            return "none enabled", lambda: None
        action = self.rng.choice(sorted(actions, key=lambda a: a.text()))
        return action.text(), action.trigger

    def _an_open(self) -> tuple[str, Callable[[], object]]:
        spec = self.rng.choice([*self.files.samples, *self.files.good, *self.files.bad])
        return spec, lambda: self.window.open_model(spec)

    def _a_checkbox(self) -> tuple[str, Callable[[], object]]:
        boxes = [b for b in self.window.findChildren(QCheckBox) if b.isEnabled() and b.isVisible()]
        if not boxes:
            return "none visible", lambda: None
        box = self.rng.choice(sorted(boxes, key=lambda b: b.text()))
        return box.text(), box.click

    def _a_combo(self) -> tuple[str, Callable[[], object]]:
        combos = [c for c in self.window.findChildren(QComboBox) if c.isEnabled() and c.isVisible() and c.count()]
        if not combos:
            return "none visible", lambda: None
        combo = self.rng.choice(combos)
        index = self.rng.randrange(combo.count())
        return f"{combo.objectName() or type(combo).__name__} -> {combo.itemText(index)}", \
            lambda: combo.setCurrentIndex(index)

    def _a_resize(self) -> tuple[str, Callable[[], object]]:
        width, height = self.rng.randint(640, 1600), self.rng.randint(420, 1000)
        return f"{width}x{height}", lambda: self.window.resize(width, height)

    def _a_dock(self) -> tuple[str, Callable[[], object]]:
        docks = self.window.findChildren(QDockWidget)
        if not docks:
            return "no docks", lambda: None
        dock = self.rng.choice(sorted(docks, key=lambda d: d.windowTitle()))
        return dock.windowTitle(), lambda: dock.setVisible(not dock.isVisible())

    def _a_find(self) -> tuple[str, Callable[[], object]]:
        edits = [e for e in self.window.findChildren(QLineEdit) if e.isEnabled() and e.isVisible()]
        if not edits:
            return "no line edit", lambda: None
        edit = self.rng.choice(edits)
        text = self.rng.choice(["conv", "bn", "Relu", "autofuse", "", "zzz", "/", "*"])
        return f"{edit.placeholderText() or type(edit).__name__} <- {text!r}", lambda: edit.setText(text)

    # ---- the event loop ----------------------------------------------------------------
    def _spin(self, ms: int) -> None:
        loop = QEventLoop()
        QTimer.singleShot(ms, loop.quit)
        loop.exec()

    def _wait_idle(self) -> None:
        deadline = time.monotonic() + self.idle_timeout_s
        while not self.window.is_idle() and time.monotonic() < deadline:
            self._spin(20)
        if not self.window.is_idle():  # a hang: work the window waits for that nothing will do
            self.report.stuck.append(f"after {self.report.log[-1] if self.report.log else 'the start'}: "
                                     f"not idle in {self.idle_timeout_s:.0f} s "
                                     f"({', '.join(self.window.work_under_way()) or 'only the memory timer'})")

    @contextmanager
    def _heartbeat(self) -> Iterator[None]:
        timer = QTimer()
        timer.setInterval(HEARTBEAT_MS)
        self._clock.start()
        self._last_tick = 0.0

        def tick() -> None:
            now = self._clock.elapsed()
            self.report.longest_stall_ms = max(self.report.longest_stall_ms, now - self._last_tick)
            self._last_tick = now

        timer.timeout.connect(tick)
        timer.start()
        try:
            yield
        finally:
            timer.stop()

    # ---- dialogs and errors ------------------------------------------------------------
    @contextmanager
    def _answering_dialogs(self) -> Iterator[None]:
        rng, files = self.rng, self.files

        def open_name(*_args: Any, **_kwargs: Any) -> tuple[str, str]:
            return rng.choice([*files.good, *files.bad, *files.passes, ""]), ""

        def open_names(*_args: Any, **_kwargs: Any) -> tuple[list[str], str]:
            return rng.sample([*files.good, *files.bad], rng.randint(0, 2)), ""

        def save_name(*args: Any, **_kwargs: Any) -> tuple[str, str]:
            name = str(args[3]) if len(args) > 3 else "export"
            return rng.choice([str(files.out_dir / Path(name or "export").name), str(files.out_dir), ""]), ""

        def directory(*_args: Any, **_kwargs: Any) -> str:
            return rng.choice([str(files.out_dir), files.bad[-2], ""])

        def message(*_args: Any, **_kwargs: Any) -> QMessageBox.StandardButton:
            return QMessageBox.StandardButton.Ok

        def item(_parent: Any, _title: str, _label: str, items: list[str], *_args: Any, **_kwargs: Any
                 ) -> tuple[str, bool]:
            return (rng.choice(items) if items else ""), rng.random() < 0.7

        def text(*_args: Any, **kwargs: Any) -> tuple[str, bool]:
            return rng.choice([kwargs.get("text", ""), "ScopeLayerNormPass", "--enable_autofuse=true", "x,,y"]), \
                rng.random() < 0.7

        def dialog_exec(dialog: QDialog) -> int:
            QTimer.singleShot(0, dialog.reject)
            return QDialog.DialogCode.Rejected.value

        patches = [(QFileDialog, "getOpenFileName", staticmethod(open_name)),
                   (QFileDialog, "getOpenFileNames", staticmethod(open_names)),
                   (QFileDialog, "getSaveFileName", staticmethod(save_name)),
                   (QFileDialog, "getExistingDirectory", staticmethod(directory)),
                   (QInputDialog, "getItem", staticmethod(item)), (QInputDialog, "getText", staticmethod(text)),
                   (QDialog, "exec", dialog_exec)]
        patches += [(QMessageBox, kind, staticmethod(message)) for kind in ("critical", "warning", "information",
                                                                           "question")]
        saved = [(owner, name, owner.__dict__.get(name)) for owner, name, _ in patches]
        for owner, name, replacement in patches:
            setattr(owner, name, replacement)
        try:
            yield
        finally:
            for owner, name, original in saved:
                if original is None:
                    delattr(owner, name)
                else:
                    setattr(owner, name, original)

    @contextmanager
    def _recording_errors(self) -> Iterator[None]:
        previous_hook = sys.excepthook

        def hook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
            self.report.exceptions.append(f"{kind.__name__}: {value}")

        def qt_message(mode: Any, context: Any, message: str) -> None:
            if not message.startswith("This plugin does not support"):  # the offscreen platform's notices
                self.report.qt_warnings.append(message)

        sys.excepthook = hook
        previous_handler = qInstallMessageHandler(qt_message)
        try:
            yield
        finally:
            sys.excepthook = previous_hook
            qInstallMessageHandler(previous_handler)


def _in_plot_menu(action: QAction) -> bool:
    """pyqtgraph's own plot context-menu entries: they act on the item the right click that opened the
    menu hit (its scene's contextMenuItem), so out of that menu they are no user's action."""
    parent = action.parent()
    while parent is not None:
        if type(parent).__module__.startswith("pyqtgraph"):
            return True
        parent = parent.parent()
    return False


def leftovers(before_threads: set[int], grace_s: float = 10.0) -> list[str]:
    """Python threads and child processes still alive that were not there before, once the window has
    closed and `grace_s` has passed for them to end. Qt's pool threads show in Python as dummy threads
    that never end (the window's pool is checked for running workers instead, tests.gui.helpers); the
    process's one backend probe is waited for, and its one TensorFlow helper is shared by every window
    and stops when the process exits (benchmarks/bench_chaos.py checks that nothing outlives the process)."""
    import threading

    from fuselens.gui.run_panel import BACKEND_PROBE
    from fuselens.session.tensorflow_helper import shared_helper

    BACKEND_PROBE.wait(130.0)  # asked once per process; on a loaded machine it may still be importing TF
    helper = str(shared_helper().pid)
    deadline = time.monotonic() + grace_s
    while True:
        found = [f"thread {t.name}" for t in threading.enumerate()
                 if t.ident not in before_threads and t.is_alive() and not isinstance(t, threading._DummyThread)]
        found += [f"process {pid}: {command}" for pid, command in _children() if pid != helper]
        if not found or time.monotonic() > deadline:
            return found
        QEventLoop().processEvents()
        time.sleep(0.1)


def _children() -> list[tuple[str, str]]:
    """(pid, command line) of this process's live child processes, from /proc."""
    import os

    me, found = str(os.getpid()), []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text() if entry.name.isdigit() else ""
            fields = stat.rsplit(")", 1)[1].split() if stat else []
            if fields and fields[1] == me and fields[0] != "Z":
                found.append((entry.name, command_line(entry)))
        except OSError:
            continue
    return found



def command_line(proc: Path) -> str:
    """A /proc/PID entry's command line, its arguments joined by spaces."""
    return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:200]
