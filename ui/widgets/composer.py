"""The message box: grows with its text, Ctrl+Enter sends; the send button becomes Stop while running."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QSize, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QPlainTextEdit, QToolButton, QVBoxLayout, QWidget

from ui import theme
from ui.widgets.common import ElidedLabel

MIN_LINES = 1
MAX_LINES = 10


class ComposerEdit(QPlainTextEdit):
    submitted = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and (
            event.modifiers() & Qt.KeyboardModifier.ControlModifier
        ):
            self.submitted.emit()
            return
        super().keyPressEvent(event)


class Composer(QWidget):
    """Message input with a send / stop button."""

    send_requested = Signal(str)
    stop_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ComposerArea")
        outer = QHBoxLayout(self)
        outer.setContentsMargins(24, 8, 24, 12)
        outer.addStretch(1)
        column = QVBoxLayout()
        column.setSpacing(4)
        self.frame = QFrame(self)
        self.frame.setObjectName("Composer")
        self.frame.setMaximumWidth(820)
        row = QHBoxLayout(self.frame)
        row.setContentsMargins(12, 8, 8, 8)
        row.setSpacing(8)
        self.edit = ComposerEdit(self.frame)
        self.edit.setObjectName("ComposerEdit")
        self.edit.setAccessibleName("Message")
        self.edit.setPlaceholderText("Message the robot…")
        self.edit.setTabChangesFocus(True)
        self.edit.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.edit.submitted.connect(self.submit)
        self.edit.textChanged.connect(self._fit)
        self.edit.installEventFilter(self)
        row.addWidget(self.edit, 1)
        self._row = row
        self.button = QToolButton(self.frame)
        self.button.setObjectName("SendButton")
        self.button.setAccessibleName("Send or stop")
        self.button.setIconSize(QSize(18, 18))
        self.button.setFixedSize(34, 34)
        self.button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.button.clicked.connect(self._on_button)
        row.addWidget(self.button, 0, Qt.AlignmentFlag.AlignBottom)
        column.addWidget(self.frame)
        # The hint gives way ("…") when the column is narrow: it never widens the window.
        self.hint = ElidedLabel("Ctrl+Enter to send · Esc to stop · Ctrl+K for every command", self, tooltip=True)
        self.hint.setObjectName("ComposerHint")
        self.hint.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        column.addWidget(self.hint)
        holder = QWidget(self)
        holder.setLayout(column)
        holder.setMaximumWidth(820)
        outer.addWidget(holder, 100)
        outer.addStretch(1)
        self.running = False
        self._update_button()
        self._fit()

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if obj is self.edit and event.type() in (QEvent.Type.FocusIn, QEvent.Type.FocusOut):
            self.frame.setProperty("focused", event.type() == QEvent.Type.FocusIn)
            self.frame.style().unpolish(self.frame)
            self.frame.style().polish(self.frame)
        return super().eventFilter(obj, event)

    def _fit(self) -> None:
        lines = max(MIN_LINES, min(MAX_LINES, int(self.edit.document().size().height()) or 1))
        height = self.edit.fontMetrics().lineSpacing() * lines + 12
        self.edit.setFixedHeight(max(30, height))
        if not self.running:
            self.button.setEnabled(bool(self.edit.toPlainText().strip()))

    def _update_button(self) -> None:
        c = theme.colors()
        fg = c.accent_text
        if self.running:
            self.button.setIcon(theme.icon("stop", c.surface if c.name == "light" else c.window, 18))
            self.button.setToolTip("Stop (Esc)")
            self.button.setEnabled(True)
        else:
            self.button.setIcon(theme.icon("send", fg, 18))
            self.button.setToolTip("Send (Ctrl+Enter)")
            self.button.setEnabled(bool(self.edit.toPlainText().strip()))
        self.button.setProperty("running", self.running)
        self.button.style().unpolish(self.button)
        self.button.style().polish(self.button)

    def set_running(self, running: bool) -> None:
        self.running = running
        self._update_button()

    def add_side_widget(self, widget: QWidget) -> None:
        """Put ``widget`` (the model picker) beside the send button, bottom-aligned like it."""
        widget.setParent(self.frame)
        self._row.insertWidget(self._row.indexOf(self.button), widget, 0, Qt.AlignmentFlag.AlignBottom)

    def set_robot(self, robot: str) -> None:
        self.edit.setPlaceholderText(f"Message {robot}…")

    def _on_button(self) -> None:
        if self.running:
            self.stop_requested.emit()
        else:
            self.submit()

    def submit(self) -> None:
        text = self.edit.toPlainText().strip()
        if not text or self.running:
            return
        self.edit.clear()
        self.send_requested.emit(text)

    def text(self) -> str:
        return self.edit.toPlainText()

    def set_text(self, text: str) -> None:
        self.edit.setPlainText(text)
        self.edit.moveCursor(self.edit.textCursor().MoveOperation.End)

    def focus(self) -> None:
        self.edit.setFocus()
