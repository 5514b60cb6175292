"""Printing run events in a terminal: readable text, or one JSON object per line."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO, assert_never

from workspace import events as ev
from workspace.sandbox import display_json, display_path


def _preview(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = display_path(text.replace("\n", " ⏎ "))  # no control or bidi character reaches the terminal
    return text if len(text) <= limit else text[: limit - 1] + "…"



def _path(entry: dict[str, Any]) -> str:
    """A change's path (``old → new`` for a rename) as the terminal may show it."""
    path, new = str(entry.get("path", "?")), entry.get("new_path")
    return display_path(f"{path} → {new}" if new else path)

class EventPrinter:
    """Streams events as people read them; ``json_lines=True`` prints ``to_dict()`` per line."""

    def __init__(self, out: TextIO | None = None, *, json_lines: bool = False, show_task: bool = False) -> None:
        self.out = out or sys.stdout
        self.json_lines = json_lines
        self.show_task = show_task
        self._in_text = False
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
            self.out.write(display_json(ev.to_json(event)) + "\n")
            self.out.flush()
            return
        who = self._who(event)
        match event:
            case ev.RunStarted():
                self._line(self._c("2", f"{who}● {event.robot} · {event.model}"))
            case ev.TextDelta():
                if not self._in_text and who:
                    self.out.write(who)
                self.out.write(event.text)
                self.out.flush()
                self._in_text = True
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
                files = ", ".join(f"{_path(f)} (+{f.get('added', 0)} -{f.get('removed', 0)})" for f in event.files)
                self._line(self._c("33", f"{who}✎ proposed change: {files}"))
            case ev.ChangeDecided():
                parts = []
                for f in event.outcome:
                    parts.append(f"{_path(f)}: {len(f.get('accepted', []))} accepted, "
                                 f"{len(f.get('rejected', []))} rejected")
                self._line(self._c("33", f"{who}✎ review: " + "; ".join(parts)))
            case ev.TaskStarted():
                self._line(self._c("35", f"▶ task {event.task} ({event.robot})"))
            case ev.TaskFinished():
                extra = f": {event.error}" if event.error else ""
                self._line(self._c("35", f"■ task {event.task} {event.status}{extra}"))
            case ev.RunFinished():
                usage = getattr(event.result, "usage", None)
                tokens = ""
                if usage is not None:
                    cost = f", ${usage.cost:.4f}" if usage.cost else ""
                    tokens = f" · {usage.input_tokens} in / {usage.output_tokens} out tokens{cost}"
                if not event.task and getattr(event.result, "stop_reason", None) == "max_turns":
                    self._line(self._c("33", f"{who}■ stopped at the turn limit: the robot wanted to go on. Raise "
                                             f"it with --max-turns N (or agent.max_turns in the configuration)"
                                             f"{tokens}"))
                elif not event.task:
                    self._line(self._c("2", f"{who}✓ done{tokens}"))
            case ev.RunFailed():
                self._line(self._c("31", f"{who}✗ failed: {event.error}"))
            case ev.RunCancelled():
                self._line(self._c("33", f"{who}■ stopped: {event.reason}"))
            case ev.ContextCompacted():
                count = event.newly_replaced or event.replaced_count
                self._line(self._c("2", f"{who}⟲ conversation compacted: {count} earlier message"
                                        f"{'s' if count != 1 else ''} summarised ({event.tokens_before:,} → "
                                        f"{event.tokens_after:,} tokens of {event.window:,})"))
            case ev.Text() | ev.ApprovalRequested() | ev.MemoryChanged() | ev.Usage() | ev.ContextUsage():
                pass  # the text was streamed as deltas; the approval is asked for; usage is in "done"
            case _:
                assert_never(event)

    def finish(self) -> None:
        if self._in_text:
            self.out.write("\n")
            self._in_text = False
        self.out.flush()
