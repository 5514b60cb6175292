"""The inline box over a hunk of the diff: a reason for a rejection, or the proposed lines to edit."""


from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import (
    QKeyEvent,
)
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
)

from ui import theme
from ui.review.rows import hunk_final_lines
from workspace.diffing import strip_eol

if TYPE_CHECKING:
    from ui.review.view import DiffView
    from workspace.changes import Hunk


class HunkOverlay(QFrame):
    """The inline box under a hunk's header (a reason for rejecting, or the hunk's text to edit)."""

    def __init__(self, view: DiffView, hunk: Hunk, kind: str) -> None:
        super().__init__(view.viewport())
        self.setObjectName("DiffInlineBox")
        self.view = view
        self.hunk_id = hunk.id
        self.kind = kind
        c = theme.colors()
        self.setStyleSheet(
            f"#DiffInlineBox {{ background: {c.surface}; border: 1px solid "
            f"{c.error if kind == 'reject' else c.accent}; border-radius: 8px; }}")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.setSpacing(6)
        row = QHBoxLayout()
        row.setSpacing(8)
        self.editor: QPlainTextEdit | None = None
        self.reason: QLineEdit | None = None
        if kind == "reject":
            self.reason = QLineEdit(self)
            self.reason.setObjectName("RejectReason")
            self.reason.setPlaceholderText("Why? (optional — the robot is told)")
            self.reason.setAccessibleName("Reason for rejecting this hunk")
            self.reason.returnPressed.connect(self.confirm)
            self.reason.installEventFilter(self)
            row.addWidget(self.reason, 1)
            ok = QPushButton("Reject", self)
            ok.setObjectName("DangerButton")
        else:
            hint = QLabel("Edit the proposed lines — Ctrl+Enter saves and accepts, Esc cancels", self)
            hint.setObjectName("Muted")
            layout.addWidget(hint)
            self.editor = QPlainTextEdit(self)
            self.editor.setObjectName("HunkEditor")
            self.editor.setAccessibleName("Proposed lines of this hunk (editable)")
            self.editor.setFont(view.font_normal)
            self.editor.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
            self.editor.setPlainText("\n".join(strip_eol(x) for x in hunk_final_lines(hunk)))
            self.editor.setTabChangesFocus(False)
            layout.addWidget(self.editor, 1)
            row.addStretch(1)
            ok = QPushButton("Save && accept", self)
            ok.setObjectName("PrimaryButton")
            self.editor.installEventFilter(self)
        cancel = QPushButton("Cancel", self)
        cancel.clicked.connect(self.cancel)
        ok.clicked.connect(self.confirm)
        row.addWidget(cancel)
        row.addWidget(ok)
        layout.addLayout(row)
        lines = 0
        if self.editor is not None:
            lines = max(3, min(14, self.editor.blockCount() + 1))
            self.editor.setFixedHeight(view.line_height * lines + 12)
        self.wanted_height = (view.line_height * lines + 12 + 64) if self.editor is not None else 48

    def focus(self) -> None:
        target = self.reason if self.reason is not None else self.editor
        if target is not None:
            target.setFocus()
            if self.editor is not None:
                cursor = self.editor.textCursor()
                cursor.movePosition(cursor.MoveOperation.End)
                self.editor.setTextCursor(cursor)

    def confirm(self) -> None:
        self.view._overlay_done(self, True)

    def cancel(self) -> None:
        self.view._overlay_done(self, False)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """In the box: Ctrl+Enter saves (and accepts), Esc cancels — before the window's shortcuts for the
        same keys (send the message, stop the run) can take them."""
        if watched in (self.editor, self.reason) and isinstance(event, QKeyEvent):
            ctrl_enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and bool(
                event.modifiers() & Qt.KeyboardModifier.ControlModifier)
            escape = event.key() == Qt.Key.Key_Escape
            if event.type() == QEvent.Type.ShortcutOverride and (ctrl_enter or escape):
                event.accept()  # ours, not a window shortcut's
                return True
            if event.type() == QEvent.Type.KeyPress and (ctrl_enter or escape):
                if escape:
                    self.cancel()
                else:
                    self.confirm()
                return True
        return super().eventFilter(watched, event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.cancel()
            return
        super().keyPressEvent(event)

    def text(self) -> str:
        if self.reason is not None:
            return self.reason.text()
        return self.editor.toPlainText() if self.editor is not None else ""




__all__ = ["HunkOverlay"]
