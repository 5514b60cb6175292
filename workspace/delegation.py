"""Delegation: one robot has another run a task, now or in the background (RobotLab's ``Robot#delegate``).

``await robot.delegate(to=other, task="...")`` returns the other robot's result with ``duration``
(seconds) and ``delegated_by`` set. With ``background=True`` it returns a :class:`DelegationFuture` at
once (the work runs as an asyncio task, where RobotLab starts a thread): ``done()`` says whether it
finished, ``await future.value(timeout=30)`` gives the result, raises the delegate's error, or raises
:class:`DelegationTimeout` without stopping the work.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from workspace import events as ev
from workspace.errors import Error, RunFailedError, ToolLoopError
from workspace.tools.base import RunHandle, current_call

if TYPE_CHECKING:
    from workspace.result import RobotResult


class DelegationTimeout(Error):
    """:meth:`DelegationFuture.value` waited longer than its ``timeout``; the delegated work goes on."""


class DelegationFuture:
    """The result to come of a task delegated in the background."""

    def __init__(self, task: asyncio.Task[RobotResult], *, robot_name: str, delegated_by: str) -> None:
        self.robot_name = robot_name
        self.delegated_by = delegated_by
        self._task = task
        # Read the error once it is there, so a future nobody waits on does not log "never retrieved".
        task.add_done_callback(lambda t: None if t.cancelled() else t.exception())

    def done(self) -> bool:
        """The delegate finished (with a result or an error)."""
        return self._task.done()

    async def value(self, *, timeout: float | None = None) -> RobotResult:
        """Wait for the result (at most ``timeout`` seconds): the delegate's RobotResult, or its error."""
        try:
            return await asyncio.wait_for(asyncio.shield(self._task), timeout)
        except TimeoutError:
            if self._task.done():  # finished at the very moment the wait gave up
                return self._task.result()
            raise DelegationTimeout(f"Delegation to '{self.robot_name}' timed out after {timeout:g}s") from None

    wait = value

    def cancel(self) -> bool:
        """Stop the delegated work (RobotLab cannot); True if it was still running."""
        return self._task.cancel()

    def __repr__(self) -> str:
        state = "done" if self.done() else "running"
        return f"<DelegationFuture {self.delegated_by} -> {self.robot_name} {state}>"


#: The delegations running in the background that a tool call of a thread's run started, by the thread's id: what
#: deleting the thread stops (:func:`stop_delegations`), so none goes on into a thread that is no more.
_BY_THREAD: dict[str, set[DelegationFuture]] = {}


def running_delegations(thread_id: str) -> list[DelegationFuture]:
    """The background delegations started in ``thread_id``'s runs that still run."""
    return [f for f in _BY_THREAD.get(thread_id, ()) if not f.done()]


def stop_delegations(thread_id: str) -> list[DelegationFuture]:
    """Stop the background delegations started in ``thread_id``'s runs (the thread is deleted); those that were
    still running, whose delegate's run ends cancelled."""
    stopped = [f for f in running_delegations(thread_id) if f.cancel()]
    _BY_THREAD.pop(thread_id, None)
    return stopped


def _caller_thread() -> str | None:
    """The thread of the run whose tool call is running here (None: outside a call, or a run of no thread)."""
    call = current_call()
    parent = call.run if call is not None else None
    if call is None or parent is None:
        return None
    thread_id = parent.child_options(call.call_id).get("thread_id")
    return thread_id if isinstance(thread_id, str) and thread_id else None


def _follow(future: DelegationFuture, task: asyncio.Task[Any], thread_id: str) -> None:
    futures = _BY_THREAD.setdefault(thread_id, set())
    futures.add(future)

    def forget(_: asyncio.Task[Any]) -> None:
        futures.discard(future)
        if not futures and _BY_THREAD.get(thread_id) is futures:
            del _BY_THREAD[thread_id]

    task.add_done_callback(forget)


async def _run(to: Any, task: Any, *, delegated_by: str, options: dict[str, Any]) -> RobotResult:
    start = time.monotonic()
    call = current_call()
    parent = call.run if call is not None else None
    if call is not None and parent is not None and callable(getattr(to, "stream", None)):
        result = await run_inside(to, task, parent, {**parent.child_options(call.call_id), **options})
    else:
        result = await to.arun(task, **options)
    result.duration = time.monotonic() - start
    result.delegated_by = delegated_by
    return result


async def run_inside(to: Any, task: Any, parent: RunHandle, options: dict[str, Any]) -> RobotResult:
    """``to``'s run inside ``parent``, the run whose tool call started it (``options`` from its
    ``child_options``): its events in that run's stream, like a robot used as a tool's, its usage in that run's
    totals, with what ``arun`` would return or raise. A run still going when ``parent`` ends goes on; the rest
    of its events are not in the stream. Delegations and the answers of a network's bus use it."""
    run = to.stream(task, **options)
    began = False
    async for event in run:
        ends = ev.ends(event, run.run_id)
        began = began or isinstance(event, ev.RunStarted)
        if began or not ends:  # a run stopped before it began has nothing to end
            parent.forward(event)
    result = run.result
    if result is not None:
        parent.add_usage(result.usage)
    terminal = run.terminal
    if isinstance(terminal, ev.RunFailed):
        if isinstance(run.error, ToolLoopError):  # as arun: the circuit breaker's own error
            raise run.error
        raise RunFailedError(terminal.error)
    if result is None:
        raise RunFailedError(f"The robot '{getattr(to, 'name', 'robot')}' ended without a result")
    return result


async def delegate(to: Any, task: Any, *, delegated_by: str, background: bool = False,
                   **options: Any) -> RobotResult | DelegationFuture:
    """``to.arun(task, **options)`` timed and signed by ``delegated_by``; see :meth:`workspace.robot.Robot.delegate`."""
    if not callable(getattr(to, "arun", None)):
        raise TypeError(f"delegate(to=...) needs a robot (something with 'arun'); got {type(to).__name__}")
    name = str(getattr(to, "name", "robot"))
    work = _run(to, task, delegated_by=delegated_by, options=options)
    if not background:
        return await work
    running = asyncio.create_task(work, name=f"delegation {delegated_by} -> {name}")
    future = DelegationFuture(running, robot_name=name, delegated_by=delegated_by)
    thread_id = _caller_thread()
    if thread_id is not None:
        _follow(future, running, thread_id)
    return future
