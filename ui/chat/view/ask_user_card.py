"""The question card: a robot's AskUser question, or a person's task in a network, answered in the chat.

Asked live (the run waits on the card's future), it shows the question, one button per choice (the
default one highlighted and taking Enter) or, with no choices, a text field (the default as its
placeholder: Enter with nothing typed answers it), and "Skip" (the robot is told nobody answered).
A person's task shows its time limit counting down. Esc stops the run (the window's shortcut), which
cancels the question. Answered, the card shows the answer, live and when the thread is reopened alike.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QLabel, QLineEdit, QPushButton, QSizePolicy, QWidget

from ui import theme
from ui.chat.view.request_card import RequestCard, note_label
from ui.widgets.common import ElidedLabel
from ui.widgets.flow import FlowRow, shrinkable
from workspace.approval import ApprovalDecision

if TYPE_CHECKING:
    from ui.chat.model.tool_calls import AskUserItem


def countdown_text(seconds_left: float) -> str:
    """The time a person has left, in words ("4:05 left", "12 s left")."""
    left = max(0, int(seconds_left + 0.999))
    if left >= 60:
        return f"{left // 60}:{left % 60:02d} left"
    return f"{left} s left"


class AskUserCard(RequestCard):
    """A question to the person (see the module)."""

    icon_name = "chat"
    kind_name = "Question"

    def __init__(self, item: AskUserItem, parent: QWidget | None = None) -> None:
        self.choice_buttons: list[QPushButton] = []
        self.answer_field: QLineEdit | None = None
        self.skip_button: QPushButton | None = None
        self.countdown: QLabel | None = None
        self._deadline: float | None = None
        self._timer: QTimer | None = None
        super().__init__(item, parent)
        self.setAccessibleName(f"Question from {item.robot}")

    @property
    def question_item(self) -> AskUserItem:
        from ui.chat.model.tool_calls import AskUserItem

        assert isinstance(self.item, AskUserItem)
        return self.item

    # -- what the frame asks ----------------------------------------------------------------------------
    def title_text(self) -> str:
        item = self.question_item
        return f"{item.robot} (a person) is asked" if item.person else f"{item.robot} asks you"

    def status_text(self) -> tuple[str, str]:
        if not self.done:
            return "needs you", "asking"
        item = self.question_item
        if item.answer is not None:
            return "answered", "ok"
        if item.status in ("error", "denied"):
            return "not answered", "muted"
        if item.status == "stopped":
            return "stopped", "muted"
        return "waiting", "muted"

    def signature(self) -> tuple[Any, ...]:
        item = self.question_item
        return (item.status, repr(item.result), repr(item.error), repr(item.arguments))

    def _question(self) -> None:
        label = shrinkable(QLabel(self.question_item.question or "(no question)", self))
        label.setTextFormat(Qt.TextFormat.PlainText)
        label.setObjectName("QuestionText")
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        font = label.font()
        font.setPointSizeF(font.pointSizeF() * 1.05)
        label.setFont(font)
        self.body.addWidget(label)

    # -- decided (or waiting, not asked here) -----------------------------------------------------------
    def show_decided(self) -> None:
        item = self.question_item
        c = theme.colors()
        self._stop_countdown()
        self.choice_buttons, self.answer_field, self.skip_button = [], None, None
        self._question()
        if item.choices and item.answer is None:
            shown = ", ".join(f"{choice} (default)" if choice == item.default else choice for choice in item.choices)
            choices = shrinkable(QLabel(f"Choices: {shown}", self))
            choices.setObjectName("Muted")
            self.body.addWidget(choices)
        if item.outcome:
            color = c.success if item.answer is not None else c.muted
            outcome = note_label(item.outcome, color, self)
            outcome.setObjectName("QuestionOutcome")
            outcome.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.body.addWidget(outcome)

    # -- asked live -------------------------------------------------------------------------------------
    def show_question(self) -> None:
        request_input = dict(getattr(self.request, "input", None) or self.question_item.request)
        item = self.question_item
        choices = [str(c) for c in request_input.get("choices") or []] or item.choices
        default = request_input.get("default")
        default = None if default in (None, "") else str(default)
        self._question()
        self.choice_buttons = []
        self.answer_field = None
        row = FlowRow(spacing=8)
        if choices:
            for choice in choices:
                button = QPushButton(choice, self)
                button.setObjectName("PrimaryButton" if choice == default else "ChoiceButton")
                button.setCursor(Qt.CursorShape.PointingHandCursor)
                button.setToolTip("The default answer (Enter)" if choice == default else f"Answer “{choice}”")
                button.setAccessibleName(f"Answer {choice}" + (" (default)" if choice == default else ""))
                if choice == default:
                    button.setDefault(True)
                button.clicked.connect(lambda _checked=False, text=choice: self.answer(text))
                row.addWidget(button)
                self.choice_buttons.append(button)
        else:
            field = QLineEdit(self)
            field.setObjectName("AnswerField")
            field.setPlaceholderText(f"{default} (the default: Enter)" if default else "Type your answer")
            field.setAccessibleName("Your answer")
            field.setMinimumWidth(220)
            field.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
            field.returnPressed.connect(self.submit)
            self.answer_field = field
            self.body.addWidget(field)
            send = QPushButton("&Answer", self)
            send.setObjectName("PrimaryButton")
            send.setDefault(True)
            send.setCursor(Qt.CursorShape.PointingHandCursor)
            send.clicked.connect(self.submit)
            row.addWidget(send)
        skip = QPushButton("S&kip", self)
        skip.setToolTip("Do not answer: the robot is told nobody answered" if not item.person
                        else "Do not answer: the person's task fails")
        skip.setCursor(Qt.CursorShape.PointingHandCursor)
        skip.clicked.connect(self.skip)
        self.skip_button = skip
        row.addWidget(skip)
        self.body.addLayout(row)
        hint = ElidedLabel("Esc stops the run", self, whole=True)
        hint.setObjectName("Muted")
        self.body.addWidget(hint)
        timeout = request_input.get("timeout")
        if isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout > 0:
            self._deadline = time.monotonic() + float(timeout)
            self.countdown = QLabel(countdown_text(float(timeout)), self)
            self.countdown.setObjectName("QuestionCountdown")
            self.countdown.setStyleSheet(f"color: {theme.colors().warning}; font-weight: 600;")
            self.body.addWidget(self.countdown)
            self._timer = QTimer(self)
            self._timer.setInterval(1000)
            self._timer.timeout.connect(self._tick)
            self._timer.start()
        if self.answer_field is not None:
            self.setFocusProxy(self.answer_field)
        elif self.choice_buttons:
            self.setFocusProxy(next((b for b in self.choice_buttons if b.isDefault()), self.choice_buttons[0]))

    def _tick(self) -> None:
        if self.countdown is None or self._deadline is None or self.done:
            self._stop_countdown()
            return
        self.countdown.setText(countdown_text(self._deadline - time.monotonic()))

    def _stop_countdown(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer.deleteLater()
            self._timer = None
        self.countdown = None
        self._deadline = None

    def _finish(self, decision: ApprovalDecision | None) -> None:
        self._stop_countdown()
        self.setFocusProxy(None)  # type: ignore[arg-type]  # Qt takes None: no proxy any more
        super()._finish(decision)

    # -- answering --------------------------------------------------------------------------------------
    def answer(self, text: str) -> None:
        """Answer the question with ``text`` (the run goes on with it)."""
        if not self.done:
            self.resolve(ApprovalDecision(approved=True, input={"answer": text}))

    def submit(self) -> None:
        """Answer with what the text field holds (blank: the default, as the terminal does)."""
        if self.answer_field is not None:
            self.answer(self.answer_field.text())

    def skip(self) -> None:
        if not self.done:
            self.resolve(ApprovalDecision(approved=False, reason="the user skipped the question"))


__all__ = ["AskUserCard", "countdown_text"]
