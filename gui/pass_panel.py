"""The pass panel: a view and editor of one PassConfig (passes by family, AutoFuse categories, counts).

It shows the configuration it is given (`show_config`) and reports every edit as a new one
(`config_edited`); it keeps no switch state of its own. Everything shown comes from the
configuration's catalog (pass metadata, user rules included), so a new pass appears here
without touching the GUI. General passes are shown on and locked. The passes of the user's
`ge.passes` files are known only from their last run in the TensorFlow helper (their code never
runs in the window): `show_user_passes` lists them, and a switch says `user_pass_switched`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

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

from fuselens.core.formats.io import write_bytes_atomic
from fuselens.gui.dialogs import guarded
from fuselens.passes.autofuse.flags import BROADCAST, CONCAT, DEFAULT_CATEGORIES, OPT_IN_CATEGORIES, POINTWISE, REDUCE
from fuselens.passes.base import PassResult
from fuselens.passes.config import PassConfig
from fuselens.passes.registry import FAMILIES, FAMILY_TITLES
from fuselens.session.pass_files import UserPass

PASS_ROLE = Qt.ItemDataRole.UserRole
CATEGORY_ROLE = Qt.ItemDataRole.UserRole + 1
USER_PASS_ROLE = Qt.ItemDataRole.UserRole + 2  # a pass of the user's pass files: its registered name
USER_PASSES_TITLE = "Your passes (ge.passes)"
# The AutoFuse kernel categories shown as sub-switches.
AUTOFUSE_CATEGORIES = (POINTWISE, BROADCAST, REDUCE, CONCAT)


def with_categories(config: PassConfig, categories: dict[str, bool]) -> PassConfig:
    """The configuration with these AutoFuse kernel categories (only differences from the defaults are listed)."""
    extra = tuple(c for c, on in categories.items() if on and c in OPT_IN_CATEGORIES)
    dropped = tuple(c for c, on in categories.items() if not on and c in DEFAULT_CATEGORIES)
    return config.with_autofuse_flags(replace(config.autofuse, enable_autofuse=config.is_enabled("AutoFusePass"),
                                              enable_pass=extra, disable_pass=dropped))


class PassPanel(QWidget):
    config_edited = Signal(object)  # PassConfig: the user switched something; fusion must re-run
    user_pass_switched = Signal(str, bool)  # a pass of the user's pass files (registered name), on or off

    def __init__(self, config: PassConfig, parent: QWidget | None = None):
        super().__init__(parent)
        self.config = config  # the configuration on show (the session's), never edited in place
        self.tree = QTreeWidget(self)
        self.tree.setColumnCount(2)
        self.tree.setHeaderLabels(["Pass", "Matches"])
        self.tree.setUniformRowHeights(True)
        self.pass_items: dict[str, QTreeWidgetItem] = {}
        self.category_items: dict[str, QTreeWidgetItem] = {}
        self.family_items: dict[str, QTreeWidgetItem] = {}
        self.user_group: QTreeWidgetItem | None = None  # "Your passes (ge.passes)", once a pass file is open
        self.user_items: dict[str, QTreeWidgetItem] = {}  # by registered name
        self.user_passes: list[UserPass] = []  # the last ones shown, shown again when the tree is rebuilt
        self.tree.itemChanged.connect(self._on_item_changed)
        self.tree.header().setStretchLastSection(False)
        self.tree.header().setSectionResizeMode(0, self.tree.header().ResizeMode.Stretch)
        self.tree.header().setSectionResizeMode(1, self.tree.header().ResizeMode.ResizeToContents)
        self.show_config(config)

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

    # ---- showing a configuration ------------------------------------------------------------------
    def show_config(self, config: PassConfig) -> None:
        """Show `config`: the tree is rebuilt when its catalog changed (user rules), else re-checked."""
        rebuild = [c.id for c in config.catalog()] != list(self.pass_items)
        self.config = config
        self.tree.blockSignals(True)
        if rebuild:
            self._populate()
            self.show_user_passes(self.user_passes)
        for pass_id, item in self.pass_items.items():
            item.setCheckState(0, Qt.CheckState.Checked if config.is_enabled(pass_id) else Qt.CheckState.Unchecked)
        for category, item in self.category_items.items():
            on = config.autofuse.is_enabled(category)
            item.setCheckState(0, Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
        self.tree.blockSignals(False)

    def _populate(self) -> None:
        self.tree.clear()
        self.pass_items, self.category_items, self.family_items = {}, {}, {}
        self.user_group, self.user_items = None, {}
        passes = self.config.catalog()
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
                for category in AUTOFUSE_CATEGORIES:
                    item = QTreeWidgetItem(group, [category, ""])
                    item.setData(0, CATEGORY_ROLE, category)
                    item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsUserCheckable)
                    self.category_items[category] = item

    def show_user_passes(self, passes: Sequence[UserPass]) -> None:
        """The passes of the user's pass files, under their registered names with their stage, switchable
        like the others (the group goes when no pass file has a pass; rows keep their place across runs)."""
        self.user_passes = list(passes)
        self.tree.blockSignals(True)
        if self.user_group is None and passes:  # first: the passes being written are the ones looked at
            self.user_group = QTreeWidgetItem([USER_PASSES_TITLE, ""])
            self.tree.insertTopLevelItem(0, self.user_group)
            self.user_group.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self.user_group.setToolTip(0, "the passes your ge.passes files register (File > Open pass file…); "
                                          "they run at their stage, again on every save")
            self.user_group.setExpanded(True)
        wanted = {p.name for p in passes}
        for name in [n for n in self.user_items if n not in wanted]:
            item = self.user_items.pop(name)
            item.parent().removeChild(item)
        for user_pass in passes:
            item = self.user_items.get(user_pass.name)
            if item is None:
                item = self.user_items[user_pass.name] = QTreeWidgetItem(self.user_group, ["", ""])
                item.setData(0, USER_PASS_ROLE, user_pass.name)
                item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
                              | Qt.ItemFlag.ItemIsUserCheckable)
            item.setText(0, f"{user_pass.name}  [{user_pass.stage}]")
            item.setToolTip(0, f"<b>{user_pass.name}</b> at {user_pass.stage}<br>from {user_pass.file}")
            item.setCheckState(0, Qt.CheckState.Checked if user_pass.on else Qt.CheckState.Unchecked)
        if self.user_group is not None and not passes:
            self.tree.takeTopLevelItem(self.tree.indexOfTopLevelItem(self.user_group))
            self.user_group = None
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
            self._action("Scope pass list (copy)", lambda: self._copy(self.config.scope_list()),
                         "copy the enable_scope_fusion_passes value"),
            self._action("AUTOFUSE_FLAGS (copy)", lambda: self._copy(self.config.autofuse_flags()),
                         "copy the AUTOFUSE_FLAGS value"),
            self._action("Fusion switch file…", self.export_switch_file_dialog,
                         "write the passes' on/off states as a fusion switch file (JSON)"),
        ]

    # ---- editing: every edit is a new configuration, announced once -------------------------------
    def _edit(self, config: PassConfig) -> None:
        self.show_config(config)
        self.config_edited.emit(config)

    def _on_item_changed(self, item: QTreeWidgetItem, column: int) -> None:
        if column != 0:
            return
        on = item.checkState(0) == Qt.CheckState.Checked
        if item.data(0, USER_PASS_ROLE):
            self.user_pass_switched.emit(item.data(0, USER_PASS_ROLE), on)
        elif item.data(0, PASS_ROLE):
            self._edit(self.config.with_pass(item.data(0, PASS_ROLE), on))
        elif item.data(0, CATEGORY_ROLE):
            categories = {c: self.config.autofuse.is_enabled(c) for c in AUTOFUSE_CATEGORIES}
            self._edit(with_categories(self.config, {**categories, item.data(0, CATEGORY_ROLE): on}))

    def set_enabled(self, pass_id: str, on: bool) -> None:
        """Switch a pass as a click on its box would (a general pass stays on)."""
        if not self.config.get_pass(pass_id).general:
            self.pass_items[pass_id].setCheckState(0, Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)

    def set_category(self, category: str, on: bool) -> None:
        self.category_items[category].setCheckState(0, Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)

    def set_counts(self, results: list[PassResult]) -> None:
        by_id = {r.pass_id: r for r in results}
        self.tree.blockSignals(True)
        for pid, item in (*self.pass_items.items(), *self.user_items.items()):
            result = by_id.get(pid)
            item.setText(1, f"{len(result.matches)} ✔ {len(result.near_misses)} ✘" if result else "")
        self.tree.blockSignals(False)

    # ---- toolchain switches: each raises FuseLensError for bad input ------------------------------
    def apply_scope_list(self, text: str) -> None:
        """Exactly the named non-general scope passes on (general ones stay on)."""
        self._edit(self.config.with_scope_list(text))

    def apply_autofuse_flags(self, text: str) -> None:
        self._edit(self.config.with_autofuse_flags(text))

    def apply_switch_file(self, path: str) -> list[str]:
        """Switch the passes a fusion switch file names (`ALL` covers the rest); returns the names it
        has that are no FuseLens pass (kept for export, left to the toolchain)."""
        config = self.config.with_switch_file(path)
        self._edit(config)
        return sorted(n for section in config.foreign_switches.sections().values() for n in section if n != "ALL")

    def apply_scope_rules(self, path: str) -> list[str]:
        """Add a user rule file's rules as scope passes (shown switched off); returns their ids."""
        before = {c.id: c for c in self.config.catalog()}
        config = self.config.with_scope_rules(path)
        self._edit(config)
        return [c.id for c in config.catalog() if before.get(c.id) is not c and c.family == "scope"]

    # ---- dialogs ----------------------------------------------------------------------------------
    def _copy(self, text: str) -> None:
        QApplication.clipboard().setText(text)
        QMessageBox.information(self, "Copied", f"Copied to the clipboard:\n\n{text or '(empty)'}")

    def import_scope_list(self) -> None:
        text, ok = QInputDialog.getText(self, "Scope pass list", "enable_scope_fusion_passes (comma list):",
                                        text=self.config.scope_list())
        if ok:
            guarded(self, "Scope pass list", lambda: self.apply_scope_list(text))

    def import_autofuse_flags(self) -> None:
        text, ok = QInputDialog.getText(self, "AUTOFUSE_FLAGS", "AUTOFUSE_FLAGS:", text=self.config.autofuse_flags())
        if ok:
            guarded(self, "AUTOFUSE_FLAGS", lambda: self.apply_autofuse_flags(text))

    def import_switch_file_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Fusion switch file", "",
                                              "Switch files (*.json *.cfg *.txt);;All files (*)")
        unknown = guarded(self, "Fusion switch file", lambda: self.apply_switch_file(path)) if path else None
        if unknown:
            QMessageBox.information(self, "Fusion switch file",
                                    "Not FuseLens passes (left to the toolchain): " + ", ".join(unknown))

    def export_switch_file_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Fusion switch file", "fusion_switch.json", "JSON (*.json)")
        if path:
            text = self.config.switch_file().to_json_text()
            guarded(self, "Fusion switch file", lambda: write_bytes_atomic(path, text.encode()))

    def import_scope_rules_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "User scope rule file", "", "Rule files (*.yaml *.yml *.json)")
        added = guarded(self, "Scope rules", lambda: self.apply_scope_rules(path)) if path else None
        if added:
            QMessageBox.information(self, "Scope rules", "Added (switch them on to use them): " + ", ".join(added))
