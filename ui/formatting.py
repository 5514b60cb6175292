"""What the window's features show the same way: durations, a tool call's failure, a network task's
status words, search-hit marks.

Plain functions and constants, no widgets (the chat's Qt-free model uses them too): the features
share them through here, never by importing each other.
"""

from __future__ import annotations

import re
from typing import Any

#: The states of a call that failed (an error, a denial, a stop): counted as failed everywhere.
FAILED_CALL = frozenset({"error", "denied", "stopped"})


def result_error(payload: Any, raw: Any = None) -> Any:
    """The error inside a ``tool_result``, or None when it succeeded.

    Results normally carry ``{"data": ...}`` and errors come as ``tool_error``; but a payload of
    ``{"error": ...}`` (an ``is_error`` tool result as the model sees it) or an MCP result marked
    ``isError`` is a failure too, and is counted and shown as one.
    """
    if isinstance(payload, dict) and "error" in payload and "data" not in payload:
        return payload["error"]
    if isinstance(raw, dict) and raw.get("isError") is True:
        data = payload.get("data") if isinstance(payload, dict) else payload
        return data if data is not None else raw
    return None


#: What a lane's status pill and the network row's summary call each task state.
LANE_STATUS_TEXT = {
    "waiting": "waiting",
    "running": "running",
    "done": "done",
    "failed": "failed",
    "skipped": "skipped",
    "cancelled": "stopped",
}


def unbroken(figure: str) -> str:
    """``figure`` ("52 tok/s", "0.40 s to first token") as a wrapping label never breaks it: no-break spaces, and a
    word joiner after each "/" (a line may otherwise break after one: "tok/" then "s")."""
    return figure.replace(" ", "\u00a0").replace("/", "/\u2060")


def figures_text(parts: list[str], separator: str = " · ") -> str:
    """Figures joined by ``separator``: a narrow label wraps between them, never inside one (:func:`unbroken`),
    and after the separator's dot, never before it (a line never begins with "·")."""
    head, dot, tail = separator.partition("·")
    return (head.replace(" ", "\u00a0") + dot + tail).join(unbroken(part) for part in parts)


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {int(seconds % 60)} s"


def elapsed_text(seconds: float) -> str:
    """Time that is still going, in whole seconds ("4 s", "1 min 5 s"): a ticking count that does not jitter."""
    whole = int(max(0.0, seconds))
    return f"{whole} s" if whole < 60 else f"{whole // 60} min {whole % 60} s"


#: The marks the window asks the search to put around each match in a snippet (never in text).
HIGHLIGHT = ("\x02", "\x03")


#: An ANSI escape sequence (colours, cursor moves, OSC titles): output is shown without them.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
#: An escape sequence cut at a chunk's end (the next chunk completes it).
_ANSI_PARTIAL = re.compile(r"\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*)?$")


def strip_ansi(text: str) -> str:
    """``text`` without ANSI escape sequences, CR LF line ends as LF (a command's output as shown)."""
    return _ANSI.sub("", text).replace("\r\n", "\n")


def split_partial_escape(text: str) -> tuple[str, str]:
    """``text`` and the start of an escape sequence it ends in (kept for the next chunk), apart."""
    # Such a start holds no other ESC, so it can only be at the last one: matched there, not searched for.
    last = text.rfind("\x1b")
    partial = _ANSI_PARTIAL.match(text, last) if last >= 0 else None
    return (text[:last], partial.group(0)) if partial else (text, "")
