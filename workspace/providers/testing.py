"""Deterministic providers for tests and for trying robots without a key.

``ScriptedProvider`` answers from a queue of scripted replies (like llm's
MockModel); ``FunctionProvider`` computes each reply with your function (like
pydantic-ai's FunctionModel). Both stream like a real provider: text arrives in
pieces, tool calls as chunks, usage at the end.

A reply is a sequence of parts: a ``str`` is text, :class:`ToolCall` is a tool
call, :class:`Pause` sleeps inside the stream (to test stopping mid-stream) and
:class:`Fail` raises a :class:`~workspace.errors.ProviderError` at that point.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workspace.errors import ProviderError
from workspace.messages import GrowingFold
from workspace.providers.base import (
    Chunk,
    FinishChunk,
    ProviderBase,
    ReasoningChunk,
    StatusChunk,
    TextChunk,
    ToolCallChunk,
    ToolSpec,
    UsageChunk,
)

if TYPE_CHECKING:
    from workspace.messages import Message


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A scripted tool call. ``input`` may be a dict or a raw (even malformed) JSON string."""

    name: str
    input: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Pause:
    """Sleep inside the stream (seconds), or until ``event`` is set."""

    seconds: float = 0.0
    event: asyncio.Event | None = None


@dataclass(frozen=True, slots=True)
class Fail:
    """Raise a ProviderError at this point of the stream."""

    message: str = "scripted provider failure"
    status_code: int | None = None


Part = str | ToolCall | Pause | Fail
Reply = str | ToolCall | Pause | Fail | Sequence[Part]

_WORDS = re.compile(r"\S+\s*|\s+")


@dataclass(slots=True)
class ProviderCall:
    """What a test double was asked: the system prompt, the messages, the tools and settings."""

    system: str | None
    messages: list[Message]
    tools: list[ToolSpec]
    settings: dict[str, Any]

    @property
    def tool_names(self) -> list[str]:
        return [t.name for t in self.tools]

    @property
    def last_message(self) -> Message | None:
        return self.messages[-1] if self.messages else None


def _parts(reply: Reply) -> list[Part]:
    if isinstance(reply, str | ToolCall | Pause | Fail):
        return [reply]
    return list(reply)


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


def _content_chars(total: int, message: Message) -> int:
    return total + len(str(getattr(message, "content", "") or ""))


#: The characters of a conversation asked again one turn longer: only its new messages are measured.
_INPUT_CHARS: GrowingFold[int] = GrowingFold(0, _content_chars, kept=2)


def _input_chars(messages: Sequence[Message]) -> int:
    if isinstance(messages, list | tuple):
        return _INPUT_CHARS(messages)
    return sum(_content_chars(0, m) for m in messages)


async def stream_parts(
    parts: Iterable[Part],
    *,
    messages: Sequence[Message],
    model: str,
    delay: float = 0.0,
    chunk_words: int = 1,
) -> AsyncIterator[Chunk]:
    """Turn scripted parts into provider chunks, text split into word-sized pieces."""
    index = 0
    output_chars = 0
    has_calls = False
    for part in parts:
        if isinstance(part, str):
            words = _WORDS.findall(part) or [part]
            for i in range(0, len(words), max(1, chunk_words)):
                piece = "".join(words[i : i + chunk_words])
                output_chars += len(piece)
                if delay:
                    await asyncio.sleep(delay)
                yield TextChunk(piece)
        elif isinstance(part, ToolCall):
            has_calls = True
            call_id = part.id or f"call_{uuid.uuid4().hex[:12]}"  # unique across processes, like a hosted model's
            if isinstance(part.input, str):
                yield ToolCallChunk(index=index, id=call_id, name=part.name, arguments=part.input)
            else:
                yield ToolCallChunk(index=index, id=call_id, name=part.name, arguments=dict(part.input))
            try:
                output_chars += len(part.name) + len(str(part.input))
            except RecursionError:  # arguments nested thousands deep (the agent loop refuses them)
                output_chars += len(part.name)
            index += 1
        elif isinstance(part, Pause):
            if part.event is not None:
                await part.event.wait()
            else:
                await asyncio.sleep(part.seconds)
        elif isinstance(part, Fail):
            raise ProviderError(part.message, provider=model, status_code=part.status_code)
        else:  # pragma: no cover - defensive
            raise TypeError(f"Unknown scripted part: {part!r}")
    input_chars = _input_chars(messages)
    yield UsageChunk(input_tokens=_estimate_tokens("x" * input_chars), output_tokens=_estimate_tokens(
        "x" * output_chars), cost=0.0, model=model)
    yield FinishChunk("tool_calls" if has_calls else "stop")


class ScriptedProvider(ProviderBase):
    """Answers from a queue of scripted replies; records every call in ``history``.

    >>> p = ScriptedProvider(["Hello!"])
    >>> p.enqueue([ToolCall("read_file", {"path": "a.txt"})], "Done.")
    """

    supports_tools = True
    supports_streaming = True
    is_language_model = False

    def __init__(
        self,
        replies: Iterable[Reply] | None = None,
        *,
        default: Reply | None = None,
        delay: float = 0.0,
        chunk_words: int = 1,
        model_id: str = "scripted",
        label: str = "Scripted provider (test double)",
        response_schema: bool = False,
    ) -> None:
        self.replies: list[Reply] = list(replies or [])
        #: Play a model with structured output the native way (``response_format``; see workspace.output).
        self.supports_response_schema = response_schema
        self.default = default
        self.delay = delay
        self.chunk_words = chunk_words
        self.model_id = model_id
        self.label = label
        self.history: list[ProviderCall] = []

    def enqueue(self, *replies: Reply) -> ScriptedProvider:
        """Queue replies, one per model call, in order."""
        self.replies.extend(replies)
        return self

    @property
    def remaining(self) -> int:
        return len(self.replies)

    async def stream(
        self,
        *,
        system: str | None,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        settings: Mapping[str, Any],
    ) -> AsyncIterator[Chunk]:
        self.history.append(ProviderCall(system, list(messages), list(tools), dict(settings)))
        if self.replies:
            reply = self.replies.pop(0)
        elif self.default is not None:
            reply = self.default
        else:
            raise ProviderError(
                "ScriptedProvider has no reply queued: call enqueue(...) with one reply per model call",
                provider=self.model_id,
            )
        async for chunk in stream_parts(_parts(reply), messages=messages, model=self.model_id, delay=self.delay,
                                        chunk_words=self.chunk_words):
            yield chunk


@dataclass(frozen=True, slots=True)
class AgentInfo:
    """What a FunctionProvider's function knows besides the messages."""

    system: str | None
    tools: list[ToolSpec]
    settings: dict[str, Any]
    call_number: int


ReplyFn = Callable[[list["Message"], AgentInfo], Reply | Awaitable[Reply]]
StreamFn = Callable[[list["Message"], AgentInfo], AsyncIterator[Part | Chunk]]


class FunctionProvider(ProviderBase):
    """Computes each reply with ``fn(messages, info)`` (sync or async).

    Or give ``stream_fn``, an async generator yielding parts or raw chunks, for full
    control of the stream.
    """

    supports_tools = True
    supports_streaming = True
    is_language_model = False

    def __init__(
        self,
        fn: ReplyFn | None = None,
        *,
        stream_fn: StreamFn | None = None,
        delay: float = 0.0,
        model_id: str = "function",
        label: str = "Function provider (test double)",
        response_schema: bool = False,
    ) -> None:
        if (fn is None) == (stream_fn is None):
            raise ValueError("FunctionProvider needs exactly one of fn or stream_fn")
        self.fn = fn
        self.stream_fn = stream_fn
        self.supports_response_schema = response_schema
        self.delay = delay
        self.model_id = model_id
        self.label = label
        self.history: list[ProviderCall] = []

    async def stream(
        self,
        *,
        system: str | None,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        settings: Mapping[str, Any],
    ) -> AsyncIterator[Chunk]:
        self.history.append(ProviderCall(system, list(messages), list(tools), dict(settings)))
        info = AgentInfo(system, list(tools), dict(settings), len(self.history))
        if self.stream_fn is not None:
            index = 0
            async for item in self.stream_fn(list(messages), info):
                if isinstance(item, TextChunk | ToolCallChunk | UsageChunk | FinishChunk | ReasoningChunk | StatusChunk):
                    yield item
                elif isinstance(item, str):
                    yield TextChunk(item)
                elif isinstance(item, ToolCall):
                    async for chunk in stream_parts([item], messages=[], model=self.model_id):
                        if isinstance(chunk, ToolCallChunk):
                            yield ToolCallChunk(index=index, id=chunk.id, name=chunk.name,
                                                arguments=chunk.arguments)
                    index += 1
                else:
                    async for chunk in stream_parts([item], messages=[], model=self.model_id):
                        if not isinstance(chunk, UsageChunk | FinishChunk):
                            yield chunk
            return
        assert self.fn is not None
        reply = self.fn(list(messages), info)
        if inspect.isawaitable(reply):
            reply = await reply
        async for chunk in stream_parts(_parts(reply), messages=messages, model=self.model_id,
                                        delay=self.delay):
            yield chunk
