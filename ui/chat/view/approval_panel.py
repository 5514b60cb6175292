"""The inline approval panel: a tool call's arguments, editable and highlighted, with Approve / Edit &
approve / Deny, and what the call would do (:func:`effects_text`).

A :class:`~ui.chat.view.cards.ToolCard` shows it in place of the arguments while a person is asked;
once answered it gives way to the decision's line, as a reopened thread shows it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from ui import markdown, theme
from ui.widgets.common import ElidedLabel, JsonHighlighter, SubmitEdit, holds_focus, pill
from ui.widgets.flow import FlowRow, shrinkable
from workspace.approval import ApprovalDecision

if TYPE_CHECKING:
    import asyncio

__all__ = ["SCOPES", "ApprovalPanel", "effects_text"]

SCOPES = (("once", "Once"), ("thread", "This thread"), ("always", "Always"))


def _unsandboxed(effects: object) -> bool:
    """True when an approval's effects say its command runs without a sandbox."""
    if not isinstance(effects, list | tuple):
        return False
    return any(bool(getattr(e, "unsandboxed", False) or (isinstance(e, dict) and e.get("unsandboxed")))
               for e in effects)


def effects_text(effects: object) -> str:
    """An approval request's effects (:class:`~workspace.approval.FileEffect`, or their dicts in a stored
    event's ``annotations["effects"]``) as a sentence ("That means deleting 'a.txt'.")."""
    from workspace.approval import FileEffect

    if not isinstance(effects, list | tuple):
        return ""
    described = []
    for item in effects:
        if isinstance(item, FileEffect):
            described.append(item.describe())
            continue
        kind = item.get("kind") if isinstance(item, dict) else None
        if isinstance(item, dict) and kind in ("create", "modify", "delete", "rename", "run"):
            described.append(FileEffect(kind=kind, path=str(item.get("path", "")), new_path=item.get("new_path"),
                                        emptied=bool(item.get("emptied")), command=item.get("command"),
                                        unsandboxed=bool(item.get("unsandboxed"))).describe())
    return ("That means " + ", ".join(described) + ".") if described else ""


class ApprovalPanel(QFrame):
    """The inline approval: full editable highlighted arguments, Approve / Edit & approve / Deny.

    Keys while the panel (not an editor in it) has focus: y approve, e edit, n deny.
    """

    finished = Signal(object)  # ApprovalDecision or None when stopped

    def __init__(self, request: Any, future: asyncio.Future[ApprovalDecision], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ApprovalPanel")
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.request = request
        self.future = future
        self._original = markdown.to_json_text(getattr(request, "input", {}) or {})
        c = theme.colors()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 10)
        layout.setSpacing(6)

        top = QHBoxLayout()
        top.setSpacing(6)
        icon = QLabel(self)
        icon.setPixmap(theme.icon("shield", c.warning).pixmap(16, 16))
        top.addWidget(icon)
        server = getattr(request, "server", None)
        where = f" on <b>{markdown._esc(server)}</b>" if server else ""
        task = getattr(request, "task", None)
        in_task = (f' <span style="color:{c.muted};">in task</span> <b>{markdown._esc(task)}</b>'
                   if task else "")  # a robot of a network: which task asks
        title = QLabel(f"<b>{markdown._esc(request.robot)}</b>{in_task} wants to run "
                       f"<b>{markdown._esc(request.tool)}</b>{where}", self)
        title.setObjectName("ApprovalTitle")
        title.setTextFormat(Qt.TextFormat.RichText)
        shrinkable(title)
        top.addWidget(title, 1)
        hints = dict(getattr(request, "annotations", {}) or {})
        claimed = bool(server) and not hints.get("trustAnnotations")  # an untrusted server's own claims
        for hint, value in hints.items():
            if isinstance(value, bool) and value and hint.endswith("Hint"):
                label = hint[:-4].replace("readOnly", "read-only").replace("openWorld", "open world")
                fg = c.error if hint == "destructiveHint" else c.muted
                top.addWidget(pill(f"{label} (claimed)" if claimed else label, fg, c.card_header, self))
        layout.addLayout(top)
        effects = effects_text(getattr(request, "effects", None) or hints.get("effects"))
        if effects:  # what a file tool's call does, which the policy decided by
            does = shrinkable(QLabel(effects, self))
            does.setObjectName("ApprovalEffects")
            does.setWordWrap(True)
            layout.addWidget(does)
        #: The command would run without a sandbox: said plainly, in red, and never remembered (asked every time).
        self.unsandboxed = _unsandboxed(getattr(request, "effects", None) or hints.get("effects"))
        if self.unsandboxed:
            warning = shrinkable(QLabel("No sandbox: this command runs directly in your folder. It can change or "
                                        "delete files there and reach the network. You are asked every time.", self))
            warning.setObjectName("UnsandboxedWarning")
            warning.setWordWrap(True)
            warning.setStyleSheet(f"color: {c.error}; font-weight: 600;")
            layout.addWidget(warning)

        self.editor = SubmitEdit(self)
        self.editor.setObjectName("ApprovalEditor")
        self.editor.setAccessibleName("Tool arguments (JSON, editable; Ctrl+Enter approves them, Esc leaves)")
        self.editor.submitted.connect(self.edit_and_approve)
        self.editor.cancelled.connect(self.setFocus)  # back to the panel: y, e, n work again
        self.editor.setPlainText(self._original)
        self.editor.setFont(theme.mono_font())
        self.editor.setTabChangesFocus(True)
        self._highlighter = JsonHighlighter(self.editor.document())
        self.editor.ensurePolished()  # measure with the style sheet's font
        lines = max(3, min(16, self._original.count("\n") + 1))
        margins = 2 * self.editor.document().documentMargin() + 2 * self.editor.frameWidth() + 10
        self.editor.setFixedHeight(int(self.editor.fontMetrics().lineSpacing() * lines + margins))
        self.editor.textChanged.connect(self._on_edited)
        layout.addWidget(self.editor)
        self.problem = shrinkable(QLabel("", self))
        self.problem.setStyleSheet(f"color: {c.error};")
        self.problem.setVisible(False)
        layout.addWidget(self.problem)

        row = FlowRow(spacing=8)  # "Remember: [Once]" and the reason: one row, or two when narrow
        self.scope = QComboBox(self)
        self.scope.setAccessibleName("Remember the answer")
        for key, label in SCOPES:
            self.scope.addItem(label, key)
        self.scope.setToolTip("How long this answer holds: this call only, the rest of this thread, "
                              "or always (saved to the approval policy)")
        remember = QLabel("Remember:", self)
        row.addWidget(remember)
        row.addWidget(self.scope)
        if self.unsandboxed:  # this call only: never for the thread, never always
            remember.setVisible(False)
            self.scope.setVisible(False)
        self.reason = QLineEdit(self)
        self.reason.setAccessibleName("Reason for denying (sent to the model)")
        self.reason.setPlaceholderText("Reason for denying (sent to the model)")
        self.reason.setToolTip("Reason for denying (sent to the model)")
        self.reason.setMinimumWidth(150)
        self.reason.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.reason.returnPressed.connect(self.deny)
        row.addWidget(self.reason)
        layout.addLayout(row)

        # The buttons always show: the key hint gives way first, then the buttons wrap onto two rows.
        buttons = FlowRow(spacing=8, align_right=True)
        hint = ElidedLabel("Ctrl+J, then y approve · e edit · n deny", self, whole=True)
        hint.setObjectName("Muted")
        hint.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        buttons.addWidget(hint)
        self.deny_button = QPushButton("Deny", self)
        self.deny_button.setObjectName("DangerButton")
        self.deny_button.clicked.connect(self.deny)
        self.edit_button = QPushButton("Edit && approve", self)
        self.edit_button.clicked.connect(self.edit_and_approve)
        self.approve_button = QPushButton("Approve", self)
        self.approve_button.setObjectName("PrimaryButton")
        self.approve_button.clicked.connect(self.approve)
        for b in (self.deny_button, self.edit_button, self.approve_button):
            b.setCursor(Qt.CursorShape.PointingHandCursor)
            buttons.addWidget(b)
        layout.addLayout(buttons)
        self._done = False
        #: The keyboard was in the panel when it was answered (the chat then gives it back: ChatView).
        self.had_keyboard = False
        future.add_done_callback(self._on_future_done)

    # -- decisions ----------------------------------------------------------------------------
    def _scope(self) -> str:
        return str(self.scope.currentData() or "once")

    def _on_edited(self) -> None:
        edited = self.editor.toPlainText().strip() != self._original.strip()
        self.edit_button.setText("Approve edited" if edited else "Edit && approve")
        self.problem.setVisible(False)

    def approve(self) -> None:
        self._resolve(ApprovalDecision(approved=True, scope=self._scope()))

    def edit_and_approve(self) -> None:
        text = self.editor.toPlainText()
        if text.strip() == self._original.strip() and not self.editor.hasFocus():
            self.start_editing()
            return
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            self.problem.setText(f"The arguments are not valid JSON: {exc.msg} (line {exc.lineno}, column "
                                 f"{exc.colno}). Fix them, or Approve the original.")
            self.problem.setVisible(True)
            return
        if not isinstance(value, dict):
            self.problem.setText("The arguments must be one JSON object ({...}).")
            self.problem.setVisible(True)
            return
        self._resolve(ApprovalDecision(approved=True, input=value, scope=self._scope()))

    def start_editing(self) -> None:
        self.editor.setFocus()
        self.editor.moveCursor(self.editor.textCursor().MoveOperation.End)

    def deny(self) -> None:
        reason = self.reason.text().strip() or None
        scope = self._scope()
        self._resolve(ApprovalDecision(approved=False, reason=reason, scope=scope))

    def _resolve(self, decision: ApprovalDecision) -> None:
        if self._done:
            return
        if not self.future.done():
            self.future.set_result(decision)
        self._finish(decision)

    def _on_future_done(self, future: asyncio.Future[ApprovalDecision]) -> None:
        if self._done:
            return
        decision = None if future.cancelled() else future.result()
        self._finish(decision)

    def _finish(self, decision: ApprovalDecision | None) -> None:
        self._done = True
        self.had_keyboard = holds_focus(self)  # before its controls hide (the keyboard then goes elsewhere)
        c = theme.colors()
        for w in (self.editor, self.scope, self.reason, self.deny_button, self.edit_button, self.approve_button):
            w.setEnabled(False)
        if decision is None:
            text, color = "Stopped before anyone decided.", c.muted
        elif decision.approved:
            edited = " with edited arguments" if decision.input is not None else ""
            text, color = f"Approved{edited} ({dict(SCOPES).get(decision.scope, decision.scope).lower()}).", c.success
        else:
            text = "Denied" + (f": {decision.reason}" if decision.reason else "") + "."
            color = c.error
        self.setProperty("decided", True)
        self.style().unpolish(self)
        self.style().polish(self)
        for child in self.findChildren(QWidget):
            child.setVisible(False)
        layout = self.layout()
        note = shrinkable(QLabel(text, self))
        note.setStyleSheet(f"color: {color}; font-weight: 600;")
        assert layout is not None
        layout.addWidget(note)
        self.finished.emit(decision)

    @property
    def done(self) -> bool:
        return self._done

    def dismiss(self) -> None:
        """Nobody needs the answer any more (the run ended): stop waiting, quietly."""
        self._done = True
        self.had_keyboard = holds_focus(self)
        if not self.future.done():
            self.future.cancel()
        self.finished.emit(None)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        if self._done:
            super().keyPressEvent(event)
            return
        if key == Qt.Key.Key_Y:
            self.approve()
        elif key == Qt.Key.Key_E:
            self.start_editing()
        elif key == Qt.Key.Key_N:
            self.reason.setFocus()
        else:
            super().keyPressEvent(event)
