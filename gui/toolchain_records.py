"""File > Import toolchain log…: the TF adapter's / GE's logs and OM models as JSON set against the open
prediction (session/npu_check's `check_toolchain_records`), shown in the run dock's predicted-vs-actual tab.

The records imported for one prediction add up (a log, then the OM model); opening or fusing a model again
starts over. The reading and the comparison run in a worker: a folder of plogs can be large.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QMenu

from fuselens.gui.actions import make_action
from fuselens.gui.dialogs import show_error

if TYPE_CHECKING:
    from fuselens.gui.run_panel import RunPanel
    from fuselens.passes.pipeline import PipelineResult
    from fuselens.session.npu_check import CheckReport

RECORDS_FILTER = "Toolchain logs and OM models as JSON (*.log *.txt *.json);;All files (*)"


class ToolchainRecords(QObject):
    """The imported records of the open prediction, and the File menu's action that adds to them."""

    def __init__(self, panel: RunPanel):
        super().__init__(panel)
        self.panel = panel
        self.paths: list[str] = []
        self._pipeline: PipelineResult | None = None  # the prediction `paths` were set against

    def import_records(self, paths: Sequence[str]) -> None:
        """Read `paths` (logs, OM models as JSON, by content) with those already imported for this prediction."""
        pipeline, model = self.panel.session.pipeline, self.panel.session.model
        if pipeline is None:
            show_error(self.panel, "Import toolchain log", "open a model first: the toolchain's records are set "
                                                           "against its prediction", self.panel.status)
            return
        earlier = self.paths if pipeline is self._pipeline else []
        wanted = list(dict.fromkeys([*earlier, *paths]))

        def work(progress: Callable[[str], None], cancelled: Callable[[], bool]) -> CheckReport:
            from fuselens.session.npu_check import check_toolchain_records

            return check_toolchain_records(pipeline, wanted, model=model.name if model else "")

        def done(report: CheckReport) -> None:
            self.paths, self._pipeline = wanted, pipeline
            self.show(report)

        self.panel.workers.start("toolchain-records", f"reading {len(wanted)} toolchain record(s)", work,
                                 on_finished=done,
                                 on_error=lambda text: show_error(self.panel, "Import toolchain log failed", text,
                                                                  self.panel.status))

    def show(self, report: CheckReport) -> None:
        """The report in the predicted-vs-actual tab, brought to the front (with or without a run shown)."""
        panel = self.panel
        panel.show_check(report, f"from {len(self.paths)} toolchain record(s) imported with File > Import "
                                 "toolchain log…")
        panel.results.setVisible(True)
        panel.tabs.setCurrentWidget(panel.check_view)
        s = report.summary
        panel.status.showMessage(f"Toolchain records ({', '.join(s.evidence)}): {s.found} found, {s.not_found} "
                                 f"not found, {s.unknown} unknown of {s.predicted} predicted fusions", 10000)

    def dialog(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self.panel, "Import toolchain logs (plog-*.log, host-*.log) or an "
                                                            "OM model as JSON", "", RECORDS_FILTER)
        if paths:
            self.import_records(paths)

    def action(self) -> QAction:
        return make_action(self.panel, "Import toolchain log…", self.dialog,
                           tip="The TF adapter's / GE's logs or an OM model as JSON (atc --mode=1), set against "
                               "the prediction in the Predicted vs actual tab")


def install_toolchain_records(panel: RunPanel, file_menu: QMenu) -> ToolchainRecords:
    """File > Import toolchain log…, placed after the File menu's other imports (before its submenus); the
    records object is the panel's child (`panel.findChild(ToolchainRecords)`)."""
    records = ToolchainRecords(panel)
    action = records.action()
    before = next((a for a in file_menu.actions() if a.menu() is not None or a.isSeparator()), None)
    if before is None:
        file_menu.addAction(action)
    else:
        file_menu.insertAction(before, action)
    return records
