"""One timer that bounds every wait of a stream's attempt, for its response and then for each chunk (see
:class:`Watchdog`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

__all__ = ["SLACK", "Watchdog", "wake"]

#: Seconds a wait may end after its deadline rather than a new timer be made for it (see :meth:`Watchdog.arm`).
SLACK = 0.001


class Watchdog:
    """One timer bounding every wait of one stream (its response, each chunk), where ``asyncio.timeout`` around each wait
    would schedule a new timer per chunk (under qasync, a Qt timer each). :meth:`arm` sets the deadline of
    the wait about to start (an attribute, and a timer only when none is pending); :meth:`disarm` ends it.
    A timer that fires before the current deadline schedules itself again for it; one that fires past it
    cancels the waiting task, like ``asyncio.timeout``, and :meth:`expired` then tells that cancel apart
    from any other.

    ``horizon``: the farthest ahead a new timer is set (seconds; None: at the deadline). A stream's waits move
    their deadline from the first token's (minutes away) to each chunk's (``idle_timeout`` from now): a timer
    set no farther than the nearest of them is kept through them all, where one at the first deadline is set
    again for the first chunk's. The same timer says a slow first token (:meth:`notice`): one timer an
    attempt, where a notice's own would make two."""

    __slots__ = ("_base", "_fired", "_handle", "_horizon", "_notice_at", "_say", "_task", "_when", "clock",
                 "deadline", "loop")

    def __init__(self, horizon: float | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        #: The loop's clock (``loop.time()``, which deadlines are in): ``time.monotonic`` itself for asyncio's own
        #: loops, whose ``time`` is a Python method over it (read before every chunk's wait: no call of a method).
        self.clock: Callable[[], float] = (time.monotonic if type(self.loop).time is asyncio.BaseEventLoop.time
                                           else self.loop.time)
        #: When the wait in progress times out (``loop.time()``); None between waits.
        self.deadline: float | None = None
        # Not TimerHandle.when(): qasync's call_at answers with a plain Handle.
        self._handle: asyncio.Handle | None = None
        self._when = 0.0
        self._task: asyncio.Task[Any] | None = None
        self._base = 0
        self._fired = False
        self._horizon = horizon
        #: What says the notice (:meth:`notice`) and when (``loop.time()``); None once said or hushed.
        self._say: Callable[[], object] | None = None
        self._notice_at = 0.0

    def arm(self, deadline: float) -> None:
        task = asyncio.current_task(self.loop)  # the loop given: no lookup of the running one for every chunk
        if task is not self._task:
            self._task = task
            self._base = task.cancelling() if task is not None else 0
        self.deadline = deadline
        handle = self._handle
        # A deadline a hair before the pending timer's keeps it (the same deadline worked out again from another
        # clock: the wait for the first token after the wait for the response): the wait ends at most SLACK late.
        if handle is None or self._when > deadline + SLACK:
            when = deadline
            if handle is not None:
                handle.cancel()
            elif self._horizon is not None:  # a new timer: no farther than the horizon (see the class docstring)
                when = min(deadline, self.loop.time() + self._horizon)
            if self._say is not None:
                when = min(when, self._notice_at)
            self._schedule(when)

    def disarm(self) -> None:
        """The wait ended (a stream's reader sets :attr:`deadline` to None itself, for each chunk)."""
        self.deadline = None

    def notice(self, when: float, say: Callable[[], object]) -> None:
        """Call ``say`` at ``when`` (``loop.time()``; at once when past), from this timer, unless :meth:`hush`
        comes first: a slow first token's notice, said while the wait goes on, between waits too."""
        self._say, self._notice_at = say, when
        handle = self._handle
        if handle is None or self._when > when + SLACK:
            if handle is not None:
                handle.cancel()
            self._schedule(when)

    def hush(self) -> None:
        """The notice is not to be said (the first output came)."""
        self._say = None

    def _schedule(self, when: float) -> None:
        self._when = when
        self._handle = self.loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._handle = None
        now = self.loop.time()
        say = self._say
        if say is not None and now >= self._notice_at:
            self._say = None
            say()
        deadline = self.deadline
        if deadline is None or self._task is None:
            if self._say is not None:  # between waits, a notice still to come: its time
                self._schedule(self._notice_at)
            return  # between waits: the next arm schedules a timer again
        if now < deadline:
            self._schedule(deadline if self._say is None else min(deadline, self._notice_at))
            return
        self._fired = True
        self._task.cancel()

    def expired(self) -> bool:
        """After a ``CancelledError`` in the wait: whether this timer caused it, and nothing else cancelled
        the task (then the cancel is taken back, as ``asyncio.timeout`` does)."""
        if not self._fired or self._task is None:
            return False
        self._fired = False
        return self._task.uncancel() <= self._base

    def close(self) -> None:
        self.deadline = None
        self._say = None
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


def wake(waiter: asyncio.Future[None]) -> None:
    """Set ``waiter``'s result, unless it is done already (woken, or cancelled with the task awaiting it)."""
    if not waiter.done():
        waiter.set_result(None)
