"""The run dock's file actions: import a profile (set against the prediction when it came from an NPU),
save the run, export its trace, kernel table and charts, and write the NPU bundle.

What a chosen or dropped file is comes from its content (core/ascend/sniff.py), never its name.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QInputDialog

from fuselens.core.errors import FuseLensError
from fuselens.core.formats.samples import SAMPLES
from fuselens.core.runtime import RunResult
from fuselens.core.runtime.run_view import parse_input_shapes
from fuselens.core.runtime.trace import write_chrome_trace, write_kernel_csv
from fuselens.gui.actions import make_action
from fuselens.gui.dialogs import save_dialog, show_error
from fuselens.session.tensorflow_helper import TensorFlowHelper

if TYPE_CHECKING:
    from fuselens.core.ascend.npu_bundle import BundleReport
    from fuselens.gui.run_panel import RunPanel
    from fuselens.session.npu_check import CheckReport

# Told apart by content: every file is offered (users rename profiles); the second filter narrows the list.
PROFILE_FILTER = "Profiles and run files (any name) (*);;CSV and JSON (*.csv *.json)"


class RunFiles(QObject):
    """What the panel reads from and writes to files; `bundle_written` says an NPU bundle is there."""

    bundle_written = Signal(object)  # BundleReport

    def __init__(self, panel: RunPanel, tensorflow: TensorFlowHelper):
        super().__init__(panel)
        self.panel, self.tensorflow = panel, tensorflow
        self.result_actions: list[QAction] = []

    def import_profile(self, path: str, note: str = "") -> None:
        """An op_summary / op_statistic CSV, a PROF_* folder or a run file, mapped to the open graphs; an NPU
        profile is also set against the open prediction (with whatever else came back in its folder)."""
        original, fused = self.panel.session.graph("before"), self.panel.session.graph("after")
        pipeline, model = self.panel.session.pipeline, self.panel.session.model

        def work(progress: Callable[[str], None], cancelled: Callable[[], bool]) -> tuple[RunResult, Any]:
            from fuselens.core.ascend.profile_import import import_run_file  # when a profile is first imported

            result = import_run_file(path, original, fused)
            from fuselens.session.npu_check import check_npu_result

            return result, check_npu_result(pipeline, path, result, model=model.name if model else "")

        self.panel.workers.start("import", f"importing {path}", work,
                                 on_finished=lambda outcome: self._on_imported(*outcome, note=note),
                                 on_error=self._import_failed)

    def import_profile_pair(self, baseline: str, fused: str) -> None:
        """A profile (or run file) of the unfused model and one of the fused model as one run, each mapped to its
        graph: the run view's "Did each fusion pay?" sets each fused kernel against its originals' in the baseline."""
        original, fused_graph = self.panel.session.graph("before"), self.panel.session.graph("after")

        def work(progress: Callable[[str], None], cancelled: Callable[[], bool]) -> tuple[RunResult, None]:
            from fuselens.session.fusion_gain import paired_profiles  # when profiles are first imported

            return paired_profiles(baseline, fused, original, fused_graph), None

        self.panel.workers.start("import", f"importing {baseline} and {fused}", work,
                                 on_finished=lambda outcome: self._on_imported(*outcome),
                                 on_error=self._import_failed)

    def _on_imported(self, result: RunResult, report: CheckReport | None, note: str = "") -> None:
        self.panel.show_result(result)
        self.panel.show_check(report, note)
        mapped = sum(k.node is not None for run in result.graphs.values() for k in run.kernels)
        total = sum(len(run.kernels) for run in result.graphs.values())
        self.panel.status.showMessage(f"Imported {result.model}: {total} kernels, {mapped} mapped to "
                                      f"graph nodes ({', '.join(result.graphs)})", 10000)

    def _import_failed(self, text: str) -> None:
        show_error(self.panel, "Import failed", text, self.panel.status)

    def export_chrome_trace(self, path: str) -> Path:
        return write_chrome_trace(self._need_result(), path)

    def export_kernel_csv(self, path: str) -> Path:
        return write_kernel_csv(self._need_result(), path)

    def save_run(self, path: str) -> Path:
        return self._need_result().save(path)

    def export_charts_png(self, path: str) -> Path:
        """The cards and the chart on show, as one image."""
        if not self.panel.results.grab().save(path):
            raise FuseLensError(f"{path}: cannot write the image")
        return Path(path)

    def export_npu_script(self, path: str, mode: str = "tf1") -> None:
        """The NPU bundle (the folder `fuselens export-npu-script` writes), written by the window's TensorFlow
        helper in a worker: its graphs are stripped for the host's TensorFlow, TensorFlow stays out of this
        process and the window stays responsive; `bundle_written` says when it is there."""
        model, pipeline = self.panel.session.model, self.panel.session.pipeline
        if model is None or pipeline is None:
            raise FuseLensError("open a model first: the NPU bundle runs its original and fused graphs")
        options = dict(model=model.name if model.name in SAMPLES else model.path, mode=mode,
                       input_shapes=parse_input_shapes(self.panel.shapes.text()), steps=self.panel.steps.value(),
                       warmup=self.panel.warmup.value(), protect=model.path if Path(model.path).exists() else None)

        def write(progress: Callable[[str], None], cancelled: Callable[[], bool]) -> BundleReport:
            progress(f"writing the NPU bundle to {path} (the TensorFlow helper strips its graphs for {mode})…")
            return self.tensorflow.export_npu_bundle(path, pipeline, **options)

        status = self.panel.status
        self.panel.workers.start("npu-bundle", f"writing the NPU bundle {Path(path).name}", write,
                                 on_finished=self._bundle_done, on_progress=lambda text: status.showMessage(text),
                                 on_error=lambda text: show_error(self.panel, "Export NPU bundle failed", text, status))

    def _bundle_done(self, report: BundleReport) -> None:
        self.panel.status.showMessage(f"NPU bundle written to {report.folder}: run {report.driver.name} on the "
                                      "Ascend host", 10000)
        self.bundle_written.emit(report)

    def _need_result(self) -> RunResult:
        if self.panel.result is None:
            raise FuseLensError("no run results yet: compile and run, or import a profile")
        return self.panel.result

    def take_drop(self, path: str) -> bool:
        """Import a dropped file that is a profile or a run file, or a dropped folder holding profiles, and say
        so (True); anything else is the window's to open as a model (False)."""
        from fuselens.core.ascend import sniff  # the readers' recognisers: ~0.5 s of imports, not at start-up

        target = Path(path)
        if target.is_dir():
            if not _profile_folder(target):
                return False
        else:
            try:
                if sniff.sniff(target) not in sniff.PROFILES | {"run_file"}:
                    return False
            except FuseLensError:
                return False  # unreadable: the model loader says why
        self.import_profile(path)
        return True

    def import_file_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.panel, "Import a profile or run file", "", PROFILE_FILTER)
        if path:
            self.import_profile(path)

    def import_pair_dialog(self) -> None:
        baseline, _ = QFileDialog.getOpenFileName(self.panel, "Import the baseline profile (the unfused model)", "",
                                                  PROFILE_FILTER)
        if not baseline:
            return
        fused, _ = QFileDialog.getOpenFileName(self.panel, "Import the fused model's profile", "", PROFILE_FILTER)
        if fused:
            self.import_profile_pair(baseline, fused)

    def import_folder_dialog(self) -> None:
        path = QFileDialog.getExistingDirectory(self.panel, "Import a PROF_* folder (or one with original/ and fused/)")
        if path:
            self.import_profile(path)

    def _save_dialog(self, title: str, name: str, file_filter: str, write: Callable[[str], Any]) -> None:
        save_dialog(self.panel, title, name, file_filter, write, self.panel.status)

    def npu_script_dialog(self) -> None:
        from fuselens.core.ascend.npu_script import MODES

        mode, ok = QInputDialog.getItem(self.panel, "NPU run script", "Ascend software stack:",
                                        [f"{m}: {title}" for m, title in MODES.items()], 0, False)
        if ok:
            self._save_dialog("Export NPU bundle (a folder)", "npu_bundle", "NPU bundle folder (*)",
                              lambda path: self.export_npu_script(path, mode.split(":")[0]))

    def build_actions(self) -> tuple[list[QAction], list[QAction], QAction]:
        """The Run menu's imports, the exports that need a result (enabled while one is shown) and the NPU
        bundle export; the panel's Export button offers the last two."""
        def action(text: str, handler: Callable[[], Any]) -> QAction:
            return make_action(self.panel, text, handler)

        self.result_actions = [
            action("Save run file (JSON)…", lambda: self._save_dialog("Save run", "run.json", "JSON (*.json)",
                                                                     self.save_run)),
            action("Export Chrome trace…", lambda: self._save_dialog("Export Chrome trace", "trace.json",
                                                                    "Chrome trace (*.json)", self.export_chrome_trace)),
            action("Export kernel table (CSV)…", lambda: self._save_dialog("Export kernel table", "kernels.csv",
                                                                          "CSV (*.csv)", self.export_kernel_csv)),
            action("Export charts (PNG)…", lambda: self._save_dialog("Export charts", "charts.png", "PNG (*.png)",
                                                                    self.export_charts_png)),
        ]
        self._enable(self.panel.result)
        self.panel.result_shown.connect(self._enable)
        imports = [action("Import profile file…", self.import_file_dialog),
                   action("Import PROF_* folder…", self.import_folder_dialog),
                   action("Import baseline and fused profiles…", self.import_pair_dialog)]
        if self.panel.remote is not None:
            imports.append(action("NPU runs (history)…", self.panel.remote.choose_run))
        npu = action("Export NPU run script…", self.npu_script_dialog)
        self.panel.export_button.addActions([*self.result_actions, npu])
        return imports, self.result_actions, npu

    def _enable(self, result: RunResult | None) -> None:
        for item in self.result_actions:
            item.setEnabled(result is not None)


def _profile_folder(folder: Path) -> bool:
    """A folder the run panel opens: profiles inside (by content), or an NPU bundle's original/ and fused/ runs."""
    from fuselens.core.measure.msprof import find_profile_files

    sides = [folder / "original", folder / "fused"]
    if all(side.is_dir() for side in sides):
        return all(_profile_folder(side) for side in sides)
    return any(paths for kind, paths in find_profile_files(folder).items() if kind != "fusion_op")
