"""Tool cards: a call, then its result or error, in place.

A :class:`ToolCard` shows a :class:`~ui.chat.model.tool_calls.ToolCallItem` (:meth:`ToolCard.apply`); while a
person is asked, its :class:`~ui.chat.view.approval_panel.ApprovalPanel` takes the arguments' place, and once
answered gives way to the decision's line, as a reopened thread shows it.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QTextOption
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from ui import markdown, theme
from ui.chat.view.approval_panel import ApprovalPanel
from ui.chat.view.command_output import CommandOutput
from ui.formatting import elapsed_text, format_duration
from ui.markdown import value_pieces
from ui.widgets.common import (
    AutoHeightText,
    ElidedLabel,
    PieceFeeder,
    card_frame,
    elided_robot_chip,
    pill,
)
from ui.widgets.flow import ElidedToolButton, shrinkable
from workspace.approval import ApprovalDecision
from workspace.sandbox import display_json, display_path

if TYPE_CHECKING:
    import asyncio

    from ui.chat.model.tool_calls import OutputState, ToolCallItem

ARGS_MAX_LINES = 40
#: Arguments as short as this (characters of JSON) are shown on one line.
ARGS_LINE_CHARS = 72
STATUS_TEXT = {
    "running": "running…",
    "approval": "needs approval",
    "ok": "done",
    "error": "error",
    "denied": "denied",
    "stopped": "stopped",
}


def _status_tone(status: str) -> str:
    """The tone of a call's status pill (its colours: ``theme.PILL_TONES``)."""
    if status == "ok":
        return "ok"
    if status in ("error", "stopped", "denied"):
        return "error"
    if status == "approval":
        return "approval"
    return "busy"


#: Characters of a result in its one-line preview (the toggle elides it to the card's width).
PREVIEW_CHARS = 300
#: Characters of a result in the preview's tooltip.
TOOLTIP_CHARS = 1200


_WORD = re.compile(r"\S+")


def _preview_part(value: Any, limit: int) -> Any:
    """The part of ``value`` a preview of ``limit`` characters shows, every string on one line ("a b", not
    "a\\nb"): each string's first words, each dict's and list's first entries, until they make more than ``limit``
    characters of its JSON (an entry makes one at least, a string as many as its words), nothing after them. So
    the preview costs what it shows: a result of 50 KB was put on one line and serialized whole for its first
    300 characters (twice, with the tooltip's), 3-5 ms of making its card."""
    left = limit + 1

    def part(node: Any) -> Any:
        nonlocal left
        if isinstance(node, str):
            words: list[str] = []
            for match in _WORD.finditer(node):
                if left <= 0:
                    break
                word = match.group()
                left -= len(word) + (1 if words else 0)
                words.append(word)
            return " ".join(words)
        if isinstance(node, dict | list | tuple):
            entries: list[Any] = []
            for entry in (node.items() if isinstance(node, dict) else node):
                if left <= 0:
                    break
                left -= 1
                entries.append((entry[0], part(entry[1])) if isinstance(node, dict) else part(entry))
            return dict(entries) if isinstance(node, dict) else entries
        return node

    return part(value)


def _preview(value: Any, limit: int = PREVIEW_CHARS) -> str:
    if isinstance(value, dict) and len(value) == 1 and "data" in value:
        value = value["data"]
    value = _preview_part(value, limit)
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = repr(value)
    text = display_path(" ".join(text.split()))  # no control or bidi character reorders the card
    return text if len(text) <= limit else text[: limit - 1] + "…"


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


def _one_line_json(value: Any, most: int) -> str:
    """``value`` as one line of JSON if that is ``most`` characters at most, else "" (also when it is no JSON):
    serialized only that far (big arguments were serialized whole to learn they were too long)."""
    chunks: list[str] = []
    size = 0
    try:
        for chunk in json.JSONEncoder(ensure_ascii=False).iterencode(value):
            size += len(chunk)
            if size > most:
                return ""
            chunks.append(chunk)
    except (TypeError, ValueError):
        return ""
    text = display_json("".join(chunks))
    return text if len(text) <= most else ""


def _args_html(value: Any) -> str:
    value = value if value is not None else {}
    from workspace.readable import has_text

    if has_text(value):  # file contents, patches: as text
        return markdown.readable_html(value, max_chars=6000)
    compact = _one_line_json(value, ARGS_LINE_CHARS)
    if compact:  # short arguments on one line: cards stay small
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


#: What a tool card says of a call the model wrote in its text.
FROM_TEXT = "from the model's text"
#: What a card says of a command that ran without a sandbox (in the palette's error colour).
UNSANDBOXED = "Ran without a sandbox"


class ToolCard(QFrame):
    """One tool call: header (robot badge, server › tool, status, duration), arguments, result."""

    #: The refusal of a command where no sandbox can be made: its button asks for Settings (the folder's switch).
    sandbox_settings_requested = Signal()
    decided = Signal(str, object)  # call id, ApprovalDecision

    def __init__(self, *, call_id: str, tool: str, robot: str, server: str | None, arguments: Any,
                 parent: QWidget | None = None, later: bool = False) -> None:
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

        outer, header, hl = card_frame(self, "tool", c.muted)
        short = tool.split("__", 1)[-1] if server and tool.startswith(f"{server}__") else tool
        # Long names (MCP tools, servers) end in "…" rather than widen the card; the tooltip has them.
        if server:
            server_label = ElidedLabel(f"{server} ›", header, min_chars=3)
            server_label.setObjectName("ToolTitle")
            server_label.setProperty("muted", True)
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
        hl.addWidget(elided_robot_chip(robot, header))
        #: "from the model's text": the call was written in the model's answer, not made by its server.
        self.from_text_label = QLabel(FROM_TEXT, header)
        self.from_text_label.setObjectName("Muted")
        self.from_text_label.setAccessibleName(FROM_TEXT)
        self.from_text_label.setToolTip("The model wrote this call in its answer (its chat template's form); its "
                                        "server did not send it as a tool call.")
        self.from_text_label.setVisible(False)
        hl.addWidget(self.from_text_label)
        #: "Ran without a sandbox", in red: made for a command that did (none here; the folder allows it).
        self.unsandboxed_label: QLabel | None = None
        self._header_row = hl
        hl.addStretch(1)
        self._duration = ElidedLabel("", header, whole=True)  # a narrow card drops it rather than widen
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
        html = _args_html(arguments)
        #: The arguments' text, left to :meth:`finish` (``later``: the turn window makes the card, its texts in the
        #: steps after it: a written file's 6,000 characters cost 8-10 ms to lay out, more than the card's rest, and
        #: short ones, highlighted, a third of a card whose making was a frame and more of the window's thread).
        self._args_later = html if later and html else None
        #: The result's value (in a tuple: a result may be None), its section left to :meth:`finish` by
        #: ``apply(later=True)``.
        self._result_later: tuple[Any] | None = None
        self._args = _body_text("" if self._args_later is not None else html, body, "ToolArgs")
        self._body.addWidget(self._args)
        outer.addWidget(body)

        self._result_toggle: ElidedToolButton | None = None
        self._result_view: AutoHeightText | None = None
        self._result_feeder: PieceFeeder | None = None
        self._error_box: AutoHeightText | None = None
        self._decision: QLabel | None = None
        self._lanes: list[QWidget] = []
        self._output: CommandOutput | None = None
        self._sandbox_button: QPushButton | None = None
        self._set_status("running")

    # -- a robot used as this tool ----------------------------------------------------------------
    def add_lane(self, lane: QWidget) -> None:
        """The lane of the robot this call runs (a robot used as a tool), under the arguments."""
        lane.setParent(self)
        self._body.addWidget(lane)
        self._lanes.append(lane)
        lane.setVisible(True)

    def lanes(self) -> list[QWidget]:
        return list(self._lanes)

    # -- state ------------------------------------------------------------------------------
    def _set_status(self, status: str) -> None:
        if status == self.status and self._status_pill is not None:
            return
        self.status = status
        self.setProperty("status", status)
        # One pill, its text and tone changed (its colours: a rule of the application's style sheet). A card not
        # yet polished (one made while a thread opens) is polished once, when shown, with what it has by then.
        tone, text = _status_tone(status), STATUS_TEXT.get(status, status)
        if self._status_pill is None:
            self._status_pill = pill(text, "", "", self, tone=tone)
            self._status_holder.addWidget(self._status_pill)
            return
        self._status_pill.setText(text)
        self._status_pill.setProperty("tone", tone)
        for widget in (self, self._status_pill):
            if widget.testAttribute(Qt.WidgetAttribute.WA_WState_Polished):
                widget.style().unpolish(widget)
                widget.style().polish(widget)

    def show_elapsed(self, seconds: float | None, *, running: bool = False) -> None:
        """The time the call took, or (``running``) has taken so far; None: none shown."""
        if seconds is None:
            self._duration.setText("")
        elif running:
            self._duration.setText(elapsed_text(seconds) + "…" if seconds >= 1 else "")
        else:
            self._duration.setText(format_duration(seconds))

    def set_arguments(self, arguments: Any) -> None:
        self.arguments = arguments
        self._args_later = None
        self._args.setHtml(_args_html(arguments))

    @property
    def later(self) -> str | None:
        """The next part left to make of a card made with ``later`` (its arguments' text) or applied with it (its
        result's section), which :meth:`finish` makes, as the kind of its cost for the turn window's budget; None:
        nothing left."""
        html = self._args_later
        if html is not None:
            return f"ToolArgs/{len(html).bit_length()}"
        return None if self._result_later is None else "ToolResult"

    def finish(self) -> None:
        """Make the next part left (:attr:`later`): the arguments' text, laid out once, at the card's width; else
        the result's section."""
        html, self._args_later = self._args_later, None
        if html is not None:
            self._args.setHtml(html)
            return
        result, self._result_later = self._result_later, None
        if result is not None and self._result_toggle is None:
            self._add_result_section("Result", result[0], expanded=False)
            toggle = self._result_toggle
            if toggle is not None and self.isVisible():  # styled now, as the turn window shows what a step made, and
                toggle.show()  # its preview elided again with its style's margins (cut with the unstyled ones, the
                toggle.setText(toggle.text())  # preview was a few pixels short of the room it has, and stayed so)

    # -- a running command's output -----------------------------------------------------------
    @property
    def output(self) -> CommandOutput | None:
        return self._output

    def append_output(self, state: OutputState, text: str) -> None:
        """A running tool printed ``text`` (``state`` is all its output kept so far)."""
        if self._output is None:
            self._output = CommandOutput(self)
            self._body.insertWidget(self._body.indexOf(self._args) + 1, self._output)
        self._output.append(state, text)

    def apply(self, call: ToolCallItem, *, later: bool = False) -> None:
        """Show the call's state: its arguments, status, result or error, and the approval's outcome. ``later``
        (the turn window making the card): a result's section is left to :meth:`finish`, a step of its own (its
        toggle, preview and tooltip were a third of the card's cost, and the card a frame and more of the window's
        thread in one step)."""
        self.from_text_label.setVisible(call.from_text)
        value = call.result_value if call.status == "ok" else None
        if isinstance(value, dict) and value.get("sandboxed") is False and self.unsandboxed_label is None:
            self._show_unsandboxed()
        if call.output is not None and self._output is None:  # shown whole (a card made after the chunks)
            self.append_output(call.output, call.output.text)
        if self._output is not None and call.status not in ("running", "approval"):
            self._output.finish()
        if call.arguments != self.arguments:
            self.set_arguments(call.arguments)
        if call.status == "ok" and self._result_toggle is None:
            self.result = call.result
            self._result_later = (call.result_value,) if later else None
            if not later:
                self._add_result_section("Result", call.result_value, expanded=False)
        elif call.status == "denied" and call.approval is not None and call.approval.state == "denied":
            # The person's denial: the note under the arguments says it, with the reason (the error the model
            # got, "Denied by the user: <reason>", would only say it again).
            self.result, self.error = call.result, call.error
            if self._error_box is not None:
                self._error_box.setVisible(False)
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
            if "--run-without-sandbox on" in text and self._sandbox_button is None:
                button = self._sandbox_button = QPushButton("Run without a sandbox here…", self)
                button.setToolTip("Settings › General: let this folder's commands run without a sandbox where none "
                                  "can be made, asking you every time")
                button.clicked.connect(self.sandbox_settings_requested)
                self._body.addWidget(button, 0, Qt.AlignmentFlag.AlignLeft)
        if call.status == "ok" or call.duration:
            self._duration.setText(format_duration(call.duration))
        elif call.status not in ("running", "approval"):
            self._duration.setText("")  # no time ticking on a call that ended without one
        self._show_progress(call)
        approval = call.approval
        if approval is not None and approval.state != "asking":
            self._show_decision(approval.note, approval.state)
        if self.approval is None or self.approval.done:
            self._set_status(call.status)

    def _show_unsandboxed(self) -> None:
        label = self.unsandboxed_label = QLabel(UNSANDBOXED, self)
        label.setObjectName("UnsandboxedNote")
        label.setAccessibleName(UNSANDBOXED)
        label.setStyleSheet(f"color: {theme.colors().error}; font-weight: 600;")
        label.setToolTip("No sandbox can be made on this system, and this folder lets commands run without one: it "
                         "ran directly in the folder, could change its files and reach the network. What it wrote is "
                         "on disk, not proposed for review.")
        self._header_row.insertWidget(self._header_row.indexOf(self.from_text_label) + 1, label)

    def _show_progress(self, call: ToolCallItem) -> None:
        """An MCP server's progress reports: a bar (busy when the total is unknown) and its message;
        hidden once the call ends, unless the run was stopped (the server was told to cancel)."""
        progress = call.progress
        bar: QProgressBar | None = getattr(self, "_progress", None)
        label: QLabel | None = getattr(self, "_progress_label", None)
        if progress is None or (call.status not in ("running", "approval") and not progress.cancelled):
            if bar is not None and label is not None:
                bar.setVisible(False)
                label.setVisible(False)
            return
        if bar is None or label is None:
            bar = QProgressBar(self)
            bar.setTextVisible(False)
            bar.setMaximumHeight(6)
            bar.setAccessibleName("Tool progress")
            label = shrinkable(QLabel("", self))
            label.setObjectName("Muted")
            self._progress, self._progress_label = bar, label
            self._body.addWidget(bar)
            self._body.addWidget(label)
        fraction = progress.fraction
        bar.setRange(0, 0 if fraction is None else 1000)
        if fraction is not None:
            bar.setValue(int(fraction * 1000))
        bar.setVisible(not progress.cancelled)
        label.setText(progress.text)
        label.setVisible(True)

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
            self._decision = shrinkable(QLabel("", self))
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
        self._result_value = value

        def on_toggled(checked: bool) -> None:
            # The result's text is made when first shown: a text view (its own style sheet) made for every
            # card, most never opened, was the most of what making a card cost a step paging up a long thread.
            # A big one comes in steps (a piece a turn of the loop): the click shows its first lines.
            view = self._result_view
            if checked and view is None:
                view = self._result_view = _body_text("", self, "ToolResult")
                self._result_feeder = PieceFeeder(view)
                self._result_feeder.start(value_pieces(value, lines=markdown.PIECE_LINES))
                self._body.insertWidget(self._body.indexOf(toggle) + 1, view)
            if view is not None:
                view.setVisible(checked)
            toggle.setIcon(theme.icon("chevron-down" if checked else "chevron-right", c.muted, 14))

        toggle.toggled.connect(on_toggled)
        self._body.addWidget(toggle)
        self._result_toggle = toggle
        if expanded:
            toggle.setChecked(True)

    @property
    def result_pending(self) -> bool:
        """The opened result's text is still coming in (a piece a turn of the event loop)."""
        return self._result_feeder is not None and self._result_feeder.pending

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
