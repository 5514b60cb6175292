"""One task of a network run (:class:`~workspace.network.scheduler.NetworkRun`): what it gets (its message,
its template variables, its memory and run options), its robot's run (inside the task hooks), and how it
settles: its result routed to optional tasks, a failure, a stop."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, assert_never, cast

from workspace import events as ev
from workspace import hooks
from workspace.errors import AwaitTimeout
from workspace.memory import Memory
from workspace.network.merge import deep_merge
from workspace.network.routing import Route, as_names, structured_targets
from workspace.result import (
    CANCELLED,
    DONE,
    FAILED,
    RUNNING,
    TERMINAL_STATUSES,
    WAITING,
    RobotResult,
    TaskState,
    to_jsonable,
)
from workspace.result import last_text as _last_text

if TYPE_CHECKING:
    from workspace.network.model import Network, Task
    from workspace.network.scheduler import NetworkRun

#: The (run, task) whose robot is running in the current context; lets the memory observer
#: put a change into the right task's stream.
_CURRENT: contextvars.ContextVar[tuple[NetworkRun, TaskState] | None] = contextvars.ContextVar(
    "robotlab_network_task", default=None
)


class TaskRuns:
    """The half of :class:`~workspace.network.scheduler.NetworkRun` that runs one task; the scheduler (the other
    half) starts the tasks, emits the events and ends the run."""

    network: Network
    run_id: str
    message: str
    params: dict[str, Any]
    options: dict[str, Any]
    tasks: dict[str, TaskState]
    _stop_reason: str | None
    _failure: TaskState | None
    _semaphore: asyncio.Semaphore | None
    _locks: dict[int, asyncio.Lock]
    _memory_waits: dict[str, tuple[str, ...]]
    _routes_from: dict[str, list[Route]]

    if TYPE_CHECKING:  # the scheduler's own
        def _emit(self, built: ev.Event, *, robot: str | None = None, task: str | None = None) -> ev.Event | None: ...
        def _forward(self, state: TaskState, event: ev.Event) -> None: ...
        def _tell_stuck(self) -> None: ...
        def _stop_tasks(self, reason: str) -> None: ...
        def _fail(self, state: TaskState) -> None: ...
        def _finish(self, state: TaskState, status: ev.TaskStatus, *, result: RobotResult | None = None,
                    error: str | None = None, reason: str | None = None) -> None: ...

    # -- one task -------------------------------------------------------------------------
    async def _run_task(self, state: TaskState) -> None:
        task = self.network.tasks[state.name]
        robot = task.robot
        _CURRENT.set((cast("NetworkRun", self), state))  # (a NetworkRun: the class this is half of)
        async with contextlib.AsyncExitStack() as stack:
            try:
                if self._semaphore is not None:
                    await stack.enter_async_context(self._semaphore)
                lock = self._locks.setdefault(id(robot), asyncio.Lock())
                await stack.enter_async_context(lock)
                if self._stop_reason is not None or self._failure is not None:
                    self._finish(state, CANCELLED, reason=f"not run: {self._stop_reason or 'another task failed'}")
                    return
                message, variables = self._inputs(task, state)
                state.message = message
                state.status = RUNNING
                state.started_at = time.time()
                self._emit(ev.TaskStarted(message=message), robot=state.robot, task=state.name)
                memory = self._task_memory(task)
                if task.wait_for:
                    if task.wait_timeout is None:
                        self._memory_waits[state.name] = tuple(str(k) for k in task.wait_for)
                        self._tell_stuck()
                    try:
                        values = await memory.wait_for(*task.wait_for, timeout=task.wait_timeout)
                    finally:
                        self._memory_waits.pop(state.name, None)
                    found = values if len(task.wait_for) > 1 else {task.wait_for[0]: values}
                    variables.update(_template_safe(found))
                if self._stop_reason is not None or self._failure is not None:
                    self._finish(state, CANCELLED, reason=self._stop_reason or "another task failed")
                    return
                registrations = hooks.collect(hooks.GLOBAL, self.network.hooks)
                if registrations:
                    terminal = await self._hooked_task(task, state, message, memory, variables, registrations)
                else:
                    terminal = await self._robot_run(task, state, message, memory, variables)
                await self._settle(task, state, terminal)
            except asyncio.CancelledError:
                if state.status not in TERMINAL_STATUSES:
                    self._finish(state, CANCELLED, result=_partial(state),
                                 reason=self._stop_reason or (f"task '{self._failure.name}' failed"
                                                              if self._failure else "stopped"))
                if self._stop_reason is None and self._failure is None:
                    raise
            except AwaitTimeout as exc:
                self._task_failed(state, f"{exc} (wait_for of task '{state.name}')", "AwaitTimeout")
            except Exception as exc:
                self._task_failed(state, str(exc) or type(exc).__name__, type(exc).__name__)

    async def _robot_run(self, task: Task, state: TaskState, message: str, memory: Memory,
                         variables: dict[str, Any]) -> ev.TerminalEvent | None:
        run = task.robot.stream(message, **self._robot_options(task, memory), **variables)
        state.agent_run = run
        state.run_id = run.run_id
        terminal: ev.TerminalEvent | None = None
        began = False
        async for event in run:
            if isinstance(event, ev.TERMINAL) and ev.ends(event, run.run_id):
                terminal = event  # the task's run ends with its own terminal event, forwarded too
                if not began:
                    continue  # stopped before it began: no run to end
            began = began or isinstance(event, ev.RunStarted)
            self._forward(state, event)
        return terminal

    async def _hooked_task(self, task: Task, state: TaskState, message: str, memory: Memory,
                           variables: dict[str, Any], registrations: tuple[hooks.Registration, ...]
                           ) -> ev.TerminalEvent | None:
        """The task's robot run inside the task hooks: the result is the robot's RobotResult (an around
        hook may return another, or one of its own without running the robot)."""
        ctx = hooks.TaskHookContext(task=task, task_name=state.name, network=self.network, robot=task.robot,
                                    memory=memory)
        ended: list[ev.TerminalEvent | None] = []

        async def core() -> Any:
            terminal = await self._robot_run(task, state, message, memory, variables)
            ended.append(terminal)
            return terminal.result if isinstance(terminal, ev.RunFinished) else None

        value = await hooks.dispatch("task", ctx, registrations, core)
        terminal = ended[0] if ended else None
        if isinstance(value, RobotResult):
            if not (isinstance(terminal, ev.RunFinished) and terminal.result is value):
                return ev.RunFinished(result=value)  # the hook's result stands for the robot's
        elif value is not None or terminal is None:
            raise TypeError(f"An around_task hook of task '{state.name}' returned {type(value).__name__}: return the "
                            "value of 'await call_next()' (or a RobotResult)")
        return terminal

    async def _settle(self, task: Task, state: TaskState, terminal: ev.TerminalEvent | None) -> None:
        match terminal:
            case ev.RunFinished(result=RobotResult() as result):
                try:
                    routed = await self._route(task, result)
                except Exception as exc:
                    state.result = result
                    self._task_failed(state, f"routing failed: {exc}", type(exc).__name__)
                    return
                state.routed_to = routed
                for target in routed:
                    target_state = self.tasks[target]
                    if target_state.activated_by is None and target_state.status == WAITING:
                        target_state.activated_by = state.name
                self._finish(state, DONE, result=result)
            case ev.RunFinished():  # pragma: no cover - a task's robot run always ends with a RobotResult
                self._task_failed(state, "the task's robot finished without a result", "RuntimeError")
            case ev.RunFailed() if task.on_error == "continue" and self._stop_reason is None \
                    and self._failure is None:  # RobotLab's error-tolerant step: the failure is the answer
                from workspace.messages import TextMessage

                state.error_type = terminal.error_type or "Error"
                text = f"Error: {state.error_type}: {terminal.error}"
                self._finish(state, DONE, result=RobotResult(
                    robot_name=state.robot, output=[TextMessage(role="assistant", content=text)], stop_reason="stop",
                    duration=time.time() - state.started_at if state.started_at else None))
            case ev.RunFailed():
                state.result = terminal.partial if isinstance(terminal.partial, RobotResult) else None
                self._task_failed(state, terminal.error, terminal.error_type or "Error")
            case ev.RunCancelled():
                partial = terminal.partial if isinstance(terminal.partial, RobotResult) else None
                if self._stop_reason is None and self._failure is None:
                    # Someone stopped this task's robot directly: the network stops with it.
                    self._stop_reason = f"task '{state.name}' was stopped ({terminal.reason})"
                    self._stop_tasks(self._stop_reason)
                self._finish(state, CANCELLED, result=partial, reason=terminal.reason)
            case None:  # pragma: no cover - AgentRun always ends with a terminal event
                self._task_failed(state, "the robot's run ended without a result", "RuntimeError")
            case _:
                assert_never(terminal)

    def _task_failed(self, state: TaskState, error: str, error_type: str) -> None:
        state.error_type = error_type
        if self._failure is not None or self._stop_reason is not None:
            # Already stopping: a task failing because it was interrupted is just cancelled.
            self._finish(state, CANCELLED, result=state.result, reason=error)
            return
        self._finish(state, FAILED, result=state.result, error=error)
        self._fail(state)

    async def _route(self, task: Task, result: RobotResult) -> list[str]:
        text = _last_text(result)
        data = to_jsonable(result.output_data) if result.output_data is not None else None
        chosen: list[str] = []
        rules = self._routes_from.get(task.name, [])
        for rule in rules:
            chosen.extend(rule.choose(text, data=data))
        if task.router is not None:
            value = task.router(result)
            if inspect.isawaitable(value):
                value = await value
            names = as_names(value)
            for name in names:
                target = self.network.tasks.get(name)
                if target is None or not target.optional:
                    raise ValueError(
                        f"the router of task '{task.name}' chose '{name}', which is not an optional task of the "
                        f"network (optional tasks: {', '.join(self.network.optional_tasks) or 'none'})"
                    )
            chosen.extend(names)
        if not rules and task.router is None:
            candidates = [s.name for s in self.tasks.values()
                          if s.optional and s.status == WAITING and s.activated_by is None and s.name != task.name]
            chosen.extend(structured_targets(text, candidates, data=data))
        return list(dict.fromkeys(chosen))

    # -- what a task gets -----------------------------------------------------------------
    def _inputs(self, task: Task, state: TaskState) -> tuple[str, dict[str, Any]]:
        upstream: dict[str, str] = {}
        sources = [state.activated_by] if state.activated_by else state.depends_on
        for name in sources:
            if name is not None and self.tasks[name].status == DONE:
                text = self.tasks[name].text
                if text:
                    upstream[name] = text
        joined = _join_upstream(upstream)
        base = deep_merge(self.network.context, self.params)
        variables = deep_merge(base, task.context)
        if task.input == "run":
            message = self.message
        elif task.input == "upstream":
            message = joined or self.message
        elif task.input == "auto":
            if state.activated_by is not None:
                activator = self.tasks[state.activated_by]
                message = activator.message if activator.message is not None else self.message
            elif state.depends_on:
                message = joined or self.message
            else:
                message = self.message
        else:
            from workspace.templates import Template

            values = {**variables, "message": self.message, "upstream": upstream, "upstream_text": joined,
                      "memory": dict(self._task_memory(task).items())}
            message = Template(name=f"input of task {task.name}", body=task.input).render(values)
        variables["network_message"] = self.message
        variables["upstream"] = upstream
        return message, _template_safe(variables)

    def _task_memory(self, task: Task) -> Memory:
        return task.memory if isinstance(task.memory, Memory) else self.network.memory

    def _robot_options(self, task: Task, memory: Memory) -> dict[str, Any]:
        if isinstance(task.memory, Mapping):
            memory.merge(task.memory)
        options: dict[str, Any] = {
            "parent_run_id": self.run_id,  # the task's run works for this run (its events say so)
            "network": self.network,
            # Passed as ``memory``: a Memory given this way always wins in workspace.robot_runs.run_memory.
            "memory": memory,
            "task": task.name,
            "watch_memory": False,  # the network reports each change once
            "network_tools": self.network.tools,
            "network_mcp": self.network.mcp,
            "tools": task.tools if task.tools != "inherit" else self.options.get("tools", "inherit"),
            "mcp": task.mcp if task.mcp != "inherit" else self.options.get("mcp", "inherit"),
        }
        for key in ("approval", "folder", "changes", "thread_id", "max_turns", "settings", "provider"):
            if self.options.get(key) is not None:
                options[key] = self.options[key]
        if self.network.ledger is not None:  # one budget for every task, held by one model call at a time
            options["ledger"] = self.network.ledger
        layered = self.network.config.merge(task.config)  # RunConfig: the task's over the network's
        if not layered.empty:
            options["network_config"] = layered
        return options


def _template_safe(values: Mapping[str, Any]) -> dict[str, Any]:
    from workspace.robot_runs import RUN_OPTIONS

    return {k: v for k, v in values.items() if k not in RUN_OPTIONS and k != "message"}


def _join_upstream(upstream: Mapping[str, str]) -> str:
    if not upstream:
        return ""
    if len(upstream) == 1:
        return next(iter(upstream.values()))
    return "\n\n".join(f"## {name}\n\n{text}" for name, text in upstream.items())


def _partial(state: TaskState) -> RobotResult | None:
    run = state.agent_run
    if run is not None and run.result is not None:
        return run.result
    return state.result

