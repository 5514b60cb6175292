"""The provider protocol: one streaming method and capability flags.

A provider turns a neutral RobotLab transcript (system prompt, a list of
:mod:`workspace.messages` messages and tool schemas) into a stream of chunks.
The agent loop (:mod:`workspace.agent`) assembles the chunks into text and tool
calls; providers never run tools themselves.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from workspace.messages import Message


@dataclass(frozen=True, slots=True)
class TextChunk:
    """A piece of assistant text, in order."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallChunk:
    """A fragment of a tool call, addressed by its index within the turn.

    Streaming providers send the id and name once and the JSON arguments in
    several string fragments; the loop concatenates the fragments of one index.
    A provider that knows the whole call at once may pass ``arguments`` as a dict.
    """

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str | dict[str, Any] = ""


@dataclass(frozen=True, slots=True)
class ReasoningChunk:
    """A piece of the model's thinking ("reasoning_content", thinking blocks, ``<think>`` text), in order.

    Shown apart from the answer and kept in the thread; never sent back to the model."""

    text: str


@dataclass(frozen=True, slots=True)
class UsageChunk:
    """Token counts (and cost in USD when known) of one model call.

    ``cost`` is None when the price is not known (a local or unknown model), never 0.0 for that.
    ``estimated``: the server reported no usage, the counts are the provider's own estimate.
    ``reasoning_tokens`` are part of ``output_tokens`` (the thinking the model billed)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    model: str | None = None
    reasoning_tokens: int = 0
    estimated: bool = False


@dataclass(frozen=True, slots=True)
class FinishChunk:
    """The provider's finish reason for this call ("stop", "tool_calls", "length", ...)."""

    reason: str | None = None


#: What a call is doing while it waits (see :class:`workspace.events.RunStatus` for the states).
StatusState = Literal["loading", "connecting", "queued", "waiting", "streaming", "retrying", "fallback", "notice"]


@dataclass(frozen=True, slots=True)
class StatusChunk:
    """What the call is waiting for: the agent loop passes it on as a ``run_status`` event.

    ``retry_in`` (seconds) with ``retrying``; ``attempt`` the retry's number; ``endpoint`` where
    the request goes (a URL, or the hosted provider's name)."""

    state: StatusState
    detail: str = ""
    retry_in: float | None = None
    attempt: int | None = None
    endpoint: str | None = None


Chunk = TextChunk | ReasoningChunk | ToolCallChunk | UsageChunk | FinishChunk | StatusChunk

#: Where a provider's stream may say a status while it waits, at once, instead of yielding it when the wait ends
#: lets it: set by the reader of the stream around its reading (the agent loop's model turn:
#: ``ModelTurns._model_turn``), called with the :class:`StatusChunk` on the reader's thread by a timer of the event
#: loop (no task is current then: the sink must not await). A stream that says its slow first token there waits for
#: it in the reader's task, with no task of its own to wait in (see
#: :class:`~workspace.providers.streaming.StreamingProvider`); with none set, the status comes in the stream.
status_sink: ContextVar[Callable[[StatusChunk], object] | None] = ContextVar("status_sink", default=None)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What a provider needs to know of a tool: its name, description and JSON schema."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


class ConfigLookup(Protocol):
    """What providers read of the configuration: ``get("llm.timeout", default)``
    (:class:`workspace.config.Config` is one; providers never import the configuration module)."""

    def get(self, dotted: str, default: Any = None) -> Any: ...


@runtime_checkable
class Provider(Protocol):
    """One streaming method plus capability flags and questions about the model (never ``isinstance``
    checks on vendors). :class:`ProviderBase` holds the defaults of everything but ``stream``, ``label``
    and ``model_id``: every shipped provider and test double inherits it, and a provider of another
    package that does not is wrapped once where it is created (:class:`WithDefaults`, by
    :func:`workspace.providers.registry.provider_for`), so callers ask these directly."""

    #: Short label for people: the model id, or "Offline demo (no language model)".
    label: str
    #: The model id as given by the user ("openai/gpt-4o-mini", "ollama/llama3.1", "scripted").
    model_id: str
    supports_tools: bool
    supports_streaming: bool
    #: False for the rule-based offline demo: the UI says so wherever it shows the model.
    is_language_model: bool

    @property
    def api_base(self) -> str | None:
        """The server's address (``http://127.0.0.1:8080/v1``), None for a hosted provider's default."""
        ...

    @property
    def is_local(self) -> bool | None:
        """Whether the model runs on a server on this machine; None: judge by ``api_base`` and the
        model id's prefix (:func:`workspace.context.budget.is_local`)."""
        ...

    @property
    def supports_response_schema(self) -> bool:
        """The model takes a JSON schema for its answer (``response_format``): structured output the
        native way (:mod:`workspace.output`); False: a forced final tool call instead. A plain
        attribute is fine; a property may be slow (it is read off the event loop)."""
        ...

    def supports_vision(self) -> bool | None:
        """Whether the model takes images; None: not known (may be slow: asked off the event loop)."""
        ...

    def context_window(self) -> int | None:
        """The model's context window in tokens; None: not known (may be slow: asked in a worker thread)."""
        ...

    def known_context_window(self) -> tuple[bool, int | None]:
        """:meth:`context_window` without blocking: ``(True, answer)`` when it is known already."""
        ...

    def token_counter(self) -> Callable[[str], int] | None:
        """The model's tokenizer as a counting function; None: estimate (may be slow: a worker thread)."""
        ...

    def known_token_counter(self) -> tuple[bool, Callable[[str], int] | None]:
        """:meth:`token_counter` without blocking: ``(True, function)`` when it is loaded already."""
        ...

    def check_key(self) -> None:
        """Raise :class:`workspace.errors.ProviderError` at once when a key the model needs is set nowhere."""
        ...

    def stream(
        self,
        *,
        system: str | None,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        settings: Mapping[str, Any],
    ) -> AsyncIterator[Chunk]:
        """Stream the assistant's next turn as chunks.

        Raises :class:`workspace.errors.ProviderError` (with the provider's own message)
        when the call fails for good, after any retries the provider does itself.
        """
        ...


class ProviderBase:
    """The defaults of :class:`Provider`'s capabilities: a language model with tools and streaming, on
    no known server, that says nothing about its window, tokenizer, vision or keys. A provider sets
    ``label``, ``model_id`` and ``stream`` and overrides what it knows."""

    label: str
    model_id: str
    supports_tools: bool = True
    supports_streaming: bool = True
    is_language_model: bool = True
    api_base: str | None = None
    supports_response_schema: bool = False

    @property
    def is_local(self) -> bool | None:
        return None

    def supports_vision(self) -> bool | None:
        return None

    def context_window(self) -> int | None:
        return None

    def known_context_window(self) -> tuple[bool, int | None]:
        # Known at once when there is nothing to ask (no thread for it); else the subclass's own answer.
        return (True, None) if type(self).context_window is ProviderBase.context_window else (False, None)

    def token_counter(self) -> Callable[[str], int] | None:
        return None

    def known_token_counter(self) -> tuple[bool, Callable[[str], int] | None]:
        return (True, None) if type(self).token_counter is ProviderBase.token_counter else (False, None)

    def check_key(self) -> None:
        return None

    def chunk_reader(self) -> Callable[..., Awaitable[None]] | None:
        """What reads a call's chunks into a callback, with no generator between the reading and its reader (the
        agent loop's model turn uses it when there is one:
        :meth:`workspace.providers.streaming.StreamingProvider.chunk_reader`); None: read :meth:`stream`."""
        return None

    def stream(self, *, system: str | None, messages: Sequence[Message], tools: Sequence[ToolSpec],
               settings: Mapping[str, Any]) -> AsyncIterator[Chunk]:  # pragma: no cover - every provider's own
        raise NotImplementedError(f"{type(self).__name__} does not implement stream()")


class WithDefaults(ProviderBase):
    """A provider that does not inherit :class:`ProviderBase` (another package's, from an entry point or
    :func:`workspace.providers.registry.register`), with the defaults for what it does not have: the one
    place that asks whether a provider has a capability. ``inner`` is the provider itself."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.label = str(getattr(inner, "label", "") or getattr(inner, "model_id", "") or type(inner).__name__)
        self.model_id = str(getattr(inner, "model_id", "") or self.label)
        self.supports_tools = bool(getattr(inner, "supports_tools", True))
        self.supports_streaming = bool(getattr(inner, "supports_streaming", True))
        self.is_language_model = bool(getattr(inner, "is_language_model", True))
        base = getattr(inner, "api_base", None)
        self.api_base = str(base) if base else None

    def __repr__(self) -> str:
        return f"WithDefaults({self.inner!r})"

    @property  # read from the provider each time (it may be slow: read off the event loop)
    def supports_response_schema(self) -> bool:
        return bool(getattr(self.inner, "supports_response_schema", False))

    @supports_response_schema.setter
    def supports_response_schema(self, value: bool) -> None:
        self.inner.supports_response_schema = value

    @property
    def is_local(self) -> bool | None:
        local = getattr(self.inner, "is_local", None)
        return local if isinstance(local, bool) else None

    def _ask(self, name: str, default: Any) -> Any:
        hook = getattr(self.inner, name, None)
        return hook() if callable(hook) else default

    def supports_vision(self) -> bool | None:
        answer = self._ask("supports_vision", None)
        return None if answer is None else bool(answer)

    def context_window(self) -> int | None:
        value = getattr(self.inner, "context_window", None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value  # a plain number is fine too
        return self._ask("context_window", None)

    def known_context_window(self) -> tuple[bool, int | None]:
        value = getattr(self.inner, "context_window", None)
        if not callable(value):  # a number, or nothing to ask: known at once
            return True, value if isinstance(value, int) and not isinstance(value, bool) else None
        return self._ask("known_context_window", (False, None))

    def token_counter(self) -> Callable[[str], int] | None:
        return self._ask("token_counter", None)

    def known_token_counter(self) -> tuple[bool, Callable[[str], int] | None]:
        if not callable(getattr(self.inner, "token_counter", None)):
            return True, None
        return self._ask("known_token_counter", (False, None))

    def check_key(self) -> None:
        self._ask("check_key", None)

    def stream(self, *, system: str | None, messages: Sequence[Message], tools: Sequence[ToolSpec],
               settings: Mapping[str, Any]) -> AsyncIterator[Chunk]:
        return self.inner.stream(system=system, messages=messages, tools=tools,
                                 settings=settings)


def with_defaults(provider: Any) -> Provider:
    """``provider`` itself when it inherits :class:`ProviderBase`, else wrapped in :class:`WithDefaults`."""
    return provider if isinstance(provider, ProviderBase) else WithDefaults(provider)
