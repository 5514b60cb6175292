"""Printing run events in a terminal: readable text, or one JSON object per line."""

from __future__ import annotations

import json
import re
import sys
from typing import Any, TextIO, assert_never

from workspace import events as ev
from workspace.result import STOP_NOTES, Usage
from workspace.sandbox import display_json, display_path

#: Words after which the next word may be a key (held back together with it while streaming).
_KEY_WORDS = re.compile(r"(?:bearer|basic|token|authorization:?|(?:x-)?api[-_]?key[:=]?|password[:=]?)\s*$", re.I)
#: Streamed text held back is written anyway once this long (a key is shorter).
_MAX_HELD = 512


def _safe_cut(text: str) -> int:
    """Where streamed ``text`` may be cut: after its last whitespace, before a key word there."""
    if not text or text[-1].isspace():
        cut = len(text)
    else:
        cut = max(text.rfind(" "), text.rfind("\n"), text.rfind("\t")) + 1
    head = text[:cut]
    match = _KEY_WORDS.search(head[-40:])
    if match is not None:
        cut -= len(head[-40:]) - match.start()
    return cut if len(text) - cut < _MAX_HELD else len(text)


def _preview(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = printable(text.replace("\n", " ⏎ "), one_line=True)
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


def printable(text: str, *, one_line: bool = False) -> str:
    """``text`` safe to print on a terminal: control characters (escape sequences that would move the
    cursor, recolour or retitle the terminal), format characters (bidi overrides), separators and
    surrogates are shown escaped (``\\x1b``, ``\\u202e``), as :func:`workspace.sandbox.display_path`
    does. Multi-line text keeps its newlines and tabs; ``one_line`` (names, paths, arguments) escapes
    those too."""
    if one_line or text.isprintable():
        return display_path(text)
    return "\n".join("\t".join(display_path(part) for part in line.split("\t")) for line in text.split("\n"))


#: An ANSI escape sequence (colours, cursor moves): a command's output is printed without them.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


def output_line(line: str) -> str:
    """One line of a command's output as the terminal shows it: escape sequences dropped, and of a line
    redrawn with carriage returns (a progress bar) only its last state."""
    line = _ANSI.sub("", line).rstrip("\r")
    return printable(line.rsplit("\r", 1)[-1], one_line=True)


def _json_of(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _tokens(result: Any) -> str:
    usage = getattr(result, "usage", None)
    if usage is None or not (usage.input_tokens or usage.output_tokens):
        return ""
    return f" · {usage_text(usage)}"


def _path(entry: dict[str, Any]) -> str:
    """A change's path (``old → new`` for a rename) as the terminal may show it."""
    path, new = str(entry.get("path", "?")), entry.get("new_path")
    return display_path(f"{path} → {new}" if new else path)


class EventPrinter:
    """Streams events as people read them; ``json_lines=True`` prints ``to_dict()`` per line.

    A robot used as a tool shows as indented lines under the tool call that started it (its start,
    its text and tool calls, how it ended). A network task's own run ends silently: its
    ``task_finished`` line says how it went.
    """

    #: Not the ``--plain`` printer (:class:`PlainPrinter` is).
    plain = False

    def __init__(self, out: TextIO | None = None, *, json_lines: bool = False, show_task: bool = False,
                 preview: int = 160) -> None:
        self.out = out or sys.stdout
        self.json_lines = json_lines
        self.show_task = show_task
        self.preview = preview
        self._in_text = False
        self._thinking = False
        self._language_model = True
        self._held = ""  # streamed text not written yet (see _stream)
        self._color = self.out.isatty() if hasattr(self.out, "isatty") else False
        #: How deep each run inside a run is (a robot used as a tool: one more than its caller).
        self._depth: dict[str, int] = {}
        #: A running command's last, unfinished line of output, per tool call.
        self._partial: dict[str, str] = {}

    def _c(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self._color else text

    def _line(self, text: str) -> None:
        self._release()
        if self._in_text:
            self.out.write("\n")
            self._in_text = False
        self.out.write(text + "\n")
        self.out.flush()

    def _stream(self, text: str) -> None:
        """Write streamed text, holding back its last, unfinished word (and a ``Bearer``/``api-key:``
        before it), so a key streamed in pieces reaches the redacting output whole."""
        text = self._held + text
        cut = _safe_cut(text)
        self._held = text[cut:]
        if cut:
            self.out.write(printable(text[:cut]))
            self.out.flush()

    def _release(self) -> None:
        if self._held:
            self.out.write(printable(self._held))
            self._held = ""

    def _who(self, event: ev.Event) -> str:
        if self.show_task and event.task:
            return self._c("35", f"[{event.task}] ")
        return ""

    def _pad(self, event: ev.Event) -> str:
        """The indent of a robot used as a tool (its run is deeper than the run that called it)."""
        if not event.nested:
            return ""
        depth = self._depth.get(event.run_id)
        if depth is None:
            parent = self._depth.get(event.parent_run_id or "", 0)
            depth = self._depth[event.run_id] = parent + (1 if event.parent_tool_id else 0)
        return "    " * depth

    def __call__(self, event: ev.Event) -> None:
        if self.json_lines:
            self.out.write(display_json(ev.to_json(event)) + "\n")
            self.out.flush()
            return
        pad = self._pad(event)
        who = self._who(event) + pad
        match event:
            case ev.RunStarted():
                if not event.nested:
                    self._language_model = event.is_language_model
                mark = "↳" if event.parent_tool_id else "●"
                self._line(self._c("2", f"{who}{mark} {event.robot} · {event.model}"))
                if event.attachments:
                    from workspace.attachments import describe_size

                    listed = ", ".join(f"{printable(str(a.get('name')))} ({describe_size(int(a.get('size') or 0))})"
                                       for a in event.attachments)
                    self._line(self._c("2", f"{who}  attached: {listed}"))
            case ev.TextDelta():
                self._thinking = False
                if not self._in_text and who:
                    self.out.write(who)
                self._stream(event.text.replace("\n", "\n" + pad) if pad else event.text)
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
                written = " (from the model's text)" if event.from_text else ""
                self._line(self._c("36", f"{who}→ {server}{event.name}{written} {_preview(event.input, self.preview)}"))
            case ev.ApprovalDecided():
                verdict = "approved" if event.decision == "approve" else "denied"
                reason = f": {event.reason}" if event.reason else ""
                self._line(self._c("33", f"{who}  {event.name} {verdict} ({event.scope}){reason}"))
            case ev.ToolOutput():
                lines = (self._partial.pop(event.id, "") + event.text).split("\n")
                if lines[-1]:
                    self._partial[event.id] = lines[-1]
                for line in lines[:-1]:
                    self._line(self._c("2", f"{who}  │ {output_line(line)}"))
            case ev.ToolResult() | ev.ToolError() if event.id in self._partial:
                self._line(self._c("2", f"{who}  │ {output_line(self._partial.pop(event.id))}"))
                self(event)
            case ev.ToolResult():
                payload = event.payload.get("data") if isinstance(event.payload, dict) else event.payload
                self._line(self._c("32", f"{who}← {event.name} ({event.duration * 1000:.0f} ms) {_preview(payload, self.preview)}"))
            case ev.ToolError():
                self._line(self._c("31", f"{who}✗ {event.name}: {_preview(event.error, self.preview)}"))
            case ev.ToolProgress():
                of = f"/{event.total:g}" if event.total is not None else ""
                message = f" {printable(event.message)}" if event.message else ""
                self._line(self._c("2", f"{who}  … {event.name} {event.progress:g}{of}{message}"))
            case ev.ChangeProposed():
                files = ", ".join(f"{_path(f)} (+{f.get('added', 0)} -{f.get('removed', 0)})" for f in event.files)
                self._line(self._c("33", f"{who}✎ proposed change: {files}"))
            case ev.ChangeDecided():
                parts = []
                for f in event.outcome:
                    parts.append(f"{_path(f)}: {len(f.get('accepted', []))} accepted, "
                                 f"{len(f.get('rejected', []))} rejected")
                self._line(self._c("33", f"{who}✎ review: " + "; ".join(parts)))
            case ev.McpServers():
                color = "31" if event.failed and not event.starting and not event.joined else "33"
                for line in event.message.splitlines():
                    self._line(self._c(color, f"{who}⋯ {line}"))
            case ev.TaskStarted():
                self._line(self._c("35", f"▶ task {event.task} ({event.robot})"))
            case ev.TaskFinished():
                extra = f": {event.error}" if event.error else ""
                self._line(self._c("35", f"■ task {event.task} {event.status}{extra}"))
            case ev.RunFinished() | ev.RunFailed() | ev.RunCancelled() if event.nested and not event.parent_tool_id:
                pass  # a network task's own run: its task_finished line says how it went
            case ev.RunFinished() if event.parent_tool_id:
                self._line(self._c("2", f"{who}✓ {event.robot} done{_tokens(event.result)}"))
            case ev.RunFinished():
                usage = getattr(event.result, "usage", None)
                tokens = usage_text(usage, language_model=self._language_model) if usage is not None else ""
                tokens = f" · {tokens}" if tokens else ""
                stop = getattr(event.result, "stop_reason", None)
                data = getattr(event.result, "output_data", None)
                if data is not None and not event.task:  # a structured answer: the object, unless it streamed
                    from workspace.result import to_jsonable

                    value = to_jsonable(data)
                    if _json_of(getattr(event.result, "last_text_content", None)) != value:
                        self._line(self._c("1", printable(json.dumps(value, ensure_ascii=False, indent=2,
                                                                     default=str))))
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
                name = f"{event.robot} " if event.nested else ""
                self._line(self._c("31", f"{who}✗ {name}failed: {event.error}"))
            case ev.RunCancelled():
                name = f"{event.robot} " if event.nested else ""
                self._line(self._c("33", f"{who}■ {name}stopped: {event.reason}"))
            case ev.ContextCompacted():
                count = event.newly_replaced or event.replaced_count
                self._line(self._c("2", f"{who}⟲ conversation compacted: {count} earlier message"
                                        f"{'s' if count != 1 else ''} summarised ({event.tokens_before:,} → "
                                        f"{event.tokens_after:,} tokens of {event.window:,})"))
            case ev.ModelChanged():
                self._line(self._c("2", f"{who}⇄ {event.describe()}"))
            case ev.BusMessage():
                self._line(self._c("34", f"✉ {_preview(event.describe(), max(self.preview, 240))}"))
            case ev.VerifyFinished():
                self._line(self._c("32" if event.passed else "31", f"{who}{event.describe()}"))
                if not event.passed:
                    self._line("\n".join("    " + line for line in event.output.splitlines()[-20:]))
            case (ev.Text() | ev.Reasoning() | ev.ApprovalRequested() | ev.MemoryChanged() | ev.Usage()
                  | ev.ContextUsage()):
                pass  # the text was streamed as deltas; the approval is asked for; usage is in "done"
            case ev.ModelRequest():
                pass  # the request as sent: in the trace and in --json, not in the terminal's story
            case _:
                assert_never(event)

    def finish(self) -> None:
        self.end_line()

    def end_line(self) -> None:
        """End the line the streamed text is on (a question or other output follows)."""
        self._release()
        if self._in_text:
            self.out.write("\n")
            self._in_text = False
        self.out.flush()


class PlainPrinter:
    """``--plain``: only the final answer, on stdout, when the run ends (what ``llm`` prints), so shell
    scripts can use it (``answer=$(robotlab run assistant "..." --plain)``). A failure, a stop and the
    turn limit are said on stderr; questions and the review go to stderr too (``out`` is where they go,
    see :mod:`workspace.cli.review`)."""

    json_lines = False
    plain = True

    def __init__(self, answer: TextIO | None = None, err: TextIO | None = None) -> None:
        self.answer = answer or sys.stdout
        self.out = err or sys.stderr
        self._color = False
        self._done = False

    def __call__(self, event: ev.Event) -> None:
        if event.task is not None or event.nested:
            return  # a network's task, a robot used as a tool: only the run's own end counts
        match event:
            case ev.RunFinished():
                text = getattr(event.result, "last_text_content", None)
                data = getattr(event.result, "output_data", None)
                if data is not None:  # a structured answer: the object, as one line of JSON
                    from workspace.result import to_jsonable

                    text = json.dumps(to_jsonable(data), ensure_ascii=False, default=str)
                if text is not None and str(text):
                    self.answer.write(str(text).rstrip("\n") + "\n")
                    self.answer.flush()
            case ev.RunFailed():
                self.out.write(f"robotlab: the run failed: {event.error}\n")
            case ev.RunCancelled():
                self.out.write(f"robotlab: stopped: {event.reason}\n")
            case _:
                pass

    def finish(self) -> None:
        self.answer.flush()
        self.out.flush()
