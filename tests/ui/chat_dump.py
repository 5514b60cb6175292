"""The chat as text, for tests: one line per message, card, lane and footer.

Tests compare a live run with the same thread reopened this way: :func:`dump_state` for the
presenter's view state (Qt-free), :func:`dump_widgets` for what the chat's widgets show;
:func:`snapshot` takes both and the totals of a window's chat, :func:`reopen` opens its thread again
and :func:`assert_same` diffs the two. Durations are printed in whole milliseconds; lanes' items are
indented under them. Importing this module imports no Qt (the widgets' dump imports them when called).
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from tests.fakes.app_window import turns_made
from ui.chat.model.bus import BusMessageItem
from ui.chat.model.state import (
    AttachmentChip,
    CallLaneItem,
    ChangeItem,
    ChatState,
    ErrorItem,
    HeaderItem,
    Item,
    LaneItem,
    NetworkItem,
    NoticeItem,
    ReasoningItem,
    RunState,
    TextItem,
    TurnState,
)
from ui.chat.model.tool_calls import ElicitationItem, SamplingItem, ToolCallItem
from workspace.result import Usage

if TYPE_CHECKING:
    from ui.chat.view.chat import ChatView
    from ui.chat.view.request_card import RequestCard


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{round(seconds * 1000)}ms"


def _chip(chip: AttachmentChip) -> str:
    where = f" {chip.server}:{chip.uri}" if chip.server else f" {chip.path}" if chip.path else ""
    return f"{chip.kind} {chip.name} {chip.mime} {chip.size}B{where}"


def usage_text(usage: Usage) -> str:
    cost = "-" if usage.cost is None else f"${usage.cost:.6f}"
    return f"{usage.input_tokens} in / {usage.output_tokens} out / {cost}" + (" (estimated)" if usage.estimated else "")


def dump_item(item: Item, indent: str = "") -> list[str]:
    """One item's lines (a lane's items follow it, indented)."""
    if isinstance(item, HeaderItem):
        return [f"{indent}robot {item.robot}"]
    if isinstance(item, TextItem):
        return [f"{indent}text {item.text!r}"]
    if isinstance(item, ReasoningItem):
        return [f"{indent}thinking [{'done' if item.done else 'streaming'}] "
                f"{'folded' if item.collapsed else 'open'} {item.text!r}"]
    if isinstance(item, SamplingItem):
        messages = " | ".join(f"{m['role']}: {m['text']}" for m in item.messages)
        line = (f"{indent}sampling [{item.status}] id={item.call_id} server={item.server} robot={item.robot} "
                f"model={item.model!r} max_tokens={item.max_tokens} messages={messages!r}")
        if item.outcome:
            line += f" outcome={item.outcome!r}"
        if item.answer is not None:
            line += f" answer={item.answer!r}"
        elif item.error is not None:
            line += f" {item.error_label.lower()}={_json(item.error)}"
        return [line]
    if isinstance(item, ElicitationItem):
        line = (f"{indent}elicitation [{item.status}] id={item.call_id} server={item.server} robot={item.robot} "
                f"message={item.message!r} fields={_json(sorted(item.schema.get('properties') or {}))} "
                f"action={item.action}")
        if item.action == "accept":
            line += f" content={_json(item.content)}"
        if item.error is not None:
            line += f" error={_json(item.error)}"
        return [line]
    if isinstance(item, ToolCallItem):
        line = f"{indent}tool {item.tool} [{item.status}] id={item.call_id} robot={item.robot}"
        if item.server:
            line += f" server={item.server}"
        line += f" args={_json(item.arguments)} took={_ms(item.duration)}"
        if item.approval is not None:
            line += f" approval={item.approval.state}:{item.approval.note!r}"
        if item.progress is not None:
            line += f" progress={item.progress.text!r}"
        if item.output is not None:
            line += f" output={item.output.text!r}" + (f" cut={item.output.cut}" if item.output.cut else "")
        if item.status == "ok":
            line += f" result={_json(item.result_value)}"
        elif item.error is not None:
            line += f" {item.error_label.lower()}={_json(item.error)}"
        lines = [line]
        if item.inner is not None:  # a robot used as this tool: its lane, inside the card
            lines += dump_item(item.inner, indent + "    ")
        return lines
    if isinstance(item, CallLaneItem):
        lines = [f"{indent}lane {item.robot} (as a tool) [{item.status}] usage={usage_text(item.usage)} "
                 f"took={_ms(item.duration)} {'folded' if item.collapsed else 'open'} summary={item.summary!r}"
                 + (f" reason={item.reason!r}" if item.reason else "")]
        for inner in item.items:
            lines += dump_item(inner, indent + "    ")
        return lines
    if isinstance(item, ChangeItem):
        files = ", ".join(f"{f.get('path')} {f.get('action', 'modify')} +{f.get('added', 0)} -{f.get('removed', 0)}"
                          for f in item.files)
        line = f"{indent}change {item.change_set_id} [{item.status}] robot={item.robot} files=[{files}]"
        if item.status == "decided":
            line += f" accepted={item.accepted} rejected={item.rejected} checkpoint={item.checkpoint_id}"
        if item.undone:
            line += " undone"
        return [line]
    if isinstance(item, NoticeItem):
        return [f"{indent}notice [{item.level}] {item.text!r}" + (f" details={item.details!r}" if item.details else "")
                + (f" action={item.action}" if item.action else "")]
    if isinstance(item, ErrorItem):
        return [f"{indent}error {item.message!r}" + (f" fix={item.fix!r}" if item.fix else "")
                + (f" type={item.error_type}" if item.error_type else "")]
    if isinstance(item, NetworkItem):
        return [f"{indent}network {item.network} {item.summary!r}"]
    if isinstance(item, BusMessageItem):
        reply = f" reply-to={item.in_reply_to}" if item.in_reply_to else ""
        return [f"{indent}bus {item.sender} → {item.to} id={item.message_id}{reply} {item.text!r}"]
    if isinstance(item, LaneItem):
        lines = [f"{indent}lane {item.task} robot={item.robot} [{item.status}] usage={usage_text(item.usage)} "
                 f"took={_ms(item.duration)} {'folded' if item.collapsed else 'open'} summary={item.summary!r}"
                 + (f" reason={item.reason!r}" if item.reason else "")]
        for inner in item.items:
            lines += dump_item(inner, indent + "    ")
        return lines
    raise TypeError(f"not a chat item: {item!r}")


def dump_footer(run: RunState) -> str:
    end = run.end
    line = f"footer {run.robot} usage={usage_text(run.totals)} calls={len(run.model_calls)}"
    if end is not None:
        line += f" ended={end.outcome} took={_ms(end.duration)} status={end.status_text!r}"
    return line


def dump_turn(turn: TurnState) -> list[str]:
    lines: list[str] = []
    user = turn.user
    if user is not None:
        lines.append(f"user {user.text!r} turn={'yes' if user.turn_id else 'no'} "
                     f"branch={user.sibling_index + 1}/{user.sibling_count}"
                     + (f" note={user.note!r}" if user.note else "")
                     + (" attachments=" + _json([_chip(a) for a in user.attachments]) if user.attachments else ""))
    for item in turn.items:
        lines += dump_item(item, "  ")
    for run in turn.top_runs:
        if run.footer:
            lines.append("  " + dump_footer(run))
    lines.append(f"  turn totals {usage_text(turn.totals)}")
    return lines


def dump_state(state: ChatState) -> str:
    """The whole column (and the thread's totals) as text."""
    lines = [f"{len(state.hidden)} earlier turns not shown"] if state.hidden else []
    for turn in state.turns:
        lines += dump_turn(turn)
    lines.append(f"thread totals {usage_text(state.totals)}")
    return "\n".join(lines)


def request_card_line(card: RequestCard) -> str:
    """A sampling or elicitation card as one line of text."""
    pill_text = card.status_pill.text() if card.status_pill is not None else ""
    return f"{card.kind_name.lower()} {card.title.text()!r} [{pill_text}] " + " | ".join(card.texts())


def dump_widgets(chat: ChatView) -> str:
    """The column's widgets as text, one line each (a lane's widgets indented under it): what a
    person sees — texts, pills, durations, token counts, footers. Tests compare a live run with
    its reopened thread this way."""
    from PySide6.QtWidgets import QLabel, QWidget

    from ui.chat.view.bus_card import BusMessageCard
    from ui.chat.view.cards import ToolCard
    from ui.chat.view.change_card import ChangeCard
    from ui.chat.view.lanes import NetworkHeader, TaskLane
    from ui.chat.view.messages import NoticeLine, RobotHeader, RunFooter, ThinkingBlock, UserMessage
    from ui.chat.view.request_card import RequestCard
    from ui.chat.view.run_state import ErrorCard
    from ui.chat.view.stream import MarkdownStream

    lines: list[str] = []

    def card_line(card: ToolCard) -> str:
        decision = card._decision.text() if card._decision is not None else ""
        error = card._error_box.toPlainText() if card._error_box is not None else ""
        result = card._result_toggle.text() if card._result_toggle is not None else ""
        args = card._args.toPlainText().replace("\n", " ")
        pill = card._status_pill.text() if card._status_pill is not None else ""
        shown = card.output
        output = (f" output={shown.text!r} {shown.toggle.text()!r}" + ("" if shown.expanded else " folded")) \
            if shown is not None else ""
        return (f"tool {card.title.text()} [{pill}] {card._duration.text()!r} args={args!r}{output}"
                + (f" decision={decision!r}" if decision else "") + (f" result={result!r}" if result else "")
                + (f" error={error!r}" if error else ""))

    def widget_lines(widget: QWidget, indent: str) -> list[str]:
        if isinstance(widget, UserMessage):
            branch = widget.branch_label.text() if widget._buttons_made and widget.sibling_count > 1 else ""
            chips = widget.chips.names() if widget.chips is not None and widget.chips.chips else []
            return [f"{indent}user {widget.text!r}" + (f" note={widget.note!r}" if widget.note else "")
                    + (f" chips={chips!r}" if chips else "")
                    + (f" {branch}" if branch else "")]
        if isinstance(widget, RobotHeader):
            name = widget.findChild(QLabel, "RobotName")
            return [f"{indent}robot {name.text() if name is not None else '?'}"]
        if isinstance(widget, MarkdownStream):
            return [f"{indent}text {widget.text!r}"]
        if isinstance(widget, ThinkingBlock):
            return [f"{indent}thinking {widget.toggle.text()!r} {'folded' if widget.collapsed else 'open'} "
                    f"{widget.text!r}"]
        if isinstance(widget, ToolCard):
            lines = [indent + card_line(widget)]
            for inner in widget.lanes():
                lines += widget_lines(inner, indent + "    ")
            return lines
        if isinstance(widget, RequestCard):
            return [indent + request_card_line(widget)]
        if isinstance(widget, ChangeCard):
            pill = widget._pill.text() if widget._pill is not None else ""
            undo = widget.undo_button.text() if not widget.undo_button.isHidden() else ""
            return [f"{indent}change <b>{widget.title.text()}</b> {widget.count.text()} [{pill}] {widget.listing.text()!r} "
                    f"{widget.note.text()!r} {widget.review_button.text()!r}" + (f" {undo}" if undo else "")]
        if isinstance(widget, BusMessageCard):
            return [f"{indent}bus {widget.title} {widget.kind.text()!r} {widget.body.text()!r}"]
        if isinstance(widget, NetworkHeader):
            return [f"{indent}network {widget.name.text()} {widget.kind.text()!r}"]
        if isinstance(widget, TaskLane):
            pill = widget._pill.text() if widget._pill is not None else ""
            out = [f"{indent}lane {widget.task} {widget.chip.text()} [{pill}] {widget.usage.text()!r} "
                   f"({widget.usage.toolTip()}) {widget.duration.text()!r} "
                   f"{'folded' if widget.collapsed else 'open'} {widget.summary.text()!r}"
                   + (f" note={widget.note.text()!r}" if not widget.note.isHidden() else "")]
            for inner in widget.widgets():
                out += widget_lines(inner, indent + "    ")
            return out
        if isinstance(widget, ErrorCard):
            fix = widget.fix_label.text() if widget.fix_label is not None else ""
            return [f"{indent}error {widget.title.text()!r} {widget.text.text()!r}" + (f" fix={fix!r}" if fix else "")]
        if isinstance(widget, NoticeLine):
            action = widget.action_button.text() if widget.action_button is not None else ""
            return [f"{indent}notice {widget.label.text()!r}" + (f" [{action}]" if action else "")]
        if isinstance(widget, RunFooter):
            return [f"{indent}footer {widget.usage.text()!r} ({widget.usage.toolTip()}) {widget.status.text()!r}"]
        return [f"{indent}{type(widget).__name__}"]

    if chat._more_button is not None:
        lines.append(chat._more_button.text())
    for widget in chat.items():
        lines += widget_lines(widget, "")
    return "\n".join(lines)


def snapshot(root: Any) -> dict[str, Any]:
    """What the chat shows (widgets as text), its view state, and every total on screen."""
    window = root.window
    state = window.chat.presenter.state
    return {
        "widgets": dump_widgets(window.chat),
        "state": dump_state(state),
        "turn_totals": [usage_text(turn.totals) for turn in state.turns],
        "thread_totals": usage_text(state.totals),
        "status_bar": window.status.usage.text(),
    }


async def reopen(root: Any) -> dict[str, Any]:
    """The window's thread opened again (from a new one): its :func:`snapshot` then."""
    window, thread_id = root.window, root.controller.thread_id
    window.threads.new()
    await asyncio.sleep(0.05)
    assert not window.chat.items()
    window.threads.open(thread_id)
    await asyncio.sleep(0.05)
    await turns_made(window.chat)
    return snapshot(root)


def assert_same(live: dict[str, Any], reopened: dict[str, Any]) -> None:
    """Fails with a diff naming the first part of the two :func:`snapshot` that differs."""
    import difflib

    for key in live:
        if live[key] != reopened[key]:
            a, b = (str(v).splitlines() for v in (live[key], reopened[key]))
            diff = "\n".join(difflib.unified_diff(a, b, "live", "reopened", lineterm=""))
            raise AssertionError(f"the reopened thread differs in {key}:\n{diff}")


__all__ = ["assert_same", "dump_item", "dump_state", "dump_turn", "dump_widgets", "reopen", "request_card_line",
           "snapshot", "usage_text"]
