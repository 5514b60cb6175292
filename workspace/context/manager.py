"""The context manager of one robot: what of its conversation each model call is sent.

The agent loop asks it for every model call (:meth:`ContextManager.stream` wraps the provider's
stream): the conversation as the model sees it (:mod:`workspace.context.view`: the summary of
compacted messages in their place, oversized tool results cut), counted against the model's window
(:mod:`workspace.context.budget`). Past the threshold (80 % of the window by default) it acts by its
policy (:mod:`workspace.context.policy`):

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

The names of those modules that callers use (:class:`Compaction`, :class:`Prepared`, the policies) are
importable from here too.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Literal

from workspace import events as ev
from workspace import hooks
from workspace.context.budget import DEFAULT_LOCAL_SHARE, ESTIMATE_HIGH, Budget, Prepared, hard_limit
from workspace.context.compaction import Compaction, choose_cut, summarise, turn_starts
from workspace.context.policy import (
    DEFAULT_THRESHOLD,
    POLICIES,
    ContextPolicy,
    check_policy,
    is_context_overflow,
    refused_message,
    too_long_message,
)
from workspace.context.requests import RequestRecorder
from workspace.context.results import result_limit
from workspace.context.tokens import TokenCounter
from workspace.context.view import RequestView, tool_params
from workspace.context.window import DEFAULT_WINDOW, WindowInfo
from workspace.errors import ContextOverflowError
from workspace.messages import Message, same_items
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

__all__ = [
    "DEFAULT_LOCAL_SHARE",
    "DEFAULT_THRESHOLD",
    "POLICIES",
    "Compaction",
    "ContextManager",
    "ContextPolicy",
    "ModelCall",
    "Prepared",
    "check_policy",
    "is_context_overflow",
]

#: Chunks of text the model wrote (counted to tell a full window from the token limit).
_WRITTEN = (TextChunk, ReasoningChunk)

log = logging.getLogger("workspace.context")

Emit = ev.Emit


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
        #: The windows, the counters and the corrections of the counts.
        self._budget = Budget()
        #: The conversation as the model is sent it, kept from one request to the next.
        self._sent = RequestView()
        self._spent: list[UsageChunk] = []
        self._tools: list[Any] = []
        #: The parameters of the tools of the last request, by name (:func:`tool_params`), kept with those tools.
        self._params: dict[str, tuple[str, ...]] = {}

    # -- state ------------------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget the compaction (the conversation was cleared)."""
        self.compaction = None
        self._budget.forget_anchor()
        self._sent = RequestView()

    def restore(self, compaction: Compaction | None) -> None:
        """Take up a compaction recorded earlier (a conversation rebuilt from the store)."""
        self.compaction = compaction if compaction is not None and compaction.upto > 0 else None
        self._budget.forget_anchor()

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
        return await self._budget.window(provider, setting=self.window_setting, default=self.default_window)

    async def counter(self, provider: Provider) -> TokenCounter:
        """The token counter of ``provider``'s model: its tokenizer when the provider has one."""
        return await self._budget.counter(provider)

    # -- one model call ----------------------------------------------------------------------------
    async def stream(self, provider: Provider, *, system: str | None, history: Sequence[Message],
                     tools: Sequence[ToolSpec], settings: Mapping[str, Any],
                     emit: Emit | None = None) -> AsyncIterator[Chunk]:
        """``provider.stream`` for the prepared request; a refusal as too long compacts (or truncates)
        and retries once. The usage of summary requests comes first, as usage chunks of their model.
        (The agent loop's model turn drives the same :class:`ModelCall` itself, with no generator layer of the
        manager's and no coroutine of its own between the provider's stream and the turn:
        :meth:`workspace.agent.turn.ModelTurns._model_turn`.)"""
        call = await self.begin(provider, system=system, history=history, tools=tools, settings=settings, emit=emit)
        while True:
            for spent in self.take_usage():  # the summaries' tokens count like the run's own
                yield spent
            try:
                chunks = call.send()
                try:
                    async for chunk in chunks:
                        if call.see(chunk):
                            yield chunk
                finally:
                    await close_stream(chunks)
                last = call.last()
                if last is not None:
                    yield last
                return
            except Exception as exc:
                if not await call.retry(exc):
                    raise

    async def begin(self, provider: Provider, *, system: str | None, history: Sequence[Message],
                    tools: Sequence[ToolSpec], settings: Mapping[str, Any], emit: Emit | None,
                    unheard: Callable[[], bool] | None = None) -> ModelCall:
        """One model call, its request prepared (a missing key said first): its reader sends each attempt
        (:meth:`ModelCall.send`), hands it every chunk (:meth:`ModelCall.see`; a text chunk may instead be counted
        in place: ``started`` set and its characters added to ``written``), then takes the finish held back
        (:meth:`ModelCall.last`), and after a failure asks :meth:`ModelCall.retry` whether to send it again
        (:meth:`take_usage` first each time: the summaries' usage). ``unheard``: whether nobody reads ``emit``'s
        events now (the request of an attempt nobody can read is not recorded: see :meth:`ModelCall.send`)."""
        provider.check_key()  # a missing key is said before the window or the tokenizer loads a provider's library
        prepared = await self.prepare(provider, system=system, history=history, tools=tools, settings=settings,
                                      emit=emit, unheard=unheard)
        call = ModelCall(self, provider, prepared, system=system, history=history, tools=tools, settings=settings,
                         emit=emit)
        call.unheard = unheard
        return call

    def _observe(self, prepared: Prepared, chunk: UsageChunk, emit: Emit | None,
                 unheard: Callable[[], bool] | None = None) -> None:
        """Correct the counts from the server's, and say its count (``unheard``: see :meth:`prepare`)."""
        last = self._budget.observe(prepared, chunk)
        if last is None:
            return
        self.last = last
        if emit is not None and (unheard is None or not unheard()):
            assert last.window is not None
            emit(ev.ContextUsage(used=last.used, window=last.window.tokens, estimated=False,
                 system_tokens=last.system_tokens, tools_tokens=last.tools_tokens, threshold=self.threshold,
                 biggest_tools=last.biggest_tools))

    async def prepare(self, provider: Provider, *, system: str | None, history: Sequence[Message], tools: Sequence[Any],
                      settings: Mapping[str, Any] | None = None, emit: Emit | None = None,
                      trigger: Literal["threshold", "overflow"] = "threshold",
                      unheard: Callable[[], bool] | None = None) -> Prepared:
        """The request for the next model call (see the module docstring). ``unheard``: whether nobody reads
        ``emit``'s events now (the agent loop's ``AgentRun.unheard``, which takes the number of an event left out):
        a count nobody reads is not built."""
        self._check(history)
        info = await self.window(provider)
        if info is None:  # nothing known to keep within: the conversation as it is
            return Prepared(system, self._view(history, None, {}))
        self._budget.use(provider)
        counter = await self.counter(provider)
        if not same_items(self._tools, tools):  # the run's tools: the same specs at every call (Tool.spec)
            self._tools, self._params = list(tools), tool_params(tools)
        params = self._params
        limit = result_limit(info.tokens, self.max_result_chars)
        view = self._view(history, limit, params)
        await self._budget.count_ahead(counter, system, view, tools)
        prepared = self._budget.measure(system, view, tools, counter, info)
        window = info.tokens
        # An estimate no server has checked yet errs high (by up to ESTIMATE_HIGH): it compacts only when even
        # its least plausible count is past the threshold, and refuses nothing; the server says (its count, or
        # its refusal, which compacts and retries once).
        sure = self._budget.sure(provider, counter) or trigger == "overflow"
        likely = prepared.used if sure else prepared.used / ESTIMATE_HIGH
        over = likely > self.threshold * window or trigger == "overflow"
        hard = hard_limit(window, settings or {})
        if over and self.policy == "compact":
            prepared = await self._compact_to_fit(provider, system=system, history=history, tools=tools,
                                                  counter=counter, info=info, limit=limit, params=params,
                                                  prepared=prepared, trigger=trigger, emit=emit)
        elif over and self.policy == "truncate":
            prepared = self._truncate(system, history, tools, counter, info, limit, params, prepared)
        if prepared.used > hard and sure:
            raise ContextOverflowError(too_long_message(provider.model_id, self.policy, prepared, hard),
                                       provider=provider.model_id or None, window=window)
        self.last = prepared
        if emit is not None and (unheard is None or not unheard()):
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
        params = tool_params(tools)
        limit = result_limit(info.tokens if info else None, self.max_result_chars)
        before = self._budget.measure(system, self._view(history, limit, params), tools, counter, info)
        start = self.compaction.upto if self.compaction is not None else 0
        if keep_budget is None:
            turns = sorted(turn_starts(history))  # the latest turn stays whole
            cut: int | None = turns[-1] if turns and turns[-1] > start else None
        else:
            cut = choose_cut(history, self._sent.cost(counter, limit, params), start=start,
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
        self._budget.forget_anchor()
        after = self._budget.measure(system, self._view(history, limit, params), tools, counter, info)
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
            prepared = self._budget.measure(system, self._view(history, limit, params), tools, counter, info)
            if prepared.used <= target:
                break
        return prepared

    def _truncate(self, system: str | None, history: Sequence[Message], tools: Sequence[Any], counter: TokenCounter,
                  info: WindowInfo, limit: int | None, params: Mapping[str, Any], prepared: Prepared) -> Prepared:
        """The request without its oldest whole turns (units within the latest turn if need be)."""
        room = int(self.threshold * info.tokens) - prepared.system_tokens - prepared.tools_tokens - 8
        kept = self._sent.truncated(history, self.compaction, counter=counter, limit=limit, params=params, room=room)
        if kept is None:
            return prepared
        return self._budget.measure(system, kept, tools, counter, info)

    # -- helpers ----------------------------------------------------------------------------------
    def _check(self, history: Sequence[Message]) -> None:
        if self.compaction is not None and self.compaction.upto > len(history):
            log.debug("compaction of %d messages dropped: the history has %d", self.compaction.upto, len(history))
            self.compaction = None

    def _view(self, history: Sequence[Message], limit: int | None, params: Mapping[str, Any]) -> list[Message]:
        """What the model is sent (:class:`~workspace.context.view.RequestView`)."""
        return self._sent(history, self.compaction, limit, params)

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


class ModelCall:
    """One model call through the manager (:meth:`ContextManager.stream`, and the agent loop's model turn):
    each attempt's request recorded and sent (:meth:`send`), what the manager reads of its chunks (:meth:`see`:
    whether the answer began, the characters written, the server's usage, a finish at "length" held to the
    end, :meth:`last`), and one retry of a refusal as too long (:meth:`retry`)."""

    __slots__ = ("cut", "emit", "history", "manager", "prepared", "provider", "retried", "sent",
                 "settings", "started", "system", "tools", "unheard", "usage", "written")

    def __init__(self, manager: ContextManager, provider: Provider, prepared: Prepared, *, system: str | None,
                 history: Sequence[Message], tools: Sequence[ToolSpec], settings: Mapping[str, Any],
                 emit: Emit | None) -> None:
        self.manager = manager
        self.provider = provider
        self.prepared = prepared
        self.system = system
        self.history = history
        self.tools = tools
        self.settings = settings
        self.emit = emit
        #: Whether nobody reads ``emit``'s events now (None: someone always does; see :meth:`send`).
        self.unheard: Callable[[], bool] | None = None
        self.retried = False
        self.started = False
        self.sent: Mapping[str, Any] = settings
        self.usage: UsageChunk | None = None
        self.cut: FinishChunk | None = None
        self.written = 0

    def send(self) -> AsyncIterator[Chunk]:
        """The provider's stream of this attempt (its request recorded first: :meth:`attempt`)."""
        sent = self.attempt()
        prepared = self.prepared
        return self.provider.stream(system=prepared.system, messages=prepared.messages, tools=self.tools,
                                    settings=sent)

    def attempt(self) -> Mapping[str, Any]:
        """Begin an attempt: its request recorded, and the settings it is sent with (the agent loop's model turn
        reads the provider's chunks itself: :meth:`workspace.agent.turn.ModelTurns._model_turn`)."""
        manager, provider, prepared = self.manager, self.provider, self.prepared
        self.started, self.usage, self.cut, self.written = False, None, None, 0
        self.sent = sent = manager._budget.local_limit(provider, prepared, self.settings,
                                                       share=manager.local_max_tokens_share)
        if self.emit is not None and (self.unheard is None or not self.unheard()):
            # The request as sent (its own record even when a retry sends it again).
            self.emit(manager.requests.record(provider, system=prepared.system, messages=prepared.messages,
                                              tools=self.tools, settings=sent))
        elif self.emit is not None:
            # Nobody reads the run's events (``Robot.arun`` with no observer): the record would be dropped unread,
            # so it is not made (its walk of the body, ~40 us a call: bench/bench_loop_parts.py). The next one
            # recorded is whole: it cannot point back to a request nobody saw.
            manager.requests.skip()
        return sent

    def see(self, chunk: Chunk) -> bool:
        """Read ``chunk``; whether it goes on to the reader now (a finish at "length" waits for :meth:`last`)."""
        if isinstance(chunk, _WRITTEN):  # the most frequent first: one check for a text chunk
            self.started = True
            self.written += len(chunk.text or "")
            return True
        if not isinstance(chunk, StatusChunk):  # waits (connecting, queued) are no answer yet
            self.started = True
        if isinstance(chunk, UsageChunk):
            self.manager._observe(self.prepared, chunk, self.emit, self.unheard)
            self.usage = chunk
        elif isinstance(chunk, ToolCallChunk):
            self.written += len(chunk.arguments) if isinstance(chunk.arguments, str) else 0
        elif isinstance(chunk, FinishChunk) and chunk.reason == "length":
            self.cut = chunk  # said at the end: the usage that tells why may come after it
            return False
        return True

    def last(self) -> FinishChunk | None:
        """The finish held back: a full context window, or the "length" the server said."""
        if self.cut is None:
            return None
        full = self.manager._budget.window_full(self.prepared, self.usage, self.sent, self.written)
        return FinishChunk("context_full") if full else self.cut

    async def retry(self, exc: Exception) -> bool:
        """After ``exc`` failed the attempt: True when the request was compacted (or truncated) to be sent
        again, once; False when ``exc`` is to be raised as it is; raises a refusal that cannot be helped."""
        manager, provider, prepared = self.manager, self.provider, self.prepared
        if self.started or not is_context_overflow(exc):
            return False
        if self.retried or manager.policy == "error":
            raise ContextOverflowError(refused_message(provider.model_id, manager.policy, prepared, exc, self.retried),
                                       provider=getattr(exc, "provider", None),
                                       status_code=getattr(exc, "status_code", None),
                                       window=prepared.window.tokens if prepared.window else None,
                                       reason=getattr(exc, "reason", None) or "context") from exc
        self.retried = True
        log.info("%s refused the request as too long (%s); %s and retrying once",
                 provider.model_id or "the model", exc,
                 "compacting" if manager.policy == "compact" else "truncating")
        manager._budget.learn(provider, exc, prepared)
        self.prepared = await manager.prepare(provider, system=self.system, history=self.history, tools=self.tools,
                                              settings=self.settings, emit=self.emit, trigger="overflow",
                                              unheard=self.unheard)
        return True


async def close_stream(source: Any) -> None:
    """Close the provider's stream once read, or when the caller stops early (``aclose`` when it has one): a
    plain ``finally`` around the reading, no context manager's generator made for every call."""
    close = getattr(source, "aclose", None)
    if close is not None:
        with contextlib.suppress(Exception):
            await close()
