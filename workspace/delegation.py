"""Delegation: one robot has another run a task, now or in the background (RobotLab's ``Robot#delegate``).

``await robot.delegate(to=other, task="...")`` returns the other robot's result with ``duration``
(seconds) and ``delegated_by`` set. With ``background=True`` it returns a :class:`DelegationFuture` at
once (the work runs as an asyncio task, where RobotLab starts a thread): ``done()`` says whether it
finished, ``await future.value(timeout=30)`` gives the result, raises the delegate's error, or raises
:class:`DelegationTimeout` without stopping the work.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from typing import TYPE_CHECKING, Any

from workspace import events as ev
from workspace.errors import Error, RunFailedError, ToolLoopError
from workspace.tools.base import RunHandle, current_call

if TYPE_CHECKING:
    from collections.abc import Callable

    from workspace.result import RobotResult


def stopped_in_background(how: str) -> str:
    """Why a delegate's run that went on in the background after the run that started it ended stopped, from what
    stopped it (``how``: "you pressed Stop"): the reason :func:`record_stopped` stores, so its lane says so again
    when the thread is reopened."""
    return f"{how} while it went on in the background after the run that started it ended"


#: The person pressed Stop (the window's Stop and Esc, :meth:`workspace.session.ThreadSession.stop`).
STOPPED_IN_BACKGROUND = stopped_in_background("you pressed Stop")
#: The person quit the window (it asks first when delegated work still runs).
STOPPED_AT_QUIT = stopped_in_background("you quit RobotLab Workspace")
#: Why the thread's own run stopped when the person deleted the thread (a soft delete: its rows stay, and Undo brings
#: it back saying so).
THREAD_DELETED = "you deleted the thread"
#: The person deleted the thread (a soft delete: its rows stay, and Undo brings it back with its lanes).
STOPPED_WITH_THREAD = stopped_in_background(THREAD_DELETED)
#: The workspace was closed (:meth:`workspace.session.Workspace.close`; the command line gives its own reason).
STOPPED_AT_CLOSE = stopped_in_background("the workspace was closed")


class DelegationTimeout(Error):
    """:meth:`DelegationFuture.value` waited longer than its ``timeout``; the delegated work goes on."""


class DelegationFuture:
    """The result to come of a task delegated in the background."""

    def __init__(self, task: asyncio.Task[RobotResult], *, robot_name: str, delegated_by: str) -> None:
        self.robot_name = robot_name
        self.delegated_by = delegated_by
        self._task = task
        #: The id of the delegate's run once it started inside the call that delegated (its lane in the chat).
        self.run_id: str | None = None
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

    def add_done_callback(self, callback: Callable[[DelegationFuture], object]) -> None:
        """Call ``callback(self)`` once the delegate finished, failed or was stopped (at once if it has)."""
        self._task.add_done_callback(lambda _: callback(self))

    def __repr__(self) -> str:
        state = "done" if self.done() else "running"
        return f"<DelegationFuture {self.delegated_by} -> {self.robot_name} {state}>"


#: The delegations running in the background that a tool call started, by their owner: the id of the caller's thread
#: (or, for a run of no thread, the id of the outermost run whose call started it). Stop (the window's Stop and Esc,
#: a command line's Ctrl-C or SIGTERM) and deleting the thread stop them (:func:`stop_delegations`), so the work a
#: person stopped does not go on out of sight.
_BY_OWNER: dict[str, set[DelegationFuture]] = {}

#: The owner of the delegations started here: set in a delegation's own task, so what its delegate delegates in turn
#: belongs to the same thread or run (copied into the tasks it starts, as asyncio copies the context).
_OWNER: contextvars.ContextVar[str | None] = contextvars.ContextVar("delegation_owner", default=None)


def running_delegations(owner: str) -> list[DelegationFuture]:
    """The background delegations started in the runs of ``owner`` (a thread's id; for a run of no thread, the run's
    id) that still run."""
    return [f for f in _BY_OWNER.get(owner, ()) if not f.done()]


def stop_delegations(owner: str) -> list[DelegationFuture]:
    """Stop the background delegations started in the runs of ``owner`` (a thread's id; for a run of no thread, the
    run's id): the person pressed Stop, or deleted the thread. Those that were still running, whose delegate's run
    ends cancelled; its model is not asked again."""
    stopped = [f for f in running_delegations(owner) if f.cancel()]
    _BY_OWNER.pop(owner, None)
    return stopped


def record_stopped(store: Any, thread_id: str, turn_id: str, run_ids: list[str], *,
                   reason: str = STOPPED_IN_BACKGROUND) -> list[ev.RunCancelled]:
    """Store how the delegates' runs ``run_ids`` ended when Stop stopped them after the run that started them ended
    (its recording had ended, so their own end is not in the turn ``turn_id``): each one's ``run_cancelled`` with
    ``reason``, nested as its ``run_started`` was, after the turn's last event. A run not in the turn, or whose end
    is stored already, is left alone. Returns the events stored."""
    started: dict[str, ev.RunStarted] = {}
    ended: set[str] = set()
    last_seq: dict[str, int] = {}
    for event in store.turn_events(turn_id):
        if event.run_id not in run_ids:
            continue
        last_seq[event.run_id] = max(last_seq.get(event.run_id, 0), event.seq)
        if isinstance(event, ev.RunStarted):
            started.setdefault(event.run_id, event)
        elif event.terminal:
            ended.add(event.run_id)
    stored = [ev.RunCancelled(run_id=run_id, robot=first.robot, task=first.task, seq=last_seq[run_id] + 1,
                              parent_run_id=first.parent_run_id, parent_tool_id=first.parent_tool_id,
                              candidate=first.candidate, reason=reason)
              for run_id, first in started.items() if run_id not in ended]
    if stored:
        store.append_events(thread_id, turn_id, stored)
    return stored


def owner_of(run: Any) -> str | None:
    """Whose delegations :func:`stop_delegations` stops for ``run`` (a run, a recorded run, a thread's session):
    its thread's id, else its own run id; None when it has neither."""
    for value in (getattr(run, "thread_id", None), getattr(getattr(run, "spec", None), "thread_id", None),
                  getattr(run, "run_id", None)):
        if isinstance(value, str) and value:
            return value
    return None


def _caller_owner() -> str | None:
    """The owner of a delegation started here: the thread of the run whose tool call is running here, or that run's
    own id when it has no thread (None: outside a call)."""
    inherited = _OWNER.get()
    if inherited is not None:
        return inherited
    call = current_call()
    parent = call.run if call is not None else None
    if call is None or parent is None:
        return None
    thread_id = parent.child_options(call.call_id).get("thread_id")
    if isinstance(thread_id, str) and thread_id:
        return thread_id
    return parent.run_id or None


def _follow(future: DelegationFuture, task: asyncio.Task[Any], owner: str) -> None:
    futures = _BY_OWNER.setdefault(owner, set())
    futures.add(future)

    def forget(_: asyncio.Task[Any]) -> None:
        futures.discard(future)
        if not futures and _BY_OWNER.get(owner) is futures:
            del _BY_OWNER[owner]

    task.add_done_callback(forget)


async def _run(to: Any, task: Any, *, delegated_by: str, options: dict[str, Any],
               started: Callable[[str], None] | None = None) -> RobotResult:
    start = time.monotonic()
    call = current_call()
    parent = call.run if call is not None else None
    if call is not None and parent is not None and callable(getattr(to, "stream", None)):
        result = await run_inside(to, task, parent, {**parent.child_options(call.call_id), **options},
                                  started=started)
    else:
        result = await to.arun(task, **options)
    result.duration = time.monotonic() - start
    result.delegated_by = delegated_by
    return result


async def run_inside(to: Any, task: Any, parent: RunHandle, options: dict[str, Any], *,
                     started: Callable[[str], None] | None = None) -> RobotResult:
    """``to``'s run inside ``parent``, the run whose tool call started it (``options`` from its
    ``child_options``): its events in that run's stream, like a robot used as a tool's, its usage in that run's
    totals, with what ``arun`` would return or raise. A run still going when ``parent`` ends goes on; the rest
    of its events are not in the stream. Delegations and the answers of a network's bus use it. ``started`` is told
    the run's id."""
    run = to.stream(task, **options)
    if started is not None:
        started(str(run.run_id))
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
    if not background:
        return await _run(to, task, delegated_by=delegated_by, options=options)
    future: DelegationFuture | None = None

    def started(run_id: str) -> None:
        if future is not None:
            future.run_id = run_id

    work = _run(to, task, delegated_by=delegated_by, options=options, started=started)
    owner = _caller_owner()
    context = contextvars.copy_context()
    context.run(_OWNER.set, owner)  # what the delegate delegates in turn has the same owner
    running = asyncio.create_task(work, name=f"delegation {delegated_by} -> {name}", context=context)
    future = DelegationFuture(running, robot_name=name, delegated_by=delegated_by)
    if owner is not None:
        _follow(future, running, owner)
    return future
