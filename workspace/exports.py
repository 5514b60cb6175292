"""Exporting threads (Markdown for people, RobotLab JSON results, JSONL events) and importing results.

* :func:`export_markdown`: a readable record: title, robot, model, each message, the robot's
  text, every tool call with its arguments and result or error (fenced JSON), approvals,
  proposed changes and what was decided, usage.
* :func:`export_results_json`: a JSON list with one RobotLab ``RobotResult`` per run, in
  RobotLab's shape (:meth:`RobotResult.export`), plus RobotLab's optional ``prompt`` field (of
  its ``to_h``) holding the user's message so an import restores it; ``with_prompt=False``
  gives the bare ``export()`` objects.
* :func:`export_events_jsonl`: one event dict (``Event.to_dict()`` plus ``turn_id``) per line.
* :func:`import_results_json`: RobotLab results back into a new thread.

Attachments are listed with each message (name, type, size, where from): the Markdown embeds images
up to 512 KB, the JSON results carry them as ``attachments`` and the JSONL in ``run_started``; the
content of text attachments stays in the thread.

The model's thinking (``reasoning`` events) is left out unless ``include_reasoning=True`` (the CLI's
``--reasoning``): it can be long, and it was never part of the conversation.

Exports follow the thread's current branch unless told otherwise. Secrets never appear: the
output goes through :func:`workspace.secrets.redact` (the store already redacts what it keeps).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, assert_never

from workspace import events as ev
from workspace.errors import Error
from workspace.messages import Message, TextMessage, ToolResultMessage
from workspace.persistence import (
    Store,
    ThreadInfo,
    TurnInfo,
    coalesce_text,
    conversation_from_events,
)
from workspace.result import STOP_NOTES, RobotResult
from workspace.sandbox import display_json, display_path
from workspace.secrets import redact

__all__ = [
    "FORMATS",
    "ImportFormatError",
    "export_events_jsonl",
    "export_markdown",
    "export_results_json",
    "export_thread",
    "import_results_json",
]

#: Images up to this size are embedded in the Markdown export (larger ones are listed).
EMBED_IMAGE_BYTES = 512 * 1024
#: Export formats by name (the CLI's ``--format``) and their file suffix.
FORMATS: dict[str, str] = {"md": ".md", "json": ".json", "jsonl": ".jsonl"}


def read_results_file(path: str | os.PathLike[str]) -> str:
    """The text of a results JSON file a person names (to import), read bounded
    (:data:`~workspace.readlimits.RESULTS_FILE_BYTES`, a regular file only: a FIFO does not wait, a link to
    ``/dev/zero`` is not read); :class:`ImportFormatError` naming the file and the fix when it cannot be."""
    from workspace.readlimits import RESULTS_FILE_BYTES, FileLimitError, read_text_bounded

    try:
        return read_text_bounded(path, RESULTS_FILE_BYTES, "results file")
    except FileLimitError as exc:
        raise ImportFormatError(str(exc)) from None
    except OSError as exc:
        raise ImportFormatError(f"Cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"{path} is not UTF-8 text ({exc}); give a JSON file of RobotLab results "
                                "(as `robotlab threads export ID --format json` writes)") from exc


class ImportFormatError(Error):
    """The text is not RobotLab results JSON; the message says what was expected."""


# ------------------------------------------------------------------------------------------
# helpers


def _time(ts: float | None) -> str:
    if ts is None:
        return ""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _json(value: Any, *, indent: int | None = 2) -> str:
    """JSON for people and files: control, format (bidi) and separator characters in strings are
    escaped (:func:`workspace.sandbox.display_json`), so no name can reorder or forge lines."""
    return display_json(json.dumps(value, ensure_ascii=False, indent=indent, default=str))


def _change_path(entry: Mapping[str, Any]) -> str:
    """A changed file's name (``old → new`` for a rename) with any control or bidi character escaped."""
    path, new = str(entry.get("path", "?")), entry.get("new_path")
    return display_path(f"{path} → {new}" if new else path)


def _fenced(value: Any, lang: str = "json") -> str:
    text = value if isinstance(value, str) and lang != "json" else _json(value)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0) if "`" in text else 0
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def _compaction_what(event: ev.ContextCompacted) -> str:
    """What a compaction marker says: "12 earlier messages summarised, 1,900 → 600 tokens of 2,048"."""
    count = event.newly_replaced or event.replaced_count
    what = f"{count} earlier message{'s' if count != 1 else ''} summarised"
    if event.tokens_before:
        window = f" of {event.window:,}" if event.window else ""
        what += f", {event.tokens_before:,} → {event.tokens_after:,} tokens{window}"
    return what + (" on request" if event.trigger == "manual" else "")
def _readable(value: Any) -> str:
    """A value (arguments, a result, an error) for people: its structure as fenced JSON, and each string
    that spans lines as fenced text under its key (no ``\\n`` escapes; :mod:`workspace.readable`)."""
    from workspace.readable import JsonBlock, readable_blocks

    parts: list[str] = []
    for block in readable_blocks(value):
        if isinstance(block, JsonBlock):
            try:
                parts.append(_fenced(json.loads(block.text)))
            except ValueError:  # not JSON (a value json cannot write): as text
                parts.append(_fenced(display_json(block.text), "text"))
            continue
        if block.label:
            parts.append(f"`{display_path(block.label)}`:")
        text = "\t".join(display_json(part) for part in block.text.rstrip("\n").split("\t"))
        parts.append(_fenced(text, "text"))
    return "\n\n".join(parts)


def _multi_line(value: Any) -> bool:
    """Whether ``value`` holds a string that spans lines (shown as text by :func:`_readable`)."""
    from workspace.readable import TextBlock, readable_blocks

    return any(isinstance(b, TextBlock) for b in readable_blocks(value))


def _money(cost: float | None) -> str:
    return "" if cost is None else f", ${cost:.4f}"


def _turn_result(events: Sequence[ev.Event]) -> RobotResult | None:
    for event in reversed(events):
        if event.nested:
            continue  # the end of a run inside the turn's run
        value: Any
        if isinstance(event, ev.RunFinished):
            value = event.result
        elif isinstance(event, ev.RunCancelled | ev.RunFailed):
            value = event.partial
        else:
            continue
        if isinstance(value, RobotResult):
            return value
        if isinstance(value, Mapping):
            return RobotResult.from_dict(value)
        return None
    return None


def _result_for(turn: TurnInfo, events: Sequence[ev.Event], robot: str) -> RobotResult:
    """The turn's RobotResult, or one rebuilt from its events when the run never ended."""
    result = _turn_result(events)
    if result is not None:
        return result
    messages = conversation_from_events(events)
    output = [m for m in messages if not isinstance(m, ToolResultMessage)]
    tool_calls = [m for m in messages if isinstance(m, ToolResultMessage)]
    name = next((e.robot for e in events if e.robot), robot)
    return RobotResult(name, output, tool_calls, created_at=turn.created_at, id=turn.run_id or turn.id,
                       stop_reason=turn.status if turn.status != "running" else "interrupted")


# ------------------------------------------------------------------------------------------
# Markdown


def _comparison_lines(metadata: Mapping[str, Any]) -> list[str]:
    """A compared thread's place in its comparison and the person's verdict (kept by
    :func:`workspace.session.compare.record_verdict`); nothing for a thread that is no candidate."""
    if "comparison" not in metadata:
        return []
    count = metadata.get("candidates")
    of = f" of {count}" if count else ""
    lines = [f"- **Comparison:** `{metadata['comparison']}`, candidate {int(metadata.get('candidate', 0)) + 1}{of} "
             f"({metadata.get('candidate_label', '?')})"]
    verdict = metadata.get("verdict")
    if isinstance(verdict, Mapping) and "winner" in verdict:
        why = f": {verdict['reason']}" if verdict.get("reason") else ""
        lines.append(f"- **Verdict:** candidate {int(verdict['winner']) + 1} ({verdict.get('label', '?')}) "
                     f"is the better answer{why}")
    return lines


def export_markdown(store: Store, thread_id: str, *, leaf_turn_id: str | None = None,
                    include_reasoning: bool = False) -> str:
    """The thread's current branch as Markdown for people (tool calls, approvals and changes included;
    the model's thinking only with ``include_reasoning``, as a collapsed "Thinking" block)."""
    thread = store.get_thread(thread_id)
    pairs = store.path_events(thread_id, leaf_turn_id)
    branches = store.branch_map(thread_id)
    models = list(dict.fromkeys(
        e.model for _, events in pairs for e in events if isinstance(e, ev.RunStarted) and e.model
    ))
    lines: list[str] = [f"# {thread.display_title}", ""]
    lines.append(f"- **Robot:** {thread.robot}" + (" (network)" if thread.kind == "network" else ""))
    if models:
        lines.append(f"- **Model:** {', '.join(models)}")
    lines.append(f"- **Started:** {_time(thread.created_at)}")
    lines.append(f"- **Updated:** {_time(thread.updated_at)}")
    lines.append(f"- **Usage:** {thread.input_tokens:,} input + {thread.output_tokens:,} output tokens"
                 f"{_money(thread.cost)} (every branch)")
    lines.append(f"- **Thread id:** `{thread.id}`")
    lines += _comparison_lines(thread.metadata)
    lines.append("")
    for turn, events in pairs:
        lines.append("---")
        lines.append("")
        siblings = branches.get(turn.parent_turn_id, [turn.id])
        version = ""
        if len(siblings) > 1 and turn.id in siblings:
            version = f" (version {siblings.index(turn.id) + 1} of {len(siblings)})"
        lines.append(f"## You{version}")
        lines.append(f"*{_time(turn.created_at)}*")
        lines.append("")
        lines.append(turn.user_text or "*(message not recorded)*")
        lines.append("")
        lines += _markdown_attachments(store, _attachments(events))
        lines += _markdown_events(turn, coalesce_text(events), thread.robot, include_reasoning=include_reasoning)
    return redact("\n".join(lines).rstrip() + "\n")


def _attachments(events: Sequence[ev.Event]) -> list[dict[str, Any]]:
    """The attachment references of a turn's message (its run's ``run_started``)."""
    started = next((e for e in events if isinstance(e, ev.RunStarted) and not e.nested and e.task is None), None)
    return [dict(a) for a in started.attachments] if started is not None else []


def _markdown_attachments(store: Store, refs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The message's attachments: name, type, size and origin; images up to :data:`EMBED_IMAGE_BYTES`
    embedded (a ``data:`` URL), larger ones listed."""
    if not refs:
        return []
    from workspace.attachments import IMAGE_MIMES, describe_size

    lines = ["**Attached:**", ""]
    for ref in refs:
        name, mime, size = str(ref.get("name") or ""), str(ref.get("mime") or ""), int(ref.get("size") or 0)
        origin = (f"MCP resource `{ref.get('uri')}` of `{ref.get('server')}`" if ref.get("server") else
                  f"`{display_path(str(ref['path']))}`" if ref.get("path") else "")
        line = f"- {display_path(name)} ({mime}, {describe_size(size)})" + (f", from {origin}" if origin else "")
        if ref.get("note"):
            line += f"; {ref['note']}"
        lines.append(line)
        if mime in IMAGE_MIMES and size <= EMBED_IMAGE_BYTES:
            data = store.attachment_content(str(ref.get("sha256") or ""))
            if data is not None:
                import base64

                lines.append(f"  ![{display_path(name)}](data:{mime};base64,{base64.b64encode(data).decode()})")
    lines.append("")
    return lines


def _markdown_events(turn: TurnInfo, events: Sequence[ev.Event], robot: str, *,
                     include_reasoning: bool = False) -> list[str]:
    """The turn's events as Markdown; a robot used as a tool is quoted (``>``) under the call that ran it."""
    out: list[str] = []
    speaker: str | None = None
    depths: dict[str, int] = {}

    def depth_of(event: ev.Event) -> int:
        if event.run_id not in depths:
            parent = depths.get(event.parent_run_id or "", 0)
            depths[event.run_id] = parent + (1 if event.parent_tool_id else 0)
        return depths[event.run_id]

    def heading(name: str) -> None:
        nonlocal speaker
        if speaker != name:
            out.append(f"### {name}")
            out.append("")
            speaker = name

    for event in events:
        who = f"{event.robot} [{event.task}]" if event.task else (event.robot or robot)
        depth = depth_of(event)
        first = len(out)
        match event:
            case ev.Text():
                if event.text:
                    heading(who)
                    out.append(event.text.rstrip())
                    out.append("")
            case ev.ToolUse():
                heading(who)
                server = f" (server `{event.server}`)" if event.server else ""
                written = " · from the model's text" if event.from_text else ""
                out.append(f"**Tool call** `{event.name}`{server} · `{event.id}`{written}")
                out.append("")
                out.append(_readable(event.input if event.input is not None else {}))
                out.append("")
            case ev.ToolResult():
                heading(who)
                out.append(f"**Result** of `{event.name}` · `{event.id}` · {event.duration:.2f} s")
                out.append("")
                out.append(_readable(event.payload))
                out.append("")
            case ev.ToolError():
                heading(who)
                out.append(f"**Error** from `{event.name}` · `{event.id}`" +
                           (f" · {event.duration:.2f} s" if event.duration else ""))
                out.append("")
                out.append(_readable({"error": event.error}))
                out.append("")
            case ev.ApprovalRequested():
                heading(who)
                out.append(f"> **Approval requested** for `{event.name}` · `{event.id}`")
                out.append("")
            case ev.ApprovalDecided():
                heading(who)
                verdict = "Approved" if event.decision == "approve" else "Denied"
                reason = f": {event.reason}" if event.reason else ""
                out.append(f"> **{verdict}** `{event.name}` (scope: {event.scope}){reason}")
                out.append("")
                out.append(_readable(event.input if event.input is not None else {}))
                out.append("")
            case ev.ChangeProposed():
                heading(who)
                out.append(f"**Change proposed** `{event.change_set_id}`:")
                for f in event.files:
                    added, removed = f.get("added", 0), f.get("removed", 0)
                    out.append(f"- `{_change_path(f)}` ({f.get('action', 'modify')}, +{added} −{removed})")
                out.append("")
            case ev.ChangeDecided():
                heading(who)
                out.append(f"**Change decided** `{event.change_set_id}`:")
                for f in event.outcome:
                    accepted, rejected = f.get("accepted") or [], f.get("rejected") or []
                    reason = f" ({f['reason']})" if f.get("reason") else ""
                    out.append(f"- `{_change_path(f)}`: accepted hunks {accepted}, rejected hunks {rejected}{reason}")
                if event.checkpoint_id:
                    out.append(f"- checkpoint `{event.checkpoint_id}`")
                out.append("")
            case ev.MemoryChanged():
                heading(who)
                writer = f" by {event.writer}" if event.writer else ""
                if _multi_line(event.value):
                    out.append(f"*Memory* `{event.key}`{writer} =")
                    out.append("")
                    out.append(_readable(event.value))
                else:
                    out.append(f"*Memory* `{event.key}`{writer} = `{_json(event.value, indent=None)}`")
                out.append("")
            case ev.TaskStarted():
                out.append(f"*Task `{event.task}` started*")
                out.append("")
            case ev.TaskFinished():
                error = f": {event.error}" if event.error else ""
                out.append(f"*Task `{event.task}` {event.status}{error}*")
                out.append("")
            case ev.RunCancelled():
                out.append(f"*Stopped: {event.reason}*")
                out.append("")
            case ev.RunFailed():
                out.append(f"*Failed: {event.error}*")
                out.append("")
            case ev.Reasoning() | ev.ReasoningDelta():
                if include_reasoning and event.text:
                    heading(who)
                    out.append("<details><summary>Thinking</summary>")
                    out.append("")
                    out.append(event.text.strip())
                    out.append("")
                    out.append("</details>")
                    out.append("")
            case ev.RunStatus():
                if event.state in ("fallback", "notice"):
                    out.append(f"*{event.detail}*")
                    out.append("")
            case ev.McpServers():
                out.extend(f"*{line}*" for line in event.message.splitlines())
                out.append("")
            case ev.ContextCompacted():
                out.append(f"> **Conversation compacted** ({_compaction_what(event)}): the model was sent this "
                           "summary in place of the earlier messages, which are all above.")
                out.append(">")
                out += [f"> {line}" if line else ">" for line in event.summary.strip().splitlines()]
                out.append("")
            case ev.ModelChanged():
                out.append(f"*{event.describe()}*")
                out.append("")
            case ev.BusMessage():
                reply = f" (reply to `{event.in_reply_to}`)" if event.in_reply_to else ""
                out.append(f"**{event.sender} → {event.to}**{reply}:")
                out.append("")
                out.append(_readable(event.content) if isinstance(event.content, dict) else str(event.content))
                out.append("")
            case ev.VerifyFinished():
                out.append(f"*{event.describe()}*")
                if event.output:
                    out += ["", "```text", event.output.rstrip("\n"), "```"]
                out.append("")
            case ev.RunStarted() if event.parent_tool_id:
                out.append(f"*`{event.robot}` runs as the tool call `{event.parent_tool_id}`*")
                out.append("")
            case ev.RunFinished() if event.parent_tool_id:
                out.append(f"*`{event.robot}` finished*")
                out.append("")
            case ev.RunFinished():
                note = STOP_NOTES.get(str(getattr(event.result, "stop_reason", "") or ""))
                if note and not event.task and not event.nested:
                    out.append(f"*{note}*")
                    out.append("")
            case (ev.RunStarted() | ev.TextDelta() | ev.Usage() | ev.ContextUsage() | ev.ToolProgress()
                  | ev.ToolOutput() | ev.ModelRequest()):
                pass  # the heading, the text and the usage line come from the turn itself; a command's output
                # is in its result (head and tail); the request as sent is
                # the JSON exports' (the record), not the conversation's
            case _:
                assert_never(event)
        if depth:
            quote = "> " * depth
            out[first:] = [(quote + line) if line else quote.rstrip() for line in out[first:]]
    if turn.status == "interrupted":
        out.append("*Interrupted: the app stopped before this run ended.*")
        out.append("")
    elif turn.status == "running":
        out.append("*Still running when exported.*")
        out.append("")
    if turn.input_tokens or turn.output_tokens or turn.cost is not None:
        out.append(f"*Usage: {turn.input_tokens:,} input + {turn.output_tokens:,} output tokens{_money(turn.cost)}*")
        out.append("")
    return out


# ------------------------------------------------------------------------------------------
# JSON results and JSONL events


def export_results_json(store: Store, thread_id: str, *, leaf_turn_id: str | None = None,
                        with_prompt: bool = True, indent: int | None = 2) -> str:
    """A JSON list of RobotLab result exports, one per run along the branch (oldest first)."""
    thread = store.get_thread(thread_id)
    items: list[dict[str, Any]] = []
    for turn, events in store.path_events(thread_id, leaf_turn_id):
        result = _result_for(turn, events, thread.robot)
        item = result.export()
        if with_prompt and turn.user_text:
            item["prompt"] = [TextMessage(role="user", content=turn.user_text).to_dict()]
        attached = _attachments(events)
        if attached:  # what went with the message (its content stays in the thread's database)
            item["attachments"] = attached
        items.append(item)
    return redact(_json(items, indent=indent)) + "\n"


def export_events_jsonl(store: Store, thread_id: str, *, leaf_turn_id: str | None = None,
                        all_branches: bool = False, include_reasoning: bool = False) -> str:
    """One stored event per line (``Event.to_dict()`` plus ``turn_id``), the branch's turns in order
    (``reasoning`` events only with ``include_reasoning``)."""
    store.get_thread(thread_id)
    lines: list[str] = []
    if all_branches:
        pairs: Iterable[tuple[str, ev.Event]] = store.thread_events(thread_id)
    else:
        pairs = ((turn.id, e) for turn, events in store.path_events(thread_id, leaf_turn_id) for e in events)
    for turn_id, event in pairs:
        if not include_reasoning and isinstance(event, ev.Reasoning | ev.ReasoningDelta):
            continue
        data = event.to_dict()
        data["turn_id"] = turn_id
        lines.append(display_json(json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)))
    return redact("\n".join(lines) + ("\n" if lines else ""))


def export_thread(store: Store, thread_id: str, fmt: str, *, leaf_turn_id: str | None = None,
                  include_reasoning: bool = False) -> str:
    """Export in ``fmt`` ("md", "json" or "jsonl"); the model's thinking only with ``include_reasoning``."""
    if fmt in ("md", "markdown"):
        return export_markdown(store, thread_id, leaf_turn_id=leaf_turn_id, include_reasoning=include_reasoning)
    if fmt == "json":
        return export_results_json(store, thread_id, leaf_turn_id=leaf_turn_id)
    if fmt == "jsonl":
        return export_events_jsonl(store, thread_id, leaf_turn_id=leaf_turn_id, include_reasoning=include_reasoning)
    raise ValueError(f"Unknown export format: {fmt}. Must be one of: {', '.join(FORMATS)}")


# ------------------------------------------------------------------------------------------
# Import


#: Why an event export cannot be imported, and what to export instead.
_EVENTS_NOT_RESULTS = ("This is a JSONL event export (`robotlab threads export ID --format jsonl`: one event per "
                       "line), which cannot be imported; only the JSON export holds RobotLab results. Export the "
                       "thread with `robotlab threads export ID --format json` (or the window's Export as JSON) and "
                       "import that file.")


def _is_event(data: Any) -> bool:
    """Whether ``data`` is one line of :func:`export_events_jsonl` (an event with its ``turn_id``)."""
    return isinstance(data, Mapping) and isinstance(data.get("kind"), str) and "turn_id" in data


def _items(data: Any) -> list[Mapping[str, Any]]:
    if _is_event(data):  # a JSONL export of one line
        raise ImportFormatError(_EVENTS_NOT_RESULTS)
    if isinstance(data, Mapping) and isinstance(data.get("results"), list):
        data = data["results"]  # a RobotLab Memory.to_h
    elif isinstance(data, Mapping) and "output" in data:
        data = [data]
    if not isinstance(data, list):
        raise ImportFormatError(
            "Expected RobotLab results JSON: a list of results like "
            '[{"robot_name": ..., "output": [...], "tool_calls": [...]}], one result, '
            'or a memory export with "results".'
        )
    for i, item in enumerate(data):
        if not isinstance(item, Mapping) or "output" not in item:
            raise ImportFormatError(f"Item {i} is not a RobotLab result: it needs at least "
                                    '"robot_name" and "output".')
    return data


def _user_text(item: Mapping[str, Any]) -> str:
    for key in ("prompt", "history"):
        value = item.get(key)
        if isinstance(value, list):
            for message in reversed(value):
                if isinstance(message, Mapping) and message.get("role") == "user" \
                        and isinstance(message.get("content"), str):
                    return str(message["content"])
    for key in ("input", "message"):
        if isinstance(item.get(key), str):
            return str(item[key])
    return ""


def _status(stop_reason: str | None) -> str:
    return {"cancelled": "cancelled", "error": "failed", "failed": "failed",
            "interrupted": "interrupted"}.get(stop_reason or "", "finished")


def _result_events(result: RobotResult, *, run_id: str, message: str) -> list[ev.Event]:
    robot = result.robot_name or "robot"
    seq = 0
    ts = result.created_at.timestamp()

    def make(event: ev.Event) -> ev.Event:
        nonlocal seq
        seq += 1
        return ev.stamp(event, run_id=run_id, robot=robot, seq=seq).replace(ts=ts)

    results: dict[str, ToolResultMessage] = {}
    for m in result.tool_calls:
        if isinstance(m, ToolResultMessage) and m.tool.id:
            results.setdefault(m.tool.id, m)
    out = [make(ev.RunStarted(message=message, model="imported from RobotLab", is_language_model=True))]
    message_list: list[Message] = result.output
    for m in message_list:
        if m.is_text and m.is_assistant and isinstance(m.content, str):
            out.append(make(ev.Text(text=m.content)))
        elif m.is_tool_call:
            calls = getattr(m, "tools", [])
            for call in calls:
                out.append(make(ev.ToolUse(id=call.id or "", name=call.name, input=call.input)))
            for call in calls:
                r = results.get(call.id or "")
                if r is None:
                    continue
                if r.is_error:
                    out.append(make(ev.ToolError(id=call.id or "", name=call.name, error=r.error)))
                else:
                    payload = r.content if isinstance(r.content, Mapping) else {"data": r.content}
                    out.append(make(ev.ToolResult(id=call.id or "", name=call.name, payload=payload)))
    if result.usage is not None:
        u = result.usage
        out.append(make(ev.Usage(input_tokens=u.input_tokens, output_tokens=u.output_tokens, cost=u.cost,
                        total_input_tokens=u.input_tokens, total_output_tokens=u.output_tokens, total_cost=u.cost)))
    status = _status(result.stop_reason)
    if status == "cancelled":
        out.append(make(ev.RunCancelled(reason="stopped (imported)", partial=result)))
    elif status == "failed":
        out.append(make(ev.RunFailed(error="failed (imported)", error_type="ImportedResult", partial=result)))
    elif status == "finished":
        out.append(make(ev.RunFinished(result=result)))
    return out


def import_results_json(store: Store, text: str, *, robot: str | None = None,
                        title: str | None = None) -> ThreadInfo:
    """RobotLab results JSON (as exported here or by RobotLab) into a new thread, one turn per result."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        first: Any = None
        with contextlib.suppress(ValueError):
            first = json.loads(text.lstrip().split("\n", 1)[0])
        if _is_event(first):  # JSON Lines: the event export
            raise ImportFormatError(_EVENTS_NOT_RESULTS) from exc
        raise ImportFormatError(f"Not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}") from exc
    items = _items(data)
    results: list[tuple[RobotResult, str]] = []
    for i, item in enumerate(items):
        try:
            results.append((RobotResult.from_dict(item), _user_text(item)))
        except (ValueError, TypeError) as exc:
            raise ImportFormatError(f"Item {i} is not a valid RobotLab result: {exc}") from exc
    if not results:
        raise ImportFormatError("The file holds no results to import.")
    from workspace.session import title_from

    robot_name = robot or results[0][0].robot_name or "imported"
    first_text = next((t for _, t in results if t), "")
    name = title or title_from(first_text) or f"Imported from RobotLab ({len(results)} results)"
    thread = store.create_thread(robot=robot_name, title=name)
    parent: str | None = None
    for result, user_text in results:
        turn = store.add_turn(thread.id, user_text=user_text, parent_turn_id=parent)
        events = _result_events(result, run_id=result.id, message=user_text)
        store.append_events(thread.id, turn.id, events)
        store.finish_turn(turn.id, _status(result.stop_reason))
        parent = turn.id
    return store.get_thread(thread.id)
