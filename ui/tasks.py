"""TaskOwner: the one place the desktop spawns asyncio tasks.

qasync's ``@asyncSlot`` keeps no strong reference to the task it creates (qasync #98),
logs cancellation as an error, and nothing cancels its tasks on quit. Every widget and
controller spawns through a :class:`TaskOwner` instead: it holds strong references,
reports exceptions (log + an optional callback the window turns into a message), treats
``CancelledError`` as the normal end of a task, and cancels everything on shutdown.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio

log = logging.getLogger("ui.tasks")

T = TypeVar("T")
ErrorHandler = Callable[[str, BaseException], None]


class TaskOwner:
    """Owns tasks: ``spawn(coro, name=...)``; ``await shutdown()`` cancels and awaits them all."""

    def __init__(self, *, on_error: ErrorHandler | None = None) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self.on_error = on_error
        self._closed = False

    def spawn(self, coro: Coroutine[Any, Any, T], *, name: str | None = None) -> asyncio.Task[T]:
        if self._closed:
            coro.close()
            raise RuntimeError("TaskOwner is shut down; no new tasks")
        import asyncio

        task = asyncio.get_event_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            return
        label = task.get_name()
        log.error("task %s failed: %s: %s", label, type(exc).__name__, exc, exc_info=exc)
        if self.on_error is not None:
            try:
                self.on_error(label, exc)
            except Exception:  # pragma: no cover - never let the reporter raise
                log.exception("error handler failed")

    @property
    def tasks(self) -> set[asyncio.Task[Any]]:
        return set(self._tasks)

    def __len__(self) -> int:
        return len(self._tasks)

    def cancel_all(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    async def shutdown(self, timeout: float = 3.0) -> None:
        """Cancel every owned task and wait (bounded) for them to finish."""
        import asyncio

        self._closed = True
        tasks = [t for t in self._tasks if not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
