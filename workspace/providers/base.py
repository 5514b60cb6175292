"""The provider protocol: one streaming method and capability flags.

A provider turns a neutral RobotLab transcript (system prompt, a list of
:mod:`workspace.messages` messages and tool schemas) into a stream of chunks.
The agent loop (:mod:`workspace.agent`) assembles the chunks into text and tool
calls; providers never run tools themselves.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
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
    """One streaming method plus capability flags (never ``isinstance`` checks on vendors)."""

    #: Short label for people: the model id, or "Offline demo (no language model)".
    label: str
    #: The model id as given by the user ("openai/gpt-4o-mini", "ollama/llama3.1", "scripted").
    model_id: str
    supports_tools: bool
    supports_streaming: bool
    #: False for the rule-based offline demo: the UI says so wherever it shows the model.
    is_language_model: bool

    @property
    def supports_response_schema(self) -> bool:
        """The model takes a JSON schema for its answer (``response_format``): structured output the
        native way (:mod:`workspace.output`); False: a forced final tool call instead. A plain
        attribute is fine; a property may be slow (it is read off the event loop)."""
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
