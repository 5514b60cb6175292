"""Printing run events in a terminal: readable text, or one JSON object per line."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO, assert_never

from workspace import events as ev
from workspace.result import STOP_NOTES, Usage


def _preview(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", " ⏎ ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def usage_text(usage: Usage, *, language_model: bool = True) -> str:
    """``12 in / 5 out tokens, $0.0012`` — "~" before estimated counts, "cost unknown" when no price is known."""
    mark = "~" if usage.estimated else ""
    text = f"{mark}{usage.input_tokens} in / {mark}{usage.output_tokens} out tokens"
    if usage.reasoning_tokens:
        text += f" ({usage.reasoning_tokens} thinking)"
    if usage.estimated:
        text += " (estimated: the server reported none)"
    if usage.cost is not None:
        text += f", ${usage.cost:.4f}"
    elif language_model and usage.total_tokens:
        text += ", cost unknown"
    return text


def status_line(event: ev.RunStatus) -> str | None:
    """A terminal line for a status worth a line (retries, fallbacks, notices, long waits); None for the rest."""
    match event.state:
        case "retrying":
            return f"⟳ retrying: {event.detail}"
        case "fallback":
            return f"⇄ fallback: {event.detail}"
        case "notice":
            return f"! {event.detail}"
        case "queued":
            return f"… {event.detail}"
        case "loading":
            return f"… {event.detail}"
        case "waiting":
            return f"… {event.detail}" if event.detail.startswith("no token yet") else None
        case "connecting" | "streaming":
            return None
        case _:
            assert_never(event.state)


class EventPrinter:
    """Streams events as people read them; ``json_lines=True`` prints ``to_dict()`` per line."""

    def __init__(self, out: TextIO | None = None, *, json_lines: bool = False, show_task: bool = False) -> None:
        self.out = out or sys.stdout
        self.json_lines = json_lines
        self.show_task = show_task
        self._in_text = False
        self._thinking = False
        self._language_model = True
        self._color = self.out.isatty() if hasattr(self.out, "isatty") else False

    def _c(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self._color else text

    def _line(self, text: str) -> None:
        if self._in_text:
            self.out.write("\n")
            self._in_text = False
        self.out.write(text + "\n")
        self.out.flush()

    def _who(self, event: ev.Event) -> str:
        if self.show_task and event.task:
            return self._c("35", f"[{event.task}] ")
        return ""

    def __call__(self, event: ev.Event) -> None:
        if self.json_lines:
            self.out.write(ev.to_json(event) + "\n")
            self.out.flush()
            return
        who = self._who(event)
        match event:
            case ev.RunStarted():
                self._language_model = event.is_language_model
                self._line(self._c("2", f"{who}● {event.robot} · {event.model}"))
            case ev.TextDelta():
                self._thinking = False
                if not self._in_text and who:
                    self.out.write(who)
                self.out.write(event.text)
                self.out.flush()
                self._in_text = True
            case ev.ReasoningDelta():
                if not self._thinking:
                    self._thinking = True
                    self._line(self._c("2", f"{who}… thinking (--json shows the thoughts)"))
            case ev.RunStatus():
                line = status_line(event)
                if line:
                    self._line(self._c("33" if event.state in ("retrying", "fallback", "notice") else "2",
                                       f"{who}{line}"))
            case ev.ToolUse():
                server = f"{event.server}/" if event.server else ""
                self._line(self._c("36", f"{who}→ {server}{event.name} {_preview(event.input)}"))
            case ev.ApprovalDecided():
                verdict = "approved" if event.decision == "approve" else "denied"
                reason = f": {event.reason}" if event.reason else ""
                self._line(self._c("33", f"{who}  {event.name} {verdict} ({event.scope}){reason}"))
            case ev.ToolResult():
                payload = event.payload.get("data") if isinstance(event.payload, dict) else event.payload
                self._line(self._c("32", f"{who}← {event.name} ({event.duration * 1000:.0f} ms) {_preview(payload)}"))
            case ev.ToolError():
                self._line(self._c("31", f"{who}✗ {event.name}: {_preview(event.error)}"))
            case ev.ChangeProposed():
                files = ", ".join(f"{f.get('path')} (+{f.get('added', 0)} -{f.get('removed', 0)})" for f in event.files)
                self._line(self._c("33", f"{who}✎ proposed change: {files}"))
            case ev.ChangeDecided():
                parts = []
                for f in event.outcome:
                    parts.append(f"{f.get('path')}: {len(f.get('accepted', []))} accepted, "
                                 f"{len(f.get('rejected', []))} rejected")
                self._line(self._c("33", f"{who}✎ review: " + "; ".join(parts)))
            case ev.TaskStarted():
                self._line(self._c("35", f"▶ task {event.task} ({event.robot})"))
            case ev.TaskFinished():
                extra = f": {event.error}" if event.error else ""
                self._line(self._c("35", f"■ task {event.task} {event.status}{extra}"))
            case ev.RunFinished():
                usage = getattr(event.result, "usage", None)
                tokens = usage_text(usage, language_model=self._language_model) if usage is not None else ""
                tokens = f" · {tokens}" if tokens else ""
                stop = getattr(event.result, "stop_reason", None)
                if not event.task and stop == "max_turns":
                    self._line(self._c("33", f"{who}■ stopped at the turn limit: the robot wanted to go on. Raise "
                                             f"it with --max-turns N (or agent.max_turns in the configuration)"
                                             f"{tokens}"))
                elif not event.task and stop == "length":
                    self._line(self._c("33", f"{who}■ the answer was cut off at the token limit (max_tokens). Ask "
                                             "for the rest (\"continue\"), or raise max_tokens in the robot file or "
                                             f"llm.max_tokens{tokens}"))
                elif not event.task and stop in STOP_NOTES:
                    self._line(self._c("33", f"{who}■ {STOP_NOTES[stop]}{tokens}"))
                elif not event.task:
                    self._line(self._c("2", f"{who}✓ done{tokens}"))
            case ev.RunFailed():
                self._line(self._c("31", f"{who}✗ failed: {event.error}"))
            case ev.RunCancelled():
                self._line(self._c("33", f"{who}■ stopped: {event.reason}"))
            case ev.Text() | ev.Reasoning() | ev.ApprovalRequested() | ev.MemoryChanged() | ev.Usage():
                pass  # the text was streamed as deltas; the approval is asked for; usage is in "done"
            case _:
                assert_never(event)

    def finish(self) -> None:
        if self._in_text:
            self.out.write("\n")
            self._in_text = False
        self.out.flush()
