"""The toolchain's stages: a folder of GE graph dumps as a scrubber; any two stages side by side.

The user opens a `DUMP_GRAPH_PATH` folder (or one `pid_*_deviceid_*` inside it), picks a graph,
and scrubs through its stages: the before pane shows the chosen earlier stage (or the model's own
TF graph), the after pane the stage under the slider, with the usual diff colours and synced
selection (by name, and through `_datadump_original_op_names` where GE fused nodes), and the list
below says what changed, grouped by the `pass_name` GE credits. Stepping the slider loads one new
stage: the last few loaded stay (`StageGraphs`), so the stage that was after is the next step's before.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QStatusBar,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from fuselens.core.formats.loaders import LoadedModel
from fuselens.core.graph import Graph
from fuselens.gui.dialogs import show_error
from fuselens.gui.selection import SelectionModel
from fuselens.gui.workers import WorkerPool
from fuselens.session import Session

if TYPE_CHECKING:
    from fuselens.core.ascend.ge.diff import GraphDiff
    from fuselens.core.ascend.ge.stages import DumpFolder, Stage
    from fuselens.gui.host import PanelHost

MODEL_GRAPH = "__model__"  # the before choice that stands for the open model's own TF graph
NAME_ROLE = Qt.ItemDataRole.UserRole
KEPT_STAGES = 6  # loaded stage graphs kept: a step back and forth reloads nothing


class StageGraphs:
    """The graphs of the stages loaded last, by dump file; shared by the worker threads that load them."""

    def __init__(self, size: int = KEPT_STAGES):
        self.size = size
        self._graphs: OrderedDict[Path, Graph] = OrderedDict()
        self._lock = threading.Lock()

    def load(self, stage: Stage) -> Graph:
        path = stage.file.path
        with self._lock:
            if path in self._graphs:
                self._graphs.move_to_end(path)
                return self._graphs[path]
        graph = stage.load().graph  # outside the lock: another stage may load meanwhile
        with self._lock:
            self._graphs[path] = graph
            while len(self._graphs) > self.size:
                self._graphs.popitem(last=False)
        return graph

    def clear(self) -> None:
        with self._lock:
            self._graphs.clear()


class StagesPanel(QWidget):
    compared = Signal(object)  # GraphDiff: two stages are on show
    folder_opened = Signal(object)  # DumpFolder: its graphs and stages are listed

    def __init__(self, session: Session, selection: SelectionModel, workers: WorkerPool, status: QStatusBar,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.session, self.selection, self.workers, self.status = session, selection, workers, status
        self.folder: DumpFolder | None = None
        self.model_graph: LoadedModel | None = None  # the TF model open when the folder was opened
        self.diff: GraphDiff | None = None
        self.graphs = StageGraphs()
        self.open_button = QPushButton("Open dump folder…", self)
        self.open_button.setToolTip("A DUMP_GRAPH_PATH folder (DUMP_GE_GRAPH=2, DUMP_GRAPH_LEVEL=1) or one "
                                    "pid_*_deviceid_* folder in it")
        self.folder_label = QLabel("no dump folder open", self)
        self.timeline = QComboBox(self)
        self.before = QComboBox(self)
        self.after = QComboBox(self)
        self.scrubber = QSlider(Qt.Orientation.Horizontal, self)
        self.scrubber.setToolTip("the after stage; the before stage follows one step behind unless pinned")
        self.pinned = QComboBox(self)
        self.pinned.addItems(["before follows the slider", "before pinned"])
        for combo, chars in ((self.timeline, 20), (self.before, 28), (self.after, 28)):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(chars)
        self.changes = QTreeWidget(self)
        self.changes.setHeaderLabels(["Change (by the pass GE credits)", "Op", "Details"])
        self.changes.setUniformRowHeights(True)
        self.changes.setColumnWidth(0, 520)
        controls = QHBoxLayout()
        for widget in (self.open_button, self.folder_label, QLabel("graph", self), self.timeline,
                       QLabel("before", self), self.before, QLabel("after", self), self.after, self.pinned):
            controls.addWidget(widget)
        controls.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.addLayout(controls)
        layout.addWidget(self.scrubber)
        layout.addWidget(self.changes, 1)
        self.open_button.clicked.connect(self.open_dialog)
        self.timeline.currentIndexChanged.connect(self._fill_stages)
        self.scrubber.valueChanged.connect(self._on_scrub)
        self.before.activated.connect(lambda _i: self.pinned.setCurrentIndex(1) or self.compare())
        self.after.activated.connect(lambda i: self.scrubber.setValue(i))
        self.changes.itemClicked.connect(self._on_change_clicked)
        self._set_enabled(False)

    # ---- opening ------------------------------------------------------------------------------------
    def open_dialog(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Open a folder of GE graph dumps")
        if path:
            self.open_folder(path)

    def open_folder(self, path: str) -> None:
        """Scan a dump folder (files named ge_proto_* / ge_onnx_*, or dumps by their content) off the GUI thread."""
        self.status.showMessage(f"Scanning {path} for GE dumps…")
        from fuselens.core.ascend.ge.stages import (
            scan_dump_folder,  # the GE dump readers are imported when a folder is opened
        )

        self.workers.start("stages", f"scanning {path}", lambda progress, cancelled: scan_dump_folder(path),
                           on_finished=self._on_scanned,
                           on_error=lambda text: show_error(self, "Cannot open the dump folder", text, self.status))

    def _on_scanned(self, folder: DumpFolder) -> None:
        self.folder = folder
        self.graphs.clear()  # the same file names may now hold other graphs
        model = self.session.model
        self.model_graph = model if model is not None and self.session.comparison is None else self.model_graph
        stages = sum(len(t.stages) for t in folder.timelines)
        skipped = f", {len(folder.skipped)} files skipped" if folder.skipped else ""
        graphs = len(folder.timelines)
        self.folder_label.setText(f"{Path(folder.path).name}: {graphs} graph(s), {stages} stages{skipped}")
        self.folder_label.setToolTip("\n".join(folder.skipped))
        self.timeline.blockSignals(True)
        self.timeline.clear()
        self.timeline.addItems([t.label for t in folder.timelines])
        self.timeline.blockSignals(False)
        self._set_enabled(True)
        self._fill_stages()
        self.folder_opened.emit(folder)

    def _set_enabled(self, on: bool) -> None:
        for widget in (self.timeline, self.before, self.after, self.scrubber, self.pinned):
            widget.setEnabled(on)

    def stages(self) -> list[Stage]:
        if self.folder is None or self.timeline.currentIndex() < 0:
            return []
        return self.folder.timelines[self.timeline.currentIndex()].stages

    def _fill_stages(self) -> None:
        stages = self.stages()
        labels = [f"{s.index_label:>5}  {s.label}" for s in stages]
        for combo in (self.before, self.after):
            combo.blockSignals(True)
            combo.clear()
        if self.model_graph is not None:
            self.before.addItem(f"the model's TF graph ({self.model_graph.name})", MODEL_GRAPH)
        for i, label in enumerate(labels):
            self.before.addItem(label, i)
            self.after.addItem(label, i)
        for combo in (self.before, self.after):
            combo.blockSignals(False)
        self.scrubber.blockSignals(True)
        self.scrubber.setRange(0, max(0, len(stages) - 1))
        self.scrubber.setValue(len(stages) - 1)
        self.scrubber.blockSignals(False)
        self.pinned.setCurrentIndex(0)
        self._on_scrub(len(stages) - 1)

    def _on_scrub(self, value: int) -> None:
        self.after.setCurrentIndex(value)
        if self.pinned.currentIndex() == 0:  # before follows one stage behind
            self.before.setCurrentIndex(self.before.findData(max(0, value - 1)))
        self.compare()

    # ---- comparing ----------------------------------------------------------------------------------
    def compare(self) -> None:
        """Load the two chosen stages (off the GUI thread) and show them in the panes."""
        stages = self.stages()
        if not stages or self.after.currentIndex() < 0:
            return
        after = stages[self.after.currentData()]
        choice = self.before.currentData()
        before = None if choice == MODEL_GRAPH else stages[choice]
        model = self.model_graph
        graphs = self.graphs

        def load(progress, cancelled) -> tuple[LoadedModel, Graph, GraphDiff]:
            from fuselens.core.ascend.ge.diff import diff_graphs

            progress(f"loading {after.label}")
            after_graph = graphs.load(after)
            if before is None:
                first = model
            else:
                first = LoadedModel(graphs.load(before), f"{before.label} (GE)", str(before.file.path),
                                    before.file.format)
            return first, after_graph, diff_graphs(first.graph, after_graph, before_label=first.name,
                                                   after_label=after.label)

        self.workers.start("stages", f"comparing {after.label}", load,
                           on_finished=lambda result: self._show(*result, f"{after.label} (GE)"),
                           on_error=lambda text: show_error(self, "Cannot load the stage", text, self.status),
                           on_progress=self.status.showMessage)

    def _show(self, before: LoadedModel, after: Graph, diff: GraphDiff, after_label: str) -> None:
        self.diff = diff
        self.session.compare(before, after, diff.provenance(before.graph, after), after_label)
        self._fill_changes(diff)
        self.status.showMessage(f"{before.name} -> {after_label}: {len(diff.of_kind('removed'))} removed, "
                                f"{len(diff.of_kind('added'))} added, {len(diff.of_kind('changed'))} changed", 10000)
        self.compared.emit(diff)

    def _fill_changes(self, diff: GraphDiff) -> None:
        self.changes.clear()
        for group, changes in diff.by_pass().items():
            top = QTreeWidgetItem(self.changes, [f"{group}  ({len(changes)})", "", ""])
            for change in changes:
                related = f" ({', '.join(change.related[:3])}{'…' if len(change.related) > 3 else ''})" \
                    if change.related else ""
                item = QTreeWidgetItem(top, [f"{change.kind}: {change.name}{related}", change.op,
                                             "; ".join(change.details)])
                item.setData(0, NAME_ROLE, (change.kind, change.name))
            top.setExpanded(len(diff.by_pass()) <= 6)
        self.changes.resizeColumnToContents(1)
        self.changes.setColumnWidth(0, max(520, self.changes.sizeHintForColumn(0)))

    def _on_change_clicked(self, item: QTreeWidgetItem, _column: int) -> None:
        data = item.data(0, NAME_ROLE)
        if data:
            kind, name = data
            if kind == "removed":
                self.selection.select_original([name], origin="stages")
            else:
                self.selection.select_fused([name], origin="stages")


def install_stages_panel(host: PanelHost, open_action: QAction) -> StagesPanel:
    """The "Toolchain stages" dock (tabbed with the run dock, shown once a dump folder is opened); `open_action`
    (File > Open GE dump folder) opens one."""
    panel = StagesPanel(host.session, host.selection, host.workers, host.status, host.window)
    dock = host.add_bottom_dock(panel, "Toolchain stages")
    dock.hide()  # until a dump folder is opened: its empty panel would make the bottom dock a third of the window
    for opened in (panel.folder_opened, panel.compared):
        opened.connect(lambda _what: (dock.show(), dock.raise_()))
    open_action.triggered.connect(lambda: panel.open_dialog())
    return panel
