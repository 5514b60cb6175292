"""Tool results too big for the model: cut for the model, whole in the thread and the inspector.

The limit is ``llm.max_tool_result_chars`` and, when the window is known, a share of it
(:data:`RESULT_SHARE`): a 5 MB file read never fills a window by itself. What is cut is said in the
result, with how to read further: for a file's content, the line to go on from with the tool's own
parameters (``start_line`` of ``read_file``, ``offset``/``limit``, ``head``/``tail``); otherwise the
start and the end are kept and the model is told to ask for a smaller part.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

from workspace.messages import ToolResultMessage

__all__ = ["MIN_RESULT_CHARS", "RESULT_SHARE", "result_limit", "shorten_result_message"]

#: The most of the window one tool result may take.
RESULT_SHARE = 0.25
#: Never cut a result shorter than this many characters.
MIN_RESULT_CHARS = 1_000
#: Characters per token when a share of the window is turned into characters (code and JSON have fewer
#: characters a token than prose: this keeps a result within its share whatever it holds).
CHARS_PER_TOKEN = 3.0


def result_limit(window: int | None, configured: int | None) -> int | None:
    """The most characters of one tool result the model is sent (None: no limit)."""
    limits = [c for c in (configured,) if c and c > 0]
    if window:
        limits.append(max(MIN_RESULT_CHARS, int(window * RESULT_SHARE * CHARS_PER_TOKEN)))
    return min(limits) if limits else None


def _how_to_read_on(tool: str, params: Collection[str], next_line: int | None, shown_chars: int) -> str:
    names = set(params)
    if next_line is not None and "start_line" in names:
        return f"To read on, call {tool} again with start_line={next_line}."
    if "offset" in names:
        where = f"line {next_line}" if next_line is not None else f"character {shown_chars:,}"
        limit = " and limit" if "limit" in names else ""
        return f"To read on, call {tool} again with offset{limit} set to go on from {where}."
    if "head" in names or "tail" in names:
        return f"To see other parts, call {tool} again with head or tail set to fewer lines."
    return "To see the rest, ask for a smaller part (a range of lines, a narrower search or filter)."


def _note(total: int, shown: int, how: str) -> str:
    return (f"[Cut to fit the context window: {shown:,} of {total:,} characters are shown here. The whole "
            f"result is kept in the thread (the inspector shows it). {how}]")


def shorten_result_message(message: ToolResultMessage, limit: int, *,
                           params: Collection[str] = ()) -> ToolResultMessage | None:
    """A copy of ``message`` cut to about ``limit`` characters with a note, or None when it fits."""
    text = message.text
    if len(text) <= limit:
        return None
    tool = message.tool.name
    content = message.content
    data = content.get("data") if isinstance(content, Mapping) and "data" in content else None
    if isinstance(data, Mapping) and isinstance(data.get("content"), str):
        shortened = _shorten_file(dict(data), limit, tool, params)
        if shortened is not None:
            return ToolResultMessage(tool=message.tool, content={"data": shortened}, stop_reason=message.stop_reason)
    head_size = max(200, limit * 3 // 4 - 300)
    tail_size = max(100, limit // 4 - 100)
    head, tail = text[:head_size], text[len(text) - tail_size:]
    how = _how_to_read_on(tool, params, None, len(head))
    cut = f"{head}\n\n{_note(len(text), len(head) + len(tail), how)}\n\n{tail}"
    if isinstance(content, Mapping) and "error" in content:
        return ToolResultMessage(tool=message.tool, content={"error": cut}, stop_reason=message.stop_reason)
    return ToolResultMessage(tool=message.tool, content=cut, stop_reason=message.stop_reason)


def _shorten_file(data: dict[str, Any], limit: int, tool: str, params: Collection[str]) -> dict[str, Any] | None:
    """A file read's result with its ``content`` cut at a line end and a note of where to go on."""
    full: str = data["content"]
    rest = {k: v for k, v in data.items() if k != "content"}
    room = limit - len(json.dumps(rest, ensure_ascii=False, default=str)) - 450
    if room < 200:
        return None
    shown = full[:room]
    newline = shown.rfind("\n")
    if newline > room * 0.6:
        shown = shown[: newline + 1]
    first = data.get("start_line")
    next_line = (int(first) if isinstance(first, int) and first > 0 else 1) + shown.count("\n")
    how = _how_to_read_on(tool, params, next_line, len(shown))
    out = {**rest, "content": shown, "truncated": True}
    if isinstance(out.get("end_line"), int):
        out["end_line"] = next_line - 1
    note = _note(len(full), len(shown), how)
    earlier = data.get("note")
    # The tool's own note about where to read on is superseded by this cut; other notes are kept.
    keep = isinstance(earlier, str) and not any(k in earlier for k in ("start_line", "offset", "read more"))
    out["note"] = f"{note} {earlier}" if keep else note
    return out
