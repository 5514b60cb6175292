"""The bridge: consumes a run's events (a RecordedRun or an AgentRun) and re-emits them
as Qt signals, on the GUI thread, without ever blocking the event loop.

Text deltas (and thinking deltas) are coalesced: they are joined and emitted at most once per
``flush_ms`` (16 ms by default), so a view renders at a steady rate whatever the stream rate. The
first delta of a stretch of text (the first words of an answer, or of the text after a tool call)
goes out at once: that is what the person is waiting for, and waiting for the timer's next tick
added 0-16 ms to it.
Every other event first flushes pending text (so order is kept) and is emitted at once.
Events for the trace and the docks are batched on the same timer, a stream's deltas joined in the batch
as well: the next token of the text streaming now costs the window one list append (and a clock read every
``CLOCK_EVERY`` tokens), not a signal, a call, a join in the inspector or an event for each dock, however many
tokens a flush carries (a code block's KB is half as many tokens again as prose's): the tokens are folded into
the view's pending text and the batch once, when another event comes or the bridge flushes.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterable
from functools import cache
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal

if TYPE_CHECKING:
    # Imported where used: the bridge exists before the window's first paint, the events need not.
    from workspace import events as ev

#: Live deltas of one stream within this long (s) of the first are one event for the trace and the docks, as
#: the store writes them (its ``flush_interval``): a thread grown live keeps the events a reopened one does.
JOIN_DELTAS_S = 0.25
#: ``consume`` reads the clock (to yield to the window's loop every ``yield_every_s``) once every this many tokens
#: of a text streaming on, not for each (16 tokens take the loop some 30 us).
CLOCK_EVERY = 16
#: ``_State.join_until`` when no stream takes its next tokens by the fast path (no time is before it).
NO_JOIN = float("-inf")


class _State:
    """What the bridge holds between events, in a plain object: read and written per token, and an attribute
    of a QObject costs three times a plain one's to read (shiboken looks for a signal or property first)."""

    __slots__ = ("announced", "armed", "batch_key", "batch_kind", "batch_parts", "batch_ts", "generation", "join_robot",
                 "join_run", "join_until", "joined", "own_clock", "pending_delta", "pending_events", "pending_key",
                 "pending_reasoning", "pending_text", "pending_ts", "reasoning_delta", "reasoning_key", "reasoning_ts",
                 "stretch")

    def __init__(self, own_clock: bool) -> None:
        self.own_clock = own_clock
        self.pending_text: list[str] = []
        self.pending_key: tuple[str, str] | None = None
        self.pending_delta: ev.TextDelta | None = None
        #: When the first of the pending deltas came (the joined delta's ``ts``).
        self.pending_ts: float | None = None
        self.pending_reasoning: list[str] = []
        self.reasoning_key: tuple[str, str] | None = None
        self.reasoning_delta: ev.ReasoningDelta | None = None
        self.reasoning_ts: float | None = None
        self.pending_events: list[ev.Event] = []
        #: The texts of the deltas the batch's last event stands for (it is the first of them), of which class,
        #: stream (run, robot) and time: the batch's deltas are joined as they come, a list append per token.
        self.batch_parts: list[str] = []
        self.batch_kind: type | None = None
        self.batch_key: tuple[str, str] | None = None
        self.batch_ts = 0.0
        #: Whether the flush timer runs (asked per token: a Python flag, not a call into Qt).
        self.armed = False
        #: The run and robot whose text is streaming now (None: another event came since the last text).
        self.stretch: tuple[str, str] | None = None
        #: Whether ``running_changed(True)`` went out for the runs being consumed.
        self.announced = False
        #: Counts :meth:`RunBridge.release` calls: a consume started before the last one feeds nothing more.
        self.generation = 0
        #: The next tokens of the text streaming now, as they came (one list append a token, nothing else): the
        #: stream they join (its run and robot) and the time until which they do (the batch's first delta's time
        #: plus :data:`JOIN_DELTAS_S`; :data:`NO_JOIN`: no stream takes tokens so, each delta goes through the whole routing).
        #: They are folded into the view's pending text and the batch (:func:`_fold`) once, when the bridge next
        #: routes an event or flushes, not one by one.
        self.joined: list[ev.TextDelta] = []
        self.join_run = self.join_robot = ""
        self.join_until = NO_JOIN


class RunBridge(QObject):
    """One object between the core's event stream and the widgets.

    Every event reaches ``view_event`` (what the chat's presenter shows) and the ``events_batched``
    batches (the trace); a kind has a signal of its own only when a part of the window subscribes to
    it, so a new event kind needs nothing here (a test keeps every signal subscribed).
    """

    #: The first event of a run (RunStarted): the changes dock clears its "applied…" message.
    run_started = Signal(object)
    #: Coalesced text: (run_id, robot, text appended since the last emission): the context meter's
    #: running estimate.
    text_appended = Signal(str, str, str)
    #: ChangeProposed / ChangeDecided: the changes dock.
    change_proposed = Signal(object)
    change_decided = Signal(object)
    #: Usage: the run's token and cost totals in the status bar.
    usage_reported = Signal(object)
    #: How full the model's context window is (ContextUsage), before and after each model call.
    context_usage = Signal(object)
    #: Older messages were summarised for the model (ContextCompacted): the context meter.
    context_compacted = Signal(object)
    #: The terminal event (RunFinished / RunFailed / RunCancelled) of the run, not of a run inside it.
    run_ended = Signal(object)
    #: Every event for the views that show them (the chat's presenter), in order, as it comes;
    #: text deltas joined: one TextDelta per flush (the last delta's seq, the first one's ``ts``, as the
    #: store's joined row has it: a live and a reopened time to first token are the same) for all that
    #: arrived (and one ReasoningDelta for the thinking).
    view_event = Signal(object)
    #: Every event, batched on the flush timer: list[Event]. The text deltas of a stream (and the thinking's)
    #: that a batch holds are one delta (the first one's ``seq`` and time, the texts joined; a new one past
    #: :data:`JOIN_DELTAS_S` after it), as the store's joined row has them.
    events_batched = Signal(list)
    running_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None, *, flush_ms: int = 16, yield_every_s: float = 0.004,
                 own_clock: bool = True) -> None:
        """``own_clock=False``: the owner calls :meth:`flush` on a frame clock of its own (several bridges
        flushed in one pass, so their views lay out and paint once per frame, not once per bridge)."""
        super().__init__(parent)
        self._s = _State(own_clock)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(flush_ms)
        self._timer.timeout.connect(self.flush)
        self._yield_every = yield_every_s
        self._active = 0

    @property
    def running(self) -> bool:
        return self._active > 0

    async def consume(self, run: AsyncIterable[ev.Event], *, announce: bool = False) -> ev.TerminalEvent | None:
        """Feed every event of ``run`` through the bridge; returns the terminal event. ``announce``: say
        ``running_changed(True)`` now, not with the first event (a run already under way, shown again).

        Yields to the Qt event loop at least every ``yield_every_s`` seconds of work, so
        painting and input keep going even when events arrive faster than they render.
        """
        import asyncio

        from workspace import events as ev

        self._active += 1  # ``running`` is True from now on
        state = self._s  # per token: a local, not an attribute of the QObject
        generation = state.generation
        if announce and not state.announced:
            state.announced = True
            self.running_changed.emit(True)
        terminal: ev.TerminalEvent | None = None
        kinds = _delta_kinds()
        text_delta = kinds[0]
        join = state.joined.append  # (the list is cleared, never replaced)
        clock = time.perf_counter
        yield_every = self._yield_every
        last_yield = clock()
        tokens = 0
        try:
            async for event in run:
                # The next token of the text streaming now: one list append (see _State.joined), and the clock
                # read every CLOCK_EVERY tokens, not each. (A release ends the stream's joining: the next delta
                # comes this way no more, and the routing below sees the release; a consume released, not
                # cancelled, never joins the tokens of a consume started after it.)
                if (type(event) is text_delta and event.ts < state.join_until and event.run_id == state.join_run
                        and event.robot == state.join_robot and generation == state.generation):
                    join(event)
                    tokens += 1
                    if tokens % CLOCK_EVERY:
                        continue
                else:
                    if generation != state.generation:  # released: the run goes on without the views
                        break
                    if not state.announced:
                        # Said with the run's first event: the views' "running" updates (the Stop button,
                        # the status bar, the thread list) then happen while the request is on its way to
                        # the model, not before it leaves.
                        state.announced = True
                        self.running_changed.emit(True)
                    self._feed(event, kinds)
                    if event.terminal and isinstance(event, ev.TERMINAL) and not event.nested:  # not a nested run's
                        terminal = event
                if clock() - last_yield > yield_every:
                    await asyncio.sleep(0)
                    last_yield = clock()
        finally:
            if generation == state.generation:
                self._finish_consume()
        return terminal

    def _finish_consume(self) -> None:
        self.flush()
        self._active -= 1
        if self._active == 0:
            if not self._s.announced:  # a run that ended before its first event: the views still see both
                self.running_changed.emit(True)
            self._s.announced = False
            self.running_changed.emit(False)

    def release(self) -> None:
        """The views leave the runs being consumed (another thread opens): nothing more of theirs reaches
        them — text not yet shown is dropped, not flushed into the next thread — and ``running_changed(False)``
        says the open thread has no run going. The runs themselves go on (their recording does not depend on
        the bridge); a consume of them started before this call ends at its next event."""
        self._s.generation += 1
        self._timer.stop()
        self._s.armed = False
        self._s.joined.clear()
        self._s.join_until = NO_JOIN
        self._s.batch_parts.clear()
        self._s.batch_kind = self._s.batch_key = None
        self._s.pending_text.clear()
        self._s.pending_reasoning.clear()
        self._s.pending_key = self._s.reasoning_key = self._s.stretch = None
        self._s.pending_delta = None
        self._s.reasoning_delta = None
        self._s.pending_ts = self._s.reasoning_ts = None
        self._s.pending_events.clear()
        was_running, self._active = self._active > 0, 0
        if was_running:
            announced, self._s.announced = self._s.announced, False
            if announced:
                self.running_changed.emit(False)

    def feed(self, event: ev.Event) -> None:
        """Route one event (synchronous, cheap): the next token of the text streaming now is joined as
        ``consume``'s loop joins it."""
        state = self._s
        kinds = _delta_kinds()
        text_delta = kinds[0]
        if (type(event) is text_delta and event.ts < state.join_until
                and event.run_id == state.join_run and event.robot == state.join_robot):
            state.joined.append(event)
            return
        self._feed(event, kinds)

    def _feed(self, event: ev.Event, kinds: tuple[type[ev.TextDelta], type[ev.ReasoningDelta]]) -> None:
        """:meth:`feed` (bar the next token of the text streaming now), given the delta classes (``consume``
        looks them up once, not per token)."""
        state = self._s
        kind = type(event)
        if state.joined:
            _fold(state)
        if kind is kinds[0] or kind is kinds[1]:
            self._batch_delta(event, kind)  # type: ignore[arg-type]  # one of the two delta classes
        else:
            if state.batch_kind is not None:
                self._settle_batch()
            state.pending_events.append(event)
        self._emit(event, kinds)
        if kind is kinds[0]:
            key = (event.run_id, event.robot)
            if state.stretch == key and state.batch_kind is kind and state.batch_key == key:
                # The text streams on: its next tokens (of this stream, within the batch's join window) are
                # joined as they come (see _State.joined) until another event comes or the bridge flushes.
                state.join_run, state.join_robot = key
                state.join_until = state.batch_ts + JOIN_DELTAS_S
        if state.own_clock and not state.armed:
            state.armed = True
            self._timer.start()

    def _batch_delta(self, event: ev.TextDelta | ev.ReasoningDelta, kind: type) -> None:
        """A delta into the batch: its text joins the batch's last delta when it is of the same stream (and
        within :data:`JOIN_DELTAS_S` of its first), else it is the batch's next event."""
        key = (event.run_id, event.robot)
        if kind is self._s.batch_kind and key == self._s.batch_key and event.ts - self._s.batch_ts < JOIN_DELTAS_S:
            self._s.batch_parts.append(event.text)
            return
        if self._s.batch_kind is not None:
            self._settle_batch()
        self._s.pending_events.append(event)
        self._s.batch_kind, self._s.batch_key, self._s.batch_ts = kind, key, event.ts
        self._s.batch_parts.append(event.text)

    def _settle_batch(self) -> None:
        """The batch's last delta becomes the one event of the deltas it stands for (their texts joined)."""
        self._s.join_until = NO_JOIN  # the next delta starts a batch: it takes the whole routing
        parts = self._s.batch_parts
        if len(parts) > 1:
            first = self._s.pending_events[-1]
            assert isinstance(first, _delta_kinds())
            self._s.pending_events[-1] = first.replace(text="".join(parts))
        parts.clear()
        self._s.batch_kind = self._s.batch_key = None

    def _emit(self, event: ev.Event, kinds: tuple[type[ev.TextDelta], type[ev.ReasoningDelta]]) -> None:
        """Every event reaches ``view_event``, in order (text and thinking deltas joined); text deltas
        also ``text_appended`` (coalesced), and the kinds a part of the window subscribes to their own
        signal."""
        text_delta, reasoning_delta = kinds  # not an import per event: one costs ~10 µs, a token's
        if type(event) is text_delta:
            if self._s.pending_reasoning:
                self._flush_reasoning()  # the thinking before it goes out first: order is kept
            key = (event.run_id, event.robot)
            if self._s.pending_key != key and self._s.pending_key is not None:
                self._flush_text()
            self._s.pending_key = key
            self._s.pending_delta = event
            if not self._s.pending_text:
                self._s.pending_ts = event.ts
            self._s.pending_text.append(event.text)
            if self._s.stretch != key:  # the first words of an answer: shown now, not on the next tick
                self._s.stretch = key
                self._flush_text()
            return
        self._s.stretch = None
        if type(event) is reasoning_delta:
            self._flush_text()
            key = (event.run_id, event.robot)
            if self._s.reasoning_key is not None and self._s.reasoning_key != key:
                self._flush_reasoning()
            self._s.reasoning_key = key
            self._s.reasoning_delta = event
            if not self._s.pending_reasoning:
                self._s.reasoning_ts = event.ts
            self._s.pending_reasoning.append(event.text)
            return
        from workspace import events as ev

        self._flush_reasoning()
        self._flush_text()  # the text before it goes out first: order is kept
        self.view_event.emit(event)
        match event:
            case ev.RunStarted():
                self.run_started.emit(event)
            case ev.ChangeProposed():
                self.change_proposed.emit(event)
            case ev.ChangeDecided():
                self.change_decided.emit(event)
            case ev.Usage():
                self.usage_reported.emit(event)
            case ev.ContextUsage():
                self.context_usage.emit(event)
            case ev.ContextCompacted():
                self.context_compacted.emit(event)
            case ev.RunFinished() | ev.RunFailed() | ev.RunCancelled():
                self.flush()
                if not event.nested:  # the end of a run inside the run (a task's, a robot as a tool's) is not it
                    self.run_ended.emit(event)
            case _:
                pass  # the views take every other kind from view_event (the chat's presenter)

    def _flush_text(self) -> None:
        if self._s.pending_text and self._s.pending_key is not None:
            text = "".join(self._s.pending_text)
            self._s.pending_text.clear()
            run_id, robot = self._s.pending_key
            last, self._s.pending_delta = self._s.pending_delta, None
            first_ts, self._s.pending_ts = self._s.pending_ts, None
            if last is not None:
                self.view_event.emit(last.replace(text=text, ts=first_ts if first_ts is not None else last.ts))
            self.text_appended.emit(run_id, robot, text)

    def _flush_reasoning(self) -> None:
        if self._s.pending_reasoning and self._s.reasoning_key is not None:
            text = "".join(self._s.pending_reasoning)
            self._s.pending_reasoning.clear()
            last, self._s.reasoning_delta = self._s.reasoning_delta, None
            first_ts, self._s.reasoning_ts = self._s.reasoning_ts, None
            if last is not None:
                self.view_event.emit(last.replace(text=text, ts=first_ts if first_ts is not None else last.ts))

    def flush(self) -> None:
        """Emit pending text and the pending event batch now."""
        self._timer.stop()
        self._s.armed = False
        if self._s.joined:
            _fold(self._s)
        self._flush_reasoning()
        self._flush_text()
        if self._s.batch_kind is not None:
            self._settle_batch()
        if self._s.pending_events:
            batch, self._s.pending_events = self._s.pending_events, []
            self.events_batched.emit(batch)


def _fold(state: _State) -> None:
    """The tokens joined as they came (:attr:`_State.joined`) into the view's pending text and the batch's last
    delta, once for all of them: their texts, the first one's time when no text was pending, the last one."""
    joined = state.joined
    texts = [event.text for event in joined]
    state.batch_parts += texts
    if not state.pending_text:
        state.pending_ts = joined[0].ts
    state.pending_text += texts
    state.pending_delta = joined[-1]
    joined.clear()


@cache
def _delta_kinds() -> tuple[type[ev.TextDelta], type[ev.ReasoningDelta]]:
    """The two kinds of event the bridge joins (imported on first use, as the events are)."""
    from workspace import events as ev

    return ev.TextDelta, ev.ReasoningDelta


def event_summary(event: ev.Event) -> str:
    """A one-line description of an event for the trace view."""
    from workspace import events as ev

    match event:
        case ev.TextDelta() | ev.ReasoningDelta():
            return repr(event.text)[:120]
        case ev.Reasoning():
            return f"thinking: {(event.text[:110] + '…') if len(event.text) > 110 else event.text}"
        case ev.RunStatus():
            wait = f" (in {event.retry_in:.3g} s)" if event.retry_in is not None else ""
            return f"{event.state}{wait}: {event.detail}" if event.detail else event.state
        case ev.Text():
            return (event.text[:120] + "…") if len(event.text) > 120 else event.text
        case ev.ToolUse() | ev.ApprovalRequested():
            return f"{event.name} {_short(event.input)}"
        case ev.ApprovalDecided():
            extra = f" — {event.reason}" if event.reason else ""
            return f"{event.name}: {event.decision} ({event.scope}){extra}"
        case ev.ToolResult():
            return f"{event.name} ok in {event.duration * 1000:.0f} ms: {_short(event.payload)}"
        case ev.ToolError():
            return f"{event.name} error: {_short(event.error)}"
        case ev.ToolProgress():
            return f"{event.name} {event.progress:g}" + (f"/{event.total:g}" if event.total is not None else "") + \
                (f" {event.message}" if event.message else "")
        case ev.ToolOutput():
            return f"{event.name}: {len(event.text):,} characters of output"
        case ev.MemoryChanged():
            return f"{event.key} = {_short(event.value)} (by {event.writer or '?'})"
        case ev.Usage():
            cost = f", ${event.cost:.4f}" if event.cost is not None else ", cost unknown"
            mark = "~" if event.estimated else ""
            return f"{mark}{event.input_tokens} in / {mark}{event.output_tokens} out{cost}"
        case ev.ContextUsage():
            share = f" ({event.used / event.window:.0%})" if event.window else ""
            return f"{event.used:,} / {event.window:,} tokens{share}{' estimated' if event.estimated else ''}"
        case ev.ModelChanged():
            return event.describe()
        case ev.ContextCompacted():
            return (f"{event.newly_replaced or event.replaced_count} messages summarised: "
                    f"{event.tokens_before:,} → {event.tokens_after:,} tokens ({event.trigger})")
        case ev.RunStarted():
            return f"{event.message[:80]!r} on {event.model}"
        case ev.RunFailed():
            return f"{event.error_type}: {event.error}"
        case ev.RunCancelled():
            return event.reason
        case ev.TaskStarted():
            return f"task {event.task}: "
        case ev.TaskFinished():
            return f"task {event.task}: {event.status}"
        case ev.ChangeProposed():
            return f"{len(event.files)} file(s)"
        case ev.McpServers():
            return event.message.replace("\n", " · ")
        case ev.ModelRequest():
            reused = f" (+{event.reused_messages} as before)" if event.reused_messages else ""
            return f"{event.model or '?'}: {len(event.messages)} new message(s){reused}"
        case _:
            return ""  # ChangeDecided, RunFinished, a kind with nothing to add: the trace's row shows its kind


def _short(value: Any, limit: int = 100) -> str:
    import json

    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
