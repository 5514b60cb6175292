"""One model turn of a run: the provider's chunks become events.

- text (``text_delta``), with a ``<think>…</think>`` block at the start of an answer moved to the
  thinking (:class:`~workspace.providers.text_calls.ThinkSplitter`);
- thinking (``reasoning_delta``, then one ``reasoning`` with the whole of it);
- what the call waits for (``run_status``: loading, connecting, queued, waiting, streaming,
  retrying — passed on from the provider's :class:`~workspace.providers.base.StatusChunk`);
- usage (``usage``, estimated when the server sent none) and the finish reason;
- tool-call fragments, assembled into calls at the end.

When the model cannot answer (an outage or a rate limit, before any output) and the robot lists
``fallback_models``, the turn is asked of the next one, a ``run_status`` ``fallback`` says so, and
the rest of the run stays with it.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workspace import events as ev
from workspace.context.manager import close_stream
from workspace.context.requests import RequestRecorder
from workspace.errors import ProviderError
from workspace.messages import ToolMessage
from workspace.nesting import MAX_NESTING, cut_deep, too_deep
from workspace.providers.base import (
    FinishChunk,
    ProviderBase,
    ReasoningChunk,
    StatusChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
    status_sink,
)
from workspace.providers.openai_format import MAX_ANSWER_CHARS
from workspace.providers.text_calls import ThinkSplitter, find_text_calls, may_hold_calls

#: The longest a turn reads chunks the connection already holds before it lets the event loop run (s). A
#: stream read faster than it is handled (several runs at once on a busy machine) has many chunks waiting: read
#: in one go, they would hold the loop (a window's frames, the other runs) for as long as they take.
SLICE_S = 0.004
#: The turns streaming now on each event loop: turns streaming at once share one slice (a comparison's four runs
#: all have chunks waiting in the same pass of the loop: each reads for its share, not four slices back to back).
#: A plain dict (read for every chunk: a weak one makes a reference each time): a loop is in it only while one
#: of its turns streams, so it keeps no loop alive.
_STREAMING: dict[asyncio.AbstractEventLoop, int] = {}


def _streaming(loop: asyncio.AbstractEventLoop) -> None:
    """One more turn streaming on ``loop`` (until :func:`_streamed`; plain calls around the turn, no context
    manager's generator made for every model call)."""
    _STREAMING[loop] = _STREAMING.get(loop, 0) + 1


def _streamed(loop: asyncio.AbstractEventLoop) -> None:
    """A turn streaming on ``loop`` ended."""
    left = _STREAMING.get(loop, 1) - 1
    if left > 0:
        _STREAMING[loop] = left
    else:
        _STREAMING.pop(loop, None)

if TYPE_CHECKING:
    from workspace.agent.spec import RunSpec
    from workspace.context.manager import ModelCall
    from workspace.providers.base import Chunk, Provider
    from workspace.result import Usage as UsageTotals


@dataclass(slots=True)
class _PartialCall:
    id: str | None = None
    name: str | None = None
    fragments: list[str] = field(default_factory=list)
    whole: dict[str, Any] | None = None


@dataclass(slots=True)
class TurnOutcome:
    """What one model turn gave: its tool calls and finish reason (its text is in the caller's list)."""

    calls: list[ToolMessage]
    finish: str | None = None
    reasoning: str = ""


class ModelTurns:
    """The model-turn half of :class:`~workspace.agent.run.AgentRun` (a mixin: it emits through the run)."""

    spec: RunSpec
    run_id: str
    _usage: UsageTotals
    _fallbacks: list[Callable[[], Provider]]
    _cost_unknown_noted: bool
    #: The model cannot see images (earlier ones are sent as a line of text).
    blind: bool = False

    def emit(self, built: ev.Event) -> ev.Event:  # pragma: no cover - AgentRun's
        raise NotImplementedError

    def piece_emitter(self, kind: type[ev.TextDelta] | type[ev.ReasoningDelta]) -> Callable[[str], object]:
        raise NotImplementedError  # pragma: no cover - AgentRun's

    def unheard(self) -> bool:  # pragma: no cover - AgentRun's
        raise NotImplementedError

    def _add_usage(self, chunk: UsageChunk) -> None:  # pragma: no cover - AgentRun's
        raise NotImplementedError

    async def _model_turn(self, text_parts: list[str]) -> TurnOutcome:
        """Ask the model for its next turn (a fallback model when the robot's has an outage): the provider's
        stream read here, in this one coroutine, through the run's context manager when it has one (the request
        kept within the model's window; compacted and retried once when the server refuses it as too long, an
        empty HTTP 200 from a local server included: :class:`~workspace.context.manager.ModelCall`), each chunk
        handed to ``see``: by the provider's own reading when it has one (a streaming provider's
        :meth:`~workspace.providers.streaming.StreamingProvider.chunk_reader`: no generator between the transport
        and ``see``), else from its stream read here. No other coroutine or generator of the loop's between the
        provider's reading and this one: each chunk a socket read gives resumes every frame of that chain (the
        provider's reading, this turn, the run's turns, the run), so a level only forwarding it costs every chunk of
        every answer, the more once the loop's code is out of the CPU's caches (``tests/test_chunk_layers.py``
        counts them)."""
        spec = self.spec
        specs = [tool.spec() for tool in spec.tools]
        loop = asyncio.get_running_loop()
        emit, unheard = self.emit, self.unheard
        # A streamed piece is emitted in one call (the event built stamped: AgentRun.piece_emitter).
        emit_text, emit_thought = self.piece_emitter(ev.TextDelta), self.piece_emitter(ev.ReasoningDelta)
        add_text = text_parts.append
        clock = time.perf_counter
        provider = spec.provider
        produced = False
        partial: dict[int, _PartialCall] = {}
        splitter = ThinkSplitter()
        reasoning: list[str] = []
        finish: str | None = None
        since = clock()
        #: Characters the answer may still stream (its text, thinking and tool calls' arguments): a server that never
        #: ends its stream would fill the memory (llm.max_answer_chars).
        most = getattr(provider, "max_answer_chars", None) or MAX_ANSWER_CHARS
        left = most

        def said(text: str, thought: str) -> None:
            """What the splitter gave of the text: its answer and its thinking (between think tags), as events."""
            if thought:
                reasoning.append(thought)
                emit_thought(thought)
            if text:
                add_text(text)
                emit_text(text)

        #: The context manager's call of the attempt being read (its bookkeeping of each chunk: ModelCall.see,
        #: done here for a piece of text); None while chunks of no attempt are handed on (the summaries' usage, the
        #: finish held back) or with no manager.
        reading: ModelCall | None = None

        def see(chunk: Chunk) -> bool:
            """Turn ``chunk`` into events; True when chunks have been read for longer than a slice (chunks
            waiting): the event loop runs before the next. A piece of text, the most frequent chunk, by its
            exact type first; past any thinking it is the answer's as it is (no call of the splitter's)."""
            nonlocal finish, since, left, produced
            if type(chunk) is TextChunk or isinstance(chunk, TextChunk):
                text = chunk.text
                if reading is not None:  # what ModelCall.see reads of it: the answer began, its characters
                    reading.started = True
                    reading.written += len(text or "")
                if text:
                    produced = True
                    left -= len(text)
                    if left < 0:
                        raise _too_long(provider, most)
                    if splitter.passing:
                        add_text(text)
                        emit_text(text)
                    else:
                        said(*splitter.feed(text))
            elif reading is not None and not reading.see(chunk):  # a finish at "length", held to the end
                return False
            elif type(chunk) is ToolCallChunk or isinstance(chunk, ToolCallChunk):
                produced = True
                call = partial.get(chunk.index)
                if call is None:  # the call's first fragment (not a record made and dropped for every fragment)
                    call = partial[chunk.index] = _PartialCall()
                if chunk.id:
                    call.id = chunk.id
                if chunk.name:
                    call.name = chunk.name
                if isinstance(chunk.arguments, dict):
                    call.whole = dict(chunk.arguments)
                elif chunk.arguments:
                    left -= len(chunk.arguments)
                    if left < 0:
                        raise _too_long(provider, most)
                    call.fragments.append(chunk.arguments)
            elif isinstance(chunk, ReasoningChunk):
                if chunk.text:
                    produced = True
                    left -= len(chunk.text)
                    if left < 0:
                        raise _too_long(provider, most)
                    reasoning.append(chunk.text)
                    emit_thought(chunk.text)
            elif isinstance(chunk, UsageChunk):
                self._add_usage(chunk)
            elif isinstance(chunk, FinishChunk):
                finish = chunk.reason
            elif isinstance(chunk, StatusChunk) and not unheard():  # (nobody reads it: its number taken)
                emit(ev.RunStatus(state=chunk.state, detail=chunk.detail, retry_in=chunk.retry_in,
                     attempt=chunk.attempt, model=provider.label, endpoint=chunk.endpoint))
            if clock() - since > SLICE_S / _STREAMING.get(loop, 1):  # chunks waiting: let the loop run
                since = clock()
                return True
            return False

        _streaming(loop)
        history = spec.history
        if self.blind:  # images earlier in the thread; a model that cannot see them
            from workspace.attachments import without_images

            history = without_images(history)
        # A provider that hands its chunks to a callback (the streaming providers: StreamingProvider.chunk_reader)
        # is read with no generator between it and ``see``; another is read from its stream.
        reader = provider.chunk_reader() if isinstance(provider, ProviderBase) else None
        try:
            manager = spec.context
            call = (await manager.begin(provider, system=spec.system, history=history, tools=specs,
                                        settings=spec.settings, emit=emit, unheard=unheard)
                    if manager is not None else None)
            while True:  # the attempts of the call (a refusal as too long compacts and retries once: ModelCall)
                if call is not None:
                    for spent in call.manager.take_usage():  # the summaries' tokens count like the run's own
                        see(spent)
                    sent = call.attempt()
                    system, messages = call.prepared.system, call.prepared.messages
                else:
                    if not unheard():  # a record nobody can read is not made (see ModelCall.attempt)
                        emit(RequestRecorder().record(provider, system=spec.system, messages=history, tools=specs,
                                                      settings=spec.settings))
                    sent, system, messages = spec.settings, spec.system, list(history)
                reading = call
                try:
                    if reader is not None:  # a slow first token is said at once, by the provider's timer, to ``see``
                        await reader(system=system, messages=messages, tools=specs, settings=sent, see=see, sink=see)
                    else:
                        chunks = provider.stream(system=system, messages=messages, tools=specs, settings=sent)
                        token = status_sink.set(see)  # (its slow first token said to ``see`` at once)
                        try:
                            async for chunk in chunks:
                                if see(chunk):
                                    await asyncio.sleep(0)
                        finally:
                            status_sink.reset(token)
                            await close_stream(chunks)
                except Exception as exc:
                    reading = None
                    if call is None or not await call.retry(exc):
                        raise
                    continue
                reading = None
                last = call.last() if call is not None else None
                if last is not None:  # the finish held back (ModelCall.see), said past the manager's reading
                    see(last)
                break
            said(*splitter.flush())
            calls = [self._assemble(index, call) for index, call in sorted(partial.items())]
            return TurnOutcome(calls=calls, finish=finish, reasoning="".join(reasoning))
        except ProviderError as exc:
            if produced or not exc.is_outage or not self._fallbacks:
                raise
            self._switch_model(exc)
        finally:
            _streamed(loop)
        return await self._model_turn(text_parts)  # the next model asked (the robot's had an outage)

    def _switch_model(self, failure: ProviderError) -> None:
        old = self.spec.provider.label
        while self._fallbacks:
            make = self._fallbacks.pop(0)
            try:
                provider = make()
            except Exception as exc:  # a misconfigured fallback: say so, try the next
                self.emit(ev.RunStatus(state="notice", detail=f"The fallback model could not be used: {exc}"))
                continue
            why = {"rate_limit": "rate limit", "server_error": "server error", "unreachable": "unreachable",
                   "timeout": "no answer in time"}.get(failure.reason or "", "failed")
            self.emit(ev.RunStatus(state="fallback", model=provider.label,
                      detail=f"{old} is not answering ({why}: {failure}); continuing with {provider.label}"))
            self.spec.provider = provider
            return
        raise failure

    def _assemble(self, index: int, call: _PartialCall) -> ToolMessage:
        call_id = call.id or f"call_{self.run_id[:8]}_{index}_{uuid.uuid4().hex[:6]}"
        name = call.name or ""
        if call.whole is not None:
            if too_deep(call.whole):
                return ToolMessage(id=call_id, name=name, input=too_deep_input(repr(cut_deep(call.whole, 8))))
            return ToolMessage(id=call_id, name=name, input=call.whole)
        raw = "".join(call.fragments).strip()
        if not raw:
            return ToolMessage(id=call_id, name=name, input={})
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = _strip_fences(raw)
        except RecursionError:  # nested thousands of levels deep
            return ToolMessage(id=call_id, name=name, input=too_deep_input(raw))
        if too_deep(value):
            return ToolMessage(id=call_id, name=name, input=too_deep_input(raw))
        if not isinstance(value, dict):
            # Keep it visible; the tool call is answered with an error the model can act on.
            return ToolMessage(id=call_id, name=name, input={INVALID_ARGUMENTS: raw})
        return ToolMessage(id=call_id, name=name, input=value)

    def _calls_in_text(self, text: str, mode: str) -> tuple[list[ToolMessage], str | None]:
        """Tool calls the model wrote as text: (the calls to run, the text left) when ``mode`` is
        ``run``; a ``notice`` status when it only tried (or ``mode`` is ``notice``)."""
        tools = self.spec.tools
        if (mode == "off" or not text or not len(tools) or not may_hold_calls(text)
                or not self.spec.provider.is_language_model):
            return [], None
        params = {t.name: list((t.parameters or {}).get("properties") or {}) for t in tools}
        try:
            found = find_text_calls(text, tools.names, parameters=params)
        except RecursionError:  # JSON nested thousands of levels deep in the text: not a call to run
            return [], None
        fix = ("Setting tool_choice: auto (llama-cpp-python's server needs it) or starting the server with tool-call "
               "parsing (llama.cpp: --jinja) makes the server send real tool calls.")
        if found.calls and mode == "run":
            plural = "s" if len(found.calls) > 1 else ""
            self.emit(ev.RunStatus(state="notice",
                      detail=f"The model wrote its tool call{plural} as text ({found.style}); "
                             f"{'they were' if plural else 'it was'} run as tool call{plural}. {fix}"))
            calls = [ToolMessage(id=f"call_{self.run_id[:8]}_text{i}_{uuid.uuid4().hex[:6]}", name=c.name,
                                 input=too_deep_input(repr(cut_deep(c.arguments, 8))) if too_deep(c.arguments)
                                 else c.arguments) for i, c in enumerate(found.calls)]
            return calls, found.text
        style = found.style if found.calls else found.attempted
        if style:
            self.emit(ev.RunStatus(state="notice",
                      detail=f"The model tried to call a tool ({style}) in a form the server did not turn into a "
                             f"call, so no tool ran. {fix}"))
        return [], None


#: The input of a call whose arguments cannot be used (``__why__``: nested too deep): the run answers the call
#: with an invalid-arguments error (``AgentRun._run_tool``).
INVALID_ARGUMENTS = "__invalid_arguments__"
INVALID_WHY = "__why__"


def _too_long(provider: Provider, most: int) -> ProviderError:
    """The error that stops an answer streaming past ``most`` characters."""
    return ProviderError(f"The answer passed {most:,} characters without ending, so it was stopped (the server may "
                         "be repeating itself; llm.max_answer_chars sets the limit, for answers meant to be longer)",
                         provider=provider.label, reason="too_long")


def too_deep_input(raw: str) -> dict[str, str]:
    """The input of a call whose arguments nest deeper than :data:`workspace.nesting.MAX_NESTING` (the start
    of the arguments kept, to show)."""
    return {INVALID_ARGUMENTS: raw[:200] + ("…" if len(raw) > 200 else ""),
            INVALID_WHY: f"nested deeper than {MAX_NESTING} levels"}


def _strip_fences(raw: str) -> Any:
    text = raw.strip()
    if text.startswith("```"):
        text = text.strip("`")
        if text.startswith("json"):
            text = text[4:]
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return None
    return None
