"""The chat's view state as text: one line per message, card, lane and footer.

Tests compare a live run with the same thread reopened this way (``dump_state`` here for the view
state, :func:`ui.chat.view.chat_dump.dump_widgets` for what the widgets show). Durations are printed in
whole milliseconds; lanes' items are indented under them.
"""

from __future__ import annotations

import json
from typing import Any

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


__all__ = ["dump_item", "dump_state", "dump_turn", "usage_text"]
