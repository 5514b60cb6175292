"""Tool cards (tool_use / tool_result / tool_error in place) and the inline approval panel."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QRect, QSize, Qt, Signal
from PySide6.QtGui import QKeyEvent, QResizeEvent, QTextOption
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLayout,
    QLayoutItem,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ui import markdown, theme
from ui.models.tool_calls import format_duration
from ui.widgets.common import AutoHeightText, ElidedLabel, JsonHighlighter, RichLabel, pill, robot_chip
from workspace.approval import ApprovalDecision

if TYPE_CHECKING:
    import asyncio

    from ui.chat.state import ChangeItem, ToolCallItem

ARGS_MAX_LINES = 40
STATUS_TEXT = {
    "running": "running…",
    "approval": "needs approval",
    "ok": "done",
    "error": "error",
    "denied": "denied",
    "stopped": "stopped",
}
SCOPES = (("once", "Once"), ("thread", "This thread"), ("always", "Always"))


def _status_colors(status: str) -> tuple[str, str]:
    c = theme.colors()
    if status == "ok":
        return c.success, c.card_header
    if status in ("error", "stopped"):
        return c.error, c.error_bg
    if status == "denied":
        return c.error, c.error_bg
    if status == "approval":
        return c.warning, c.warning_bg
    return c.accent, c.card_header


#: Characters of a result in its one-line preview (the toggle elides it to the card's width).
PREVIEW_CHARS = 300
#: Characters of a result in the preview's tooltip.
TOOLTIP_CHARS = 1200


def _preview(value: Any, limit: int = PREVIEW_CHARS) -> str:
    if isinstance(value, dict) and set(value) == {"data"}:
        value = value["data"]
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_json_text(text: str) -> bool:
    """True when ``text`` is a JSON document (an object or array; plain words are not)."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return False
    try:
        json.loads(stripped)
    except ValueError:
        return False
    return True


def value_html(value: Any) -> str:
    """A result or an error for people: highlighted JSON, or plain text when it is not JSON."""
    if isinstance(value, str) and not _is_json_text(value):
        return (f'<pre style="font-family:{theme.mono_family()}; margin:0; white-space:pre-wrap;">'
                f"{markdown._esc(value)}</pre>")
    return markdown.json_html(value)


def _tooltip_html(text: str) -> str:
    """A tooltip that wraps (rich text tooltips wrap; plain ones are one line as wide as the text)."""
    if len(text) > TOOLTIP_CHARS:
        text = text[: TOOLTIP_CHARS - 1] + "…"
    return f"<p style='white-space:pre-wrap'>{markdown._esc(text)}</p>"


def _body_text(html: str, parent: QWidget, name: str) -> AutoHeightText:
    """Card text (arguments, result, error) that wraps to the card's width, long words too."""
    view = AutoHeightText("", parent)
    view.setObjectName(name)
    view.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
    view.setMinimumWidth(40)
    if html:
        view.setHtml(html)
    return view


def _shrinkable(label: QLabel) -> QLabel:
    """A word-wrapping label that never widens its card (a long word is cut, not the card)."""
    label.setWordWrap(True)
    label.setSizePolicy(QSizePolicy.Policy.Ignored, label.sizePolicy().verticalPolicy())
    return label


class FlowRow(QLayout):
    """Widgets in a row that wraps onto more rows when narrow (so buttons never fall off the card).

    Each widget takes its preferred width; a horizontally *expanding* one (a text field, a hint)
    is placed at its minimum width and then takes the rest of its row. Rows without one are
    right-aligned when ``align_right``. The minimum width is the widest single widget's.
    """

    def __init__(self, parent: QWidget | None = None, *, spacing: int = 8, align_right: bool = False,
                 center: bool = False) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._gap = spacing
        self._align_right = align_right
        self._center = center
        self.setContentsMargins(0, 0, 0, 0)

    # -- QLayout ------------------------------------------------------------------------------
    def addItem(self, item: QLayoutItem) -> None:
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:
        return Qt.Orientation.Horizontal

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._arrange(QRect(0, 0, width, 0), apply=False)

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        self._arrange(rect, apply=True)

    def sizeHint(self) -> QSize:
        items = self._visible()
        m = self.contentsMargins()
        width = sum(i.sizeHint().width() for i in items) + self._gap * max(0, len(items) - 1)
        height = max((i.sizeHint().height() for i in items), default=0)
        return QSize(width + m.left() + m.right(), height + m.top() + m.bottom())

    def minimumSize(self) -> QSize:
        items = self._visible()
        m = self.contentsMargins()
        width = max((i.minimumSize().width() if self._expands(i) else i.sizeHint().width() for i in items),
                    default=0)
        height = max((i.minimumSize().height() for i in items), default=0)
        return QSize(width + m.left() + m.right(), height + m.top() + m.bottom())

    # -- placement ----------------------------------------------------------------------------
    def _visible(self) -> list[QLayoutItem]:
        return [i for i in self._items if not i.isEmpty()]

    @staticmethod
    def _expands(item: QLayoutItem) -> bool:
        widget = item.widget()
        policy = widget.sizePolicy().horizontalPolicy() if widget is not None else QSizePolicy.Policy.Fixed
        return bool(policy.value & QSizePolicy.PolicyFlag.ExpandFlag.value)

    def _arrange(self, rect: QRect, *, apply: bool) -> int:
        m = self.contentsMargins()
        area = rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom())
        room = max(1, area.width())
        rows: list[list[tuple[QLayoutItem, int]]] = []
        row: list[tuple[QLayoutItem, int]] = []
        used = 0
        for item in self._visible():
            width = item.minimumSize().width() if self._expands(item) else item.sizeHint().width()
            width = min(max(width, item.minimumSize().width()), room)
            if row and used + self._gap + width > room:
                rows.append(row)
                row, used = [], 0
            used += (self._gap if row else 0) + width
            row.append((item, width))
        if row:
            rows.append(row)
        y = area.top()
        for index, line in enumerate(rows):
            height = max(item.sizeHint().height() for item, _w in line)
            if apply:
                spare = room - (sum(w for _i, w in line) + self._gap * (len(line) - 1))
                growers = [item for item, _w in line if self._expands(item)]
                shift = spare if self._align_right else spare // 2 if self._center else 0
                x = area.left() + (shift if not growers else 0)
                for item, width in line:
                    if growers and item is growers[0]:
                        width += spare
                    item_height = min(height, item.sizeHint().height()) if not self._expands(item) else height
                    item.setGeometry(QRect(x, y + (height - item_height) // 2, width, item_height))
                    x += width + self._gap
            y += height + (self._gap if index < len(rows) - 1 else 0)
        return y - area.top() + m.top() + m.bottom()


class ElidedToolButton(QToolButton):
    """A tool button (icon and one line) whose text ends in "…" when narrow; ``text()`` is the full text.

    It asks for its whole text but needs only ``min_text`` (e.g. "Result…"): a long preview never
    makes the card wider than the conversation.
    """

    def __init__(self, parent: QWidget | None = None, *, min_text: str = "") -> None:
        super().__init__(parent)
        self._full = ""
        self._min_text = min_text

    def setText(self, text: str) -> None:
        self._full = text
        self.setAccessibleName(text)
        self._elide()
        self.updateGeometry()

    def text(self) -> str:
        return self._full

    @property
    def shown_text(self) -> str:
        return QToolButton.text(self)

    def _overhead(self) -> int:
        return max(0, super().sizeHint().width() - self.fontMetrics().horizontalAdvance(QToolButton.text(self)))

    def sizeHint(self) -> QSize:
        return QSize(self._overhead() + self.fontMetrics().horizontalAdvance(self._full) + 2,
                     super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:
        part = self._min_text if len(self._min_text) < len(self._full) else self._full
        return QSize(self._overhead() + self.fontMetrics().horizontalAdvance(part) + 2,
                     super().minimumSizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._elide()

    def _elide(self) -> None:
        fm = self.fontMetrics()
        room = self.width() - self._overhead() - 2
        shown = self._full if fm.horizontalAdvance(self._full) <= room else fm.elidedText(
            self._full, Qt.TextElideMode.ElideRight, max(0, room))
        if shown != QToolButton.text(self):
            super().setText(shown)


def _elided_chip(robot: str, parent: QWidget) -> ElidedLabel:
    """The robot badge of a card; a long robot name ends in "…" (the tooltip has it)."""
    chip = ElidedLabel(robot, parent, min_chars=4)
    chip.setObjectName("RobotChip")
    chip.setStyleSheet(robot_chip(robot).styleSheet())
    chip.setToolTip(f"Robot {robot}")
    return chip


def _args_html(value: Any) -> str:
    value = value if value is not None else {}
    try:
        compact = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        compact = ""
    if compact and len(compact) <= 72:  # short arguments on one line: cards stay small
        return (f'<pre style="font-family:{theme.mono_family()}; margin:0; white-space:pre-wrap;">'
                f"{markdown.highlight(compact, 'json')}</pre>")
    text = markdown.to_json_text(value)
    lines = text.splitlines()
    note = ""
    if len(lines) > ARGS_MAX_LINES:
        note = f"\n… {len(lines) - ARGS_MAX_LINES} more lines (full arguments in the Tool calls inspector)"
        text = "\n".join(lines[:ARGS_MAX_LINES])
    body = markdown.highlight(text, "json") + markdown._esc(note)
    return (f'<pre style="font-family:{theme.mono_family()}; margin:0; white-space:pre-wrap;">{body}</pre>')


class ToolCard(QFrame):
    """One tool call: header (robot badge, server › tool, status, duration), arguments, result."""

    decided = Signal(str, object)  # call id, ApprovalDecision

    def __init__(self, *, call_id: str, tool: str, robot: str, server: str | None, arguments: Any,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ToolCard")
        self.call_id = call_id
        self.tool = tool
        self.robot = robot
        self.server = server
        self.arguments = arguments
        self.status = "running"
        self.result: Any = None
        self.error: Any = None
        self.approval: ApprovalPanel | None = None
        c = theme.colors()
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)

        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)

        header = QFrame(self)
        header.setObjectName("ToolCardHeader")
        hl = QHBoxLayout(header)
        hl.setContentsMargins(10, 6, 10, 6)
        hl.setSpacing(6)
        icon = QLabel(header)
        icon.setPixmap(theme.icon("tool", c.muted).pixmap(14, 14))
        hl.addWidget(icon)
        short = tool.split("__", 1)[-1] if server and tool.startswith(f"{server}__") else tool
        # Long names (MCP tools, servers) end in "…" rather than widen the card; the tooltip has them.
        if server:
            server_label = ElidedLabel(f"{server} ›", header, min_chars=3)
            server_label.setObjectName("ToolTitle")
            server_label.setStyleSheet(f"color: {c.muted};")
            server_label.setToolTip(f"{server} › {short}")
            hl.addWidget(server_label)
        title = ElidedLabel(short, header, min_chars=6)
        title.setObjectName("ToolTitle")
        bold = title.font()
        bold.setBold(True)
        title.setFont(bold)
        title.setToolTip(f"{server} › {short}" if server else short)
        self.title = title
        hl.addWidget(title)
        hl.addWidget(_elided_chip(robot, header))
        hl.addStretch(1)
        self._duration = QLabel("", header)
        self._duration.setObjectName("Muted")
        hl.addWidget(self._duration)
        self._status_holder = QHBoxLayout()
        self._status_holder.setContentsMargins(0, 0, 0, 0)
        hl.addLayout(self._status_holder)
        self._status_pill: QLabel | None = None
        outer.addWidget(header)

        body = QWidget(self)
        body.setObjectName("ToolCardBody")
        self._body = QVBoxLayout(body)
        self._body.setContentsMargins(12, 8, 12, 10)
        self._body.setSpacing(6)
        self._args = _body_text(_args_html(arguments), body, "ToolArgs")
        self._body.addWidget(self._args)
        outer.addWidget(body)

        self._result_toggle: ElidedToolButton | None = None
        self._result_view: AutoHeightText | None = None
        self._error_box: AutoHeightText | None = None
        self._decision: QLabel | None = None
        self._set_status("running")

    # -- state ------------------------------------------------------------------------------
    def _set_status(self, status: str) -> None:
        if status == self.status and self._status_pill is not None:
            return
        self.status = status
        self.setProperty("status", status)
        self.style().unpolish(self)
        self.style().polish(self)
        fg, bg = _status_colors(status)
        if self._status_pill is not None:
            self._status_holder.removeWidget(self._status_pill)
            self._status_pill.deleteLater()
        self._status_pill = pill(STATUS_TEXT.get(status, status), fg, bg, self)
        self._status_holder.addWidget(self._status_pill)

    def set_arguments(self, arguments: Any) -> None:
        self.arguments = arguments
        self._args.setHtml(_args_html(arguments))

    def apply(self, call: ToolCallItem) -> None:
        """Show the call's state: its arguments, status, result or error, and the approval's outcome."""
        if call.arguments != self.arguments:
            self.set_arguments(call.arguments)
        if call.status == "ok" and self._result_toggle is None:
            self.result = call.result
            self._add_result_section("Result", call.result_value, expanded=False)
        elif call.failed and call.error is not None and call.error != self.error:
            self.result = call.result
            self.error = call.error
            c = theme.colors()
            error = call.error
            message = error.get("message", error) if isinstance(error, dict) else error
            text = message if isinstance(message, str) else markdown.to_json_text(message)
            html = f'<div style="color:{c.error};"><b>{call.error_label}</b> — {markdown._esc(text)}</div>'
            if self._error_box is None:
                self._error_box = _body_text(html, self, "ToolError")
                self._body.addWidget(self._error_box)
            else:
                self._error_box.setHtml(html)
        if call.status == "ok" or call.duration:
            self._duration.setText(format_duration(call.duration))
        approval = call.approval
        if approval is not None and approval.state != "asking":
            self._show_decision(approval.note, approval.state)
        if self.approval is None or self.approval.done:
            self._set_status(call.status)

    def _show_decision(self, text: str, state: str) -> None:
        """The approval's outcome under the arguments (the live panel, once answered, gives way to it)."""
        panel = self.approval
        if panel is not None:
            if not panel.done:
                if state != "stopped":
                    return  # decided elsewhere (the policy file, another window): the panel finishes itself
                panel.dismiss()  # the run ended while it waited
            self.approval = None
            self._body.removeWidget(panel)
            panel.setVisible(False)
            panel.deleteLater()
            self._args.setVisible(True)
        c = theme.colors()
        color = {"approved": c.success, "denied": c.error}.get(state, c.muted)
        if self._decision is None:
            self._decision = _shrinkable(QLabel("", self))
            self._decision.setObjectName("ApprovalNote")
            self._body.insertWidget(1, self._decision)
        self._decision.setText(text)
        self._decision.setStyleSheet(f"color: {color}; font-weight: 600;")

    def _add_result_section(self, label: str, value: Any, *, expanded: bool) -> None:
        c = theme.colors()
        toggle = ElidedToolButton(self, min_text=f"{label}…")
        toggle.setObjectName("ResultToggle")
        toggle.setCheckable(True)
        toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        toggle.setIcon(theme.icon("chevron-right", c.muted, 14))
        preview = _preview(value)
        toggle.setText(f"{label}  ·  {preview}")
        toggle.setToolTip(_tooltip_html(_preview(value, TOOLTIP_CHARS)) if preview.endswith("…")
                          or len(preview) > 60 else "")
        toggle.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        toggle.setCursor(Qt.CursorShape.PointingHandCursor)
        view = _body_text("", self, "ToolResult")
        view.setVisible(False)
        self._result_value = value

        def on_toggled(checked: bool) -> None:
            if checked and not view.toPlainText():
                view.setHtml(value_html(value))
            view.setVisible(checked)
            toggle.setIcon(theme.icon("chevron-down" if checked else "chevron-right", c.muted, 14))

        toggle.toggled.connect(on_toggled)
        self._body.addWidget(toggle)
        self._body.addWidget(view)
        self._result_toggle, self._result_view = toggle, view
        if expanded:
            toggle.setChecked(True)

    @property
    def result_expanded(self) -> bool:
        return bool(self._result_toggle and self._result_toggle.isChecked())

    def set_result_expanded(self, expanded: bool) -> None:
        if self._result_toggle is not None:
            self._result_toggle.setChecked(expanded)

    # -- approval ----------------------------------------------------------------------------
    def ask_approval(self, request: Any, future: asyncio.Future[ApprovalDecision]) -> ApprovalPanel:
        self._set_status("approval")
        self._args.setVisible(False)  # the panel shows them, editable
        panel = ApprovalPanel(request, future, self)
        self.approval = panel
        self._body.addWidget(panel)
        panel.finished.connect(self._on_approval_finished)
        return panel

    def _on_approval_finished(self, decision: object) -> None:
        self._args.setVisible(True)
        if isinstance(decision, ApprovalDecision):
            if decision.approved:
                self._set_status("running")
                if decision.input is not None:
                    self.set_arguments(decision.input)
            self.decided.emit(self.call_id, decision)


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
        _shrinkable(title)
        top.addWidget(title, 1)
        for hint, value in dict(getattr(request, "annotations", {}) or {}).items():
            if isinstance(value, bool) and value and hint.endswith("Hint"):
                label = hint[:-4].replace("readOnly", "read-only").replace("openWorld", "open world")
                fg = c.error if hint == "destructiveHint" else c.muted
                top.addWidget(pill(label, fg, c.card_header, self))
        layout.addLayout(top)

        self.editor = QPlainTextEdit(self)
        self.editor.setObjectName("ApprovalEditor")
        self.editor.setAccessibleName("Tool arguments (JSON, editable)")
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
        self.problem = _shrinkable(QLabel("", self))
        self.problem.setStyleSheet(f"color: {c.error};")
        self.problem.setVisible(False)
        layout.addWidget(self.problem)

        row = FlowRow(spacing=8)  # "Remember: [Once]" and the reason: one row, or two when narrow
        self.scope = QComboBox(self)
        for key, label in SCOPES:
            self.scope.addItem(label, key)
        self.scope.setToolTip("How long this answer holds: this call only, the rest of this thread, "
                              "or always (saved to the approval policy)")
        row.addWidget(QLabel("Remember:", self))
        row.addWidget(self.scope)
        self.reason = QLineEdit(self)
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
        note = _shrinkable(QLabel(text, self))
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


class ChangeCard(QFrame):
    """A robot proposed file changes: the files with their size, and where to review them."""

    review_requested = Signal(str)  # change set id
    #: Undo (or redo) what this card's changes wrote: (change set id, checkpoint id or "", redo).
    undo_requested = Signal(str, str, bool)

    def __init__(self, *, change_set_id: str, robot: str, files: list[Any], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ToolCard")
        self.change_set_id = change_set_id
        self.files = list(files)
        self.status = "pending"
        #: The state shown (see :meth:`apply`).
        self.item: ChangeItem | None = None
        #: The checkpoint taken before the changes were written, and the outcome by path.
        self.checkpoint_id: str | None = None
        self.outcome: dict[str, Any] = {}
        self.undone = False
        c = theme.colors()
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        header = QFrame(self)
        header.setObjectName("ToolCardHeader")
        hl = QHBoxLayout(header)
        hl.setContentsMargins(10, 6, 10, 6)
        hl.setSpacing(8)
        icon = QLabel(header)
        icon.setPixmap(theme.icon("diff", c.muted).pixmap(14, 14))
        hl.addWidget(icon)
        self.title = QLabel("", header)
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.title.setMinimumWidth(40)  # when narrow, "Proposed changes · 3 files" is cut, not the card
        hl.addWidget(self.title)
        hl.addWidget(robot_chip(robot, header))
        hl.addStretch(1)
        self._pill_holder = QHBoxLayout()
        hl.addLayout(self._pill_holder)
        self._pill: QLabel | None = None
        outer.addWidget(header)
        body = QWidget(self)
        bl = QVBoxLayout(body)
        bl.setContentsMargins(12, 8, 12, 10)
        bl.setSpacing(4)
        self.listing = _shrinkable(RichLabel("", body))
        bl.addWidget(self.listing)
        self._show_files()
        row = QHBoxLayout()
        self.note = _shrinkable(QLabel("Nothing is written until you review it.", body))
        self.note.setObjectName("Muted")
        row.addWidget(self.note, 1)
        self.undo_button = QPushButton("Undo", body)
        self.undo_button.setToolTip("Restore the files as they were before these changes (redo stays possible)")
        self.undo_button.clicked.connect(
            lambda: self.undo_requested.emit(self.change_set_id, self.checkpoint_id or "", self.undone))
        self.undo_button.setVisible(False)
        row.addWidget(self.undo_button)
        self.review_button = QPushButton("Review changes", body)
        self.review_button.setObjectName("PrimaryButton")
        self.review_button.clicked.connect(lambda: self.review_requested.emit(self.change_set_id))
        row.addWidget(self.review_button)
        bl.addLayout(row)
        outer.addWidget(body)
        self._set_pill("review pending", c.warning, c.warning_bg)

    def _show_files(self) -> None:
        c = theme.colors()
        count = len(self.files)
        self.title.setText(f"<b>Proposed changes</b> · {count} file{'s' if count != 1 else ''}")
        rows = []
        for f in self.files[:12]:
            path = markdown._esc(str(f.get("path", "?")))
            action = markdown._esc(str(f.get("action", "modify")))
            added, removed = int(f.get("added", 0) or 0), int(f.get("removed", 0) or 0)
            rows.append(f'<span style="font-family:{theme.mono_family()}">{path}</span> '
                        f'<span style="color:{c.muted}">{action}</span> '
                        f'<span style="color:{c.success}">+{added}</span> <span style="color:{c.error}">−{removed}</span>')
        if len(self.files) > 12:
            rows.append(f'<span style="color:{c.muted}">… and {len(self.files) - 12} more</span>')
        self.listing.setText("<br>".join(rows))

    def _set_pill(self, text: str, fg: str, bg: str) -> None:
        if self._pill is not None:
            self._pill_holder.removeWidget(self._pill)
            self._pill.deleteLater()
        self._pill = pill(text, fg, bg, self)
        self._pill_holder.addWidget(self._pill)

    def apply(self, item: ChangeItem) -> None:
        """Show the change set's state: its files, then what was decided (and whether it was undone)."""
        self.item = item
        if item.files != self.files:
            self.files = list(item.files)
            self._show_files()
        self.status = item.status
        self.outcome = dict(item.outcome)
        self.checkpoint_id = item.checkpoint_id
        self.undone = item.undone
        if item.status == "pending":
            return
        c = theme.colors()
        accepted, rejected = item.accepted, item.rejected
        if item.undone:
            self._set_pill("undone", c.muted, c.card_header)
            self.note.setText("Undone: the files are as they were before these changes.")
            self.undo_button.setText("Redo")
        else:
            if accepted and not rejected:
                self._set_pill("applied", c.success, c.card_header)
            elif rejected and not accepted:
                self._set_pill("rejected", c.error, c.error_bg)
            else:
                self._set_pill(f"{accepted} applied · {rejected} rejected", c.accent, c.card_header)
            self.note.setText(f"{accepted} hunk{'s' if accepted != 1 else ''} applied, {rejected} rejected.")
            self.undo_button.setText("Undo")
        self.undo_button.setVisible(item.can_undo)
        if self.review_button.objectName():
            self.review_button.setText("Show changes")
            self.review_button.setObjectName("")
            self.review_button.style().unpolish(self.review_button)
            self.review_button.style().polish(self.review_button)
