"""A banner for problems that need reading (a broken database) and a toast with Undo."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QToolButton, QWidget

from ui import theme


class Banner(QFrame):
    """A dismissable message across the top of the chat."""

    dismissed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Banner")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 8, 8, 8)
        layout.setSpacing(10)
        self.icon = QLabel(self)
        layout.addWidget(self.icon, 0, Qt.AlignmentFlag.AlignTop)
        self.label = QLabel("", self)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.label, 1)
        self.action_button = QPushButton("", self)
        self.action_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.action_button.clicked.connect(self._run_action)
        self.action_button.setVisible(False)
        self._action: Callable[[], None] | None = None
        layout.addWidget(self.action_button, 0, Qt.AlignmentFlag.AlignTop)
        close = QToolButton(self)
        close.setObjectName("GhostButton")
        self._close = close
        close.setIcon(theme.icon("close", theme.colors().muted, 14))
        close.setToolTip("Dismiss")
        close.clicked.connect(self.dismiss)
        layout.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self.setVisible(False)

    def show_message(self, text: str, *, kind: str = "error", action: tuple[str, Callable[[], None]] | None = None,
                     ) -> None:
        """Show ``text``; ``action`` adds a button (label, callback) next to it."""
        self._action = action[1] if action else None
        self.action_button.setText(action[0] if action else "")
        self.action_button.setVisible(action is not None)
        c = theme.colors()
        self.setProperty("kind", kind)
        self.style().unpolish(self)
        self.style().polish(self)
        color = c.error if kind == "error" else c.accent
        self.icon.setPixmap(theme.icon("warning" if kind == "error" else "chat", color, 18).pixmap(18, 18))
        self.label.setText(text)
        self.setVisible(True)

    def _run_action(self) -> None:
        if self._action is not None:
            self._action()

    def retheme(self) -> None:
        self._close.setIcon(theme.icon("close", theme.colors().muted, 14))
        if self.isVisible():
            action = (self.action_button.text(), self._action) if self._action is not None else None
            self.show_message(self.label.text(), kind=str(self.property("kind") or "error"), action=action)

    def dismiss(self) -> None:
        self.setVisible(False)
        self.dismissed.emit()

    @property
    def text(self) -> str:
        return self.label.text() if self.isVisible() else ""


class Toast(QFrame):
    """A short message at the bottom of the window, with an optional action (Undo)."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("Toast")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(14, 8, 8, 8)
        self.label = QLabel("", self)
        layout.addWidget(self.label)
        self.button = QPushButton("", self)
        self.button.setCursor(Qt.CursorShape.PointingHandCursor)
        layout.addWidget(self.button)
        self._action: Callable[[], None] | None = None
        self.button.clicked.connect(self._run)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.hide)
        self.hide()

    def show_message(self, text: str, *, action: str | None = None, callback: Callable[[], None] | None = None,
                     seconds: float = 8.0) -> None:
        self.label.setText(text)
        self._action = callback
        self.button.setText(action or "")
        self.button.setVisible(bool(action))
        self.adjustSize()
        self._place()
        self.show()
        self.raise_()
        self._timer.start(int(seconds * 1000))

    def _place(self) -> None:
        parent = self.parentWidget()
        if parent is None:
            return
        self.move((parent.width() - self.width()) // 2, parent.height() - self.height() - 90)

    def _run(self) -> None:
        action, self._action = self._action, None
        self.hide()
        if action is not None:
            action()

    def trigger(self) -> None:
        """Run the action now (keyboard: Ctrl+Z while the toast shows)."""
        if self.isVisible() and self._action is not None:
            self._run()
