"""The robot editor: the robots on the left, the chosen one's form in the middle, its system prompt as a run
would see it on the right; problems under their fields and in a banner; Save refuses an invalid robot.

Reading, checking, previewing and writing files is :mod:`workspace.robot_files` (Qt-free, tested there);
this dialog only shows it. Shipped robots are read-only ("Duplicate to edit"). After a save or delete the
dialog emits ``saved`` / ``deleted`` and the window reads the robots again (ui/window/robots.py).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QDialog,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from ui import theme
from ui.robot_editor.fields import ProblemLabel
from ui.robot_editor.form import RobotForm
from workspace import robot_files
from workspace.errors import ConfigurationError
from workspace.robot_files import RobotDraft

if TYPE_CHECKING:
    from collections.abc import Callable

    from ui.controller import Controller
    from workspace.approval import ApprovalPolicy

log = logging.getLogger("ui.robot_editor")
SOURCE_LABELS = {"shipped": "shipped · read-only", "user": "yours", "project": "this folder", "new": "new, not saved"}
WHERE_LABELS = {"user": "Your robots (all folders)", "project": "This folder's robots (.robotlab/robots)"}


class RobotEditor(QDialog):
    """Create, duplicate, edit and delete robots (Ctrl+N, Ctrl+D, Delete, Ctrl+S; Esc closes)."""

    #: A robot file was written: (its name, whether it is new).
    saved = Signal(str, bool)
    deleted = Signal(str)

    def __init__(self, controller: Controller, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.setObjectName("RobotEditor")
        self.setWindowTitle("Robots — RobotLab Workspace")
        self.setAccessibleName("Robot editor")
        self.draft: RobotDraft = robot_files.new_draft()
        self.dirty = False
        self._loading = False
        self._problems: list[robot_files.Problem] = []
        self._check_timer = QTimer(self)
        self._check_timer.setSingleShot(True)
        self._check_timer.setInterval(200)
        self._check_timer.timeout.connect(self.refresh_checks)
        self._build()
        self._size_to_screen()

    # -- building -------------------------------------------------------------------------------------------
    def _build(self) -> None:
        outer = QVBoxLayout(self)
        splitter = QSplitter(Qt.Orientation.Horizontal, self)
        splitter.setChildrenCollapsible(False)
        outer.addWidget(splitter, 1)

        left = QWidget(splitter)
        lc = QVBoxLayout(left)
        lc.setContentsMargins(0, 0, 0, 0)
        self.robot_list = QListWidget(left)
        self.robot_list.setObjectName("RobotList")
        self.robot_list.setAccessibleName("Robots")
        self.robot_list.currentItemChanged.connect(self._on_current)
        lc.addWidget(self.robot_list, 1)
        row = QHBoxLayout()
        self.new_button = self._button("&New", "New robot (Ctrl+N)", self.new_robot, row, left)
        self.duplicate_button = self._button("D&uplicate", "Duplicate the robot (Ctrl+D)", self.duplicate_robot,
                                             row, left)
        lc.addLayout(row)
        row2 = QHBoxLayout()
        self.delete_button = self._button("De&lete…", "Delete the robot's file (Delete in the list; asks first)",
                                          self.delete_robot, row2, left)
        row2.addStretch(1)
        lc.addLayout(row2)
        left.setMinimumWidth(200)

        middle = QWidget(splitter)
        mc = QVBoxLayout(middle)
        mc.setContentsMargins(0, 0, 0, 0)
        self.read_only_bar = QFrame(middle)
        self.read_only_bar.setObjectName("Banner")
        rb = QHBoxLayout(self.read_only_bar)
        rb.setContentsMargins(10, 6, 6, 6)
        self.read_only_label = QLabel("Shipped with RobotLab: read-only.", self.read_only_bar)
        self.read_only_label.setWordWrap(True)
        rb.addWidget(self.read_only_label, 1)
        self.copy_button = self._button("Duplicate to &edit", "Make your own copy of this robot and edit it",
                                        self.duplicate_robot, rb, self.read_only_bar)
        mc.addWidget(self.read_only_bar)
        self.form = RobotForm(robot_files.setting_fields(), middle)
        self.form.changed.connect(self._on_edited)
        mc.addWidget(self.form, 1)
        where_row = QHBoxLayout()
        self.where_label = QLabel("Save &in:", middle)
        self.where = QComboBox(middle)
        self.where.setAccessibleName("Save in")
        self.where_label.setBuddy(self.where)
        self.where.currentIndexChanged.connect(lambda _i: self._on_edited())
        where_row.addWidget(self.where_label)
        where_row.addWidget(self.where, 1)
        mc.addLayout(where_row)
        self.path_label = QLabel("", middle)
        self.path_label.setObjectName("Muted")
        self.path_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.path_label.setWordWrap(True)
        mc.addWidget(self.path_label)
        middle.setMinimumWidth(330)

        right = QGroupBox("Preview: the system prompt", splitter)
        right.setObjectName("RobotPreview")
        rc = QVBoxLayout(right)
        self.values = QLineEdit(right)
        self.values.setObjectName("PreviewValues")
        self.values.setPlaceholderText("Values for the preview, e.g. folder: /home/me/notes")
        self.values.setAccessibleName("Values for the preview (YAML)")
        self.values.setToolTip("A run's parameters as YAML (name: value; several: {a: 1, b: 2})")
        self.values.textChanged.connect(lambda _t: self._check_timer.start())
        rc.addWidget(self.values)
        self.preview = QPlainTextEdit(right)
        self.preview.setObjectName("PreviewText")
        self.preview.setReadOnly(True)
        self.preview.setAccessibleName("Rendered system prompt")
        self.preview.setTabChangesFocus(True)
        rc.addWidget(self.preview, 1)
        self.preview_problem = ProblemLabel(right)
        rc.addWidget(self.preview_problem)
        right.setMinimumWidth(200)
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 3)
        splitter.setStretchFactor(2, 2)
        splitter.setSizes([250, 560, 370])

        self.banner = QLabel("", self)
        self.banner.setObjectName("RobotProblems")
        self.banner.setWordWrap(True)
        self.banner.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.banner.setVisible(False)
        outer.addWidget(self.banner)
        buttons = QHBoxLayout()
        self.status = QLabel("", self)
        self.status.setObjectName("Muted")
        buttons.addWidget(self.status, 1)
        self.save_button = self._button("&Save", "Save the robot (Ctrl+S)", self.save, buttons, self)
        self.save_button.setDefault(True)
        self.close_button = self._button("Close", "Close the editor (Esc)", self.close, buttons, self)
        outer.addLayout(buttons)
        for keys, slot in ((QKeySequence.StandardKey.Save, self.save), ("Ctrl+N", self.new_robot),
                           ("Ctrl+D", self.duplicate_robot)):
            shortcut = QShortcut(QKeySequence(keys), self)
            shortcut.activated.connect(slot)
        delete = QShortcut(QKeySequence(QKeySequence.StandardKey.Delete), self.robot_list)
        delete.setContext(Qt.ShortcutContext.WidgetShortcut)
        delete.activated.connect(self.delete_robot)
        self.retheme()

    @staticmethod
    def _button(text: str, tip: str, slot: Callable[[], object], layout: QHBoxLayout, parent: QWidget) -> QPushButton:
        button = QPushButton(text, parent)
        button.setToolTip(tip)
        button.setAccessibleName(text.replace("&", ""))
        button.setAutoDefault(False)
        button.clicked.connect(lambda _c=False: slot())
        layout.addWidget(button)
        return button

    def retheme(self) -> None:
        c = theme.colors()
        self.banner.setStyleSheet(f"background: {c.error_bg}; color: {c.error}; border-radius: 6px; padding: 6px;")
        for label in self.findChildren(ProblemLabel):
            label.retheme()

    def _size_to_screen(self) -> None:
        parent = self.parentWidget()
        screen = parent.screen() if parent is not None else self.screen()
        area = screen.availableGeometry() if screen is not None else None
        width, height = 1180, 760
        if area is not None:
            width, height = min(width, int(area.width() * 0.92)), min(height, int(area.height() * 0.9))
        self.resize(width, height)

    # -- the list -------------------------------------------------------------------------------------------
    def open_robot(self, name: str | None = None, *, new: bool = False) -> None:
        """Show the editor with ``name`` chosen (or a new robot)."""
        self.reload_list(select=name)
        if new:
            self.new_robot()
        self.show()
        self.raise_()
        self.activateWindow()
        # Once the dialog is the active window (the window system's answer comes later).
        QTimer.singleShot(0, self.form.focus_name if new else self.robot_list.setFocus)

    def reload_list(self, select: str | None = None) -> None:
        self._loading = True
        try:
            self.robot_list.clear()
            for info in self.controller.robots(refresh=True):
                item = QListWidgetItem(f"{info.name}  ({SOURCE_LABELS.get(info.source, info.source)})")
                item.setData(Qt.ItemDataRole.UserRole, str(info.path))
                item.setData(Qt.ItemDataRole.UserRole + 1, info.name)
                item.setToolTip(f"{info.description or ''}\n{info.path}".strip())
                self.robot_list.addItem(item)
        finally:
            self._loading = False
        row = 0
        for i in range(self.robot_list.count()):
            item = self.robot_list.item(i)
            if item is not None and item.data(Qt.ItemDataRole.UserRole + 1) == select:
                row = i
        if self.robot_list.count():
            self.robot_list.setCurrentRow(row)
            current = self.robot_list.currentItem()
            if current is not None:
                self._show_path(Path(current.data(Qt.ItemDataRole.UserRole)))

    def _on_current(self, current: QListWidgetItem | None, previous: QListWidgetItem | None) -> None:
        if self._loading or current is None:
            return
        if self.dirty and not self._confirm("Discard your changes to this robot?",
                                            f"The changes to '{self.draft.name}' are not saved."):
            if previous is not None:
                self.robot_list.blockSignals(True)
                self.robot_list.setCurrentItem(previous)
                self.robot_list.blockSignals(False)
            return
        self._show_path(Path(current.data(Qt.ItemDataRole.UserRole)))

    def _show_path(self, path: Path) -> None:
        try:
            draft = robot_files.load_draft(path, folder=self.controller.folder)
        except ConfigurationError as exc:
            self._show_banner([str(exc)])
            return
        self.show_draft(draft)

    def show_draft(self, draft: RobotDraft) -> None:
        self.draft = draft
        config = self.controller.config
        servers = sorted(config.mcp_servers) if config is not None else []
        models = [str(config.get("llm.model") or "")] if config is not None else []
        models += sorted({str(r.model) for r in self.controller.robots() if getattr(r, "model", None)})
        self.form.set_choices(tools=robot_files.builtin_tools(), servers=servers, models=list(dict.fromkeys(models)))
        self.form.fill(draft.front, draft.body, approval=self._approval(draft.name), read_only=draft.read_only)
        self.read_only_bar.setVisible(draft.read_only)
        self.read_only_label.setText(f"'{draft.name}' is shipped with RobotLab and read-only: duplicate it to "
                                     "make your own copy to edit.")
        self.where.blockSignals(True)
        self.where.clear()
        for key, directory in robot_files.save_dirs(self.controller.folder).items():
            self.where.addItem(WHERE_LABELS[key], key)
            self.where.setItemData(self.where.count() - 1, str(directory), Qt.ItemDataRole.ToolTipRole)
        self.where.blockSignals(False)
        new = draft.path is None
        self.where.setVisible(new)
        self.where_label.setVisible(new)
        self.delete_button.setEnabled(not draft.read_only and not new)
        self.save_button.setEnabled(not draft.read_only)
        self.dirty = new
        self.status.setText("Not saved" if new else "")
        self._update_path()
        self.refresh_checks()

    def _update_path(self) -> None:
        if self.draft.path is not None:
            self.path_label.setText(f"File: {self.draft.path}")
        else:
            dirs = robot_files.save_dirs(self.controller.folder)
            where = self.where.currentData() or "user"
            name = self.form.name.text().strip() or "…"
            self.path_label.setText(f"Will be saved as {dirs.get(where, dirs['user']) / (name + '.md')}")

    # -- editing ---------------------------------------------------------------------------------------------
    def _on_edited(self) -> None:
        if self.draft.read_only:
            return
        self.dirty = True
        self.status.setText("Not saved")
        self._update_path()
        self._check_timer.start()

    def _current_draft(self) -> RobotDraft:
        from dataclasses import replace

        if self.draft.read_only:
            return self.draft
        return replace(self.draft, front=self.form.front(), body=self.form.body.toPlainText())

    def _target(self) -> Path | None:
        if self.draft.path is not None:
            return self.draft.path
        dirs = robot_files.save_dirs(self.controller.folder)
        name = self.form.name.text().strip()
        return dirs.get(self.where.currentData() or "user", dirs["user"]) / f"{name}.md" if name else None

    def refresh_checks(self) -> list[robot_files.Problem]:
        """Check the robot as the form says it, show each problem at its field, and render the preview."""
        draft = self._current_draft()
        problems = [] if draft.read_only else robot_files.check(draft, folder=self.controller.folder,
                                                                 target=self._target())
        if draft.path is None and not draft.read_only:
            target = self._target()
            if target is not None and target.exists():
                problems.append(robot_files.Problem("name", f"name: {target} already exists: choose another name"))
        self._problems = problems
        by_key: dict[str | None, list[str]] = {}
        for problem in problems:  # "…/name.md:6: temperature: …" reads "line 6: temperature: …" at the field
            by_key.setdefault(problem.key, []).append(re.sub(r"^.*?\.md:(\d+): ", r"line \1: ", problem.message))
        rest = self.form.show_problems(by_key)
        self.form.show_skills(*robot_files.skills_of(self.form.front(), folder=self.controller.folder))
        values, values_problem = self._preview_values()
        rendered = robot_files.preview(draft, values)
        self.preview.setPlainText(rendered.text)
        preview_problems = [p for p in (values_problem, rendered.error) if p]
        self.preview_problem.show_problems(preview_problems)
        self._show_banner(rest, count=len(problems))
        self.save_button.setEnabled(not draft.read_only)
        return problems

    def _preview_values(self) -> tuple[dict[str, Any], str | None]:
        text = self.values.text().strip()
        if not text:
            return {}, None
        import yaml

        from workspace.yaml_limits import safe_load

        try:
            data = safe_load(text if "\n" in text or text.startswith("{") else "{" + text + "}")
        except yaml.YAMLError as exc:
            return {}, f"The preview values are not YAML ({getattr(exc, 'problem', exc)}): write name: value"
        if not isinstance(data, dict):
            return {}, "The preview values must be name: value pairs"
        return {str(k): v for k, v in data.items()}, None

    def _show_banner(self, messages: list[str], *, count: int | None = None) -> None:
        if count and not messages:
            messages = [f"{count} problem{'s' if count > 1 else ''} to fix before saving: see the fields marked "
                        "in red."]
        self.banner.setText("\n".join(messages))
        self.banner.setAccessibleName("Problems: " + " ".join(messages) if messages else "")
        self.banner.setVisible(bool(messages))

    # -- actions ---------------------------------------------------------------------------------------------
    def _unique(self, base: str) -> str:
        names = {getattr(r, "name", "") for r in self.controller.robots()}
        dirs = robot_files.save_dirs(self.controller.folder)
        name, n = base, 2
        while name in names or any((d / f"{name}.md").exists() for d in dirs.values()):
            name, n = f"{base}-{n}", n + 1
        return name

    def list_selection(self) -> list[str]:
        """The names chosen in the list (at most one)."""
        return [str(item.data(Qt.ItemDataRole.UserRole + 1)) for item in self.robot_list.selectedItems()]

    def _unselect(self) -> None:
        """A robot not saved yet is none of the list's: nothing there looks chosen."""
        self.robot_list.blockSignals(True)
        self.robot_list.setCurrentRow(-1)
        self.robot_list.clearSelection()
        self.robot_list.blockSignals(False)

    def new_robot(self) -> None:
        if self.dirty and not self._confirm("Discard your changes to this robot?",
                                            f"The changes to '{self.draft.name}' are not saved."):
            return
        self._unselect()
        self.show_draft(robot_files.new_draft(self._unique("my-robot")))
        self.form.focus_name()

    def duplicate_robot(self) -> None:
        base = self._current_draft()
        stem = base.name.split("-copy")[0] or "robot"
        self._unselect()
        self.show_draft(robot_files.duplicate(base, self._unique(f"{stem}-copy")))
        self.form.focus_name()

    def delete_robot(self) -> None:
        draft = self.draft
        if draft.read_only or draft.path is None:
            return
        if not self._confirm(f"Delete the robot '{draft.name}'?",
                             f"Its file {draft.path} is deleted. Threads with it keep their messages.",
                             destructive=True):
            return
        try:
            robot_files.delete(draft)
        except (ConfigurationError, OSError) as exc:
            self._show_banner([f"Could not delete {draft.path}: {exc}"])
            return
        self.dirty = False
        self.deleted.emit(draft.name)
        self.reload_list()
        self.status.setText(f"Deleted {draft.name}.")

    def save(self) -> bool:
        """Write the robot if it has no problems (else show them); True when written."""
        if self.draft.read_only:
            self._show_banner([f"'{self.draft.name}' is shipped and read-only: Duplicate to edit it."])
            return False
        self._check_timer.stop()
        problems = self.refresh_checks()
        if problems:
            tab = self.form.first_problem_tab({p.key: [] for p in problems})
            if tab is not None:
                self.form.setCurrentIndex(tab)
            return False
        draft = self._current_draft()
        new = draft.path is None
        old_name = self.draft.name
        try:
            robot_files.save(draft, folder=self.controller.folder, where=str(self.where.currentData() or "user"))
        except (ConfigurationError, OSError) as exc:
            self._show_banner([str(exc)])
            return False
        self._save_approval(draft.name, old_name if not new else None)
        self.draft = draft
        self.dirty = False
        focus = QApplication.focusWidget()
        self.saved.emit(draft.name, new)  # the window lists the robot (and may start a thread with it)
        self.reload_list(select=draft.name)
        self.status.setText(f"Saved {draft.path}")
        self.activateWindow()  # the editor keeps the keyboard (Esc closes it)
        if focus is not None and self.isAncestorOf(focus):
            focus.setFocus(Qt.FocusReason.OtherFocusReason)
        return True

    # -- the approval policy --------------------------------------------------------------------------------
    def _policy(self) -> ApprovalPolicy:
        workspace = self.controller.workspace
        if workspace is not None:
            return workspace.approval.policy
        from workspace import paths
        from workspace.approval import ApprovalPolicy

        return ApprovalPolicy.load(paths.approval_policy_file())

    def _approval(self, name: str) -> str | None:
        try:
            return robot_files.robot_approval(self._policy(), name)
        except ConfigurationError as exc:
            log.warning("the approval policy could not be read: %s", exc)
            return None

    def _save_approval(self, name: str, old_name: str | None) -> None:
        try:
            policy = self._policy()
            if old_name and old_name != name:
                robot_files.set_robot_approval(policy, old_name, None)
            robot_files.set_robot_approval(policy, name, self.form.approval_choice())
        except (ConfigurationError, OSError) as exc:
            self._show_banner([f"The robot was saved, but its approval rule was not: {exc}"])

    # -- closing ---------------------------------------------------------------------------------------------
    def _confirm(self, question: str, detail: str, *, destructive: bool = False) -> bool:
        box = QMessageBox(QMessageBox.Icon.Warning if destructive else QMessageBox.Icon.Question, "Robots",
                          question, QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, self)
        box.setInformativeText(detail)
        box.setDefaultButton(QMessageBox.StandardButton.No)
        return box.exec() == QMessageBox.StandardButton.Yes

    def reject(self) -> None:
        """Esc, Close and the window's close button (QDialog.closeEvent calls this): unsaved changes ask first."""
        if self.dirty and not self.draft.read_only and not self._confirm(
                "Close without saving?", f"The changes to '{self.draft.name}' are not saved."):
            return
        self.dirty = False
        super().reject()
