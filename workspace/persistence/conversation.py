"""Conversations rebuilt from stored runs: the robot's messages from a run's result or, for a run
that never ended, from its events; and transcripts with streamed text deltas joined.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from workspace import events as ev
from workspace.messages import Message, TextMessage, ToolCallMessage, ToolMessage, ToolResultMessage
from workspace.result import RobotResult

INTERRUPTED_TOOL_ERROR = "The run was interrupted before this tool call finished."
MISSING_RESULT_ERROR = "No result was recorded for this tool call."


def terminal_result(events: Sequence[ev.Event]) -> RobotResult | None:
    """The RobotResult the run ended with (the partial one after a stop or a failure), or None.
    Runs inside the run (a network's tasks, robots used as tools) end too: their ends are not it."""
    for event in reversed(events):
        if event.nested:
            continue
        match event:
            case ev.RunFinished(result=value) | ev.RunFailed(partial=value) | ev.RunCancelled(partial=value):
                if isinstance(value, RobotResult):
                    return value
                if isinstance(value, dict):  # built by hand rather than read back
                    return RobotResult.from_dict(value)
                return None
    return None


def conversation_from_result(result: RobotResult) -> list[Message]:
    """The assistant's messages of a run, each tool-call message followed by its results."""
    results = [m for m in result.tool_calls if isinstance(m, ToolResultMessage)]
    by_id: dict[str, ToolResultMessage] = {}
    for r in results:
        if r.tool.id and r.tool.id not in by_id:
            by_id[r.tool.id] = r
    used: set[int] = set()
    out: list[Message] = []
    for message in result.output:
        out.append(message)
        if not isinstance(message, ToolCallMessage):
            continue
        for call in message.tools:
            found = by_id.get(call.id) if call.id else None
            if found is None:  # no id: the first unused result of that tool, in order
                found = next((r for r in results if id(r) not in used and r.tool.id in (None, call.id)
                              and r.tool.name == call.name), None)
            if found is None or id(found) in used:
                found = ToolResultMessage(tool=call, content={"error": MISSING_RESULT_ERROR})
            used.add(id(found))
            out.append(found)
    return out


def conversation_from_events(events: Sequence[ev.Event]) -> list[Message]:
    """The assistant's messages rebuilt from a run's events (for runs that never ended). The events of
    robots used as tools (``parent_tool_id`` set) are theirs, not this conversation's."""
    out: list[Message] = []
    parts: list[str] = []
    final: list[str | None] = [None]
    calls: list[ToolMessage] = []
    results: dict[str, ToolResultMessage] = {}

    def close_text(stop: str) -> None:
        text = final[0] if final[0] is not None else "".join(parts)
        if text:
            out.append(TextMessage(role="assistant", content=text, stop_reason=stop))
        parts.clear()
        final[0] = None

    def close_calls() -> None:
        if not calls:
            return
        out.append(ToolCallMessage(role="assistant", tools=list(calls)))
        for call in calls:
            out.append(results.get(call.id or "") or ToolResultMessage(tool=call,
                                                                     content={"error": INTERRUPTED_TOOL_ERROR}))
        calls.clear()
        results.clear()

    by_id: dict[str, ToolMessage] = {}
    for event in events:
        if event.parent_tool_id is not None:
            continue
        if isinstance(event, ev.TextDelta):
            close_calls()
            parts.append(event.text)
        elif isinstance(event, ev.Text):
            close_calls()
            final[0] = event.text
            parts.clear()
        elif isinstance(event, ev.ToolUse):
            if final[0] is not None or parts:
                close_text("tool")
            args = event.input if isinstance(event.input, dict) else {}
            call = ToolMessage(id=event.id or None, name=event.name, input=args)
            calls.append(call)
            by_id[event.id] = call
        elif isinstance(event, ev.ToolResult):
            call_for = by_id.get(event.id) or ToolMessage(id=event.id or None, name=event.name, input={})
            payload = event.payload if isinstance(event.payload, dict) and "data" in event.payload \
                else {"data": event.payload}
            results[event.id] = ToolResultMessage(tool=call_for, content=payload)
        elif isinstance(event, ev.ToolError):
            call_for = by_id.get(event.id) or ToolMessage(id=event.id or None, name=event.name, input={})
            results[event.id] = ToolResultMessage(tool=call_for, content={"error": event.error})
    close_calls()
    close_text("stop")
    return out


def latest_compaction(events: Iterable[ev.Event], robot: str | None = None) -> ev.ContextCompacted | None:
    """The last ``context_compacted`` event (of ``robot``, when given) among ``events``: the summary the
    model is sent in place of the conversation's first ``replaced_count`` messages."""
    found: ev.ContextCompacted | None = None
    for event in events:
        if isinstance(event, ev.ContextCompacted) and (robot is None or event.robot == robot):
            found = event
    return found


def unindexed_tail(events: Sequence[ev.Event]) -> str:
    """The text streamed after the run's last complete ``text`` event (never indexed for search)."""
    parts: list[str] = []
    for event in events:
        if isinstance(event, ev.TextDelta):
            parts.append(event.text)
        elif isinstance(event, ev.Text):
            parts = []
    return "".join(parts)


def coalesce_text(events: Iterable[ev.Event]) -> list[ev.Event]:
    """Events with each model turn's ``text_delta`` run replaced by one ``text`` event (and its
    ``reasoning_delta`` run by one ``reasoning`` event).

    The text sits where its first delta was, with its time (when the model's first token came: the
    chat's time to first token and speed); a later ``text`` event of the same run (the complete text
    of that model turn) replaces the deltas' text. Text of a run that was
    stopped before its ``text`` event (cancelled, failed, interrupted) is kept from the deltas.
    """
    out: list[ev.Event | None] = []
    open_at: dict[tuple[str, str, str | None, str], tuple[int, list[str]]] = {}
    for event in events:
        if isinstance(event, ev.TextDelta | ev.ReasoningDelta):
            key = (event.run_id, event.robot, event.task, event.kind)
            if key in open_at:
                open_at[key][1].append(event.text)
            else:
                open_at[key] = (len(out), [event.text])
                out.append(event)
            continue
        if isinstance(event, ev.Text | ev.Reasoning):
            delta = ev.TextDelta.kind if isinstance(event, ev.Text) else ev.ReasoningDelta.kind
            key = (event.run_id, event.robot, event.task, delta)
            if key in open_at:
                index, _ = open_at.pop(key)
                first = out[index]
                out[index] = event if first is None else event.replace(ts=first.ts)
                continue
        if isinstance(event, (ev.ToolUse, *ev.TERMINAL)):
            for kind in (ev.ReasoningDelta.kind, ev.TextDelta.kind):
                _close(out, open_at, (event.run_id, event.robot, event.task, kind))
        out.append(event)
    for key in list(open_at):
        _close(out, open_at, key)
    return [e for e in out if e is not None]


def _close(out: list[ev.Event | None], open_at: dict[tuple[str, str, str | None, str], tuple[int, list[str]]],
           key: tuple[str, str, str | None, str]) -> None:
    found = open_at.pop(key, None)
    if found is None:
        return
    index, parts = found
    first = out[index]
    assert first is not None
    cls: type[ev.Text | ev.Reasoning] = ev.Reasoning if isinstance(first, ev.ReasoningDelta) else ev.Text
    out[index] = cls(run_id=first.run_id, robot=first.robot, seq=first.seq, task=first.task, ts=first.ts,
                     text="".join(parts))
