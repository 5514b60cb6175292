"""The loopback server's scripts: what the fake model answers (:class:`Reply`, :class:`ToolCall`), and the
faults it plays (HTTP errors, cut and stalled streams, pages that are not a stream). See
:mod:`fakes.llm_server` for how a test queues them."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """One tool call the fake model makes.

    ``arguments`` is a dict (sent as JSON) or a raw string sent as-is, which is how tests
    produce malformed JSON arguments.
    """

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


@dataclass(frozen=True)
class Reply:
    """One scripted answer (or fault) of the fake model.

    Content: ``text`` and/or ``tool_calls``. Faults: ``status`` (an HTTP error with
    ``error_message`` and optional ``retry_after`` seconds), ``cut_after`` (close the socket
    after that many stream chunks; ``cut_clean`` ends the HTTP body properly instead, so the
    stream simply stops without a finish), ``stall_before`` (seconds to wait before answering),
    ``stall_after``/``stall_seconds`` (wait that long after that many chunks). ``times`` is
    how many requests this reply answers before the next queued one is used. An
    ``error_message`` may echo the request as some servers do: ``{authorization}`` (any request
    header, lower-case) and ``{url}`` are filled in (``Reply.error(401, "Incorrect API key
    provided: {authorization}")``).
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    status: int | None = None
    error_message: str | None = None
    retry_after: float | None = None
    times: int = 1
    cut_after: int | None = None
    cut_clean: bool = False
    stall_before: float = 0.0
    stall_after: int | None = None
    stall_seconds: float = 0.0
    #: Seconds between stream chunks (a slow model).
    chunk_delay: float = 0.0
    #: Text is streamed in pieces of this many characters (None: one piece per word).
    chunk_size: int | None = None
    #: Tool-call arguments are streamed in this many fragments (at least 2 when long enough).
    fragments: int = 3
    #: Overrides the finish reason ("stop"/"tool_calls", or Anthropic's "end_turn"/"tool_use").
    finish_reason: str | None = None
    #: (prompt_tokens, completion_tokens); estimated from the sizes when None; False: no usage is sent at all.
    usage: tuple[int, int] | bool | None = None
    #: Thinking streamed before the text (OpenAI: ``delta.<reasoning_field>``; Anthropic: a thinking block).
    reasoning: str = ""
    reasoning_field: str = "reasoning_content"
    #: HTTP 200 with an event-stream content type and no data at all (a prompt over llama.cpp's context).
    empty: bool = False
    #: HTTP 200 with this HTML page instead of an event stream (a wrong api_base: a web app's page).
    html: str | None = None
    #: HTTP 200 event stream whose data lines are this text, not JSON.
    garbage: str | None = None
    #: A 401's message ends with the Authorization header the server received (as some servers do).
    echo_key: bool = False
    #: A looping model: ``text`` written again and again until the request's ``max_tokens`` (finish "length")
    #: or, without one, until the context window is full (finish "length", as llama.cpp stops), counted with
    #: the fake tokenizer (a server with ``context_window``).
    loops: bool = False

    # -- builders ---------------------------------------------------------------------------
    @classmethod
    def say(cls, text: str, **options: Any) -> Reply:
        """A text answer."""
        return cls(text=text, **options)

    @classmethod
    def tool(cls, name: str, arguments: dict[str, Any] | str | None = None, *,
             id: str | None = None, **options: Any) -> Reply:
        """One tool call (``arguments`` a dict, or a raw string for malformed JSON)."""
        return cls(tool_calls=(ToolCall(name, {} if arguments is None else arguments, id),), **options)

    @classmethod
    def tools(cls, *calls: ToolCall | tuple[str, dict[str, Any] | str], text: str = "",
              **options: Any) -> Reply:
        """Several tool calls in one turn, optionally after some text."""
        built = tuple(c if isinstance(c, ToolCall) else ToolCall(c[0], c[1]) for c in calls)
        return cls(text=text, tool_calls=built, **options)

    @classmethod
    def error(cls, status: int, message: str | None = None, *, times: int = 1,
              retry_after: float | None = None, **options: Any) -> Reply:
        """An HTTP error answered to the next ``times`` requests."""
        return cls(status=status, error_message=message, times=times, retry_after=retry_after, **options)

    def but(self, **changes: Any) -> Reply:
        """A copy with some fields changed (``Reply.say("x").but(cut_after=2)``)."""
        return replace(self, **changes)


ReplyLike = Reply | str | ToolCall | Sequence[ToolCall]
ReplyFn = Callable[[dict[str, Any]], "ReplyLike | None"]


def as_reply(value: ReplyLike) -> Reply:
    if isinstance(value, Reply):
        return value
    if isinstance(value, str):
        return Reply(text=value)
    if isinstance(value, ToolCall):
        return Reply(tool_calls=(value,))
    return Reply(tool_calls=tuple(value))
