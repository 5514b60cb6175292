"""Running a network: :class:`NetworkRun` starts every task whose dependencies are finished,
forwards the tasks' events in one stream, routes finished tasks' answers to optional tasks, and
ends with exactly one terminal event (see the package docstring)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from workspace import events as ev
from workspace import hooks
from workspace.agent import EventRun
from workspace.network.graph import readiness
from workspace.network.routing import Route
from workspace.network.scheduler_tasks import _CURRENT, TaskRuns
from workspace.result import (
    CANCELLED,
    DONE,
    FAILED,
    RUNNING,
    SKIPPED,
    TERMINAL_STATUSES,
    WAITING,
    NetworkResult,
    RobotResult,
    TaskState,
)

if TYPE_CHECKING:
    from workspace.network.model import Network

__all__ = ["NetworkRun", "current_results"]


def current_results(own: RobotResult | None = None) -> dict[str, RobotResult]:
    """The results of the finished tasks of the network run the caller works for (a router, a tool, a hook of
    one of its tasks), by task name, with ``own`` as the calling task's (a router's task is not finished
    yet); empty outside a network run."""
    current = _CURRENT.get()
    if current is None:
        return {}
    run, calling = current
    found = {name: state.result for name, state in run.tasks.items()
             if state.status == DONE and state.result is not None}
    if own is not None:
        found[calling.name] = own
    return found


class NetworkRun(TaskRuns, EventRun):
    """One run of a network: iterate it (once) for the merged events; ``cancel()`` stops it.

    ``tasks`` holds each task's live :class:`TaskState`; ``result`` is the
    :class:`NetworkResult` once the run ended (also after a failure or a stop).
    """

    def __init__(self, network: Network, message: Any, params: Mapping[str, Any], options: Mapping[str, Any]
                 ) -> None:
        self.network = network
        self.run_id = str(options.get("run_id") or uuid.uuid4().hex)
        self.message = _message_text(message)
        self.params: dict[str, Any] = dict(params)
        self.options: dict[str, Any] = {k: v for k, v in options.items() if k != "run_id"}
        self.tasks: dict[str, TaskState] = {
            name: TaskState(name=name, robot=t.robot.name, optional=t.optional,
                            depends_on=network.dependencies(name))
            for name, t in network.tasks.items()
        }
        self.result: NetworkResult | None = None
        #: The result an around_network_run hook gave (None: the run's own).
        self._hooked: NetworkResult | None = None
        self.terminal: ev.Event | None = None
        self._queue: asyncio.Queue[ev.Event] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._handles: dict[str, asyncio.Task[None]] = {}
        #: Tasks waiting for memory keys with no time limit (``wait_for`` without ``wait_timeout``).
        self._memory_waits: dict[str, tuple[str, ...]] = {}
        self._told_stuck: set[str] = set()
        self._seq = 0
        self._consumed = False
        self._stop_reason: str | None = None
        self._failure: TaskState | None = None
        self._order: list[str] = []
        self._idle: asyncio.Event | None = None
        limit = network.task_limit
        self._semaphore = asyncio.Semaphore(limit) if limit is not None else None
        self._locks: dict[int, asyncio.Lock] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None
        self._started = time.monotonic()
        self._routes_to: dict[str, list[Route]] = {}
        self._routes_from: dict[str, list[Route]] = {}
        for route in network.routes:
            self._routes_from.setdefault(str(route.source), []).append(route)
            for target in route.targets():
                self._routes_to.setdefault(target, []).append(route)

    # -- public -------------------------------------------------------------------------
    def start(self) -> NetworkRun:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._main(), name=f"network-{self.run_id[:8]}")
        return self

    def cancel(self, reason: str = "stopped by the user") -> None:
        """Stop every running task; the run still ends with ``run_cancelled``. Safe any time."""
        if self.terminal is not None:
            return
        if self._stop_reason is None and self._failure is None:
            self._stop_reason = reason
        if self._task is None:
            self.start()
        else:
            self._stop_tasks(self._stop_reason or reason)

    @property
    def statuses(self) -> dict[str, str]:
        return {name: state.status for name, state in self.tasks.items()}

    def task(self, name: str) -> TaskState:
        return self.tasks[name]

    # -- emitting -------------------------------------------------------------------------
    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _emit(self, built: ev.Event, *, robot: str | None = None, task: str | None = None) -> ev.Event | None:
        """Stamp ``built`` as the network run's (``robot``: the network's name unless given) and queue it."""
        if self.terminal is not None:
            return None
        event = ev.stamp(built, run_id=self.run_id, robot=robot or self.network.name, seq=self._next_seq(),
                         task=task)
        if isinstance(event, ev.TERMINAL):
            self.terminal = event
        elif task is not None and task in self.tasks:
            self.tasks[task].events.append(event)
        self._queue.put_nowait(event)
        return event

    def _forward(self, state: TaskState, event: ev.Event) -> None:
        if self.terminal is not None:
            return
        event = event.replace(seq=self._next_seq())
        state.events.append(event)
        self._queue.put_nowait(event)

    def _on_memory_change(self, change: Any) -> None:
        current = _CURRENT.get()
        state = current[1] if current is not None and current[0] is self else None
        event = ev.MemoryChanged(key=str(change.key), value=change.value, previous=change.previous,
                                 writer=change.writer, network_name=change.network_name)

        def deliver() -> None:
            run = state.agent_run if state is not None else None
            if run is not None and not run.done:
                run.emit(event)  # in order with the task's tool events
            else:
                self._emit(event, robot=change.writer or self.network.name,
                           task=state.name if state is not None else None)

        if self._loop is None or threading.get_ident() == self._thread:
            deliver()
        else:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(deliver)

    def _on_bus_message(self, delivery: Any) -> None:
        """A message on the network's bus: a ``bus_message`` in the sender's task run while it runs one (in
        order with its tool calls), else in the recipient's (a reply to a ``send_message`` comes after the run
        that answered, which that call holds), else in the network's run as the sender's."""
        message = delivery.message
        content = message.content if isinstance(message.content, str) else dict(message.content)
        event = ev.BusMessage(sender=message.from_, to=delivery.to, content=content, message_id=message.key,
                              in_reply_to=message.in_reply_to)

        def deliver() -> None:
            state = self._running_task_of(message.from_) or self._running_task_of(delivery.to)
            if state is not None and state.agent_run is not None:
                state.agent_run.emit(event)
            else:
                self._emit(event, robot=message.from_)

        if self._loop is None or threading.get_ident() == self._thread:
            deliver()
        else:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(deliver)

    def _running_task_of(self, robot: str) -> TaskState | None:
        """The task whose run of ``robot`` is going (None: it runs none now)."""
        return next((s for s in self.tasks.values() if s.robot == robot and s.status == RUNNING
                     and s.agent_run is not None and not s.agent_run.done), None)

    def _serve_bus(self) -> None:
        """The robots that answer messages: each message run through the robot with this run's model, the
        answer sent back as a reply. Asked by a model's ``send_message``, the run runs inside that tool call
        (its events in the asking task's run, its usage in its totals), like a robot used as a tool."""
        options = {key: self.options[key] for key in ("provider", "folder", "approval", "settings")
                   if self.options.get(key) is not None}
        for robot in self.network.bus_servers.values():
            async def answer(delivery: Any, message: Any, robot: Any = robot) -> None:
                from workspace.bus import _as_text
                from workspace.delegation import run_inside

                delivery.ack()
                if message.reply:
                    return
                origin = delivery.origin
                text = _as_text(message.content)
                if origin is not None and origin.run is not None and not origin.run.done:
                    inside = {**origin.run.child_options(origin.call_id), **options, "network": self.network}
                    result = await run_inside(robot, text, origin.run, inside)
                else:
                    result = await robot.arun(text, network=self.network, **options)
                robot.send_reply(to=message.from_, content=str(result.last_text_content), in_reply_to=message.key)

            robot.on_message(answer)

    # -- the scheduler --------------------------------------------------------------------
    async def _main(self) -> None:
        remove_observer: Callable[[], None] | None = None
        remove_bus: Callable[[], None] | None = None
        remove_review: Callable[[], None] | None = None
        try:
            self._loop = asyncio.get_running_loop()
            self._thread = threading.get_ident()
            self._idle = asyncio.Event()
            remove_observer = self.network.memory.add_observer(self._on_memory_change)
            remove_review = self._review_memory()
            if self.network.bus is not None:
                remove_bus = self.network.bus.add_observer(self._on_bus_message)
                self._serve_bus()
            model, is_lm = self._models()
            self._emit(ev.RunStarted(message=self.message, model=model, is_language_model=is_lm))
            registrations = hooks.collect(hooks.GLOBAL, self.network.hooks)
            if registrations:
                ctx = hooks.NetworkRunHookContext(network=self.network, context=self.params,
                                                  memory=self.network.memory)
                value = await hooks.dispatch("network_run", ctx, registrations, self._run_tasks)
                if not isinstance(value, NetworkResult):
                    raise TypeError(f"An around_network_run hook returned {type(value).__name__}: return the value "
                                    "of 'await call_next()' (or a NetworkResult)")
                self._hooked = value
            else:
                await self._run_tasks()
        except asyncio.CancelledError:
            self._stop_reason = self._stop_reason or "cancelled"
            await self._drain()
            self._conclude()
            raise
        except Exception as exc:  # a bug in the scheduler: never leave the run open
            self._stop_reason = self._stop_reason or "the network failed"
            await self._drain()
            self.result = self._make_result(FAILED, error=f"{type(exc).__name__}: {exc}")
            self._emit(ev.RunFailed(error=f"The network failed: {exc}", error_type=type(exc).__name__,
                                    partial=self.result))
        finally:
            if remove_observer is not None:
                remove_observer()
            if remove_bus is not None:
                remove_bus()
            if remove_review is not None:
                remove_review()
        self._conclude()

    def _review_memory(self) -> Callable[[], None] | None:
        """With ``review.memory: ask``, the keys this run changes in the network's memory, when it outlives the
        run, are proposed by the robot that wrote each last once the run ends (workspace.memory_review)."""
        from workspace.memory_review import review_writes, reviewed

        robots = {task.robot.name: task.robot for task in self.network.tasks.values()
                  if hasattr(task.robot, "review_memory")}
        if not reviewed(self.network.memory) or not any(r.review_memory == "ask" for r in robots.values()):
            return None

        def wants(writer: str) -> bool:
            robot = robots.get(writer)
            return robot is not None and robot.review_memory == "ask"

        def propose(pending: Any) -> None:
            robots[pending.robot]._propose_soon(pending)

        return review_writes(self.network.memory, robot=self.network.name, propose=propose, wants=wants)(self._emit)

    async def _run_tasks(self) -> NetworkResult:
        """Run the tasks to the end; the result the run will have."""
        assert self._idle is not None
        self._advance()
        await self._idle.wait()
        if self._failure is not None:
            return self._make_result(FAILED, error=f"Task '{self._failure.name}' failed: {self._failure.error}")
        if self._stop_reason is not None:
            return self._make_result(CANCELLED, error=self._stop_reason)
        return self._make_result(DONE)

    async def _drain(self) -> None:
        self._stop_tasks(self._stop_reason or "stopped")
        while self._handles:
            with contextlib.suppress(BaseException):
                await asyncio.shield(asyncio.gather(*self._handles.values(), return_exceptions=True))
            await asyncio.sleep(0)

    def _conclude(self) -> None:
        if self.terminal is not None:
            return
        reason = None
        if self._failure is not None:
            reason = f"not run: task '{self._failure.name}' failed"
        elif self._stop_reason is not None:
            reason = f"not run: {self._stop_reason}"
        for state in self.tasks.values():
            if state.status == WAITING:
                if reason is None:  # pragma: no cover - defensive: the scheduler decides every task
                    self._finish(state, SKIPPED, reason="never became ready")
                else:
                    self._finish(state, CANCELLED, reason=reason)
        if self._failure is not None:
            failed = self._failure
            error = f"Task '{failed.name}' failed: {failed.error}"
            self.result = self._make_result(FAILED, error=error)
            self._emit(ev.RunFailed(error=error, error_type=failed.error_type or "Error", partial=self.result),
                       robot=failed.robot, task=failed.name)
        elif self._stop_reason is not None:
            self.result = self._make_result(CANCELLED, error=self._stop_reason)
            self._emit(ev.RunCancelled(reason=self._stop_reason, partial=self.result))
        else:
            self.result = self._hooked if self._hooked is not None else self._make_result(DONE)
            self._emit(ev.RunFinished(result=self.result))

    def _make_result(self, status: str, *, error: str | None = None) -> NetworkResult:
        return NetworkResult(
            network=self.network.name, status=status, tasks=self.tasks, order=list(self._order),
            params=self.params, message=self.message,
            failed_task=self._failure.name if self._failure is not None else None, error=error,
            duration=time.monotonic() - self._started, memory=self.network.memory,
        )

    def _models(self) -> tuple[str, bool]:
        labels: list[str] = []
        is_lm = True
        for task in self.network.tasks.values():
            try:
                provider = self.options.get("provider") or task.robot.provider
            except Exception:
                continue
            label = provider.label
            if label and label not in labels:
                labels.append(label)
            is_lm = is_lm and provider.is_language_model
        return (", ".join(labels) if labels else "network"), is_lm

    def _advance(self) -> None:
        """Start every ready task, skip what can no longer run; set idle when nothing runs."""
        if self._stop_reason is None and self._failure is None:
            while True:
                progressed = False
                for state in self.tasks.values():
                    if state.status != WAITING or state.name in self._handles:
                        continue
                    verdict, reason = readiness(state, self.tasks, self._routes_to)
                    if verdict == "ready":
                        self._launch(state)
                    elif verdict == "skip":
                        self._finish(state, SKIPPED, reason=reason)
                        progressed = True
                if progressed:
                    continue
                if self._handles:
                    break
                waiting = [s for s in self.tasks.values() if s.status == WAITING]
                if not waiting:
                    break
                # Nothing runs and nothing is ready: optional tasks nobody activated are skipped.
                dormant = [s for s in waiting if s.optional and s.activated_by is None] or waiting
                for state in dormant:
                    self._finish(state, SKIPPED, reason="not activated by any task" if state.optional
                                 else "its dependencies can no longer run")
        if not self._handles and self._idle is not None:
            self._idle.set()
        self._tell_stuck()

    def _tell_stuck(self) -> None:
        """A wait that nothing in the network can end is said once per task (a notice in the chat, a
        line in the terminal), not left silent: every task still going waits for memory with no time
        limit, so only a write from outside the network (the library's ``network.memory``) ends it."""
        if not self._memory_waits or self._stop_reason is not None or self._failure is not None:
            return
        if any(name not in self._memory_waits for name in self._handles):
            return  # a task still runs: it may write the key
        for name, keys in self._memory_waits.items():
            if name in self._told_stuck:
                continue
            self._told_stuck.add(name)
            listed = ", ".join(f"'{k}'" for k in keys)
            some = "keys" if len(keys) > 1 else "key"
            self._emit(ev.RunStatus(state="notice", detail=f"Task '{name}' waits for memory {some} {listed}, and no other task is running to "
                              f"write {'them' if len(keys) > 1 else 'it'}: it waits until something outside the "
                              "network does. Stop the run, or give the task a wait_timeout."), robot=self.tasks[name].robot, task=name)

    def _launch(self, state: TaskState) -> None:
        assert self._loop is not None
        handle = self._loop.create_task(self._run_task(state), name=f"task-{state.name}")
        self._handles[state.name] = handle
        handle.add_done_callback(functools.partial(self._on_handle_done, state))

    def _on_handle_done(self, state: TaskState, _handle: asyncio.Task[None]) -> None:
        self._handles.pop(state.name, None)
        if state.status not in TERMINAL_STATUSES:  # cancelled before it began
            self._finish(state, CANCELLED, reason=self._stop_reason or "stopped")
        self._advance()

    def _stop_tasks(self, reason: str) -> None:
        for name, handle in list(self._handles.items()):
            state = self.tasks[name]
            run = state.agent_run
            if run is not None and not run.done:
                run.cancel(reason)
            elif run is None and not handle.done():
                handle.cancel()

    def _fail(self, state: TaskState) -> None:
        if self._failure is None and self._stop_reason is None:
            self._failure = state
            self._stop_tasks(f"task '{state.name}' failed")

    def _finish(self, state: TaskState, status: ev.TaskStatus, *, result: RobotResult | None = None,
                error: str | None = None, reason: str | None = None) -> None:
        state.status = status
        state.finished_at = time.time()
        if result is not None:
            state.result = result
        state.error = error
        state.reason = reason if reason is not None else error
        if status == DONE:
            self._order.append(state.name)
        self._emit(ev.TaskFinished(status=status, error=error if error is not None else reason, result=state.result),
                   robot=state.robot, task=state.name)


def _message_text(message: Any) -> str:
    if isinstance(message, str):
        return message
    if message is None:
        return ""
    content = getattr(message, "content", None)
    if content is not None:
        return str(content)
    if isinstance(message, Mapping) and "content" in message:
        return str(message["content"])
    return str(message)
