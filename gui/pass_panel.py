"""The pass panel: the registry's passes grouped by family, switches, AutoFuse categories, match counts.

Everything shown comes from the pass classes' metadata (passes.registry.catalog()), so a new
pass appears here without touching the GUI. General passes are shown on and locked.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QMenu,
    QMessageBox,
    QToolButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core.errors import FuseLensError
from core.io import write_bytes_atomic
from core.runtime.switch_file import parse_switch_file, switch_forms
from passes.autofuse.flags import (
    BROADCAST,
    CONCAT,
    DEFAULT_CATEGORIES,
    OPT_IN_CATEGORIES,
    POINTWISE,
    REDUCE,
    AutofuseFlags,
    parse_autofuse_flags,
)
from passes.base import FusionPass, PassResult
from passes.registry import FAMILIES, FAMILY_TITLES, catalog
from passes.scope.switches import format_enable_scope_fusion_passes, parse_enable_scope_fusion_passes
from passes.scope.user_rules import install_rules, load_rule_file

PASS_ROLE = Qt.ItemDataRole.UserRole
CATEGORY_ROLE = Qt.ItemDataRole.UserRole + 1
# The AutoFuse kernel categories shown as sub-switches, with their toolchain defaults.
AUTOFUSE_CATEGORIES = {c: c in DEFAULT_CATEGORIES for c in (POINTWISE, BROADCAST, REDUCE, CONCAT)}


def autofuse_flags(enabled: bool, categories: dict[str, bool]) -> AutofuseFlags:
    """The AUTOFUSE_FLAGS for these switches (only differences from the defaults are listed)."""
    if not enabled:
        return AutofuseFlags(enable_autofuse=False)
    extra = tuple(c for c, on in categories.items() if on and c in OPT_IN_CATEGORIES)
    dropped = tuple(c for c, on in categories.items() if not on and c in DEFAULT_CATEGORIES)
    return AutofuseFlags(enable_autofuse=enabled, enable_pass=extra, disable_pass=dropped)


class PassPanel(QWidget):
    changed = Signal()  # the user switched something: fusion must re-run

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.tree = QTreeWidget(self)
        self.tree.setColumnCount(2)
        self.tree.setHeaderLabels(["Pass", "Matches"])
        self.tree.setUniformRowHeights(True)
        self.pass_items: dict[str, QTreeWidgetItem] = {}
        self.category_items: dict[str, QTreeWidgetItem] = {}
        self.family_items: dict[str, QTreeWidgetItem] = {}
        self._populate(catalog())
        self.tree.itemChanged.connect(self._on_item_changed)
        self.tree.header().setStretchLastSection(False)
        self.tree.header().setSectionResizeMode(0, self.tree.header().ResizeMode.Stretch)
        self.tree.header().setSectionResizeMode(1, self.tree.header().ResizeMode.ResizeToContents)

        buttons = QHBoxLayout()
        self.import_button = self._menu_button("Import", self._import_actions())
        self.export_button = self._menu_button("Export", self._export_actions())
        buttons.addWidget(self.import_button)
        buttons.addWidget(self.export_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.tree)
        layout.addLayout(buttons)

    # ---- building ---------------------------------------------------------------------------------
    def _populate(self, passes: list[type[FusionPass]]) -> None:
        self.tree.blockSignals(True)
        for family in FAMILIES:
            members = [c for c in passes if c.family == family]
            if not members:
                continue
            family_item = QTreeWidgetItem(self.tree, [FAMILY_TITLES[family], ""])
            family_item.setFlags(Qt.ItemFlag.ItemIsEnabled)
            family_item.setExpanded(True)
            self.family_items[family] = family_item
            for cls in members:
                item = QTreeWidgetItem(family_item, [cls.title or cls.id, ""])
                item.setData(0, PASS_ROLE, cls.id)
                on = cls.general or cls.default_enabled
                item.setCheckState(0, Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
                tip = f"<b>{cls.id}</b>{' (general: always on)' if cls.general else ''}<br>{cls.description}"
                item.setToolTip(0, tip)
                flags = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
                if cls.general:
                    item.setText(0, f"{cls.title or cls.id} (general)")
                else:
                    flags |= Qt.ItemFlag.ItemIsUserCheckable
                item.setFlags(flags)
                item.setDisabled(cls.general)
                self.pass_items[cls.id] = item
            if family == "autofuse":
                group = QTreeWidgetItem(family_item, ["Kernel categories", ""])
                group.setFlags(Qt.ItemFlag.ItemIsEnabled)
                group.setToolTip(0, "AUTOFUSE_FLAGS: pointwise and broadcast are on with AutoFuse; "
                                    "reduce and concat need --autofuse_enable_pass")
                group.setExpanded(True)
                for category, default in AUTOFUSE_CATEGORIES.items():
                    item = QTreeWidgetItem(group, [category, ""])
                    item.setData(0, CATEGORY_ROLE, category)
                    item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsUserCheckable)
                    item.setCheckState(0, Qt.CheckState.Checked if default else Qt.CheckState.Unchecked)
                    self.category_items[category] = item
        self.tree.blockSignals(False)

    def rebuild(self) -> None:
        """Re-read the catalog (user rules add passes), keeping the switches the user set."""
        states = {pid: item.checkState(0) for pid, item in self.pass_items.items()}
        categories = self.categories()
        self.tree.clear()
        self.pass_items, self.category_items, self.family_items = {}, {}, {}
        self._populate(catalog())
        self.tree.blockSignals(True)
        for pid, state in states.items():
            if pid in self.pass_items and self.pass_items[pid].flags() & Qt.ItemFlag.ItemIsUserCheckable:
                self.pass_items[pid].setCheckState(0, state)
        for category, on in categories.items():
            self.set_category(category, on)
        self.tree.blockSignals(False)

    def _menu_button(self, text: str, actions: list[QAction]) -> QToolButton:
        button = QToolButton(self)
        button.setText(text)
        button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(button)
        menu.setToolTipsVisible(True)
        for action in actions:
            menu.addAction(action)
        button.setMenu(menu)
        return button

    def _action(self, text: str, handler: Callable[[], None], tip: str) -> QAction:
        action = QAction(text, self)
        action.triggered.connect(handler)
        action.setToolTip(tip)
        return action

    def _import_actions(self) -> list[QAction]:
        return [
            self._action("Scope pass list…", self.import_scope_list,
                         "enable_scope_fusion_passes: a comma list of scope pass names to switch on"),
            self._action("AUTOFUSE_FLAGS…", self.import_autofuse_flags,
                         "an AUTOFUSE_FLAGS string such as --enable_autofuse=true;--autofuse_enable_pass=reduce"),
            self._action("Fusion switch file…", self.import_switch_file_dialog,
                         "a fusion switch file (JSON or PassName:on|off lines): passes it names are switched"),
            self._action("User scope rule file…", self.import_scope_rules_dialog,
                         "a YAML or JSON file of user scope fusion rules; its rules appear as scope passes"),
        ]

    def _export_actions(self) -> list[QAction]:
        return [
            self._action("Scope pass list (copy)", lambda: self._copy(self.scope_pass_list()),
                         "copy the enable_scope_fusion_passes value"),
            self._action("AUTOFUSE_FLAGS (copy)", lambda: self._copy(self.autofuse_flags()),
                         "copy the AUTOFUSE_FLAGS value"),
            self._action("Fusion switch file…", self.export_switch_file_dialog,
                         "write the passes' on/off states as a fusion switch file (JSON)"),
        ]

    # ---- state ------------------------------------------------------------------------------------
    def pass_ids(self) -> list[str]:
        return [pid for pid, item in self.pass_items.items() if item.checkState(0) == Qt.CheckState.Checked]

    def set_enabled(self, pass_id: str, on: bool) -> None:
        """Switch a pass (a general pass stays on)."""
        item = self.pass_items[pass_id]
        if item.flags() & Qt.ItemFlag.ItemIsUserCheckable:
            item.setCheckState(0, Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)

    def categories(self) -> dict[str, bool]:
        return {c: item.checkState(0) == Qt.CheckState.Checked for c, item in self.category_items.items()}

    def set_category(self, category: str, on: bool) -> None:
        self.category_items[category].setCheckState(0, Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)

    def _family_of(self, item: QTreeWidgetItem) -> str | None:
        return next((f for f, family_item in self.family_items.items() if item.parent() is family_item), None)

    def autofuse_flags(self) -> str:
        """AUTOFUSE_FLAGS for the current switches (AutoFuse off when no AutoFuse pass is on)."""
        on = any(self._family_of(item) == "autofuse" and item.checkState(0) == Qt.CheckState.Checked
                 for item in self.pass_items.values())
        return autofuse_flags(on, self.categories() or dict(AUTOFUSE_CATEGORIES)).to_string()

    def scope_pass_list(self) -> str:
        return format_enable_scope_fusion_passes(self.pass_ids())

    def options(self) -> dict[str, Any]:
        return {"autofuse_flags": self.autofuse_flags()}

    def set_counts(self, results: list[PassResult]) -> None:
        by_id = {r.pass_id: r for r in results}
        self.tree.blockSignals(True)
        for pid, item in self.pass_items.items():
            result = by_id.get(pid)
            item.setText(1, f"{len(result.matches)} ✔ {len(result.near_misses)} ✘" if result else "")
        self.tree.blockSignals(False)

    def _on_item_changed(self, item: QTreeWidgetItem, column: int) -> None:
        if column == 0 and (item.data(0, PASS_ROLE) or item.data(0, CATEGORY_ROLE)):
            self.changed.emit()

    def _switch(self, states: dict[str, bool], categories: dict[str, bool] | None = None) -> None:
        """Apply several switches, then one `changed`."""
        self.tree.blockSignals(True)
        for pid, on in states.items():
            self.set_enabled(pid, on)
        for category, on in (categories or {}).items():
            if category in self.category_items:
                self.set_category(category, on)
        self.tree.blockSignals(False)
        self.changed.emit()

    # ---- toolchain switches: each raises FuseLensError for bad input ------------------------------
    def apply_scope_list(self, text: str) -> None:
        """Exactly the named non-general scope passes on (general ones stay on)."""
        wanted = set(parse_enable_scope_fusion_passes(text))
        self._switch({pid: pid in wanted for pid, item in self.pass_items.items() if self._family_of(item) == "scope"})

    def apply_autofuse_flags(self, text: str) -> None:
        flags = parse_autofuse_flags(text)
        autofuse = {pid: flags.enable_autofuse for pid, item in self.pass_items.items()
                    if self._family_of(item) == "autofuse"}
        self._switch(autofuse, {c: flags.is_enabled(c) for c in AUTOFUSE_CATEGORIES})

    def apply_switch_file(self, path: str) -> list[str]:
        """Switch the passes a fusion switch file names (`ALL` covers the rest); returns unknown names."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise FuseLensError(f"{path}: cannot read the switch file ({e})") from None
        switches = parse_switch_file(text, path)
        named = {**switches.ub_fusion, **switches.graph_fusion}
        default = named.get("ALL")
        states = {pid: (named.get(pid) or default) == "on" for pid in self.pass_items if (named.get(pid) or default)}
        self._switch(states)
        return sorted(n for n in named if n != "ALL" and n not in self.pass_items)

    def switch_file_text(self) -> str:
        rows = [{"id": c.id, "family": c.family, "general": c.general} for c in catalog()]
        return switch_forms(rows, self.pass_ids(), self.autofuse_flags()).fusion_switches.to_json_text()

    def apply_scope_rules(self, path: str) -> list[str]:
        """Install a user rule file's rules as scope passes (shown switched off); returns their ids."""
        installed = install_rules(load_rule_file(path))
        self.rebuild()
        return installed

    # ---- dialogs ----------------------------------------------------------------------------------
    def _copy(self, text: str) -> None:
        QApplication.clipboard().setText(text)
        QMessageBox.information(self, "Copied", f"Copied to the clipboard:\n\n{text or '(empty)'}")

    def _guarded(self, title: str, action: Callable[[], Any]) -> Any:
        try:
            return action()
        except FuseLensError as e:
            QMessageBox.warning(self, title, str(e))
            return None

    def import_scope_list(self) -> None:
        text, ok = QInputDialog.getText(self, "Scope pass list", "enable_scope_fusion_passes (comma list):",
                                        text=self.scope_pass_list())
        if ok:
            self._guarded("Scope pass list", lambda: self.apply_scope_list(text))

    def import_autofuse_flags(self) -> None:
        text, ok = QInputDialog.getText(self, "AUTOFUSE_FLAGS", "AUTOFUSE_FLAGS:", text=self.autofuse_flags())
        if ok:
            self._guarded("AUTOFUSE_FLAGS", lambda: self.apply_autofuse_flags(text))

    def import_switch_file_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Fusion switch file", "",
                                              "Switch files (*.json *.cfg *.txt);;All files (*)")
        unknown = self._guarded("Fusion switch file", lambda: self.apply_switch_file(path)) if path else None
        if unknown:
            QMessageBox.information(self, "Fusion switch file",
                                    "Not FuseLens passes (left to the toolchain): " + ", ".join(unknown))

    def export_switch_file_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Fusion switch file", "fusion_switch.json", "JSON (*.json)")
        if path:
            self._guarded("Fusion switch file", lambda: write_bytes_atomic(path, self.switch_file_text().encode()))

    def import_scope_rules_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "User scope rule file", "", "Rule files (*.yaml *.yml *.json)")
        installed = self._guarded("Scope rules", lambda: self.apply_scope_rules(path)) if path else None
        if installed:
            QMessageBox.information(self, "Scope rules",
                                    "Installed (switch them on to use them): " + ", ".join(installed))
