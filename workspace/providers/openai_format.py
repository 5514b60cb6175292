"""OpenAI's chat format, both ways: the neutral transcript as OpenAI chat messages, and OpenAI-shaped
stream chunks as :mod:`workspace.providers.base` chunks.

Both providers of real models speak it: litellm takes OpenAI chat messages for every provider it
serves (and hands back OpenAI-shaped chunks), and the lean provider
(:mod:`workspace.providers.openai_provider`) sends them to OpenAI-compatible servers as they are.
Standard library only: importing this module costs nothing.

Reading a stream (:class:`DeltaReader`): text (``delta.content``), thinking (``reasoning_content``
from llama.cpp, vLLM, DeepSeek and litellm; ``reasoning`` from OpenRouter, Ollama and newer vLLM),
tool-call fragments (id and name once, the JSON arguments in pieces; a missing ``index`` is
inferred), the finish reason, and usage with its reasoning tokens. Chunks may be dicts (the raw JSON)
or objects (the OpenAI SDK's models, litellm's): :func:`field` reads either.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workspace.messages import json_text, shared_prefix
from workspace.providers.base import Chunk, ReasoningChunk, TextChunk, ToolCallChunk, ToolSpec

if TYPE_CHECKING:
    from workspace.messages import Message

__all__ = [
    "MAX_ANSWER_CHARS",
    "MAX_TOOL_RESULT_CHARS",
    "BodyEncoder",
    "DeltaReader",
    "MessageConverter",
    "estimate_tokens",
    "field",
    "shorten_result",
    "to_openai_messages",
    "to_openai_tools",
    "tool_choice_value",
    "usage_numbers",
    "without_image_data",
]

#: The most characters of one tool result the model is sent (``llm.max_tool_result_chars``); the
#: whole result stays in the thread and the inspector. About 12k tokens: a huge result would
#: otherwise fill the context window and the request be refused.
MAX_TOOL_RESULT_CHARS = 50_000
#: The most characters one answer (its text, thinking and tool calls) may stream before it is stopped (``llm.max_answer_chars``):
#: a server that streams and never ends would fill the memory.
MAX_ANSWER_CHARS = 4_000_000
#: Characters an image part counts as when a request's tokens are estimated (its base64 data is not
#: text: :data:`workspace.attachments.IMAGE_TOKENS` tokens at 3 characters each).
IMAGE_CHARS = 1_600 * 3


# --------------------------------------------------------------------------------------------
# The transcript, out


def _text(value: Any) -> Any:
    """Message content for the wire: strings and content-part lists as is, others as JSON."""
    if value is None:
        return ""
    if isinstance(value, str | list):
        return value
    return json_text(value)


def call_id(tool: Any) -> str:
    """The tool call's id, or a stable one derived from its name and input when it has none."""
    if getattr(tool, "id", None):
        return str(tool.id)
    digest = hashlib.sha1(
        json.dumps([tool.name, tool.input], sort_keys=True, default=str).encode()
    ).hexdigest()[:16]
    return f"call_{digest}"


def shorten_result(text: str, limit: int | None) -> str:
    """``text``, or its start and end with a note of what was left out when longer than ``limit``."""
    if limit is None or limit <= 0 or len(text) <= limit:
        return text
    head = text[: limit * 3 // 4]
    tail = text[len(text) - limit // 4:]
    cut = len(text) - len(head) - len(tail)
    return (f"{head}\n\n[… {cut:,} of {len(text):,} characters left out here to fit the context window; "
            f"ask for a smaller part (a line range, a narrower search) to see them …]\n\n{tail}")


def to_openai_messages(system: str | None, messages: Sequence[Message], *,
                       empty_content: str | None = "",
                       max_result_chars: int | None = MAX_TOOL_RESULT_CHARS) -> list[dict[str, Any]]:
    """The neutral transcript as OpenAI chat messages (what litellm accepts for every provider).

    ``empty_content`` is the content of an assistant turn that only calls tools: ``""`` for
    OpenAI-style servers (several local ones reject a missing content), ``None`` for providers
    litellm translates (for Anthropic it would turn ``""`` into a placeholder sentence).
    A conversation sent again and again converts through one :class:`MessageConverter` instead.
    """
    return MessageConverter(keep=0).convert(system, messages, empty_content=empty_content,
                                            max_result_chars=max_result_chars)


def _wire_part(message: Message, empty_content: str | None, max_result_chars: int | None) -> list[Any]:
    """One message's part of the wire form: ``[message, calls, dict, merged with, merged]``: ``calls`` the
    tool calls of a tool-call message (its dict made when it stands alone), else None and the message's dict."""
    if message.is_tool_call:
        calls = [
            {"id": call_id(tool), "type": "function",
             "function": {"name": tool.name, "arguments": json_text(tool.input)}}
            for tool in message.tools  # type: ignore[attr-defined]
        ]
        return [message, calls, None, None, None]
    if message.is_tool_result:
        tool = message.tool  # type: ignore[attr-defined]
        out = {"role": "tool", "tool_call_id": call_id(tool),
               "content": shorten_result(message.text, max_result_chars)}  # type: ignore[attr-defined]
    else:
        role = message.role if message.role in ("system", "user", "assistant") else "user"
        out = {"role": role, "content": _text(message.content)}
    return [message, None, out, None, None]


class _Converted:
    """One conversation's last conversion: its messages, their wire form, and each message's part by identity."""

    __slots__ = ("ends", "messages", "options", "out", "parts", "system")

    def __init__(self, options: tuple[Any, ...], system: str | None) -> None:
        self.options = options
        self.system = system
        self.messages: list[Message] = []
        self.out: list[dict[str, Any]] = []
        #: How many of :attr:`out` each message's conversion ends with (a tool call merged into the text
        #: before it: the same as that text's, with :attr:`out`'s last dict replaced).
        self.ends: list[int] = []
        #: id(message) -> its part (which holds the message: an id is not reused while it is here).
        self.parts: dict[int, list[Any]] = {}


class MessageConverter:
    """:func:`to_openai_messages` for a conversation sent again at every model call: each message converted
    once, its wire dict reused (the same object) while the message is sent. A thread of 10,000 turns
    sends 20,000 messages per call; converting them all took most of the call's time on the event loop.

    Messages are immutable (no setters; compaction, an edited turn or a redaction makes new ones), so a
    message's identity keys its part, and a message not seen before (a new object) is converted. As everywhere
    a conversation is kept between calls (the context view, the token count), the messages looked at are those
    after the part the last call shares (:func:`~workspace.messages.shared_prefix`: a conversation grows at its
    end, or a compaction, an edit or a reading back replaces it from some message on), and the kept lists are
    changed in place: a call costs its new messages, not the thread's length. The
    last :attr:`keep` conversations (by their first message) are kept, each only with the messages of its
    latest call: the ones a compaction dropped are let go. The returned list is the caller's; its dicts
    are shared with the next calls' lists and must not be changed (nobody does: the recorder copies what it
    keeps, the transports serialize them)."""

    def __init__(self, keep: int = 4) -> None:
        self.keep = keep
        self._kept: list[_Converted] = []
        #: Messages converted (tests count them: a second call converts only the new ones).
        self.converted = 0

    def convert(self, system: str | None, messages: Sequence[Message], *, empty_content: str | None = "",
                max_result_chars: int | None = MAX_TOOL_RESULT_CHARS) -> list[dict[str, Any]]:
        """The OpenAI chat messages of ``system`` and ``messages`` (:func:`to_openai_messages`'s)."""
        messages = messages if isinstance(messages, list | tuple) else list(messages)
        options = (empty_content, max_result_chars)
        first = messages[0] if messages else None
        same = [c for c in self._kept if c.options == options]
        state = next((c for c in reversed(same) if c.messages and c.messages[0] is first), None)
        parts = (state or (same[-1] if same else _Converted(options, system))).parts
        if state is None:
            state = _Converted(options, system)
        # The messages the last call began with, the same objects: their dicts as they were (a thread sends
        # its history again, with its newest turn or two read back from the store as new objects). Found by
        # :func:`shared_prefix` and kept in place: a call costs its new messages, not the thread's length.
        start, dropped = 0, []
        if state.messages and state.system == system:
            start = shared_prefix(state.messages, messages)
            ends = state.ends
            if 0 < start < len(ends) and ends[start] == ends[start - 1]:
                start -= 1  # the next message was merged into this one's dict: this one's alone, again
        if start:
            out, ends = state.out, state.ends
            del out[ends[start - 1]:], ends[start:]
            kept, dropped = parts, state.messages[start:]  # this conversation's: the ones no longer sent let go
            inputs = state.messages
            del inputs[start:]
        else:
            out, ends, kept = ([{"role": "system", "content": system}] if system else []), [], {}
            inputs = []
        added = messages[start:]
        inputs += added
        for message in added:
            key = id(message)
            part = parts.get(key)
            if part is None or part[0] is not message:
                part = _wire_part(message, empty_content, max_result_chars)
                self.converted += 1
            kept[key] = part
            calls = part[1]
            if calls is None:
                out.append(part[2])
                ends.append(len(out))
                continue
            previous = out[-1] if out else None
            if (previous is not None and previous["role"] == "assistant" and "tool_calls" not in previous
                    and isinstance(previous.get("content"), str)):
                # Text the model wrote before its tool calls belongs to the same assistant turn.
                if part[3] is not previous:
                    part[3], part[4] = previous, {**previous, "tool_calls": calls}
                out[-1] = part[4]
            else:
                if part[2] is None:
                    part[2] = {"role": "assistant", "content": empty_content, "tool_calls": calls}
                out.append(part[2])
            ends.append(len(out))
        if dropped:
            sent = {id(m) for m in added}
            for gone in dropped:
                if id(gone) not in sent:
                    kept.pop(id(gone), None)
        if self.keep > 0:
            state.system, state.messages, state.out, state.parts, state.ends = system, inputs, out, kept, ends
            if state in self._kept:
                self._kept.remove(state)
            self._kept = [*self._kept, state][-self.keep:]
            return list(out)
        return out


#: JSON as httpx and the openai SDK write a body (compact, not ASCII-escaped, no NaN): ``json.dumps`` with those
#: options, whose encoder is made once here rather than by ``json.dumps`` at each of a body's dozen values.
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


class BodyEncoder:
    """A request body as the JSON bytes the openai SDK would send for it, each message's text written once:
    the messages of a long thread are the same dicts at every call (:class:`MessageConverter`), and writing
    20,000 of them again was most of a call's time on the event loop. The bytes are those of
    ``json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)``.

    A subclass may write its values another way (:meth:`write`) and its messages from other objects
    (:meth:`write_message`): litellm's pipe sends each :class:`~workspace.messages.Message`'s ``to_dict()``,
    keyed here on the message object as the dicts are here."""

    def __init__(self) -> None:
        self._messages: list[Any] = []
        self._texts: list[str] = []
        #: Messages written (tests count them: a second call writes only the new ones).
        self.written = 0
        #: The last ``tools`` list and its JSON: the lean provider sends the same list while the tools are the
        #: same (``OpenAICompatibleProvider._wire_tools``, never changed), written once.
        self._tools: tuple[Any, str] | None = None

    def encode(self, body: Mapping[str, Any]) -> bytes:
        parts = ["{"]  # the pieces of the body, joined once (megabytes at turn 10,000: each copy costs)
        for key, value in body.items():
            parts.append(f"{_dumps(key)}:" if len(parts) == 1 else f",{_dumps(key)}:")
            if key == "messages" and type(value) is list:
                # Kept in place, the shared start found by :func:`shared_prefix`: only the new messages cost.
                start = shared_prefix(self._messages, value)
                texts, written = self._texts, self._messages
                del texts[start:], written[start:]
                added = value[start:]
                texts += [self.write_message(m) for m in added]
                written += added
                self.written += len(added)
                parts += ("[", ",".join(texts), "]")
            elif key == "tools":
                kept = self._tools
                if kept is None or kept[0] is not value:
                    kept = self._tools = (value, self.write(value))
                parts.append(kept[1])
            else:
                parts.append(self.write(value))
        parts.append("}")
        return "".join(parts).encode()

    def write(self, value: Any) -> str:
        """The JSON of one field's value."""
        return _dumps(value)

    def write_message(self, message: Any) -> str:
        """The JSON of one of the messages (written once while it is sent)."""
        return self.write(message)


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tool specs as OpenAI ``tools`` entries."""
    return [
        {"type": "function",
         "function": {"name": t.name, "description": t.description or "",
                      "parameters": dict(t.parameters) if t.parameters else
                      {"type": "object", "properties": {}}}}
        for t in tools
    ]


def tool_choice_value(value: Any, tools: Sequence[ToolSpec]) -> Any:
    """The ``tool_choice`` setting for the wire: ``auto``/``required``/``none`` as they are, a tool's
    name as ``{"type": "function", "function": {"name": ...}}``; None when no tools are sent (a
    ``tool_choice`` without ``tools`` is an error on most servers)."""
    if value is None or not tools:
        return None
    if isinstance(value, str) and value not in ("auto", "required", "none", "any"):
        return {"type": "function", "function": {"name": value}}
    return value


# --------------------------------------------------------------------------------------------
# Chunks, in


def field(obj: Any, name: str) -> Any:
    """``obj.name`` or ``obj[name]`` (chunks are dicts, pydantic models or litellm's objects)."""
    if type(obj) is dict:  # the lean provider's chunks: a plain dict skips the Mapping check's machinery
        return obj.get(name)
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


#: A token count past this is no count (a server's nonsense, such as 10**30, which no column can hold): unknown, 0.
MAX_TOKEN_COUNT = 2**53


def _int(value: Any) -> int:
    """A token count from a usage report: 0 when it is missing, not a number, negative or past
    :data:`MAX_TOKEN_COUNT`."""
    try:
        count = int(value) if value else 0
    except (TypeError, ValueError, OverflowError):  # OverflowError: an infinite float
        return 0
    return count if 0 <= count <= MAX_TOKEN_COUNT else 0


def usage_numbers(usage: Any) -> tuple[int, int, int]:
    """(input, output, reasoning) tokens of an OpenAI- or Anthropic-shaped usage report."""
    prompt = _int(field(usage, "prompt_tokens")) or _int(field(usage, "input_tokens"))
    completion = _int(field(usage, "completion_tokens")) or _int(field(usage, "output_tokens"))
    details = field(usage, "completion_tokens_details")
    reasoning = _int(field(details, "reasoning_tokens")) if details is not None else 0
    return prompt, completion, reasoning


def without_image_data(messages: Sequence[Any]) -> tuple[list[Any], int]:
    """OpenAI chat messages with the data of their image parts left out, and how many there were."""
    count = 0
    out: list[Any] = []
    for message in messages:
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, list) and any(isinstance(p, Mapping) and p.get("type") == "image_url" for p in content):
            parts = []
            for part in content:
                if isinstance(part, Mapping) and part.get("type") == "image_url":
                    count += 1
                    parts.append({"type": "image_url"})
                else:
                    parts.append(part)
            message = {**message, "content": parts}
        out.append(message)
    return out, count


def estimate_tokens(text_chars: int) -> int:
    """Tokens of ``text_chars`` characters, erring on the safe (high) side: one per 3 characters
    (English averages about 4; code and other languages fewer)."""
    return -(-max(0, text_chars) // 3)


class DeltaReader:
    """Turns OpenAI-shaped stream deltas into text, reasoning and tool-call chunks."""

    __slots__ = ("chars", "last_index", "seen_ids")

    def __init__(self) -> None:
        self.seen_ids: dict[str, int] = {}
        self.last_index = 0
        #: Characters of text, reasoning and tool arguments read (to estimate usage a server omits).
        self.chars = 0

    def convert(self, delta: Any) -> list[Chunk]:
        out: list[Chunk] = []
        if type(delta) is dict:  # the lean provider's deltas, read for every chunk: no call per field
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            content = delta.get("content")
            calls = delta.get("tool_calls")
        else:
            reasoning = field(delta, "reasoning_content") or field(delta, "reasoning")
            content = field(delta, "content")
            calls = field(delta, "tool_calls")
        if reasoning and isinstance(reasoning, str):
            self.chars += len(reasoning)
            out.append(ReasoningChunk(reasoning))
        if content:
            text = content if isinstance(content, str) else str(content)
            self.chars += len(text)
            out.append(TextChunk(text))
        for call in calls or ():
            plain = type(call) is dict  # the lean provider's: read with no call per field
            index = call.get("index") if plain else field(call, "index")
            call_id_ = call.get("id") if plain else field(call, "id")
            if index is None:  # some servers omit it: a new id starts a call, else it continues
                if call_id_ and str(call_id_) not in self.seen_ids:
                    index = len(self.seen_ids)
                else:
                    index = self.seen_ids.get(str(call_id_ or ""), self.last_index)
            index = int(index)
            if call_id_:
                self.seen_ids.setdefault(str(call_id_), index)
            self.last_index = index
            function = call.get("function") if plain else field(call, "function")
            if type(function) is dict:
                name, arguments = function.get("name"), function.get("arguments")
            else:
                name = field(function, "name") if function is not None else None
                arguments = field(function, "arguments") if function is not None else None
            args: str | dict[str, Any] = (
                arguments if isinstance(arguments, dict) else "" if arguments is None else str(arguments))
            self.chars += len(args) if isinstance(args, str) else len(json.dumps(args, default=str))
            out.append(ToolCallChunk(index=index, id=str(call_id_) if call_id_ else None,
                                     name=str(name) if name else None, arguments=args))
        return out
