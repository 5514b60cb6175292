"""The frame of an MCP server's request in the chat (a sampling card, an elicitation form).

A :class:`RequestCard` shows a request item of the chat's view state (who asks, for which robot,
its status) and, while the person is asked live, its editable part; :meth:`RequestCard.ask`
gives it the future the run awaits. Answered (here, by a stop, or elsewhere), the card shows
what was decided, as a reopened thread shows it: the view is always rebuilt from the item.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QSizePolicy, QVBoxLayout, QWidget

from ui import markdown, theme
from ui.widgets.common import ElidedLabel, card_frame, holds_focus, pill, robot_chip
from ui.widgets.flow import shrinkable
from workspace.approval import ApprovalDecision

if TYPE_CHECKING:
    import asyncio

    from ui.chat.model.tool_calls import ToolCallItem
    from workspace.approval import ApprovalRequest


def clear_layout(layout: Any) -> None:
    """Remove (and delete) every widget and sub-layout of ``layout``."""
    while layout.count():
        child = layout.takeAt(0)
        widget = child.widget()
        if widget is not None:
            widget.setParent(None)
            widget.deleteLater()
        elif child.layout() is not None:
            clear_layout(child.layout())


def section_label(text: str, parent: QWidget) -> QLabel:
    """A small muted caption over a part of the card ("Messages", "Answer")."""
    label = QLabel(text, parent)
    label.setObjectName("Muted")
    font = label.font()
    font.setBold(True)
    label.setFont(font)
    return label


def note_label(text: str, color: str, parent: QWidget) -> QLabel:
    label = shrinkable(QLabel(text, parent))
    label.setObjectName("ApprovalNote")
    label.setStyleSheet(f"color: {color}; font-weight: 600;")
    return label


class RequestCard(QFrame):
    """A server's request: header (icon, "<server> asks ...", robot, status), then a body that
    subclasses fill from the item (:meth:`show_decided`), editable while asked live (:meth:`show_question`).

    Keyboard: the card takes focus when it asks (unless someone is typing elsewhere; Ctrl+J goes
    to it); Tab moves through its fields and buttons; Enter in a field does the main action.
    """

    #: The decision (an ApprovalDecision), or None when nobody answered (the run stopped).
    finished = Signal(object)

    icon_name = "tool"
    #: What the card is called for screen readers.
    kind_name = "Request"

    def __init__(self, item: ToolCallItem, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ToolCard")
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        self.item = item
        self.call_id = item.call_id
        self.request: ApprovalRequest | None = None
        self.future: asyncio.Future[ApprovalDecision] | None = None
        self._done = True
        #: The keyboard was in the card when its question was answered (the chat then gives it back: ChatView).
        self.had_keyboard = False
        self._shown: tuple[Any, ...] | None = None
        c = theme.colors()
        outer, header, hl = card_frame(self, self.icon_name, c.accent)
        self.title = ElidedLabel(self.title_text(), header, min_chars=8, tooltip=True)
        self.title.setObjectName("RequestTitle")
        bold = self.title.font()
        bold.setBold(True)
        self.title.setFont(bold)
        hl.addWidget(self.title)
        chip = robot_chip(item.robot, header)
        chip.setToolTip(f"Asked during a tool call of robot {item.robot}")
        hl.addWidget(chip)
        hl.addStretch(1)
        self._pill_holder = QHBoxLayout()
        self._pill_holder.setContentsMargins(0, 0, 0, 0)
        hl.addLayout(self._pill_holder)
        self.status_pill: QLabel | None = None
        outer.addWidget(header)
        body = QWidget(self)
        body.setObjectName("ToolCardBody")
        self.body = QVBoxLayout(body)
        self.body.setContentsMargins(12, 8, 12, 10)
        self.body.setSpacing(6)
        outer.addWidget(body)
        self.setAccessibleName(f"{self.kind_name} from {item.server or 'an MCP server'}")

    # -- what subclasses say ------------------------------------------------------------------
    def title_text(self) -> str:
        return f"{self.item.server or 'A server'} asks"

    def status_text(self) -> tuple[str, str]:
        """The pill's text and its state ("asking", "ok", "error", "muted")."""
        raise NotImplementedError

    def signature(self) -> tuple[Any, ...]:
        """What the decided view depends on (the body is rebuilt when it changes)."""
        raise NotImplementedError

    def show_decided(self) -> None:
        """Fill :attr:`body` with the item as decided (or waiting, without a live question)."""
        raise NotImplementedError

    def show_question(self) -> None:
        """Fill :attr:`body` with the editable question (:attr:`request` and :attr:`future` are set)."""
        raise NotImplementedError

    # -- showing the item ---------------------------------------------------------------------
    def apply(self, item: ToolCallItem) -> None:
        """Show the item's state; a live question stays until it is answered."""
        self.item = item
        approval = item.approval
        if not self._done and approval is not None and approval.state == "stopped":
            self.dismiss()  # the run ended while it waited
        self._set_pill()
        if not self._done:
            return
        signature = self.signature()
        if signature != self._shown:
            self._shown = signature
            clear_layout(self.body)
            self.show_decided()

    def _set_pill(self) -> None:
        text, state = self.status_text()
        c = theme.colors()
        fg, bg = {"asking": (c.warning, c.warning_bg), "ok": (c.success, c.card_header),
                  "error": (c.error, c.error_bg)}.get(state, (c.muted, c.card_header))
        self.setProperty("status", {"asking": "approval", "error": "error"}.get(state, "ok"))
        self.style().unpolish(self)
        self.style().polish(self)
        if self.status_pill is not None and self.status_pill.text() == text:
            return
        if self.status_pill is not None:
            self._pill_holder.removeWidget(self.status_pill)
            self.status_pill.hide()
            self.status_pill.deleteLater()
        self.status_pill = pill(text, fg, bg, self)
        self._pill_holder.addWidget(self.status_pill)

    # -- asking live ------------------------------------------------------------------------------
    def ask(self, request: ApprovalRequest, future: asyncio.Future[ApprovalDecision]) -> RequestCard:
        """Ask the person now: the editable question replaces the body until it is answered."""
        self.request, self.future, self._done = request, future, False
        clear_layout(self.body)
        self.show_question()
        self._set_pill()
        future.add_done_callback(self._on_future_done)
        return self

    @property
    def done(self) -> bool:
        return self._done

    @property
    def asking(self) -> bool:
        """True while a live question waits for the person."""
        return not self._done

    def resolve(self, decision: ApprovalDecision) -> None:
        """Answer the run (the buttons call this)."""
        if self._done:
            return
        if self.future is not None and not self.future.done():
            self.future.set_result(decision)
        self._finish(decision)

    def dismiss(self) -> None:
        """Nobody needs the answer any more (the run ended): stop waiting, quietly."""
        if self._done:
            return
        self._done = True
        self.had_keyboard = holds_focus(self)
        if self.future is not None and not self.future.done():
            self.future.cancel()
        self._rerender(None)
        self.finished.emit(None)

    def _on_future_done(self, future: asyncio.Future[ApprovalDecision]) -> None:
        if self._done:
            return
        self._finish(None if future.cancelled() else future.result())

    def _finish(self, decision: ApprovalDecision | None) -> None:
        self._done = True
        self.had_keyboard = holds_focus(self)  # before the question gives way (the keyboard then goes elsewhere)
        self._rerender(decision)
        self.finished.emit(decision)

    def _rerender(self, decision: ApprovalDecision | None) -> None:
        """The question gives way; the item's next change (its decision's event) shows what was decided."""
        self._shown = None
        clear_layout(self.body)
        c = theme.colors()
        text = "Stopped before anyone decided." if decision is None else "Answered."
        self.body.addWidget(note_label(text, c.muted, self))
        self._set_pill()

    def texts(self) -> list[str]:
        """What the body shows, as text, top to bottom (labels, texts, fields' values)."""
        from PySide6.QtWidgets import QAbstractButton, QComboBox, QLineEdit, QPlainTextEdit, QTextEdit

        out: list[str] = []

        def walk(layout: Any) -> None:
            for i in range(layout.count()):
                child = layout.itemAt(i)
                widget = child.widget()
                if child.layout() is not None:
                    walk(child.layout())
                if widget is None or widget.isHidden():
                    continue
                if isinstance(widget, ElidedLabel | QLabel):
                    text = widget.text()
                elif isinstance(widget, QTextEdit | QPlainTextEdit):
                    text = widget.toPlainText()
                elif isinstance(widget, QLineEdit):
                    text = widget.text()
                elif isinstance(widget, QComboBox):
                    text = widget.currentText()
                elif isinstance(widget, QAbstractButton):
                    text = widget.text().replace("&", "")
                elif widget.layout() is not None:
                    walk(widget.layout())
                    continue
                else:
                    continue
                if text:
                    out.append(" ".join(text.split()))

        walk(self.body)
        return out

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if not self._done and event.key() == Qt.Key.Key_Escape and event.modifiers() == Qt.KeyboardModifier.NoModifier:
            event.ignore()  # Esc stops the run (the window's shortcut)
            return
        super().keyPressEvent(event)


def message_html(text: str) -> str:
    """A message's text for a read-only view (plain text, kept as written, wrapped)."""
    return f'<div style="white-space:pre-wrap;">{markdown._esc(text)}</div>'


__all__ = ["RequestCard", "clear_layout", "message_html", "note_label", "section_label"]
