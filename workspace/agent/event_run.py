"""What every run shares (:class:`EventRun`): an event queue iterated once, ending at the run's one
terminal event; observers that see every event as it is iterated."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from workspace import events as ev

__all__ = ["EventRun"]


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
