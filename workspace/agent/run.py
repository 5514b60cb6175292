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
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from workspace import events as ev
from workspace import hooks
from workspace.agent.budget import ledger_call
from workspace.agent.effects import EFFECT_TOOLS, file_effects
from workspace.agent.guards import DEFAULT_MAX_TOOLS, DoomLoopDetector, circuit_breaker_message, with_warning
from workspace.agent.turn import INVALID_ARGUMENTS, INVALID_WHY, ModelTurns, TurnOutcome
from workspace.approval import ApprovalDecision, ApprovalGate, ApprovalRequest, FileEffect
from workspace.attachments import Attachment, has_images, user_content
from workspace.context import ContextManager
from workspace.errors import ToolLoopError, serialize
from workspace.ledger import Ledger
from workspace.memory import writer_var
from workspace.messages import Message, TextMessage, ToolCallMessage, ToolMessage, ToolResultMessage
from workspace.output import StructuredOutput
from workspace.providers.base import Provider, UsageChunk
from workspace.result import RobotResult
from workspace.result import Usage as UsageTotals
from workspace.tools.base import Tool, ToolContext, ToolOutput, next_call_order
from workspace.tools.manifest import ToolManifest
from workspace.tools.script import ScriptTool

STOPPED_TOOL_ERROR = "The user stopped the run before this tool call finished."
#: Finish reasons of an answer cut off: at the token limit (``length``), or by a full context window
#: (``context_full``, said by the context manager); both are the run's ``stop_reason``.
CUT_OFF = ("length", "context_full")
#: The message that asks a model to go on with an answer cut off at the token limit
#: (``ThreadSession.continue_()``, ``Robot.continue_()``).
CONTINUE_PROMPT = ("Your last answer was cut off at the token limit. Continue exactly where it stopped, "
                   "without repeating what you already wrote.")

ToolCallback = Callable[..., Any]


class PendingTools(Protocol):
    """Tools that may join a run after it started: the MCP servers still starting when it began
    (:class:`workspace.mcp.startup.LateServers`). The loop polls it before each model turn."""

    @property
    def starting(self) -> list[str]:
        """Servers still starting."""
        ...

    @property
    def failed(self) -> dict[str, str]:
        """Servers not available: name -> why."""
        ...

    async def poll(self) -> tuple[list[Tool], list[str], dict[str, str]]:
        """``(tools, joined, failed)`` since the last poll (no waiting)."""
        ...

    async def wait_for_tool(self, tool_name: str) -> bool:
        """Wait for the server ``tool_name`` belongs to, if it is still starting; True when it is up."""
        ...


def servers_message(*, starting: Sequence[str] = (), joined: Sequence[str] = (),
                    failed: Mapping[str, str] | None = None, tools: Sequence[str] = ()) -> str:
    """What an :class:`~workspace.events.McpServers` event says, one line per state."""

    def names(items: Sequence[str]) -> str:
        return ", ".join(f"'{n}'" for n in items)

    lines = []
    if starting:
        one = len(starting) == 1
        lines.append(f"MCP server{'' if one else 's'} {names(starting)} {'is' if one else 'are'} still starting: the "
                     f"run goes on without {'its' if one else 'their'} tools, which join when "
                     f"{'it is' if one else 'they are'} up")
    if joined:
        one = len(joined) == 1
        listed = f" ({', '.join(tools[:6])}{', …' if len(tools) > 6 else ''})" if tools else ""
        lines.append(f"MCP server{'' if one else 's'} {names(joined)} {'is' if one else 'are'} up: "
                     f"{'its' if one else 'their'} tools join the run from this turn{listed}")
    for name, why in (failed or {}).items():
        lines.append(f"MCP server '{name}' is not available, the run goes on without it: {why}")
    return "\n".join(lines)


@dataclass(slots=True)
class RunSpec:
    """Everything one run needs; built by :class:`workspace.robot.Robot`."""

    robot: str
    provider: Provider
    system: str | None
    #: The conversation so far; the run appends to it in place.
    history: list[Message]
    message: str
    tools: ToolManifest = field(default_factory=ToolManifest)
    settings: Mapping[str, Any] = field(default_factory=dict)
    max_turns: int = 20
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    task: str | None = None
    memory: Any = None
    network: Any = None
    folder: Path | None = None
    changes: Any = None
    approval: ApprovalGate | None = None
    on_tool_call: ToolCallback | None = None
    on_tool_result: ToolCallback | None = None
    #: Called with the final RobotResult (the robot appends it to memory).
    on_result: Callable[[RobotResult], None] | None = None
    thread_id: str | None = None
    #: Per-tool-call time limit (seconds) for tools without their own.
    tool_timeout: float | None = None
    #: Emit ``memory_changed`` for changes of ``memory`` during the run (a network watches itself).
    watch_memory: bool = True
    #: Resolves the run's tools (MCP servers connect here) when the run starts.
    tools_loader: Callable[[], Awaitable[ToolManifest]] | None = None
    #: Set by ``tools_loader`` when some MCP servers were still starting or failed.
    pending_tools: PendingTools | None = None
    #: Said to the person when the run starts (``run_status`` notices), e.g. by ``tools_loader``.
    notices: list[str] = field(default_factory=list)
    #: An extra shared sequence counter (a network run numbers all its tasks' events).
    sequence: Callable[[], int] | None = None
    #: Providers to ask, in order, when the model has an outage or a rate limit (built when needed).
    fallbacks: list[Callable[[], Provider]] = field(default_factory=list)
    #: The run stops before a model call once it cost this much (USD; only when the price is known).
    max_cost: float | None = None
    #: The run stops before a model call once it used this many tokens (in + out).
    max_total_tokens: int | None = None
    #: The budget ledger each model call reserves from and settles in (RobotLab's ``Budget::Ledger``; a
    #: robot's ``token_budget`` / ``cost_budget``, or one a network's tasks share); None: no ledger.
    ledger: Ledger | None = None
    #: A tool call the model wrote as text: "run" it, only give a "notice", or "off".
    text_tool_calls: str = "run"
    #: Keeps each request within the model's context window (compacts, truncates or refuses).
    context: ContextManager | None = None
    #: The answer must be a validated object (``Robot(output_type=...)``, :mod:`workspace.output`).
    output: StructuredOutput | None = None
    #: The run this one works for (a network's run, or the run whose tool call started it) and that
    #: tool call: set on every event (see :mod:`workspace.events`).
    parent_run_id: str | None = None
    parent_tool_id: str | None = None
    #: The run's place in a comparison (0, 1, ...), stamped on its events; None outside one.
    candidate: int | None = None
    #: Files, images and MCP resources sent with ``message`` (:mod:`workspace.attachments`).
    attachments: list[Attachment] = field(default_factory=list)
    #: The Robot object the hooks are told about (``ctx.robot``).
    owner: Any = None
    #: The hooks of this run, in order: global, network, robot, per run (:mod:`workspace.hooks`).
    hooks: tuple[hooks.Registration, ...] = ()
    #: The most tool calls a run may make; one more fails it with ToolLoopError (None: no limit).
    max_tool_rounds: int | None = None
    #: Warn the model when the same tool (or cycle of tools) is called this many times in a row (0: never).
    doom_loop_threshold: int = DoomLoopDetector.DEFAULT_THRESHOLD
    #: The most tools offered to the model (the rest are dropped, with a notice).
    max_tools: int = DEFAULT_MAX_TOOLS
    #: Started with the run (after ``run_started``), each given the run's ``emit``; each returns the function that
    #: stops it, called when the run ends (a robot's bus outside a network: :func:`workspace.bus.watch_run`).
    watchers: list[Callable[[Callable[[ev.Event], ev.Event]], Callable[[], None]]] = field(default_factory=list)


class EventRun:
    """What every run shares: an event queue iterated once, ending at the one terminal event.

    Subclasses start ``self._task`` in :meth:`start` and put events on ``self._queue``.
    """

    run_id: str
    _queue: asyncio.Queue[ev.Event]
    _task: asyncio.Task[None] | None
    _consumed: bool
    terminal: ev.Event | None
    #: Called with every event as the stream yields it (tracing: workspace.tracing); usually none.
    _observers: tuple[Callable[[ev.Event], None], ...] = ()

    def add_observer(self, observer: Callable[[ev.Event], None]) -> None:
        """Call ``observer(event)`` with every event of the stream, in order, as it is iterated (an
        observer that raises is logged and dropped; the run goes on)."""
        self._observers = (*self._observers, observer)

    def _observe(self, event: ev.Event) -> None:
        for observer in self._observers:
            try:
                observer(event)
            except Exception:
                import logging

                logging.getLogger("workspace.agent").exception("an event observer failed; it is dropped")
                self._observers = tuple(o for o in self._observers if o is not observer)

    def start(self) -> EventRun:  # pragma: no cover - overridden
        raise NotImplementedError

    def cancel(self, reason: str = "stopped by the user") -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    @property
    def done(self) -> bool:
        return self.terminal is not None

    async def __aiter__(self) -> AsyncIterator[ev.Event]:
        if self._consumed:
            raise RuntimeError(f"A {type(self).__name__}'s events can be iterated only once")
        self._consumed = True
        self.start()
        try:
            while True:
                event = await self._queue.get()
                if self._observers:
                    self._observe(event)
                yield event
                if ev.ends(event, self.run_id):  # not the end of a run inside this one
                    return
        finally:
            # The consumer went away (closed or cancelled): do not leave the run orphaned.
            if self._task is not None and not self._task.done():
                self.cancel("the consumer stopped listening")
                with contextlib.suppress(BaseException):
                    await asyncio.shield(self._task)

    async def wait(self) -> ev.Event:
        """Run to the end, discarding events; return the terminal event."""
        if not self._consumed:
            async for _ in self:
                pass
        elif self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._task)
        assert self.terminal is not None
        return self.terminal


class AgentRun(ModelTurns, EventRun):
    """One run of the loop: iterate it for events; ``cancel()`` stops it.

    Iterating starts the run (once). ``await run.wait()`` runs it to the end and
    returns the terminal event; ``run.result`` is the RobotResult afterwards (the
    partial one after a stop or failure).

    One class for the whole loop (model turns, tools, approvals, structured output, runs inside
    it), which is why this module is longer than the others.
    """

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        self.run_id = spec.run_id
        self.result: RobotResult | None = None
        self.terminal: ev.Event | None = None
        self._queue: asyncio.Queue[ev.Event] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._seq = 0
        self._stop_reason: str | None = None
        self._consumed = False
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
        if self.spec.sequence is not None:
            return self.spec.sequence()
        self._seq += 1
        return self._seq

    def emit(self, built: ev.Event) -> ev.Event:
        """Stamp ``built`` with this run's fields (:func:`workspace.events.stamp`) and add it to the
        stream; safe from worker threads (sync tools, memory observers). Returns the stamped event
        (after the run's terminal event: that one, the new one is dropped)."""
        spec = self.spec
        with self._emit_lock:
            event = ev.stamp(built, run_id=self.run_id, robot=spec.robot, seq=self._next_seq(), task=spec.task,
                             parent_run_id=spec.parent_run_id, parent_tool_id=spec.parent_tool_id,
                             candidate=spec.candidate)
            if event.terminal:
                if self.terminal is not None:
                    return self.terminal  # exactly one terminal event
                self.terminal = event
        self._put(event)
        return event

    def _put(self, event: ev.Event) -> None:
        loop = self._loop
        if loop is not None and threading.get_ident() != self._loop_thread and not loop.is_closed():
            loop.call_soon_threadsafe(self._queue.put_nowait, event)
        else:
            self._queue.put_nowait(event)

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
            self.emit(ev.RunStarted(message=spec.message, model=spec.provider.label,
                      is_language_model=spec.provider.is_language_model,
                      attachments=[a.ref() for a in spec.attachments]))
            self._unwatch = [watch(self.emit) for watch in spec.watchers]
            if any(a.is_image for a in spec.attachments) or has_images(spec.history):
                await self._check_vision()
            if spec.tools_loader is not None:
                spec.tools = await spec.tools_loader()
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
            if self._memory_remover is not None:
                self._memory_remover()
            for stop in self._unwatch:
                stop()
            self._give_back_writer()
            if self.terminal is None:  # pragma: no cover - defensive: never leave a run open
                self.emit(ev.RunFailed(error="the run ended without a result", error_type="RuntimeError"))

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
            async with ledger_call(spec.ledger, lambda: self._usage):  # the budget ledger, when the robot has one
                if spec.hooks:
                    outcome = await self._generation(text_parts, turns - 1, message)
                else:
                    outcome = await self._model_turn(text_parts)
            calls = outcome.calls
            text = "".join(text_parts)
            text_parts.clear()
            from_text = False
            cut = outcome.finish in CUT_OFF
            if not calls and not cut:
                calls, rest = self._calls_in_text(text, spec.text_tool_calls)
                if rest is not None:
                    text, from_text = rest, True
            if outcome.reasoning:
                self.emit(ev.Reasoning(text=outcome.reasoning))
            if cut and calls:
                where = ("when the context window was full" if outcome.finish == "context_full"
                         else "at the token limit")
                self.emit(ev.RunStatus(state="notice", detail=(
                    f"The tool call{'s' if len(calls) > 1 else ''} the model was writing ("
                    f"{', '.join(c.name for c in calls)}) were cut off {where} and not run.")))
                calls = []
            if text or from_text:
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

    # -- tools ------------------------------------------------------------------------------
    async def _join_pending_tools(self) -> None:
        """Offer the tools of MCP servers that came up since the run began (and say which failed)."""
        pending = self.spec.pending_tools
        if pending is None:
            return
        tools, joined, failed = await pending.poll()
        if not pending.starting:
            self.spec.pending_tools = None
        added = [t for t in tools if t.name not in self.spec.tools]
        for tool in added:
            self.spec.tools.add(tool)
        if joined or failed:
            self.emit(ev.McpServers(joined=list(joined), failed=dict(failed), starting=list(pending.starting),
                      message=servers_message(joined=joined, failed=failed, tools=[t.name for t in added])))

    async def _run_tools(self, calls: Sequence[ToolMessage], *, from_text: bool = False) -> list[ToolResultMessage]:
        for call in calls:
            tool = self.spec.tools.get(call.name)
            self.emit(ev.ToolUse(id=call.id or "", name=call.name, input=call.input,
                      server=tool.mcp if tool else None, from_text=from_text))
        limit = self.spec.max_tool_rounds
        if limit is not None:
            self._tool_count += len(calls)
            if self._tool_count > limit:  # the circuit breaker: the whole turn is refused
                raise ToolLoopError(circuit_breaker_message(self._tool_count, limit))
        results: list[ToolResultMessage | None] = [None] * len(calls)
        orders = [next_call_order() for _call in calls]  # the message's order, whichever call finishes first

        async def one(i: int, call: ToolMessage) -> None:
            results[i] = result = await self._run_tool(call, order=orders[i])
            self._turn_results[call.id or ""] = result

        if len(calls) == 1:
            await one(0, calls[0])
        else:
            try:
                async with asyncio.TaskGroup() as group:
                    for i, call in enumerate(calls):
                        group.create_task(one(i, call))
            except* Exception as group_error:  # a raise_on_error tool, or a hook, raised: the run fails with it
                raise group_error.exceptions[0] from None
        done = [r for r in results if r is not None]
        if self._doom is not None:
            self._check_doom_loop(done)
        return done

    def _check_doom_loop(self, results: list[ToolResultMessage]) -> None:
        """Track the calls in the order the model made them; on a loop, warn the model in that result."""
        detector = self._doom
        assert detector is not None
        for i, result in enumerate(results):
            detector.track(result.tool.name)
            warning = detector.warning_message() if detector.doom_loop else None
            if warning is None:
                continue
            detector.reset()
            content = result.content
            if isinstance(content, dict) and ("error" in content or "data" in content):
                key = "error" if "error" in content else "data"
                content = {**content, key: with_warning(content[key], warning)}
            else:
                content = with_warning(content, warning)
            results[i] = ToolResultMessage(tool=result.tool, content=content)
            self._turn_results[result.tool.id or ""] = results[i]
            self.emit(ev.RunStatus(state="notice", detail=warning))

    async def _run_tool(self, call: ToolMessage, *, order: int | None = None) -> ToolResultMessage:
        spec = self.spec
        tool = spec.tools.get(call.name)
        call_id = call.id or ""
        started = time.monotonic()
        if tool is None and spec.pending_tools is not None and await spec.pending_tools.wait_for_tool(call.name):
            await self._join_pending_tools()  # a tool of a server that was still starting: it is up now
            tool = spec.tools.get(call.name)
        if tool is None:
            available = ", ".join(spec.tools.names) or "(none)"
            return self._tool_failed(call, f"Unknown tool '{call.name}'. Available tools: {available}",
                                     started, None)
        if INVALID_ARGUMENTS in call.input and set(call.input) <= {INVALID_ARGUMENTS, INVALID_WHY}:
            why = call.input.get(INVALID_WHY)
            problem = f"are {why}" if why else "were not valid JSON"
            fix = " nested less deep" if why else ""
            return self._tool_failed(
                call,
                f"The arguments for '{call.name}' {problem}: {call.input[INVALID_ARGUMENTS]!r}. "
                f"Send the arguments as one JSON object{fix}.",
                started,
                tool,
            )
        arguments: Any = call.input
        #: A command that would run without a sandbox (none here, and the folder allows it): whether the person
        #: approved this very call ("asked"; only then does it run) or not ("not asked"); None: not such a call.
        without_sandbox: str | None = None
        if spec.approval is not None and not (spec.output is not None and spec.output.is_output_tool(call.name)):
            effects: tuple[FileEffect, ...] = ()
            if tool.mcp is None and call.name in EFFECT_TOOLS:  # decided by what it does, not its name
                effects = await asyncio.to_thread(file_effects, call.name, call.input, folder=spec.folder,
                                                  changes=spec.changes)
            elif isinstance(tool, ScriptTool) and isinstance(call.input, dict):  # the command the script runs
                effects = (FileEffect(kind="run", path=".", command=tool.command(call.input, spec.folder)),)
            original = tool.annotations.get("mcpTool") if tool.mcp is not None else None
            request = ApprovalRequest(call_id=call_id, robot=spec.robot, tool=call.name, input=call.input,
                                      server=tool.mcp, annotations=dict(tool.annotations), run_id=self.run_id,
                                      task=spec.task, thread_id=spec.thread_id,
                                      original=original if isinstance(original, str) else None, effects=effects)
            verdict = await spec.approval.adecide(request)
            decision: ApprovalDecision
            if isinstance(verdict, ApprovalDecision):  # a callable policy decided it all
                action = "decided"
                decision = verdict
            elif verdict == "allow":
                action = verdict
                decision = ApprovalDecision(approved=True, scope="policy")
            elif verdict == "deny":
                action = verdict
                decision = ApprovalDecision(approved=False, scope="policy",
                                            reason=f"The approval policy denies '{call.name}'.")
            else:
                action = verdict
                shown = dict(tool.annotations)
                if effects:  # what the call does, as the policy decided it
                    shown["effects"] = [effect.to_dict() for effect in effects]
                self.emit(ev.ApprovalRequested(id=call_id, name=call.name, input=call.input, server=tool.mcp,
                          annotations=shown))
                decision = await spec.approval.ask(request)
            started = time.monotonic()  # the tool's duration leaves out the wait for the person's decision
            if action in ("ask", "decided") or not decision.approved:
                self.emit(ev.ApprovalDecided(id=call_id, name=call.name, decision=decision.decision,
                          input=decision.input if decision.input is not None else call.input,
                          reason=decision.reason, scope=decision.event_scope))
            if not decision.approved:
                reason = decision.reason or "no reason given"
                return self._tool_failed(call, f"Denied by the user: {reason}", started, tool)
            if decision.input is not None:
                arguments = decision.input
            if any(effect.kind == "run" and effect.unsandboxed for effect in effects):
                without_sandbox = "asked" if action == "ask" else "not asked"
        if spec.on_tool_call is not None:
            _safe_callback(spec.on_tool_call, ToolMessage(id=call.id, name=call.name, input=arguments))
        # extras: what an MCP server's requests during the call need (sampling with the thread's
        # model, asking the person through the run's gate; workspace.mcp.requests).
        context = ToolContext(robot=spec.robot, run_id=self.run_id, call_id=call_id, task=spec.task,
                              memory=spec.memory, network=spec.network, folder=spec.folder,
                              changes=spec.changes, emit=self.emit, run=self, order=order,
                              extras={"provider": spec.provider, "approval": spec.approval, "tool": call.name,
                                      "settings": spec.settings, "thread_id": spec.thread_id,
                                      "without_sandbox": without_sandbox})
        if spec.hooks:
            output = await self._hooked_invoke(tool, arguments, context)
        else:
            output = await self._invoke(tool, arguments, context)
        duration = time.monotonic() - started
        ran = ToolMessage(id=call.id, name=call.name, input=arguments)
        if output.is_error:
            result = ToolResultMessage(tool=ran, content={"error": output.data})
            self.emit(ev.ToolError(id=call_id, name=call.name, error=output.data, raw=output.raw,
                      duration=duration, server=tool.mcp))
        else:
            result = ToolResultMessage(tool=ran, content={"data": output.data})
            self.emit(ev.ToolResult(id=call_id, name=call.name, payload={"data": output.data}, raw=output.raw,
                      duration=duration, server=tool.mcp))
        if spec.on_tool_result is not None:
            _safe_callback(spec.on_tool_result, result)
        return result

    async def _invoke(self, tool: Tool, arguments: Any, context: ToolContext) -> ToolOutput:
        if tool.timeout is None and self.spec.tool_timeout:
            return await _with_timeout(tool, arguments, context, self.spec.tool_timeout)
        return await tool.invoke(arguments, context)

    async def _hooked_invoke(self, tool: Tool, arguments: Any, context: ToolContext) -> ToolOutput:
        """The tool call inside the tool_call hooks: ``ctx.tool_result`` is what the model is sent (a hook
        that sets it without calling ``call_next`` skips the tool)."""
        ctx = hooks.ToolCallHookContext(tool=tool, tool_name=tool.name, tool_args=arguments, robot=self.spec.owner)
        ran: list[ToolOutput] = []

        async def core() -> Any:
            output = await self._invoke(tool, arguments, context)
            ran.append(output)
            ctx.tool_result = output.data
            ctx.tool_error = output.data if output.is_error else None
            return output.data

        await hooks.dispatch("tool_call", ctx, self.spec.hooks, core)
        original = ran[0] if ran else None
        if original is not None and ctx.tool_result is original.data and \
                (ctx.tool_error is not None) == original.is_error:
            return original
        return ToolOutput(ctx.tool_result, raw=original.raw if original else None, is_error=ctx.tool_error is not None)

    def _tool_failed(self, call: ToolMessage, error: str, started: float, tool: Tool | None) -> ToolResultMessage:
        self.emit(ev.ToolError(id=call.id or "", name=call.name, error=error,
                  duration=time.monotonic() - started, server=tool.mcp if tool else None))
        result = ToolResultMessage(tool=call, content={"error": error})
        if self.spec.on_tool_result is not None:
            _safe_callback(self.spec.on_tool_result, result)
        return result


async def _with_timeout(tool: Tool, arguments: Any, context: ToolContext, timeout: float) -> ToolOutput:
    try:
        async with asyncio.timeout(timeout):
            return await tool.invoke(arguments, context)
    except TimeoutError:
        return ToolOutput(f"Tool '{tool.name}' timed out after {timeout:g} s", is_error=True)


def _safe_callback(fn: ToolCallback, arg: Any) -> None:
    import logging

    try:
        fn(arg)
    except Exception as exc:  # a callback must never break the loop
        logging.getLogger("workspace.agent").warning("tool callback failed: %s", serialize(exc))

