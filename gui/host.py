"""What a panel installed into the window may use of it: docks, menus, the status bar, the session,
the selection, the workers and the TensorFlow helper — not the window's own attributes, so the
panels neither reach into each other through it nor depend on the order they are installed in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from PySide6.QtCore import Qt, SignalInstance
from PySide6.QtWidgets import QDockWidget, QMainWindow, QMenu, QStatusBar, QToolBar, QWidget

from fuselens.gui.graph_view import GraphView
from fuselens.gui.selection import SelectionModel
from fuselens.gui.workers import WorkerPool
from fuselens.passes.config import PassConfig
from fuselens.session import FusionJob, Session
from fuselens.session.tensorflow_helper import TensorFlowHelper


@dataclass
class PanelHost:
    """The window as a panel sees it."""

    window: QMainWindow  # the docks' owner and the dialogs' parent
    session: Session
    selection: SelectionModel
    workers: WorkerPool
    tensorflow: TensorFlowHelper
    views: Mapping[str, GraphView]  # "before" / "after"
    layout_done: SignalInstance  # side: a pane shows a new layout
    set_config: Callable[[PassConfig], None]  # fuse again with this configuration
    fuse: Callable[[FusionJob], None]  # run a fusion job the session handed out (gui/model_jobs.py)
    toolbar: QToolBar
    tabbed: list[QDockWidget] = field(default_factory=list)  # the bottom docks shown as tabs of one area

    @property
    def status(self) -> QStatusBar:
        return self.window.statusBar()

    def add_bottom_dock(self, widget: QWidget, title: str, *, tabbed: bool = True) -> QDockWidget:
        """Attach a panel in the bottom dock area; `tabbed`, it is a tab beside the other tabbed bottom
        docks (the first one added stays on top)."""
        dock = QDockWidget(title, self.window)
        dock.setObjectName(f"dock-{title}")
        dock.setWidget(widget)
        self.window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
        if tabbed:
            if self.tabbed:
                self.window.tabifyDockWidget(self.tabbed[0], dock)
                self.tabbed[0].raise_()
            self.tabbed.append(dock)
        return dock

    def resize_dock(self, dock: QDockWidget, height: int) -> None:
        self.window.resizeDocks([dock], [height], Qt.Orientation.Vertical)

    def menu(self, title: str) -> QMenu:
        """The menu bar's menu of this title ("&Run"), added at the end when there is none yet."""
        bar = self.window.menuBar()
        found = next((a.menu() for a in bar.actions() if a.text() == title and a.menu()), None)
        return found if isinstance(found, QMenu) else bar.addMenu(title)
