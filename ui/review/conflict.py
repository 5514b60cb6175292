"""ConflictView: a file changed on disk after the robot proposed a change — the three versions side by side.

Nothing was written. The columns show the base (what the proposal was made against), the
file on disk now (its changed lines marked) and what applying the accepted hunks would
write (its changed lines marked); two more tabs show the differences as diffs. The
buttons resolve it: merge both changes and apply (rebase), overwrite the disk with the
proposal, or skip the file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QTextCursor, QTextFormat
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTabWidget,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from ui import theme
from ui.review.colors import diff_colors
from ui.review.view import DiffView
from workspace.changes import compare_texts
from workspace.diffing import changed_blocks, split_lines
from workspace.sandbox import display_path

if TYPE_CHECKING:
    from workspace.changes import Conflict

#: (action, label, object name) of the buttons for a conflict found while applying.
APPLY_ACTIONS = (
    ("cancel", "Cancel", ""),
    ("skip", "Skip this file", ""),
    ("overwrite", "Overwrite with the proposal", "DangerButton"),
    ("rebase", "Merge both and apply", "PrimaryButton"),
)
TOOLTIPS = {
    "rebase": "Rebase the proposal on the file as it is on disk now: both changes are kept when they touch "
              "different lines, then everything accepted is applied",
    "overwrite": "Replace the file on disk with the proposal (the disk's changes are lost; undo brings them back)",
    "skip": "Leave this file as it is on disk; the other files are applied",
    "cancel": "Write nothing now; the changes stay pending",
    "force": "Restore anyway; the current files are saved in a checkpoint first",
}
#: ... and for an undo / redo that would overwrite later edits.
RESTORE_ACTIONS = (
    ("cancel", "Cancel", ""),
    ("force", "Overwrite anyway", "DangerButton"),
)


def _column(title: str, parent: QWidget) -> tuple[QWidget, QPlainTextEdit]:
    box = QWidget(parent)
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(4)
    label = QLabel(title, box)
    label.setObjectName("ConflictColumnTitle")
    layout.addWidget(label)
    edit = QPlainTextEdit(box)
    edit.setAccessibleName(title)
    edit.setReadOnly(True)
    edit.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
    edit.setFont(theme.mono_font())
    edit.setAccessibleName(title)
    layout.addWidget(edit, 1)
    return box, edit


class ConflictView(QFrame):
    """The conflicts of one apply (or restore) and what to do about them."""

    #: (action, file id or path)
    action_requested = Signal(str, str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ConflictView")
        self.conflicts: list[Conflict] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 10, 10, 10)
        layout.setSpacing(8)
        top = QHBoxLayout()
        self.title = QLabel("", self)
        self.title.setObjectName("ConflictTitle")
        self.title.setWordWrap(True)
        top.addWidget(self.title, 1)
        self.picker = QComboBox(self)
        self.picker.setAccessibleName("Conflicting file")
        self.picker.currentIndexChanged.connect(self._show)
        top.addWidget(self.picker)
        layout.addLayout(top)
        self.message = QLabel("", self)
        self.message.setObjectName("Muted")
        self.message.setWordWrap(True)
        layout.addWidget(self.message)
        self.tabs = QTabWidget(self)
        self.tabs.setDocumentMode(True)
        three = QWidget(self.tabs)
        row = QHBoxLayout(three)
        row.setContentsMargins(0, 6, 0, 0)
        row.setSpacing(8)
        box_b, self.base_edit = _column("Base — when the robot proposed", three)
        box_d, self.disk_edit = _column("On disk now", three)
        box_p, self.proposed_edit = _column("Proposed — your accepted hunks", three)
        for box in (box_b, box_d, box_p):
            row.addWidget(box, 1)
        self.tabs.addTab(three, "Three versions")
        self.disk_diff = DiffView(parent=self.tabs)
        self.disk_diff.placeholder = "The file is not text; compare the versions outside the app."
        self.tabs.addTab(self.disk_diff, "What changed on disk")
        self.proposal_diff = DiffView(parent=self.tabs)
        self.proposal_diff.placeholder = self.disk_diff.placeholder
        self.tabs.addTab(self.proposal_diff, "Disk → proposal")
        layout.addWidget(self.tabs, 1)
        self._syncing = False
        edits = (self.base_edit, self.disk_edit, self.proposed_edit)
        for edit in edits:
            edit.verticalScrollBar().valueChanged.connect(lambda v, src=edit: self._sync_scroll(src, v))
        self.buttons_row = QHBoxLayout()
        self.buttons_row.addStretch(1)
        layout.addLayout(self.buttons_row)
        self.buttons: dict[str, QPushButton] = {}
        self.set_actions(APPLY_ACTIONS)

    def set_actions(self, actions: tuple[tuple[str, str, str], ...]) -> None:
        for button in self.buttons.values():
            self.buttons_row.removeWidget(button)
            button.deleteLater()
        self.buttons = {}
        for action, label, name in actions:
            button = QPushButton(label, self)
            if name:
                button.setObjectName(name)
            button.setCursor(Qt.CursorShape.PointingHandCursor)
            button.setToolTip(TOOLTIPS.get(action, ""))
            button.clicked.connect(lambda _=False, a=action: self._request(a))
            self.buttons_row.addWidget(button)
            self.buttons[action] = button

    def _request(self, action: str) -> None:
        conflict = self.current
        key = (conflict.file_id or conflict.path) if conflict is not None else ""
        self.action_requested.emit(action, key)

    @property
    def current(self) -> Conflict | None:
        i = self.picker.currentIndex()
        return self.conflicts[i] if 0 <= i < len(self.conflicts) else None

    def set_conflicts(self, conflicts: list[Conflict], *, title: str | None = None,
                      actions: tuple[tuple[str, str, str], ...] = APPLY_ACTIONS) -> None:
        self.conflicts = list(conflicts)
        self.set_actions(actions)
        n = len(self.conflicts)
        self.title.setText(title or (
            f"<b>{n} file{'s' if n != 1 else ''} changed on disk</b> after the robot proposed its change. "
            "Nothing was written."))
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.picker.blockSignals(True)
        self.picker.clear()
        for conflict in self.conflicts:
            self.picker.addItem(display_path(conflict.path))
        self.picker.blockSignals(False)
        self.picker.setVisible(n > 1)
        self._show(0)

    def retheme(self) -> None:
        self.disk_diff.retheme()
        self.proposal_diff.retheme()
        self._show(self.picker.currentIndex())

    def _show(self, index: int) -> None:
        conflict = self.conflicts[index] if 0 <= index < len(self.conflicts) else None
        if conflict is None:
            for edit in (self.base_edit, self.disk_edit, self.proposed_edit):
                edit.clear()
            self.message.setText("")
            return
        base, disk, proposed = conflict.texts()
        self.message.setText(conflict.message)

        def shown(text: str | None, data: Any) -> str:
            if text is not None:
                return text
            return "(the file does not exist)" if data is None else "(binary content)"

        self.base_edit.setPlainText(shown(base, conflict.base))
        self.disk_edit.setPlainText(shown(disk, conflict.disk))
        self.proposed_edit.setPlainText(shown(proposed, conflict.proposed))
        c = diff_colors()
        self._mark(self.disk_edit, base, disk, QColor(theme.colors().warning_bg))
        self._mark(self.proposed_edit, base, proposed, c.add_bg)
        if base is not None or disk is not None:
            self.disk_diff.show_file(compare_texts(base or "", disk or "", name=display_path(conflict.path)))
        else:
            self.disk_diff.show_file(None)
        if disk is not None or proposed is not None:
            self.proposal_diff.show_file(compare_texts(disk or "", proposed or "", name=display_path(conflict.path)))
        else:
            self.proposal_diff.show_file(None)

    @staticmethod
    def _mark(edit: QPlainTextEdit, base: str | None, other: str | None, color: QColor) -> None:
        """Tint the lines of ``other`` that differ from ``base``."""
        if base is None or other is None:
            edit.setExtraSelections([])
            return
        selections = []
        doc = edit.document()
        for _tag, _i1, _i2, j1, j2 in changed_blocks(split_lines(base), split_lines(other))[:2000]:
            for line in range(j1, j2):
                block = doc.findBlockByNumber(line)
                if not block.isValid():
                    break
                sel = QTextEdit.ExtraSelection()
                sel.format.setBackground(color)
                sel.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
                cursor = QTextCursor(block)
                sel.cursor = cursor
                selections.append(sel)
        edit.setExtraSelections(selections)

    def _sync_scroll(self, source: QPlainTextEdit, value: int) -> None:
        if self._syncing:
            return
        self._syncing = True
        try:
            for edit in (self.base_edit, self.disk_edit, self.proposed_edit):
                if edit is not source:
                    edit.verticalScrollBar().setValue(value)
        finally:
            self._syncing = False


__all__ = ["APPLY_ACTIONS", "RESTORE_ACTIONS", "ConflictView"]
