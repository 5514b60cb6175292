"""How a run is going, in the conversation: the card of a run that failed (what went wrong, the fix the
message names, Retry) and the line that says what a running robot waits for (the model's first words,
a connection, a retry) with the time it has waited."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from ui import theme
from ui.formatting import elapsed_text
from ui.widgets.common import ElidedLabel
from ui.widgets.flow import FlowRow

if TYPE_CHECKING:
    from ui.chat.model.state import RunState
    from ui.chat.model.tool_calls import ToolCallItem
    from ui.chat.view.cards import ToolCard
    from ui.chat.view.chat import ChatView
    from ui.chat.view.lanes import TaskLane

#: Words in an error that mean the model's settings are what to fix (the card offers Settings).
_SETTINGS_WORDS = ("api key", "api_key", "apikey", "model", "settings", "api base", "api_base", "provider",
                   "authentication", "unauthorized", "401", "connect", "server")


class ErrorCard(QFrame):
    """A run failed: a card across the column with the message, the fix it names, and Retry."""

    retry_requested = Signal()
    settings_requested = Signal()

    def __init__(self, message: str, *, fix: str = "", error_type: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ErrorCard")
        self.message = message
        self.fix = fix
        c = theme.colors()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 10, 14, 10)
        layout.setSpacing(6)
        top = QHBoxLayout()
        top.setSpacing(8)
        icon = QLabel(self)
        icon.setPixmap(theme.icon("warning", c.error, 18).pixmap(18, 18))
        top.addWidget(icon, 0, Qt.AlignmentFlag.AlignTop)
        self.title = QLabel("The run failed" + (f" · {error_type}" if error_type else ""), self)
        self.title.setObjectName("ErrorTitle")
        self.title.setWordWrap(True)
        top.addWidget(self.title, 1)
        layout.addLayout(top)
        self.text = _wrapping(message, self, "ErrorMessage")
        layout.addWidget(self.text)
        self.fix_label: QLabel | None = None
        if fix:
            self.fix_label = _wrapping(f"<b>How to fix it:</b> {_html(fix)}", self, "ErrorFix", rich=True)
            layout.addWidget(self.fix_label)
        buttons = FlowRow(spacing=8)
        self.retry_button = QPushButton("Retry", self)
        self.retry_button.setObjectName("PrimaryButton")
        self.retry_button.setToolTip("Run the same message again (a new branch of the thread)")
        self.retry_button.clicked.connect(self.retry_requested)
        buttons.addWidget(self.retry_button)
        self.settings_button: QPushButton | None = None
        low = f"{message} {fix}".lower()
        if any(word in low for word in _SETTINGS_WORDS):
            self.settings_button = QPushButton("Open Settings", self)
            self.settings_button.setToolTip("Choose the model, its API key or server (Ctrl+,)")
            self.settings_button.clicked.connect(self.settings_requested)
            buttons.addWidget(self.settings_button)
        self.copy_button = QPushButton("Copy error", self)
        self.copy_button.clicked.connect(
            lambda: QGuiApplication.clipboard().setText(f"{message}\n{fix}".strip()))
        buttons.addWidget(self.copy_button)
        layout.addLayout(buttons)
        self.setAccessibleName(f"The run failed: {message} {fix}".strip())


def _html(text: str) -> str:
    from ui import markdown

    return markdown.inline(text)


def _wrapping(text: str, parent: QWidget, name: str, *, rich: bool = False) -> QLabel:
    label = QLabel(text, parent)
    label.setObjectName(name)
    label.setTextFormat(Qt.TextFormat.RichText if rich else Qt.TextFormat.PlainText)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    from PySide6.QtWidgets import QSizePolicy

    policy = QSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # wraps, never widens
    policy.setHeightForWidth(True)
    label.setSizePolicy(policy)
    label.setWordWrap(True)
    return label


class ActivityLine(QWidget):
    """What the running robot waits for, with the time it has waited ("Waiting for the model… 4 s").

    Animated dots show that something is going on even when the text stays the same.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ActivityLine")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(2, 2, 0, 2)
        layout.setSpacing(6)
        self.dots = QLabel("", self)
        self.dots.setObjectName("ActivityDots")
        self.dots.setFixedWidth(self.dots.fontMetrics().horizontalAdvance("●●●") + 4)
        layout.addWidget(self.dots)
        # Ends in "…" (the whole text its tooltip) in a narrow chat, a comparison's column, rather than widening it.
        self.label = ElidedLabel("", self, min_chars=12, tooltip=True)
        self.label.setObjectName("ActivityText")
        layout.addWidget(self.label)
        layout.addStretch(1)
        self.text = ""
        self.since: float | None = None
        self._phase = 0
        self.setVisible(False)

    def show_activity(self, text: str | None, since: float | None) -> None:
        self.text = text or ""
        self.since = since
        self.setVisible(bool(text))
        self.tick()

    def tick(self, now: float | None = None) -> None:
        if not self.text:
            return
        now = time.time() if now is None else now
        waited = max(0.0, now - self.since) if self.since is not None else 0.0
        self.label.setText(self.text + (f"  ·  {elapsed_text(waited)}" if waited >= 1 else ""))
        self._phase = (self._phase + 1) % 3
        c = theme.colors()
        self.dots.setText("".join(f'<span style="color:{c.accent if i == self._phase else c.border};">●</span>'
                                  for i in range(3)))
        self.setAccessibleName(self.label.text())


class ChatClock:
    """What shows time in the chat while it runs, ticked twice a second: lanes' durations, running tool
    calls' time so far, and the activity line (what the running robot waits for)."""

    def __init__(self, chat: ChatView) -> None:
        self.chat = chat
        self.timer = QTimer(chat)
        self.timer.setInterval(500)
        self.timer.timeout.connect(self.tick)
        #: Tool cards of calls still running, by call.
        self.running_calls: dict[ToolCallItem, ToolCard] = {}
        #: The run whose activity the line shows.
        self.activity_run: RunState | None = None
        self._said = ""

    def reset(self) -> None:
        self.running_calls.clear()
        self.set_activity(None)
        self.timer.stop()

    def follow_call(self, item: ToolCallItem, card: QWidget) -> None:
        """A running call's card shows the time since the call (until its result says how long it took)."""
        from ui.chat.view.cards import ToolCard

        if not isinstance(card, ToolCard):
            return
        if item.status == "running" and item.started is not None and item.run is not None and item.run.end is None:
            self.running_calls[item] = card
            self.follow()
        elif self.running_calls.pop(item, None) is not None:
            card.show_elapsed(item.duration)

    def set_activity(self, run: RunState | None) -> None:
        chat = self.chat
        self.activity_run = run
        text = run.activity if run is not None else None
        chat.activity.show_activity(text, run.activity_since if run is not None else None)
        if (text or "") != self._said:
            self._said = text or ""
            chat.activity_changed.emit(self._said)
        if text:
            self.follow()
            if chat._stick:
                QTimer.singleShot(0, chat.scroll_to_bottom)

    def _lanes(self) -> list[TaskLane]:
        """The task lanes that are widgets in the column (not inside a card or a lane), in no order: from the
        widgets made, so it costs the screen's few, not the thread's turns (asked per step while streaming)."""
        from ui.chat.view.lanes import TaskLane

        chat = self.chat
        return [w for w in chat._widgets.values() if isinstance(w, TaskLane) and w.parentWidget() is chat.column]

    def follow(self) -> None:
        """Tick while anything that shows time runs."""
        if any(lane.status == "running" for lane in self._lanes()) or self.running_calls \
                or self.chat.activity.text:
            if not self.timer.isActive():
                self.timer.start()
        else:
            self.timer.stop()

    def tick(self) -> None:
        from shiboken6 import isValid

        now = time.time()
        running = [lane for lane in self._lanes() if lane.status == "running"]
        for lane in running:
            lane.update_duration(now)
        for item, card in list(self.running_calls.items()):
            alive = isValid(card)
            if item.status != "running" or item.run is None or item.run.end is not None or not alive:
                del self.running_calls[item]
                if alive:
                    card.show_elapsed(item.duration)
            elif item.started is not None:
                card.show_elapsed(now - item.started, running=True)
        self.chat.activity.tick(now)
        if not running and not self.running_calls and not self.chat.activity.text:
            self.timer.stop()


__all__ = ["ActivityLine", "ChatClock", "ErrorCard"]
