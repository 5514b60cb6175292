"""The tool-use loop: one provider-agnostic async loop that streams events.

``AgentRun`` asks the provider for a streamed completion (:mod:`workspace.agent.turn`), emits
events as they happen, runs the tool calls of a turn concurrently, feeds the results back and
stops when the model answers without tool calls, or at a limit. It never blocks the event loop
(sync tools run in threads), honours cancellation at every await, and always ends with exactly
one terminal event.

Why a run stopped is its result's ``stop_reason`` (:data:`workspace.result.STOP_NOTES` says it
for people): ``stop`` (the model answered), ``length`` (the answer was cut off at the token
limit: :data:`CONTINUE_PROMPT` asks for the rest), ``max_turns``, ``max_cost`` and
``max_total_tokens`` (the run's budget; checked before each model call), ``cancelled``, ``error``.
A robot's budget ledger (``RunSpec.ledger``: :mod:`workspace.agent.budget`) is held before each model
call and settled after it; a spent ledger fails the run with ``BudgetExceeded`` (RobotLab's message).

Stopping a run (:meth:`AgentRun.cancel`) is not the same as the consumer going
away: a stopped run still delivers its ``run_cancelled`` event, carrying what was
produced so far, and leaves the conversation consistent (a partial answer is kept;
tool calls that never finished get an error result saying they were stopped).

The run is given a :class:`~workspace.agent.spec.RunSpec`; its model turns are
:mod:`workspace.agent.turn`, its tool calls :mod:`workspace.agent.tool_calls`, and the event queue every
run shares :mod:`workspace.agent.event_run` (all importable from here, as before).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from workspace import events as ev
from workspace import hooks
from workspace.agent.budget import ledger_call
from workspace.agent.event_run import EventRun
from workspace.agent.guards import DEFAULT_MAX_TOOLS, DoomLoopDetector
from workspace.agent.spec import PendingTools, RunSpec, ToolCallback, servers_message
from workspace.agent.tool_calls import ToolCalls
from workspace.agent.turn import ModelTurns, TurnOutcome
from workspace.attachments import has_images, user_content
from workspace.memory import writer_var
from workspace.messages import Message, TextMessage, ToolCallMessage, ToolMessage, ToolResultMessage
from workspace.providers.base import UsageChunk
from workspace.providers.watchdog import wake
from workspace.result import RobotResult
from workspace.result import Usage as UsageTotals

__all__ = ["CONTINUE_PROMPT", "CUT_OFF", "STOPPED_TOOL_ERROR", "AgentRun", "EventRun", "PendingTools", "RunSpec",
           "ToolCallback", "servers_message"]

STOPPED_TOOL_ERROR = "The user stopped the run before this tool call finished."
#: Finish reasons of an answer cut off: at the token limit (``length``), or by a full context window
#: (``context_full``, said by the context manager); both are the run's ``stop_reason``.
CUT_OFF = ("length", "context_full")
#: The message that asks a model to go on with an answer cut off at the token limit
#: (``ThreadSession.continue_()``, ``Robot.continue_()``).
CONTINUE_PROMPT = ("Your last answer was cut off at the token limit. Continue exactly where it stopped, "
                   "without repeating what you already wrote.")


class AgentRun(ModelTurns, ToolCalls, EventRun):
    """One run of the loop: iterate it for events; ``cancel()`` stops it.

    Iterating starts the run (once). ``await run.wait()`` runs it to the end and
    returns the terminal event; ``run.result`` is the RobotResult afterwards (the
    partial one after a stop or failure).

    One class for the whole loop (model turns, tools, approvals, structured output, runs inside
    it), put together from its halves: :class:`~workspace.agent.turn.ModelTurns` (a model turn) and
    :class:`~workspace.agent.tool_calls.ToolCalls` (a turn's tool calls).
    """

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        self.run_id = spec.run_id
        self.result: RobotResult | None = None
        self.terminal: ev.Event | None = None
        self._queue: asyncio.Queue[ev.Event] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        #: This run's event numbers (when the spec has no shared sequence).
        self._seq = itertools.count(1)
        #: Stamps an event with this run's fields and a number (the fields bound once).
        self._stamp = ev.stamper(run_id=self.run_id, robot=spec.robot, task=spec.task,
                                 parent_run_id=spec.parent_run_id, parent_tool_id=spec.parent_tool_id,
                                 candidate=spec.candidate)
        self._stop_reason: str | None = None
        self._consumed = False
        #: Nobody reads the events (``wait()`` with no observer): they are not queued (see :meth:`wait`).
        self._unread = False
        self._usage = UsageTotals()
        self._output: list[Message] = []
        self._tool_results: list[ToolResultMessage] = []
        self._started = time.monotonic()
        self._memory_remover: Callable[[], None] | None = None
        self._unwatch: list[Callable[[], None]] = []
        self._turn_results: dict[str, ToolResultMessage] = {}
        self._began = False
        self._emit_lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._fallbacks = list(spec.fallbacks)
        self._cost_unknown_noted = False
        self._previous_writer: str | None = None
        #: The model cannot see images: those earlier in the conversation are sent as a line of text.
        self.blind = False
        #: The exception that failed the run (None while it has not failed).
        self.error: BaseException | None = None
        self._tool_count = 0
        self._doom = DoomLoopDetector(spec.doom_loop_threshold) if spec.doom_loop_threshold else None
        #: What :meth:`wait` awaits when nobody reads the events (set as the run ends).
        self._ended: asyncio.Future[None] | None = None

    # -- public -------------------------------------------------------------------------
    def start(self) -> AgentRun:
        if self._task is None:
            self._loop = asyncio.get_running_loop()
            self._loop_thread = threading.get_ident()
            self._task = asyncio.get_running_loop().create_task(self._main(), name=f"run-{self.run_id[:8]}")
        return self

    def cancel(self, reason: str = "stopped by the user") -> None:
        """Stop the run: the stream, in-flight tool calls, everything. Safe to call any time."""
        if self._stop_reason is None:
            self._stop_reason = reason
        if self._task is None:
            self.start()
        # A task cancelled before its first step never runs its body (no terminal event):
        # the run checks the stop reason when it begins instead.
        if self._began and self._task is not None and not self._task.done():
            self._task.cancel()

    # -- emitting -------------------------------------------------------------------------
    def _next_seq(self) -> int:
        """The next event's number: the shared sequence's when the spec has one, else this run's own (a
        counter's ``next`` is one step under the interpreter lock: safe from worker threads without a lock)."""
        sequence = self.spec.sequence
        return sequence() if sequence is not None else next(self._seq)

    def emit(self, built: ev.Event) -> ev.Event:
        """Stamp ``built`` with this run's fields (:func:`workspace.events.stamp`) and add it to the
        stream; safe from worker threads (sync tools, memory observers). Returns the stamped event
        (after the run's terminal event: that one, the new one is dropped).

        The run's own events are numbered by a counter (:meth:`_next_seq`) and stamped by the run's bound
        :func:`workspace.events.stamper` without the lock; a terminal event takes it (exactly one of them, whichever
        thread emits it), and so does every event numbered by a shared sequence (a network's counter, which is a
        plain ``+= 1``: this run's threads do not call it at once).

        An event nobody reads (:meth:`unheard`: the run awaited by :meth:`wait` alone, no observer) takes its number
        and is neither stamped nor delivered: it is returned as it was built (the terminal event is stamped, as
        :meth:`wait` returns it)."""
        if not built.terminal and self.unheard():
            return built
        if built.terminal or self.spec.sequence is not None:
            with self._emit_lock:
                if built.terminal:
                    if self.terminal is not None:
                        return self.terminal  # exactly one terminal event
                    event = self.terminal = self._stamp(built, self._next_seq())
                else:
                    event = self._stamp(built, self._next_seq())
        else:
            event = self._stamp(built, next(self._seq))
        self._put(event)
        return event

    def unheard(self) -> bool:
        """Whether nobody reads the events emitted now (a run awaited by :meth:`wait` alone, no observer): then
        what only its events' readers need (a model request's record) is not worked out. The event left out
        takes its number all the same: the run's events are numbered as when they are read."""
        if not self._unread or self._observers:
            return False
        if self.spec.sequence is not None:  # a shared one is called under the lock (see emit)
            with self._emit_lock:
                self._next_seq()
        else:
            next(self._seq)
        return True

    def piece_emitter(self, kind: type[ev.TextDelta] | type[ev.ReasoningDelta]) -> Callable[[str], object]:
        """What emits a streamed piece of ``kind`` (``kind(text=...)``) from the run's own task: :meth:`emit` in one
        call, the event built with its stamp (no second pass over its fields) and handed to the queue or, nobody
        reading, to the observers (no check of the thread: the model turn runs in the run's task). With a shared
        sequence (a network's) it is :meth:`emit` itself. A model turn emits one per streamed piece."""
        if self.spec.sequence is not None:
            return lambda text: self.emit(kind(text=text))
        spec, seq, queue = self.spec, self._seq, self._queue
        run_id, robot, task, candidate = self.run_id, spec.robot, spec.task, spec.candidate
        parent_run_id, parent_tool_id = spec.parent_run_id, spec.parent_tool_id

        def emit_piece(text: str) -> None:
            if self._unread and not self._observers:  # nobody reads it: its number taken, no event built
                next(seq)
                return
            event = kind(text=text, run_id=run_id, robot=robot, seq=next(seq), task=task, parent_run_id=parent_run_id,
                         parent_tool_id=parent_tool_id, candidate=candidate)
            if not self._unread:
                queue.put_nowait(event)
            else:
                self._observe(event)

        return emit_piece

    def _put(self, event: ev.Event) -> None:
        loop = self._loop
        deliver = self._deliver_unread if self._unread else self._queue.put_nowait
        if loop is not None and threading.get_ident() != self._loop_thread and not loop.is_closed():
            loop.call_soon_threadsafe(deliver, event)
        else:
            deliver(event)

    def _deliver_unread(self, event: ev.Event) -> None:
        """An event of a run nobody iterates: only an observer added since :meth:`wait` began sees it."""
        if self._observers:
            self._observe(event)

    async def wait(self) -> ev.Event:
        """Run to the end, discarding events; return the terminal event.

        Nobody iterating the events and no observer: the run is awaited as a task, its events not queued,
        so the caller is not woken for each of them (``Robot.arun``: ``bench/bench_agent_loop.py``)."""
        if self._consumed or self._observers:
            return await super().wait()
        self._consumed = True
        self._unread = True
        task = self.start()._task
        assert task is not None
        # Woken by the run's own last step (:meth:`_main`), not through asyncio.wait: a done callback takes the
        # event loop one pass more. The callback stays for a task cancelled before its first step.
        ended = self._ended = task.get_loop().create_future()
        task.add_done_callback(lambda _: wake(ended))
        try:
            await ended
        finally:
            if not task.done():  # the caller was cancelled: the run does not go on orphaned
                self.cancel("the consumer stopped listening")
                with contextlib.suppress(BaseException):
                    await asyncio.shield(task)
        assert self.terminal is not None
        return self.terminal

    # -- runs inside this run (a robot used as a tool: workspace.robots_as_tools) -------------------------
    def forward(self, event: ev.Event) -> None:
        """Put an event of a run inside this one into this stream (numbered in this run's order)."""
        with self._emit_lock:
            if self.terminal is not None:
                return
            event = event.replace(seq=self._next_seq())
        self._put(event)

    def add_usage(self, usage: UsageTotals | None) -> None:
        """Count a run inside this one in this run's totals (its model calls have their own usage
        events; this run's next ``usage`` event and its result include them)."""
        if usage is not None:
            self._usage = self._usage + usage

    def child_options(self, call_id: str) -> dict[str, Any]:
        """Run options of a run started by this run's tool call ``call_id``."""
        spec = self.spec
        options: dict[str, Any] = {"parent_run_id": self.run_id, "parent_tool_id": call_id, "task": spec.task,
                                   "thread_id": spec.thread_id, "candidate": spec.candidate}
        for key in ("approval", "folder", "changes"):
            value = getattr(spec, key)
            if value is not None:
                options[key] = value
        return options

    @property
    def stop_reason(self) -> str | None:
        """Why the run is being stopped (None while it is not)."""
        return self._stop_reason

    async def _check_vision(self) -> None:
        """Images go only to a model that can see them: refused before anything is sent (the run fails,
        naming the fix); a model nobody knows about (a local server) gets them, with a notice."""
        from workspace.attachments import check_vision, supports_vision

        spec = self.spec
        if not any(a.is_image for a in spec.attachments):
            # Images earlier in the thread, and a model now that cannot see them (switched mid-thread):
            # they are sent as a line saying so instead.
            self.blind = await asyncio.to_thread(supports_vision, spec.provider) is False
            return
        note = await asyncio.to_thread(check_vision, spec.provider, spec.attachments)
        if note:
            self.emit(ev.RunStatus(state="notice", detail=note, model=spec.provider.label))

    # -- the loop ---------------------------------------------------------------------------
    async def _main(self) -> None:
        spec = self.spec
        text_parts: list[str] = []
        pending_calls: list[ToolMessage] = []
        self._began = True
        try:
            if self._stop_reason is not None:
                raise asyncio.CancelledError
            writer_var.set(spec.robot)  # this task's memory writes are this robot's
            self._take_writer()
            self._watch_memory()
            if not self.unheard():  # (an event nobody reads is not built: its number is taken)
                self.emit(ev.RunStarted(message=spec.message, model=spec.provider.label,
                          is_language_model=spec.provider.is_language_model,
                          attachments=[a.ref() for a in spec.attachments]))
            self._unwatch = [watch(self.emit) for watch in spec.watchers]
            if any(a.is_image for a in spec.attachments) or has_images(spec.history):
                await self._check_vision()
            loader, spec.tools_loader = spec.tools_loader, None  # used once; it holds the spec (see _release)
            if loader is not None:
                spec.tools = await loader()
            self._cap_tools()
            for notice in spec.notices:
                self.emit(ev.RunStatus(state="notice", detail=notice))
            if spec.output is not None:
                spec.settings = await spec.output.prepare(spec.provider, spec.tools, spec.settings)
            pending = spec.pending_tools
            if pending is not None and (pending.starting or pending.failed):
                self.emit(ev.McpServers(starting=list(pending.starting), failed=dict(pending.failed),
                          message=servers_message(starting=pending.starting, failed=pending.failed)))
            if spec.hooks:
                hooks.enter_scope(spec.hooks, spec.owner)  # tool calls and compactions of this task see the run's hooks
                ctx = hooks.RunHookContext(robot=spec.owner, request=spec.message, network=spec.network,
                                           task=spec.task, memory=spec.memory)
                value = await hooks.dispatch("run", ctx, spec.hooks, lambda: self._turns(ctx.request, text_parts,
                                                                                        pending_calls))
                result = self._hooked_result(value)
            else:
                result = await self._turns(spec.message, text_parts, pending_calls)
            self.result = result
            if spec.on_result is not None:
                spec.on_result(result)
            self.emit(ev.RunFinished(result=result))
        except asyncio.CancelledError:
            self._close_partial(text_parts, pending_calls, stopped=True)
            self.result = self._make_result("cancelled")
            self.emit(ev.RunCancelled(reason=self._stop_reason or "cancelled", partial=self.result))
            if self._stop_reason is None:
                raise
        except Exception as exc:
            self.error = exc
            self._close_partial(text_parts, pending_calls, stopped=False)
            self.result = self._make_result("error")
            message = str(exc) or type(exc).__name__
            self.emit(ev.RunFailed(error=message, error_type=type(exc).__name__, partial=self.result))
        finally:
            self._release()
            self._give_back_writer()
            if self.terminal is None:  # pragma: no cover - defensive: never leave a run open
                self.emit(ev.RunFailed(error="the run ended without a result", error_type="RuntimeError"))
            if self._ended is not None:
                wake(self._ended)

    def _release(self) -> None:
        """Stop watching the memory and the watchers, and let go of what refers back to the run: the memory
        observer's remover holds a function that holds the run, and the spec's tools loader (a closure of
        :func:`workspace.robot_runs.prepare`) the spec. Both cycles kept a finished run, its task, queue, spec and
        their objects (~70 a turn) alive until the cycle collector ran, which they made run every few turns; without
        them a finished run is freed when its last reference goes."""
        remover, self._memory_remover = self._memory_remover, None
        if remover is not None:
            remover()
        unwatch, self._unwatch = self._unwatch, []
        for stop in unwatch:
            stop()
        self.spec.tools_loader = None

    def _hooked_result(self, value: Any) -> RobotResult:
        """What an around_run hook returned, as the run's result (a string is the answer's text)."""
        if isinstance(value, RobotResult):
            return value
        if isinstance(value, str):
            return RobotResult(robot_name=self.spec.robot, output=[TextMessage(role="assistant", content=value)],
                               stop_reason="stop", duration=time.monotonic() - self._started)
        raise TypeError(f"An around_run hook returned {type(value).__name__}, not a RobotResult: return the value of "
                        "'await call_next()' (or a RobotResult, or the answer's text, to skip the model)")

    async def _generation(self, text_parts: list[str], iteration: int, request: Any) -> TurnOutcome:
        """One model call inside the llm_generation hooks."""
        spec = self.spec
        ctx = hooks.LlmGenerationHookContext(robot=spec.owner, request=request, network=spec.network,
                                             task=spec.task, memory=spec.memory, iteration=iteration)

        async def core() -> hooks.Generation:
            outcome = await self._model_turn(text_parts)
            return hooks.Generation(text="".join(text_parts), calls=list(outcome.calls), finish=outcome.finish,
                                    reasoning=outcome.reasoning)

        value = await hooks.dispatch("llm_generation", ctx, spec.hooks, core)
        if isinstance(value, str):
            value = hooks.Generation(text=value)
        if not isinstance(value, hooks.Generation):
            raise TypeError(f"An around_llm_generation hook returned {type(value).__name__}: return the value of "
                            "'await call_next()' (or a workspace.hooks.Generation, or text, to skip the model)")
        text_parts[:] = [value.text] if value.text else []
        return TurnOutcome(calls=list(value.calls), finish=value.finish, reasoning=value.reasoning)

    def _cap_tools(self) -> None:
        """Offer at most ``max_tools`` tools (RobotLab's clamp); the dropped ones are named in a notice."""
        spec = self.spec
        limit = spec.max_tools if spec.max_tools and spec.max_tools > 0 else DEFAULT_MAX_TOOLS
        if len(spec.tools) <= limit:
            return
        dropped = spec.tools.names[limit:]
        for name in dropped:
            spec.tools.remove(name)
        self.emit(ev.RunStatus(state="notice", detail=(
            f"The run offers the model at most {limit} tools (max_tools); {len(dropped)} were left out: "
            f"{', '.join(dropped[:10])}{', …' if len(dropped) > 10 else ''}")))

    async def _turns(self, message: Any, text_parts: list[str], pending_calls: list[ToolMessage]) -> RobotResult:
        """The turns of the run, until it has a result (``text_parts`` and ``pending_calls`` are what is
        in flight, for a stop or a failure to close)."""
        spec = self.spec
        self._say(TextMessage(role="user", content=user_content(str(message), spec.attachments)))
        turns = 0
        while True:
            if turns >= spec.max_turns:
                return self._finish("max_turns")
            over = self._over_budget() if turns else None
            if over is not None:
                return self._finish(over)
            if turns:
                await self._join_pending_tools()
            turns += 1
            text_parts.clear()
            if spec.ledger is None:  # no budget ledger: nothing around the call (no context manager's generator)
                outcome = (await self._generation(text_parts, turns - 1, message) if spec.hooks
                           else await self._model_turn(text_parts))
            else:
                async with ledger_call(spec.ledger, lambda: self._usage):  # the robot's budget ledger
                    outcome = (await self._generation(text_parts, turns - 1, message) if spec.hooks
                               else await self._model_turn(text_parts))
            calls = outcome.calls
            text = "".join(text_parts)
            text_parts.clear()
            from_text = False
            cut = outcome.finish in CUT_OFF
            if not calls and not cut:
                calls, rest = self._calls_in_text(text, spec.text_tool_calls)
                if rest is not None:
                    text, from_text = rest, True
            if outcome.reasoning and not self.unheard():
                self.emit(ev.Reasoning(text=outcome.reasoning))
            if cut and calls:
                where = ("when the context window was full" if outcome.finish == "context_full"
                         else "at the token limit")
                self.emit(ev.RunStatus(state="notice", detail=(
                    f"The tool call{'s' if len(calls) > 1 else ''} the model was writing ("
                    f"{', '.join(c.name for c in calls)}) were cut off {where} and not run.")))
                calls = []
            if (text or from_text) and not self.unheard():
                self.emit(ev.Text(text=text))
            if text:
                # RobotLab's messages know "tool" and "stop"; a cut answer is the result's stop reason.
                msg = TextMessage(role="assistant", content=text, stop_reason="tool" if calls else "stop")
                self._say(msg)
                self._output.append(msg)
            results: list[ToolResultMessage] = []
            if calls:
                call_msg = ToolCallMessage(role="assistant", tools=calls)
                self._say(call_msg)
                self._output.append(call_msg)
                pending_calls[:] = calls
                self._turn_results = {}
                results = await self._run_tools(calls, from_text=from_text)
                pending_calls.clear()
                for result in results:
                    self._say(result)
                self._tool_results.extend(results)
            if spec.output is not None:  # the answer must be a validated object
                verdict = spec.output.check(text, calls, results)
                if verdict.done:
                    return self._finish("stop", output_data=verdict.value)
                if verdict.retry is not None:
                    self._say(TextMessage(role="user", content=verdict.retry))
                continue
            if not calls:
                return self._finish(str(outcome.finish) if cut else "stop")

    def _finish(self, stop_reason: str, *, output_data: Any = None) -> RobotResult:
        if stop_reason == "max_turns" and self.spec.output is not None:
            self.spec.output.turn_limit()  # no answer in the schema within the turns: a failure
        return self._make_result(stop_reason, output_data=output_data)

    def _make_result(self, stop_reason: str, *, output_data: Any = None) -> RobotResult:
        return RobotResult(
            robot_name=self.spec.robot,
            output=list(self._output),
            tool_calls=list(self._tool_results),
            stop_reason=stop_reason,
            usage=self._usage,
            duration=time.monotonic() - self._started,
            output_data=output_data,
        )

    def _say(self, message: Message) -> None:
        """Add a message to the conversation: the robot's history and its memory's ``messages``."""
        self.spec.history.append(message)
        append = getattr(self.spec.memory, "append_message", None)
        if append is not None:
            append(message)

    def _take_writer(self) -> None:
        """``memory.current_writer`` is this robot while it runs (RobotLab's ``Robot#run``)."""
        memory = self.spec.memory
        if memory is not None and hasattr(memory, "current_writer"):
            self._previous_writer = memory.current_writer
            memory.current_writer = self.spec.robot

    def _give_back_writer(self) -> None:
        memory = self.spec.memory
        if memory is not None and hasattr(memory, "current_writer") and memory.current_writer == self.spec.robot:
            memory.current_writer = self._previous_writer

    def _close_partial(self, text_parts: list[str], pending: list[ToolMessage], *, stopped: bool) -> None:
        """Keep what was streamed and give unfinished tool calls a result, so history stays valid."""
        text = "".join(text_parts)
        if text:
            msg = TextMessage(role="assistant", content=text, stop_reason="stop")
            self._say(msg)
            self._output.append(msg)
        error = STOPPED_TOOL_ERROR if stopped else "The run failed before this tool call finished."
        for call in pending:
            result = self._turn_results.get(call.id or "")
            if result is None:
                result = ToolResultMessage(tool=call, content={"error": error})
                self.emit(ev.ToolError(id=call.id or "", name=call.name, error=error,
                          server=getattr(self.spec.tools.get(call.name), "mcp", None)))
            self._say(result)
            self._tool_results.append(result)

    def _watch_memory(self) -> None:
        if not self.spec.watch_memory:
            return
        memory = self.spec.memory
        add_observer = getattr(memory, "add_observer", None)
        if add_observer is None:
            return

        def observe(change: Any) -> None:
            self.emit(ev.MemoryChanged(key=str(change.key), value=change.value, previous=change.previous,
                      writer=change.writer, network_name=change.network_name))

        self._memory_remover = add_observer(observe)

    def _add_usage(self, chunk: UsageChunk) -> None:
        cost = chunk.cost
        self._usage = self._usage + UsageTotals(chunk.input_tokens, chunk.output_tokens, cost,
                                                chunk.reasoning_tokens, chunk.estimated)
        if not self.unheard():  # (an event nobody reads is not built: its number is taken)
            self.emit(ev.Usage(
                input_tokens=chunk.input_tokens,
                output_tokens=chunk.output_tokens,
                cost=cost,
                total_input_tokens=self._usage.input_tokens,
                total_output_tokens=self._usage.output_tokens,
                total_cost=self._usage.cost,
                model=chunk.model or self.spec.provider.model_id,
                reasoning_tokens=chunk.reasoning_tokens,
                estimated=chunk.estimated,
            ))
        if cost is None and self.spec.max_cost is not None and not self._cost_unknown_noted:
            self._cost_unknown_noted = True
            self.emit(ev.RunStatus(state="notice", detail=(
                f"max_cost ({self.spec.max_cost:g} USD) cannot be checked for {chunk.model or self.spec.provider.label}: "
                "its price is not known. max_total_tokens limits a run by its tokens.")))

    def _over_budget(self) -> str | None:
        """The budget the run has used up (``max_total_tokens``, ``max_cost``), or None."""
        spec = self.spec
        if spec.max_total_tokens is not None and self._usage.total_tokens >= spec.max_total_tokens:
            return "max_total_tokens"
        cost = self._usage.cost
        if spec.max_cost is not None and cost is not None and cost >= spec.max_cost:
            return "max_cost"
        return None
