"""The context manager of one robot: what of its conversation each model call is sent.

The agent loop asks it for every model call (:meth:`ContextManager.stream` wraps the provider's
stream): the conversation as the model sees it (the summary of compacted messages in their place,
oversized tool results cut), counted against the model's window. Past the threshold (80 % of the
window by default) it acts by its policy:

- ``"compact"``: older messages are summarised by the model (or ``llm.compaction_model``) into one
  summary message (:mod:`workspace.context.compaction`); a :class:`~workspace.events.ContextCompacted`
  event records it (the store keeps it with the turn, so a conversation rebuilt later uses the same
  summary);
- ``"truncate"``: the oldest whole turns are left out of the request (never a tool call without its
  result);
- ``"error"``: a request that does not fit the window fails before it is sent.

The history itself is never changed: ``robot.history`` and the thread keep every message. If the
server still refuses the request as too long, the manager compacts (or truncates) and retries once,
then fails with a message saying what to do. Before each call it emits a
:class:`~workspace.events.ContextUsage` (the count of the request) and after it another with the
server's own count, which also corrects the next counts: the input tokens the server reported are
the ground truth for the messages sent, and only what was added since is counted here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from workspace import events as ev
from workspace import hooks
from workspace.context.compaction import choose_cut, summarise, summary_message, turn_starts
from workspace.context.requests import RequestRecorder
from workspace.context.results import result_limit, shorten_result_message
from workspace.context.tokens import CHARS_PER_TOKEN, MESSAGE_OVERHEAD, TokenCounter, biggest_tools
from workspace.context.window import (
    DEFAULT_WINDOW,
    WindowInfo,
    resolve_window,
    server_of,
    server_tokenizer,
    window_from_message,
)
from workspace.errors import OVERFLOW_FAILURES, ContextOverflowError, ProviderError
from workspace.messages import AlternatingView, Message, alternating, shared_prefix
from workspace.providers.base import (
    Chunk,
    FinishChunk,
    Provider,
    ReasoningChunk,
    StatusChunk,
    TextChunk,
    ToolCallChunk,
    ToolSpec,
    UsageChunk,
    with_defaults,
)
from workspace.urls import LOCAL_DEFAULT_BASES, is_loopback_url

__all__ = [
    "DEFAULT_THRESHOLD",
    "POLICIES",
    "Compaction",
    "ContextManager",
    "ContextPolicy",
    "Prepared",
    "check_policy",
    "is_context_overflow",
]

#: Chunks of text the model wrote (counted to tell a full window from the token limit).
_WRITTEN = (TextChunk, ReasoningChunk)

log = logging.getLogger("workspace.context")

ContextPolicy = Literal["compact", "truncate", "error"]
POLICIES: tuple[str, ...] = ("compact", "truncate", "error")
#: The share of the window past which the policy acts.
DEFAULT_THRESHOLD = 0.8
#: The share of the window a local model's answer gets when ``max_tokens`` is not set (``llm.local_max_tokens_share``).
DEFAULT_LOCAL_SHARE = 0.25
#: The most the safe estimate is above a server's count (see workspace.context.tokens.estimate): an estimate
#: no server has checked yet acts only when even this much below it is past the threshold.
ESTIMATE_HIGH = 1.6
#: The fewest tokens of a request whose server count calibrates the estimate (in a smaller one the chat
#: template's tokens weigh more than the text's).
CALIBRATE_FROM = 256
#: What servers' counts said of the estimate, by provider, model and server (ratio of their count to ours),
#: kept for the process: a robot built again (a thread reopened, the configuration changed) starts calibrated.
_calibrations: dict[tuple[str, str | None, str | None], float] = {}
#: A request of more messages than this whose middle one is new (a long thread opened again: tens of
#: milliseconds to count) is counted in a worker thread, so the window does not freeze meanwhile.
COUNT_IN_THREAD = 64

Emit = ev.Emit

_OVERFLOW_TEXT = re.compile(
    r"context[ _-]?length|maximum context|context[ _-]?window|context_length_exceeded|too many tokens|"
    r"prompt is too long|input is too long|exceeds? (?:the )?(?:model'?s? )?(?:context|maximum)|\bn_ctx\b",
    re.I)


def is_context_overflow(exc: BaseException) -> bool:
    """Whether ``exc`` is a provider's refusal of a request longer than the model's window (an empty
    HTTP 200 from a local server included: ``ProviderError.reason`` ``empty``)."""
    if isinstance(exc, ContextOverflowError) or getattr(exc, "context_overflow", False):
        return True
    if isinstance(exc, ProviderError) and exc.reason in OVERFLOW_FAILURES:
        return True
    return (isinstance(exc, ProviderError) and exc.status_code in (None, 400, 413, 422)
            and bool(_OVERFLOW_TEXT.search(str(exc))))


def check_policy(value: Any, *, where: str = "context_policy") -> ContextPolicy:
    """``value`` if it is a context policy, else a ValueError naming the three."""
    if value not in POLICIES:
        raise ValueError(f"{where} must be one of {', '.join(POLICIES)} (got {value!r})")
    return value


@dataclass(frozen=True, slots=True)
class Compaction:
    """The model is sent ``summary`` in place of the first ``upto`` messages of the conversation."""

    summary: str
    upto: int


@dataclass(slots=True)
class Prepared:
    """One request as the manager prepared it."""

    system: str | None
    messages: list[Message]
    #: Tokens of the request (corrected by the server's last count); 0 when the window is unknown.
    used: int = 0
    #: The same counted here only (what the server's next count corrects).
    counted: int = 0
    window: WindowInfo | None = None
    system_tokens: int = 0
    tools_tokens: int = 0
    #: The costliest tool schemas (name -> tokens, at most three), for the context meter.
    biggest_tools: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class _Anchor:
    """The last request the server counted: its messages (by identity) and its count."""

    system: str | None
    messages: list[Message]
    tools_tokens: int
    tokens: int


@dataclass(slots=True)
class _Cache:
    """Per-message copies for the model (results cut to the limit) and the summary message."""

    shortened: dict[int, tuple[Message, int, Message]] = field(default_factory=dict)
    summary: tuple[Compaction, Message | None, Message, bool] | None = None
    #: :func:`alternating` of the requests' views, each one folding only what was added since the last.
    alternate: AlternatingView = field(default_factory=AlternatingView)
    #: The last request's limit, tools' parameters, conversation and its messages as sent (:meth:`_all_shortened`).
    view: tuple[int, dict[str, Any], list[Message], list[Message]] | None = None


class ContextManager:
    """Keeps one robot's requests within its model's context window (see the module docstring).

    ``window``: the window when a setting gives it (else the server, the model information or a
    default says); ``threshold``: the share of the window past which the policy acts;
    ``max_result_chars``: the most characters of one tool result (``llm.max_tool_result_chars``);
    ``summarizer``: the provider (or a function returning it) that writes summaries (default: the
    robot's own).
    """

    def __init__(
        self,
        *,
        policy: ContextPolicy | str = "compact",
        window: int | None = None,
        threshold: float = DEFAULT_THRESHOLD,
        max_result_chars: int | None = None,
        summarizer: Any = None,
        keep_ratio: float = 0.3,
        summary_ratio: float = 0.12,
        default_window: int = DEFAULT_WINDOW,
        local_max_tokens_share: float = DEFAULT_LOCAL_SHARE,
    ) -> None:
        self.policy: ContextPolicy = check_policy(policy)
        if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 256):
            raise ValueError(f"context_window must be a whole number of tokens, at least 256 (got {window!r})")
        if not 0.1 <= float(threshold) <= 0.98:
            raise ValueError(f"the compaction threshold must be between 0.1 and 0.98 (got {threshold!r})")
        self.window_setting = window
        #: The requests this conversation sent, each recorded as what changed since the one before.
        self.requests = RequestRecorder()
        self.threshold = float(threshold)
        self.max_result_chars = max_result_chars
        self.summarizer = summarizer
        self.keep_ratio = keep_ratio
        self.summary_ratio = summary_ratio
        self.default_window = default_window
        if not 0 <= float(local_max_tokens_share) <= 0.9:
            raise ValueError(f"llm.local_max_tokens_share must be between 0 and 0.9 (got {local_max_tokens_share!r})")
        #: A local model's answer is held to this share of its window when max_tokens is not set (0: not held).
        self.local_max_tokens_share = float(local_max_tokens_share)
        #: The summary standing for the oldest messages, if the conversation was compacted.
        self.compaction: Compaction | None = None
        #: The last count of a request (for the meter of a thread that is opened again).
        self.last: Prepared | None = None
        self._windows: dict[tuple[str, str | None, str | None], WindowInfo | None] = {}
        self._counters: dict[tuple[str, str | None], TokenCounter] = {}
        #: Windows learned from servers' refusals, by model and server.
        self._learned: dict[tuple[str, str | None, str | None], int] = {}
        #: The model and server the counts below were corrected for (another model: start again).
        self._corrected_for: tuple[str, str | None, str | None] | None = None
        self._ratio = 1.0
        #: The ratio comes from the server (its reported count or its refusal), not from nothing.
        self._calibrated = False
        self._anchor: _Anchor | None = None
        self._cache = _Cache()
        self._system: tuple[str | None, TokenCounter | None, int] = (None, None, 0)
        self._spent: list[UsageChunk] = []
        self._tools: list[Any] = []

    # -- state ------------------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget the compaction (the conversation was cleared)."""
        self.compaction = None
        self._anchor = None
        self._cache = _Cache()

    def restore(self, compaction: Compaction | None) -> None:
        """Take up a compaction recorded earlier (a conversation rebuilt from the store)."""
        self.compaction = compaction if compaction is not None and compaction.upto > 0 else None
        self._anchor = None

    def take_usage(self) -> list[UsageChunk]:
        """The usage of the summary requests made since the last call (their tokens and cost count too)."""
        spent, self._spent = self._spent, []
        return spent

    def messages_for_model(self, history: Sequence[Message]) -> list[Message]:
        """The conversation as the model is sent it (the summary in place of the compacted messages;
        tool results are cut only when a request is prepared, as the window is known then)."""
        return self._view(history, None, {})

    # -- the window and the counter ---------------------------------------------------------------
    async def window(self, provider: Provider) -> WindowInfo | None:
        """The window of ``provider``'s model (asked once per model and server)."""
        key = _key(provider)
        if key not in self._windows:
            self._windows[key] = await resolve_window(provider, setting=self.window_setting,
                                                      default=self.default_window)
        info = self._windows[key]
        learned = self._learned.get(key)
        if info is not None and learned is not None and learned < info.tokens:
            return WindowInfo(learned, "learned")
        return info

    async def counter(self, provider: Provider) -> TokenCounter:
        """The token counter of ``provider``'s model: its tokenizer when the provider has one."""
        key = (provider.model_id or "", provider.api_base)
        counter = self._counters.get(key)
        if counter is None:
            encode: Callable[[str], int] | None = None
            name = key[0]
            if provider.is_language_model and server_of(key[0], key[1]) is not None:
                # The server's own tokenizer first (llama.cpp's /tokenize): the count it will make itself.
                encode = await asyncio.to_thread(server_tokenizer, key[0], key[1])
                name = f"{key[0]} (the server's /tokenize)"
            known, found = provider.known_token_counter() if encode is None else (False, None)
            if encode is not None:
                pass
            elif known:  # loaded before (the warm-up loads it): no thread for it
                encode, name = found, key[0]
            else:
                name = key[0]
                try:
                    encode = await asyncio.to_thread(provider.token_counter)
                except Exception as exc:
                    log.debug("%s: token_counter() failed: %s", key[0], exc)
            counter = TokenCounter(encode if callable(encode) else None,
                                   tokenizer=name if callable(encode) else None)
            self._counters[key] = counter
        return counter

    # -- one model call ----------------------------------------------------------------------------
    async def stream(self, provider: Provider, *, system: str | None, history: Sequence[Message],
                     tools: Sequence[ToolSpec], settings: Mapping[str, Any],
                     emit: Emit | None = None) -> AsyncIterator[Chunk]:
        """``provider.stream`` for the prepared request; a refusal as too long compacts (or truncates)
        and retries once. The usage of summary requests comes first, as usage chunks of their model."""
        provider.check_key()  # a missing key is said before the window or the tokenizer loads a provider's library
        prepared = await self.prepare(provider, system=system, history=history, tools=tools, settings=settings,
                                      emit=emit)
        retried = False
        while True:
            for spent in self.take_usage():  # the summaries' tokens count like the run's own
                yield spent
            started = False
            sent = self._local_limit(provider, prepared, settings)
            usage: UsageChunk | None = None
            cut: FinishChunk | None = None
            written = 0
            try:
                if emit is not None:  # the request as sent (its own record even when a retry sends it again)
                    emit(self.requests.record(provider, system=prepared.system, messages=prepared.messages,
                                              tools=tools, settings=sent))
                source = provider.stream(system=prepared.system, messages=prepared.messages, tools=tools,
                                         settings=sent)
                async with _closing(source) as chunks:
                    async for chunk in chunks:
                        if isinstance(chunk, _WRITTEN):  # the most frequent first: one check for a text chunk
                            started = True
                            written += len(chunk.text or "")
                            yield chunk
                            continue
                        if not isinstance(chunk, StatusChunk):  # waits (connecting, queued) are no answer yet
                            started = True
                        if isinstance(chunk, UsageChunk):
                            self._observe(prepared, chunk, emit)
                            usage = chunk
                        elif isinstance(chunk, ToolCallChunk):
                            written += len(chunk.arguments) if isinstance(chunk.arguments, str) else 0
                        elif isinstance(chunk, FinishChunk) and chunk.reason == "length":
                            cut = chunk  # said at the end: the usage that tells why may come after it
                            continue
                        yield chunk
                if cut is not None:
                    full = self._window_full(prepared, usage, sent, written)
                    yield FinishChunk("context_full") if full else cut
                return
            except Exception as exc:
                if started or not is_context_overflow(exc):
                    raise
                if retried or self.policy == "error":
                    raise ContextOverflowError(self._refused_message(provider, prepared, exc, retried),
                                               provider=getattr(exc, "provider", None),
                                               status_code=getattr(exc, "status_code", None),
                                               window=prepared.window.tokens if prepared.window else None,
                                               reason=getattr(exc, "reason", None) or "context") from exc
                retried = True
                log.info("%s refused the request as too long (%s); %s and retrying once",
                         provider.model_id or "the model", exc,
                         "compacting" if self.policy == "compact" else "truncating")
                self._learn(provider, exc, prepared)
                prepared = await self.prepare(provider, system=system, history=history, tools=tools,
                                              settings=settings, emit=emit, trigger="overflow")

    async def prepare(self, provider: Provider, *, system: str | None, history: Sequence[Message], tools: Sequence[Any],
                      settings: Mapping[str, Any] | None = None, emit: Emit | None = None,
                      trigger: Literal["threshold", "overflow"] = "threshold") -> Prepared:
        """The request for the next model call (see the module docstring)."""
        self._check(history)
        info = await self.window(provider)
        if info is None:  # nothing known to keep within: the conversation as it is
            return Prepared(system, self._view(history, None, {}))
        if self._corrected_for != _key(provider):  # another model: its server's counts are not known yet
            key = _key(provider)
            self._corrected_for, self._anchor = key, None
            self._ratio = _calibrations.get(key, 1.0)  # what its server said to another robot of this process
            self._calibrated = key in _calibrations
        counter = await self.counter(provider)
        self._tools = list(tools)
        params = _tool_params(tools)
        limit = result_limit(info.tokens, self.max_result_chars)
        view = self._view(history, limit, params)
        if counter.blocking and not (view and counter.counted(view[-1])):  # the tokenizer is in another process
            await asyncio.to_thread(self._count_ahead, counter, system, view, tools)
        elif len(view) > COUNT_IN_THREAD and not counter.counted(view[len(view) // 2]):
            await asyncio.to_thread(counter.messages, view)  # a long thread opened again: count it off the loop
        prepared = self._measure(system, view, tools, counter, info)
        window = info.tokens
        # An estimate no server has checked yet errs high (by up to ESTIMATE_HIGH): it compacts only when even
        # its least plausible count is past the threshold, and refuses nothing; the server says (its count, or
        # its refusal, which compacts and retries once).
        sure = self._sure(provider, counter) or trigger == "overflow"
        likely = prepared.used if sure else prepared.used / ESTIMATE_HIGH
        over = likely > self.threshold * window or trigger == "overflow"
        hard = self._hard_limit(window, settings or {})
        if over and self.policy == "compact":
            prepared = await self._compact_to_fit(provider, system=system, history=history, tools=tools,
                                                  counter=counter, info=info, limit=limit, params=params,
                                                  prepared=prepared, trigger=trigger, emit=emit)
        elif over and self.policy == "truncate":
            prepared = self._truncate(system, history, tools, counter, info, limit, params, prepared)
        if prepared.used > hard and sure:
            raise ContextOverflowError(self._too_long_message(provider, prepared, hard),
                                       provider=provider.model_id or None, window=window)
        self.last = prepared
        if emit is not None:
            emit(ev.ContextUsage(used=prepared.used, window=window, estimated=True,
                 system_tokens=prepared.system_tokens, tools_tokens=prepared.tools_tokens, threshold=self.threshold,
                 biggest_tools=prepared.biggest_tools))
        return prepared

    # -- compacting -------------------------------------------------------------------------------
    async def compact(self, provider: Provider, *, system: str | None, history: Sequence[Message],
                      tools: Sequence[Any] = (), trigger: Literal["threshold", "overflow", "manual"] = "manual",
                      keep_budget: int | None = None) -> ev.ContextCompacted | None:
        """Summarise the older messages now (``/compact``): everything before the latest turn, or as much
        as needed to keep ``keep_budget`` tokens. Returns the :class:`~workspace.events.ContextCompacted`
        event, not stamped yet (None: nothing to compact).

        Inside the compaction hooks of the run in progress (:mod:`workspace.hooks`): an ``on_compaction``
        hook that sets ``ctx.compacted_messages`` to a text makes it the summary (the model is not asked)."""
        registrations = hooks.current_scope()
        if not registrations:
            return await self._compact(provider, system=system, history=history, tools=tools, trigger=trigger,
                                       keep_budget=keep_budget)
        ctx = hooks.CompactionHookContext(robot=hooks.current_robot(), messages_before=tuple(history),
                                          strategy=trigger)

        async def core() -> ev.ContextCompacted | None:
            await hooks.call_each(registrations, "on_compaction", ctx)
            given = ctx.compacted_messages
            if given is not None and not isinstance(given, str):
                raise TypeError(f"on_compaction set compacted_messages to {type(given).__name__}: set it to the "
                                "summary's text (the model is sent it in place of the older messages)")
            event = await self._compact(provider, system=system, history=history, tools=tools, trigger=trigger,
                                        keep_budget=keep_budget, summary=given)
            ctx.compacted_messages = event.summary if event is not None else None
            return event

        event = await hooks.dispatch("compaction", ctx, registrations, core)
        if event is not None and not isinstance(event, ev.ContextCompacted):
            raise TypeError(f"An around_compaction hook returned {type(event).__name__}: return the value of "
                            "'await call_next()'")
        return event

    async def _compact(self, provider: Provider, *, system: str | None, history: Sequence[Message],
                       tools: Sequence[Any], trigger: Literal["threshold", "overflow", "manual"],
                       keep_budget: int | None, summary: str | None = None) -> ev.ContextCompacted | None:
        self._check(history)
        info = await self.window(provider)
        counter = await self.counter(provider)
        tools = tools or self._tools  # on request: the tools of the last call count too
        params = _tool_params(tools)
        limit = result_limit(info.tokens if info else None, self.max_result_chars)
        before = self._measure(system, self._view(history, limit, params), tools, counter, info)
        start = self.compaction.upto if self.compaction is not None else 0
        if keep_budget is None:
            turns = sorted(turn_starts(history))  # the latest turn stays whole
            cut: int | None = turns[-1] if turns and turns[-1] > start else None
        else:
            cut = choose_cut(history, lambda m: counter.message(self._shortened(m, limit, params)), start=start,
                             keep_budget=keep_budget)
        if cut is None or cut <= start:
            return None
        window = info.tokens if info is not None else self.default_window
        summary_tokens = self._summary_tokens(window)
        summarizer = self._summarizer(provider)
        summary_window = await self.window(summarizer) if summarizer is not provider else info
        budget = int((summary_window.tokens if summary_window else window) * 0.75) - summary_tokens
        problem = None
        if summary is None:
            summary, problem = await summarise(summarizer, history[start:cut],
                                               previous=self.compaction.summary if self.compaction else None,
                                               input_budget=max(budget, 400), max_tokens=summary_tokens,
                                               usage=self._spent)
        self.compaction = Compaction(summary, cut)
        self._anchor = None
        after = self._measure(system, self._view(history, limit, params), tools, counter, info)
        if problem:
            log.info("compaction of %d message(s) used a plain list: %s", cut - start, problem)
        return ev.ContextCompacted(summary=summary, replaced_count=cut, newly_replaced=cut - start,
                                   tokens_before=before.used, tokens_after=after.used,
                                   window=info.tokens if info else 0, trigger=trigger, model=summarizer.model_id)

    async def _compact_to_fit(self, provider: Provider, *, system: str | None, history: Sequence[Message],
                              tools: Sequence[Any], counter: TokenCounter, info: WindowInfo, limit: int | None,
                              params: Mapping[str, Any], prepared: Prepared,
                              trigger: Literal["threshold", "overflow"], emit: Emit | None) -> Prepared:
        window = info.tokens
        target = self.threshold * window
        fixed = prepared.system_tokens + prepared.tools_tokens
        room = max(0.0, target - fixed)
        keep = int(min(self.keep_ratio * window, room * 0.5 - self._summary_tokens(window)))
        for attempt in range(3):
            budget = max(0, keep // (2 ** attempt)) if attempt < 2 else 0
            event = await self.compact(provider, system=system, history=history, tools=tools, trigger=trigger,
                                       keep_budget=budget)
            if event is None:
                break
            if emit is not None:
                emit(event)
            prepared = self._measure(system, self._view(history, limit, params), tools, counter, info)
            if prepared.used <= target:
                break
        return prepared

    def _truncate(self, system: str | None, history: Sequence[Message], tools: Sequence[Any], counter: TokenCounter,
                  info: WindowInfo, limit: int | None, params: Mapping[str, Any], prepared: Prepared) -> Prepared:
        """The request without its oldest whole turns (units within the latest turn if need be)."""
        start = self.compaction.upto if self.compaction is not None else 0
        head = 0
        if self.compaction is not None:
            head = counter.message(summary_message(self.compaction.summary, None)[0])
        room = int(self.threshold * info.tokens) - prepared.system_tokens - prepared.tools_tokens - head - 8
        cut = choose_cut(history, lambda m: counter.message(self._shortened(m, limit, params)), start=start,
                         keep_budget=max(room, 0))
        if cut is None:
            return prepared
        kept = [self._shortened(m, limit, params) for m in history[cut:]]
        if self.compaction is not None:
            message, merged = summary_message(self.compaction.summary, kept[0] if kept else None)
            kept = [message, *kept[1:]] if merged else [message, *kept]
        log.info("context: %d oldest message(s) left out of the request to fit the window", cut - start)
        return self._measure(system, alternating(kept), tools, counter, info)

    # -- counting ---------------------------------------------------------------------------------
    @staticmethod
    def _count_ahead(counter: TokenCounter, system: str | None, view: Sequence[Message], tools: Sequence[Any]) -> None:
        """What :meth:`_measure` counts, counted in a worker thread (the tokenizer keeps each text's count)."""
        counter.text(system or "")
        counter.tools(tools)
        counter.messages(view)

    def _measure(self, system: str | None, messages: list[Message], tools: Sequence[Any], counter: TokenCounter,
                 info: WindowInfo | None) -> Prepared:
        cached_system, cached_counter, system_tokens = self._system
        if cached_system != system or cached_counter is not counter:
            system_tokens = counter.text(system or "") + (MESSAGE_OVERHEAD if system else 0)
            self._system = (system, counter, system_tokens)
        tools_tokens = counter.tools(tools)
        counted = system_tokens + tools_tokens + counter.messages(messages) + 3
        used = round(counted * self._ratio)
        anchor = self._anchor
        if (anchor is not None and anchor.system == system and anchor.tools_tokens == tools_tokens
                and shared_prefix(anchor.messages, messages) == len(anchor.messages)):
            used = anchor.tokens + round(counter.messages(messages[len(anchor.messages):]) * self._ratio)
        return Prepared(system, messages, used=used, counted=counted, window=info, system_tokens=system_tokens,
                        tools_tokens=tools_tokens, biggest_tools=biggest_tools(tools, counter) if tools else {})

    def _observe(self, prepared: Prepared, chunk: UsageChunk, emit: Emit | None) -> None:
        """Correct the counts from the server's (never from an estimate of the provider's)."""
        if prepared.window is None or chunk.input_tokens <= 0 or getattr(chunk, "estimated", False):
            return
        if prepared.counted >= CALIBRATE_FROM:  # a small request's count is mostly the chat template's
            self._ratio = min(4.0, max(0.25, chunk.input_tokens / max(1, prepared.counted)))
            self._calibrated = True
            _calibrations[self._corrected_for or ("", None, None)] = self._ratio
        self._anchor = _Anchor(prepared.system, prepared.messages, prepared.tools_tokens, chunk.input_tokens)
        used = chunk.input_tokens + chunk.output_tokens
        self.last = Prepared(prepared.system, prepared.messages, used=used, counted=prepared.counted,
                             window=prepared.window, system_tokens=prepared.system_tokens,
                             tools_tokens=prepared.tools_tokens, biggest_tools=prepared.biggest_tools)
        if emit is not None:
            emit(ev.ContextUsage(used=used, window=prepared.window.tokens, estimated=False,
                 system_tokens=prepared.system_tokens, tools_tokens=prepared.tools_tokens, threshold=self.threshold,
                 biggest_tools=prepared.biggest_tools))

    def _learn(self, provider: Provider, exc: BaseException, prepared: Prepared) -> None:
        """After a refusal: the window the server named, and counts that say the request was too long."""
        named = getattr(exc, "window", None) or window_from_message(str(exc))
        window = prepared.window.tokens if prepared.window is not None else None
        if named and (window is None or named < window):
            self._learned[_key(provider)] = int(named)
            window = int(named)
        if window and prepared.counted:
            self._ratio = max(self._ratio, (window + 1) / prepared.counted * 1.05)
            self._calibrated = True  # the server said the request was too long: the counts say so from now on
        self._anchor = None

    # -- the answer's room --------------------------------------------------------------------------
    def _local_limit(self, provider: Provider, prepared: Prepared, settings: Mapping[str, Any]) -> Mapping[str, Any]:
        """``settings`` with a ``max_tokens`` for a local model that has none (``local_max_tokens_share`` of its
        window, within the room the request leaves), so a looping small model cannot write until the window
        is full."""
        if (self.local_max_tokens_share <= 0 or settings.get("max_tokens") is not None or prepared.window is None
                or not _local(provider)):
            return settings
        window = prepared.window.tokens
        used = prepared.used if self._calibrated else prepared.used / ESTIMATE_HIGH  # (see prepare)
        room = int(window - used) - 16
        limit = max(64, min(int(window * self.local_max_tokens_share), room))
        return {**settings, "max_tokens": limit}

    def _window_full(self, prepared: Prepared, usage: UsageChunk | None, settings: Mapping[str, Any],
                     written: int) -> bool:
        """Whether an answer the server stopped at "length" stopped because the context window was full (the
        request and the answer filled it), not at the ``max_tokens`` it was given."""
        if prepared.window is None:
            return False
        window = prepared.window.tokens
        margin = max(32, window // 50)
        limit = settings.get("max_tokens")
        limit = limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else None
        if usage is not None and not usage.estimated and usage.input_tokens > 0:
            # (a max_tokens cut to the room the request left counts as the window too)
            return usage.input_tokens + usage.output_tokens >= window - margin
        answer = round(written / CHARS_PER_TOKEN * self._ratio)  # no count from the server: the text's estimate
        if limit is not None and answer >= 0.8 * limit and prepared.used + limit < window - margin:
            return False  # it stopped at the max_tokens it was given, with room left
        return prepared.used + answer >= window - margin

    # -- helpers ----------------------------------------------------------------------------------
    def _sure(self, provider: Provider, counter: TokenCounter) -> bool:
        """Whether the counts may refuse a request before it is sent: a tokenizer counts them, a server's
        report (or refusal) calibrated them, or there is no server to ask (not a language model)."""
        return (counter.tokenizer != "estimate" or self._calibrated
                or not provider.is_language_model)

    def _check(self, history: Sequence[Message]) -> None:
        if self.compaction is not None and self.compaction.upto > len(history):
            log.debug("compaction of %d messages dropped: the history has %d", self.compaction.upto, len(history))
            self.compaction = None

    def _view(self, history: Sequence[Message], limit: int | None, params: Mapping[str, Any]) -> list[Message]:
        """What the model is sent: the summary for the compacted part, and never two user messages in a
        row (a run stopped or failed before its first word: :func:`workspace.messages.alternating`)."""
        return self._cache.alternate(self._compacted_view(history, limit, params))

    def _compacted_view(self, history: Sequence[Message], limit: int | None,
                        params: Mapping[str, Any]) -> Sequence[Message]:
        compaction = self.compaction
        if compaction is None and not limit:
            return history  # (read only: the view copies it)
        start = compaction.upto if compaction is not None else 0
        kept = self._all_shortened(history, limit, params)[start:] if limit else list(history[start:])
        if compaction is None:
            return kept
        first = kept[0] if kept else None
        cached = self._cache.summary
        if cached is not None and cached[0] is compaction and cached[1] is first:
            message, merged = cached[2], cached[3]
        else:
            message, merged = summary_message(compaction.summary, first)
            self._cache.summary = (compaction, first, message, merged)
        return [message, *kept[1:]] if merged else [message, *kept]

    def _all_shortened(self, history: Sequence[Message], limit: int, params: Mapping[str, Any]) -> list[Message]:
        """Every message of ``history`` as the model is sent it (results cut to ``limit``), the list kept for
        the next request: only the messages after the part it shares with the last one are looked at."""
        cached = self._cache.view
        if cached is not None and cached[0] == limit and cached[1] == params:
            inputs, out = cached[2], cached[3]
        else:
            inputs, out = [], []
        shared = shared_prefix(inputs, history)
        del inputs[shared:], out[shared:]
        for index in range(shared, len(history)):
            message = history[index]
            inputs.append(message)
            out.append(self._shortened(message, limit, params))
        self._cache.view = (limit, dict(params), inputs, out)
        return out

    def _shortened(self, message: Message, limit: int | None, params: Mapping[str, Any]) -> Message:
        if not limit or not message.is_tool_result:
            return message
        cache = self._cache.shortened
        found = cache.get(id(message))
        if found is not None and found[0] is message and found[1] == limit:
            return found[2]
        names = params.get(message.tool.name, ())  # type: ignore[attr-defined]
        short = shorten_result_message(message, limit, params=names)  # type: ignore[arg-type]
        if len(cache) > 20_000:
            cache.clear()
        cache[id(message)] = (message, limit, short if short is not None else message)
        return short if short is not None else message

    def _summarizer(self, provider: Provider) -> Provider:
        summarizer = self.summarizer
        if summarizer is None:
            return provider
        if callable(summarizer) and not hasattr(summarizer, "stream"):
            try:
                summarizer = summarizer()
            except Exception as exc:
                log.warning("the compaction model could not be used (%s); the robot's model summarises", exc)
                self.summarizer = None
                return provider
        made: Provider = with_defaults(summarizer)
        self.summarizer = made
        return made

    def _summary_tokens(self, window: int) -> int:
        return int(min(2048, max(128, window * self.summary_ratio)))

    @staticmethod
    def _hard_limit(window: int, settings: Mapping[str, Any]) -> int:
        """The most tokens of a request that leaves room for an answer."""
        wanted = settings.get("max_tokens")
        reserve = min(int(wanted), window // 4) if isinstance(wanted, int) and wanted > 0 else min(1024, window // 8)
        return window - reserve

    def _fixes(self) -> str:
        return ("Start a new thread, compact the conversation (/compact), set a larger window if the server "
                "allows one (llm.context_window in the configuration, or context_window in the robot's front "
                "matter), or use a model with a larger context window")

    def _too_long_message(self, provider: Provider, prepared: Prepared, hard: int) -> str:
        window = prepared.window
        assert window is not None
        model = provider.model_id or "the model"
        what = {"compact": "even after compacting the older messages",
                "truncate": "even without the older turns",
                "error": "(the context policy is 'error', so nothing was compacted; the 'compact' policy would "
                         "summarise older messages)"}[self.policy]
        cause = ""
        if prepared.tools_tokens * 4 >= window.tokens:  # the tools' schemas, not older messages, fill the window
            biggest = ", ".join(f"{name} ({tokens:,})" for name, tokens in prepared.biggest_tools.items())
            cause = (f" The tools' schemas take {prepared.tools_tokens:,} tokens of it (the biggest: {biggest}): "
                     "offer the robot fewer tools (tools: / mcp: in its file, or tools=[...]), or let it search "
                     "for them (a tool_share below 1).")
        return (f"{model}: the request ({prepared.used:,} tokens) does not fit the context window "
                f"({window.tokens:,} tokens, {window.describe()}; {window.tokens - hard:,} kept for the answer) "
                f"{what}.{cause} {self._fixes()}")

    def _refused_message(self, provider: Provider, prepared: Prepared, exc: BaseException, retried: bool) -> str:
        model = provider.model_id or "the model"
        window = prepared.window
        size = f" ({window.tokens:,} tokens, {window.describe()})" if window is not None else ""
        if retried:
            what = "even after " + ("compacting" if self.policy == "compact" else "leaving out the oldest turns")
        else:
            what = "(the context policy is 'error', so nothing was compacted)"
        return (f"{model}: the conversation is longer than the model's context window{size} {what} — the "
                f"server said: {exc}. {self._fixes()}")


def _local(provider: Provider) -> bool:
    """Whether ``provider``'s model runs on a server on this machine."""
    if not provider.is_language_model:
        return False
    local = provider.is_local
    if local is not None:
        return local
    base = provider.api_base
    if base:
        return is_loopback_url(base)
    prefix = (provider.model_id or "").partition("/")[0].lower()
    return prefix in LOCAL_DEFAULT_BASES


def _key(provider: Provider) -> tuple[str, str | None, str | None]:
    """A provider's model and server (what a window and the counts' corrections belong to)."""
    return type(provider).__name__, provider.model_id, provider.api_base


def _tool_params(tools: Sequence[Any]) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for spec in tools:
        parameters = getattr(spec, "parameters", None)
        props = parameters.get("properties") if isinstance(parameters, Mapping) else None
        out[str(getattr(spec, "name", ""))] = tuple(props) if isinstance(props, Mapping) else ()
    return out


@contextlib.asynccontextmanager
async def _closing(source: Any) -> AsyncIterator[Any]:
    """The provider's stream, closed when the caller stops early (``aclose`` when it has one)."""
    try:
        yield source
    finally:
        close = getattr(source, "aclose", None)
        if close is not None:
            with contextlib.suppress(Exception):
                await close()
