"""The sampling card: an MCP server asks for a completion from the thread's model.

It says who asks (the server, during which robot's call), the messages it wants sent (editable
while asked), the model that will answer (the thread's) and the longest answer (max tokens,
editable); Approve / Deny, and "Always allow this server" (``sampling: allow`` in the server's
settings: its next requests are answered without asking). Once answered it shows what was
decided and the answer the server got, live and when the thread is reopened alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeyEvent, QTextOption
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QWidget,
)

from ui import theme
from ui.chat.view.request_card import RequestCard, message_html, note_label, section_label
from ui.widgets.common import AutoHeightText, ElidedLabel
from ui.widgets.flow import FlowRow, shrinkable
from workspace.approval import ApprovalDecision

if TYPE_CHECKING:
    from ui.chat.model.tool_calls import SamplingItem

#: Lines an answer shows before "Show all".
ANSWER_LINES = 12
MAX_TOKENS_LIMIT = 1_000_000


class GrowingEditor(QPlainTextEdit):
    """A plain-text editor as tall as its text (2 to ``max_lines`` lines), Tab moves on."""

    def __init__(self, text: str, parent: QWidget | None = None, *, max_lines: int = 12) -> None:
        super().__init__(parent)
        self._max_lines = max_lines
        self.setPlainText(text)
        self.setTabChangesFocus(True)
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.document().documentLayout().documentSizeChanged.connect(lambda _size: self._fit())
        self._fit()

    def _fit(self) -> None:
        lines = max(2, min(self._max_lines, int(self.document().size().height() + 0.999)))
        margins = 2 * self.document().documentMargin() + 2 * self.frameWidth() + 4
        height = int(self.fontMetrics().lineSpacing() * lines + margins)
        if height != self.height():
            self.setFixedHeight(height)

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        self._fit()


class SamplingCard(RequestCard):
    """See the module. ``item`` is a :class:`~ui.chat.model.tool_calls.SamplingItem`."""

    icon_name = "robot"
    kind_name = "Sampling request"

    def __init__(self, item: SamplingItem, parent: QWidget | None = None) -> None:
        self.editors: list[GrowingEditor] = []
        self.max_tokens: QSpinBox | None = None
        self.always: QCheckBox | None = None
        self.reason: QLineEdit | None = None
        self.approve_button: QPushButton | None = None
        self.deny_button: QPushButton | None = None
        self.outcome: QLabel | None = None
        self.answer: AutoHeightText | None = None
        super().__init__(item, parent)
        self.apply(item)

    @property
    def sampling(self) -> SamplingItem:
        from ui.chat.model.tool_calls import SamplingItem

        assert isinstance(self.item, SamplingItem)
        return self.item

    def title_text(self) -> str:
        return f"{self.item.server or 'A server'} asks for a completion"

    def status_text(self) -> tuple[str, str]:
        item = self.sampling
        approval = item.approval
        if not self.done:
            return "needs approval", "asking"
        if approval is not None and approval.state == "asking":
            return "waiting", "muted"
        if item.status == "ok":
            return "answered", "ok"
        if item.status == "denied":
            return "denied", "error"
        if item.status in ("error", "stopped"):
            return "failed" if item.status == "error" else "stopped", "error"
        if approval is not None and approval.state == "stopped":
            return "stopped", "muted"
        return "sampling…", "muted"

    def signature(self) -> tuple[Any, ...]:
        item = self.sampling
        approval = item.approval
        return (item.status, repr(item.arguments), approval.state if approval else None,
                approval.scope if approval else None, approval.reason if approval else None,
                repr(item.result), repr(item.error))

    # -- the common part --------------------------------------------------------------------------
    def _model_line(self) -> None:
        item = self.sampling
        c = theme.colors()
        model = ElidedLabel(f"Answered by {item.model} (this thread's model)", self, min_chars=12, tooltip=True)
        model.setObjectName("Muted")
        model.setAccessibleName(f"Model: {item.model}")
        self.body.addWidget(model)
        if item.system_prompt:
            system = shrinkable(QLabel(f"System prompt: {item.system_prompt}", self))
            system.setStyleSheet(f"color: {c.muted};")
            system.setTextFormat(Qt.TextFormat.PlainText)
            self.body.addWidget(system)

    # -- decided (or waiting, not asked here) ---------------------------------------------------------
    def show_decided(self) -> None:
        item = self.sampling
        c = theme.colors()
        self._model_line()
        self.body.addWidget(section_label("Messages", self))
        for index, message in enumerate(item.messages, start=1):
            role = QLabel(message["role"].capitalize(), self)
            role.setObjectName("Muted")
            self.body.addWidget(role)
            view = AutoHeightText(message_html(message["text"]), self)
            view.setAccessibleName(f"Message {index} ({message['role']})")
            self.body.addWidget(view)
        if item.max_tokens is not None:
            tokens = QLabel(f"At most {item.max_tokens:,} tokens", self)
            tokens.setObjectName("Muted")
            self.body.addWidget(tokens)
        outcome = item.outcome
        self.outcome = None
        if outcome:
            color = c.success if item.approval is None or item.approval.state == "approved" else (
                c.error if item.approval.state == "denied" else c.muted)
            self.outcome = note_label(outcome, color, self)
            self.body.addWidget(self.outcome)
        self.answer = None
        if item.answer is not None:
            self.body.addWidget(section_label("Answer sent to the server", self))
            self.answer = AutoHeightText(message_html(item.answer), self)
            self.answer.setAccessibleName("The model's answer")
            self.body.addWidget(self.answer)
        elif item.error is not None and item.status != "denied":
            error = item.error.get("message", item.error) if isinstance(item.error, dict) else item.error
            label = note_label(f"{item.error_label} — {error}", c.error, self)
            label.setObjectName("RequestError")
            self.body.addWidget(label)

    # -- asked live -----------------------------------------------------------------------------------
    def show_question(self) -> None:
        item = self.sampling
        request_input = dict(getattr(self.request, "input", None) or item.request)
        self._model_line()
        self.body.addWidget(section_label("Messages (you may edit them)", self))
        self.editors = []
        messages = [m for m in request_input.get("messages", []) if isinstance(m, dict)]
        for index, message in enumerate(messages, start=1):
            role = str(message.get("role") or "user")
            label = QLabel(role.capitalize(), self)
            label.setObjectName("Muted")
            editor = GrowingEditor(str(message.get("text") or ""), self)
            editor.setObjectName("SamplingMessage")
            editor.setProperty("role", role)
            editor.setAccessibleName(f"Message {index} ({role}), editable")
            label.setBuddy(editor)
            self.body.addWidget(label)
            self.body.addWidget(editor)
            self.editors.append(editor)
        row = QHBoxLayout()
        row.setSpacing(8)
        caption = QLabel("&Max tokens:", self)
        self.max_tokens = QSpinBox(self)
        self.max_tokens.setRange(1, MAX_TOKENS_LIMIT)
        self.max_tokens.setMinimumWidth(90)
        self.max_tokens.setValue(int(request_input.get("maxTokens") or 1024))
        self.max_tokens.setAccessibleName("Maximum tokens of the answer")
        self.max_tokens.setToolTip("The longest answer the model may give")
        caption.setBuddy(self.max_tokens)
        row.addWidget(caption)
        row.addWidget(self.max_tokens)
        row.addStretch(1)
        self.body.addLayout(row)
        self.always = QCheckBox(f"&Always allow {item.server or 'this server'}", self)
        self.always.setAccessibleName("Always allow this server to sample")
        self.always.setToolTip("Saves sampling: allow in this server's settings: its next requests are answered "
                               "by the thread's model without asking")
        self.body.addWidget(self.always)
        self.reason = QLineEdit(self)
        self.reason.setPlaceholderText("Reason for denying (sent to the server)")
        self.reason.setAccessibleName("Reason for denying")
        self.reason.returnPressed.connect(self.deny)
        self.body.addWidget(self.reason)
        buttons = FlowRow(spacing=8, align_right=True)
        hint = ElidedLabel("Ctrl+J, then y approve · n deny", self, whole=True)
        hint.setObjectName("Muted")
        hint.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        buttons.addWidget(hint)
        self.deny_button = QPushButton("&Deny", self)
        self.deny_button.setObjectName("DangerButton")
        self.deny_button.clicked.connect(self.deny)
        self.approve_button = QPushButton("A&pprove", self)
        self.approve_button.setObjectName("PrimaryButton")
        self.approve_button.setDefault(True)
        self.approve_button.clicked.connect(self.approve)
        for b in (self.deny_button, self.approve_button):
            b.setCursor(Qt.CursorShape.PointingHandCursor)
            buttons.addWidget(b)
        self.body.addLayout(buttons)

    def edited_input(self) -> dict[str, Any] | None:
        """The request as edited (None when nothing was changed)."""
        original = dict(getattr(self.request, "input", None) or {})
        messages = [m for m in original.get("messages", []) if isinstance(m, dict)]
        edited_messages = [{"role": str(m.get("role") or "user"), "text": editor.toPlainText()}
                           for m, editor in zip(messages, self.editors, strict=False)]
        tokens = self.max_tokens.value() if self.max_tokens is not None else original.get("maxTokens")
        if edited_messages == [{"role": str(m.get("role") or "user"), "text": str(m.get("text") or "")}
                               for m in messages] and tokens == original.get("maxTokens"):
            return None
        return {**original, "messages": edited_messages, "maxTokens": tokens}

    def approve(self) -> None:
        if self.done:
            return
        scope = "server" if self.always is not None and self.always.isChecked() else "once"
        self.resolve(ApprovalDecision(approved=True, input=self.edited_input(), scope=scope))

    def deny(self) -> None:
        if self.done:
            return
        reason = self.reason.text().strip() if self.reason is not None else ""
        self.resolve(ApprovalDecision(approved=False, reason=reason or None))

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if not self.done and self.hasFocus() and event.modifiers() == Qt.KeyboardModifier.NoModifier:
            if event.key() == Qt.Key.Key_Y:
                self.approve()
                return
            if event.key() == Qt.Key.Key_N:
                if self.reason is not None:
                    self.reason.setFocus()
                return
        super().keyPressEvent(event)


__all__ = ["SamplingCard"]
