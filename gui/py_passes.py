"""Your own passes, live: `ge.passes` files opened, watched, re-run on every save, their errors shown.

File > Open pass file… (Ctrl+Shift+P) adds a file to the session's pass files; File > New pass from
template writes a copy of a shipped template where the user says (never over a file without asking)
and opens it; File > New pass from selection writes the pattern skeleton of the nodes selected in the
before pane (session/pass_skeleton.py) and opens it, in $EDITOR too. Each of the session's pass files
(however they came: here, a saved configuration, --py-pass) is watched (session/watch.py, polled
every POLL_S on a timer); a save fuses again, in the TensorFlow helper
(gui/model_jobs.py): the pass panel, the match list and both panes follow in place, the "Your passes"
dock shows the user's tracebacks, and a run that fails keeps the last good result on screen.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMenu, QMessageBox

from fuselens.core.errors import FuseLensError
from fuselens.core.formats.io import write_bytes_atomic
from fuselens.core.package_data import resource
from fuselens.gui.actions import make_action
from fuselens.gui.pass_errors import PassErrorPanel
from fuselens.gui.pass_panel import PassPanel
from fuselens.session.editor import open_in_editor
from fuselens.session.pass_files import PassFiles
from fuselens.session.pass_skeleton import DEFAULT_PASS_NAME, pattern_skeleton, snake_case
from fuselens.session.watch import POLL_S, FileWatch

if TYPE_CHECKING:
    from fuselens.gui.host import PanelHost

TEMPLATE_FOLDER = ("ge_passes",)  # under resources/: the shipped pass templates, one .py file each
PASS_FILTER = "Python pass files (*.py);;All files (*)"
PANEL_HEIGHT = 190
NO_FILE = "No pass file open: File > Open pass file… (Ctrl+Shift+P), or New pass from template / from selection"


def pass_templates() -> list[Path]:
    """The shipped `ge.passes` templates (resources/ge_passes/*.py), by name."""
    folder = resource(*TEMPLATE_FOLDER)
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_")) if folder.is_dir() else []


class PyPasses(QObject):
    """The window's pass files: the actions, the watch, the "Your passes" dock."""

    def __init__(self, host: PanelHost, pass_panel: PassPanel):
        super().__init__(host.window)
        self.host, self.pass_panel = host, pass_panel
        self.panel = PassErrorPanel(lambda text: host.status.showMessage(text, 10000), host.window)
        self.panel.show_errors(NO_FILE, [])
        self.dock = host.add_bottom_dock(self.panel, "Your passes")
        self.dock.hide()  # until a pass file is opened (then PANEL_HEIGHT high: the graphs keep the room)
        self.watch = FileWatch()
        self.timer = QTimer(self)
        self.timer.setInterval(int(POLL_S * 1000))
        self.timer.timeout.connect(self.poll)
        self.saved_at: float | None = None  # the last save's mtime (the time from it to its result is shown)
        self.open_action = make_action(host.window, "Open pass file…", self.open_dialog, "Ctrl+Shift+P",
                                       "a ge.passes file (or a folder of them, as ASCEND_GE_PY_PASS_PATH takes): "
                                       "its passes run with the others and again on every save")
        self.template_menu = QMenu("New pass from template", host.window)
        self._fill_templates()
        self.close_action = make_action(host.window, "Close pass files", self.close_files,
                                        tip="stop watching your pass files and fuse without their passes")
        self.close_action.setEnabled(False)
        self.selection_action = make_action(host.window, "New pass from selection…", self.new_from_selection,
                                            tip="a pattern skeleton of the nodes selected in the before pane, "
                                                "matching them, opened in $EDITOR")
        host.session.subscribe(self._on_session)
        pass_panel.user_pass_switched.connect(self.switch)

    @property
    def actions(self) -> list[QAction]:
        return [self.open_action, self.template_menu.menuAction(), self.selection_action, self.close_action]

    # ---- opening ----------------------------------------------------------------------------------
    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.host.window, "Open a pass file", "", PASS_FILTER)
        if path:
            self.open_file(path)

    def open_file(self, path: str, *, edit: bool = False) -> None:
        """Run the passes of `path` (a file, or a folder as ASCEND_GE_PY_PASS_PATH takes one: its .py files are
        watched) with the others, watch it, and (`edit`) open it in $EDITOR."""
        path = str(Path(path).resolve())
        if not Path(path).exists():
            self.host.status.showMessage(f"{path}: no such pass file", 10000)
            return
        files = self.host.session.pass_files
        self.panel.show_errors(f"{Path(path).name}: loading its passes…", [])
        self.set_pass_files(files if path in files.paths else replace(files, paths=(*files.paths, path)))
        if edit:
            self.edit(path)

    def close_files(self) -> None:
        """No pass files any more: nothing watched, their passes gone from the panel, fused without them."""
        self.set_pass_files(replace(self.host.session.pass_files, paths=(), off=frozenset()))

    def _follow_files(self) -> None:
        """Watch the session's pass files, however they came (opened here, a saved configuration, the command
        line); none: nothing watched, the user's passes gone from the panel."""
        paths = self.host.session.pass_files.paths
        if not paths:
            self.timer.stop()
            self.watch = FileWatch()
            self.pass_panel.show_user_passes([])
            self.panel.show_errors(NO_FILE, [])
        for path in paths:
            self.watch.watch(sorted(map(str, Path(path).rglob("*.py"))) if Path(path).is_dir() else [path])
        self.close_action.setEnabled(bool(paths))
        if paths:
            self.timer.start()
            if not self.dock.isVisible():
                self.dock.show()
                self.host.resize_dock(self.dock, PANEL_HEIGHT)
            self.dock.raise_()

    def edit(self, path: str, line: int = 1) -> None:
        try:
            open_in_editor(path, line)
        except FuseLensError as e:
            self.host.status.showMessage(f"{path} is open and watched; {e}", 10000)

    def set_pass_files(self, files: PassFiles) -> None:
        job = self.host.session.set_pass_files(files)
        if job is not None:
            self.host.fuse(job)

    def _fill_templates(self) -> None:
        for template in pass_templates():
            action = make_action(self.template_menu, f"{template.stem}…",
                                 lambda _checked=False, t=template: self.new_from_template(t),
                                 tip=f"a copy of the template {template.name}, written where you say, opened and "
                                     "watched")
            self.template_menu.addAction(action)
        if self.template_menu.isEmpty():
            self.template_menu.addAction("(no templates installed)").setEnabled(False)

    def new_from_template(self, template: Path) -> None:
        path = self._ask_new_path(f"New pass from {template.stem}", template.name)
        if path and self._write_new(path, template.read_text(encoding="utf-8")):
            self.open_file(path, edit=True)

    def new_from_selection(self) -> None:
        session, names = self.host.session, sorted(self.host.selection.current.before)
        graph = session.graph("before")
        if graph is None or not names:
            self.host.status.showMessage("Select the nodes of the pattern in the before pane first", 10000)
            return
        name, ok = QInputDialog.getText(self.host.window, "New pass from selection", "Registered pass name:",
                                        text=DEFAULT_PASS_NAME)
        if not ok or not name.strip():
            return
        try:
            skeleton = pattern_skeleton(graph, names, pass_name=name.strip(),
                                        source=session.model.name if session.model else "")
        except FuseLensError as e:
            self.host.status.showMessage(str(e), 10000)
            return
        path = self._ask_new_path("New pass from selection", f"{snake_case(skeleton.pass_name)}.py")
        if path and self._write_new(path, skeleton.text):
            self.open_file(path, edit=True)

    def _ask_new_path(self, title: str, name: str) -> str:
        """Where to write a new pass file (`_write_new` asks before replacing one)."""
        path, _ = QFileDialog.getSaveFileName(self.host.window, title, name, PASS_FILTER,
                                              options=QFileDialog.Option.DontConfirmOverwrite)
        return path

    def _write_new(self, path: str, text: str) -> bool:
        target = Path(path)
        if target.exists() and QMessageBox.question(
                self.host.window, "Replace the file?", f"{target} exists. Replace it with the new pass?") \
                != QMessageBox.StandardButton.Yes:
            return False
        try:
            write_bytes_atomic(target, text.encode("utf-8"))
        except (OSError, FuseLensError) as e:
            self.host.status.showMessage(f"cannot write {target}: {e}", 10000)
            return False
        return True

    # ---- watching ---------------------------------------------------------------------------------
    def poll(self) -> None:
        changed = self.watch.changed()
        if changed:
            self.saved_at = max(Path(p).stat().st_mtime for p in changed if Path(p).exists())
            names = ", ".join(Path(p).name for p in changed)
            self.host.status.showMessage(f"{names} saved: running your passes again…", 5000)
            self.set_pass_files(self.host.session.pass_files)

    def switch(self, name: str, on: bool) -> None:
        files = self.host.session.pass_files
        self.set_pass_files(replace(files, off=files.off - {name} if on else files.off | {name}))

    # ---- results ----------------------------------------------------------------------------------
    def _on_session(self, what: str) -> None:
        if what == "pass_files":
            self._follow_files()
        run = self.host.session.pass_run
        if what != "pass_run" or run is None:
            return
        self.pass_panel.show_user_passes(run.passes)
        since = f"; {time.time() - self.saved_at:.2f} s after the save" if self.saved_at is not None else ""
        self.saved_at = None
        self.panel.show_errors(run.summary() + since, run.errors)


def install_py_passes(host: PanelHost, pass_panel: PassPanel, file_menu: QMenu, before: QAction) -> PyPasses:
    """The pass-file actions in the File menu (above `before`) and the "Your passes" dock."""
    passes = PyPasses(host, pass_panel)
    file_menu.insertActions(before, passes.actions)
    file_menu.insertSeparator(before)
    return passes
