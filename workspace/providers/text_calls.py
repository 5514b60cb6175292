"""Tool calls a model wrote as text, and thinking written as ``<think>`` text.

Local models often know how to call tools while their server does not turn the call into a
structured one (llama-cpp-python without ``tool_choice``, llama.cpp without ``--jinja``, a chat
template without tool support): the call arrives as text. :func:`find_text_calls` recognises the
forms models' chat templates produce, and only those:

- Hermes / Qwen 2.5 / Qwen 3: ``<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>``
  (the closing tag may be missing when the server stopped on it);
- Mistral: ``[TOOL_CALLS] [{"name": ..., "arguments": {...}}]`` (also ``[TOOL_CALLS]name[ARGS]{...}``);
- Llama 3.1 / 3.2: ``<|python_tag|>{"name": ..., "parameters": {...}}``, a whole answer that is such a JSON
  object (or a list of them) and nothing else, and ``<function=get_weather>{"city": "Oslo"}</function>``;
- Gemma: a ````tool_code`` block (``get_weather(city="Oslo")``, ``print(get_weather(...))``), the one
  fence whose language is a call and not a programming language.

A call written in prose or in a code example (a ````python`` / ````json`` / bare fenced block, an inline
`` `code` `` span) is text: a model defining its own ``list_files()`` in an example runs nothing. The
markers are looked for outside fenced blocks and inline code only.

Only calls of tools the run offered are recognised; a marker without a call that can be read is
reported (``attempted``), so the chat can say the model tried. :class:`ThinkSplitter` moves a
``<think>…</think>`` (or ``<thinking>…</thinking>``) block at the start of an answer, streamed in any
pieces, out of the text into reasoning. Standard library only.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TextCall", "TextCalls", "ThinkSplitter", "find_text_calls", "may_hold_calls"]


@dataclass(frozen=True, slots=True)
class TextCall:
    """A tool call found in text: the tool, its arguments, and where it was written."""

    name: str
    arguments: dict[str, Any]
    start: int
    end: int


@dataclass(slots=True)
class TextCalls:
    """What :func:`find_text_calls` found: the calls, the text without them, the format's name, and
    whether something looked like a call that could not be read (a bad JSON, an unknown tool)."""

    calls: list[TextCall] = field(default_factory=list)
    text: str = ""
    style: str | None = None
    attempted: str | None = None


_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_FUNCTION_TAG = re.compile(r"<function=([A-Za-z0-9_.\-]+)>\s*(.*?)\s*(?:</function>|$)", re.S)
_MISTRAL = re.compile(r"\[TOOL_CALLS\]\s*(.*)$", re.S)
_MISTRAL_ARGS = re.compile(r"([A-Za-z0-9_.\-]+)\[ARGS\]\s*(\{.*?\})(?=\s*(?:\[TOOL_CALLS\]|$))", re.S)
_PYTHON_TAG = re.compile(r"<\|python_tag\|>\s*(.*)$", re.S)
_FENCE = re.compile(r"```[ \t]*([A-Za-z_]*)[ \t]*\n(.*?)\n?```", re.S)
_ANY_FENCE = re.compile(r"(```|~~~)[^\n]*\n.*?(?:\n[ \t]*\1|$)", re.S)
_INLINE_CODE = re.compile(r"`[^`\n]+`")
#: The fences whose language says "a call" (Gemma's), not a programming language.
_CALL_FENCES = ("tool_code", "tool_call", "tool_calls")
_MARKERS = (("<tool_call>", "Hermes <tool_call>"), ("[TOOL_CALLS]", "Mistral [TOOL_CALLS]"),
            ("<|python_tag|>", "Llama <|python_tag|>"), ("<function=", "Llama <function=…>"))
#: A character every form above holds (a tag or marker, a JSON object or list, a fence): text with none of them
#: holds no call and no attempt at one.
_CALL_CHARS = ("<", "[", "{", "`")


def may_hold_calls(text: str) -> bool:
    """Whether ``text`` may hold a tool call written as text (or an attempt at one): False for plain prose, which
    then needs no search (most answers: :func:`find_text_calls` would find nothing)."""
    return any(c in text for c in _CALL_CHARS)


def _json_values(text: str) -> list[Any]:
    """The JSON values in ``text``: one, a list, or several separated by spaces, newlines or ';'."""
    text = text.strip().rstrip(";").strip()
    if not text:
        return []
    try:
        value = json.loads(text)
        return list(value) if isinstance(value, list) else [value]
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    out: list[Any] = []
    index = 0
    while index < len(text):
        while index < len(text) and text[index] in " \t\r\n;,":
            index += 1
        if index >= len(text):
            break
        try:
            value, index = decoder.raw_decode(text, index)
        except ValueError:
            return []
        out.append(value)
    return out


def _as_call(value: Any, tools: set[str]) -> tuple[str, dict[str, Any]] | None:
    """``{"name", "arguments"|"parameters"}`` (or OpenAI's ``{"function": {...}}``) of a known tool."""
    if not isinstance(value, Mapping):
        return None
    if isinstance(value.get("function"), Mapping):
        value = value["function"]
    name = value.get("name")
    if not isinstance(name, str) or name not in tools:
        return None
    args = value.get("arguments", value.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            return None
    return (name, dict(args)) if isinstance(args, Mapping) else None


def _python_call(code: str, tools: set[str], order: Mapping[str, Sequence[str]]) -> tuple[str, dict[str, Any]] | None:
    """``name(a=1, b="x")`` (or ``print(name(...))``) of a known tool, its arguments literals."""
    try:
        node = ast.parse(code.strip(), mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print" and node.args:
        node = node.args[0]
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    if name not in tools:
        return None
    try:
        args: dict[str, Any] = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}
        names = list(order.get(name) or ())
        if len(node.args) > len(names):
            return None
        for param, value in zip(names, node.args, strict=False):
            args[param] = ast.literal_eval(value)
    except ValueError:
        return None
    return name, args


def find_text_calls(text: str, tools: Iterable[str], *,
                    parameters: Mapping[str, Sequence[str]] | None = None) -> TextCalls:
    """The tool calls written in ``text`` (see the module docstring); ``tools`` the names offered,
    ``parameters`` each tool's parameter names in order (for positional arguments of a Python call)."""
    names = set(tools)
    found = TextCalls(text=text)
    if not names or not text.strip() or not may_hold_calls(text):
        return found
    order = parameters or {}
    spans: list[TextCall] = []
    masked = _without_code(text)  # the same length: offsets stay those of the original

    def take(style: str, matches: Iterable[tuple[int, int, list[tuple[str, dict[str, Any]]]]]) -> bool:
        for start, end, calls in matches:
            for name, args in calls:
                spans.append(TextCall(name, args, start, end))
        if spans:
            found.style = style
        return bool(spans)

    def tagged() -> Iterable[tuple[int, int, list[tuple[str, dict[str, Any]]]]]:
        for m in _TAGGED.finditer(masked):
            calls = [c for v in _json_values(m.group(1)) if (c := _as_call(v, names))]
            if calls:
                yield m.start(), m.end(), calls

    def function_tags() -> Iterable[tuple[int, int, list[tuple[str, dict[str, Any]]]]]:
        for m in _FUNCTION_TAG.finditer(masked):
            values = _json_values(m.group(2)) or ([{}] if not m.group(2).strip() else [])
            if m.group(1) in names and len(values) == 1 and isinstance(values[0], Mapping):
                yield m.start(), m.end(), [(m.group(1), dict(values[0]))]

    def mistral() -> Iterable[tuple[int, int, list[tuple[str, dict[str, Any]]]]]:
        m = _MISTRAL.search(masked)
        if m is None:
            return
        calls = [c for v in _json_values(m.group(1)) if (c := _as_call(v, names))]
        if not calls:
            calls = [(n, json.loads(a)) for n, a in _MISTRAL_ARGS.findall(m.group(0).replace("[TOOL_CALLS]", " "))
                     if n in names and _loads_object(a)]
        if calls:
            yield m.start(), len(masked), calls

    def python_tag() -> Iterable[tuple[int, int, list[tuple[str, dict[str, Any]]]]]:
        m = _PYTHON_TAG.search(masked)
        if m is not None:
            calls = [c for v in _json_values(m.group(1)) if (c := _as_call(v, names))]
            if calls:
                yield m.start(), len(masked), calls

    def bare_json() -> Iterable[tuple[int, int, list[tuple[str, dict[str, Any]]]]]:
        # The whole answer is a JSON call (or a list of them), as Llama 3.x's template has it: nothing else.
        if text.lstrip()[:1] not in ("{", "["):
            return
        values = _json_values(text)
        calls = [c for v in values if (c := _as_call(v, names))]
        if calls and len(calls) == len(values):
            yield 0, len(text), calls

    def fenced() -> Iterable[tuple[int, int, list[tuple[str, dict[str, Any]]]]]:
        for m in _FENCE.finditer(text):
            lang, body = m.group(1).lower(), m.group(2)
            if lang not in _CALL_FENCES:
                continue  # a code example, whatever it holds
            values = _json_values(body)
            calls = [c for v in values if (c := _as_call(v, names))]
            if not calls:
                lines = [ln for ln in body.strip().splitlines() if ln.strip()]
                parsed = [_python_call(ln, names, order) for ln in lines]
                if parsed and all(parsed):
                    calls = [p for p in parsed if p]
            if calls:
                yield m.start(), m.end(), calls

    for style, finder in (("Hermes <tool_call>", tagged), ("Llama <function=…>", function_tags),
                          ("Mistral [TOOL_CALLS]", mistral), ("Llama <|python_tag|>", python_tag),
                          ("JSON", bare_json), ("Gemma ```tool_code```", fenced)):
        if take(style, finder()):
            break
    if spans:
        found.calls = spans
        kept: list[str] = []
        position = 0
        for span in sorted({(c.start, c.end) for c in spans}):
            kept.append(text[position:span[0]])
            position = max(position, span[1])
        kept.append(text[position:])
        found.text = re.sub(r"\n{3,}", "\n\n", "".join(kept)).strip()
        return found
    for marker, style in _MARKERS:
        if marker in masked:
            found.attempted = style
            break
    return found


def _without_code(text: str) -> str:
    """``text`` with its fenced blocks and inline code spans blanked (spaces, newlines kept: the same
    offsets), so a call marker shown in a code example is not taken for a call."""
    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    return _INLINE_CODE.sub(blank, _ANY_FENCE.sub(blank, text))


def _loads_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


class ThinkSplitter:
    """Splits streamed text into (answer, thinking): a ``<think>…</think>`` block at the start of an
    answer — as reasoning models on servers without a reasoning parser write it — is thinking.

    Feed pieces in order with :meth:`feed` (returns ``(text, reasoning)`` to emit now) and call
    :meth:`flush` at the end. Text that does not start with the tag passes through at once."""

    __slots__ = ("_buffer", "_close", "_state", "passing")

    _OPEN = ("<think>", "<thinking>")

    def __init__(self) -> None:
        self._state = "start"  # start -> thinking -> after -> text, or start -> text
        self._buffer = ""
        self._close = "</think>"
        #: Past any thinking: every piece fed from now on is answer text as it is (a reader may take it without
        #: feeding it, as the agent loop's model turn does for each streamed piece).
        self.passing = False

    def feed(self, piece: str) -> tuple[str, str]:
        if self._state == "text":
            return piece, ""
        if self._state == "after":  # the blank lines between the thinking and the answer
            piece = piece.lstrip()
            if piece:
                self._to_text()
            return piece, ""
        self._buffer += piece
        if self._state == "start":
            head = self._buffer.lstrip()
            if not head:
                return "", ""
            for tag in self._OPEN:
                if head.startswith(tag):
                    self._state = "thinking"
                    self._close = "</" + tag[1:]
                    self._buffer = head[len(tag):]
                    break
                if tag.startswith(head):
                    return "", ""  # maybe the start of the tag: wait for more
            else:
                self._to_text()
                out, self._buffer = self._buffer, ""
                return out, ""
        # thinking: pass the thinking on, keeping a tail that could be the start of the closing tag
        end = self._buffer.find(self._close)
        if end >= 0:
            thought, rest = self._buffer[:end], self._buffer[end + len(self._close):].lstrip()
            self._buffer = ""
            if rest:
                self._to_text()
            else:
                self._state = "after"
            return rest, thought.rstrip()
        keep = 0
        for n in range(min(len(self._close) - 1, len(self._buffer)), 0, -1):
            if self._close.startswith(self._buffer[-n:]):
                keep = n
                break
        thought = self._buffer[: len(self._buffer) - keep]
        self._buffer = self._buffer[len(self._buffer) - keep:]
        return "", thought

    def _to_text(self) -> None:
        self._state = "text"
        self.passing = True

    def flush(self) -> tuple[str, str]:
        """What is still held (the stream ended)."""
        buffered, self._buffer = self._buffer, ""
        if self._state == "thinking":
            return "", buffered
        return buffered, ""

    @property
    def thinking(self) -> bool:
        return self._state == "thinking"
