"""Waiting for memory keys: the ``Waiter`` latch, the ``TIMEOUT`` marker and resolving futures across loops."""

from __future__ import annotations

import asyncio
import threading
from typing import Any


class _Timeout:
    """The sentinel :meth:`Waiter.wait` returns on timeout (RobotLab's ``:timeout``)."""

    _instance: _Timeout | None = None

    def __new__(cls) -> _Timeout:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "TIMEOUT"

    def __bool__(self) -> bool:
        return False


TIMEOUT: Any = _Timeout()


def _resolve(fut: asyncio.Future[Any], value: Any) -> None:
    if not fut.done():
        fut.set_result(value)


def _resolve_on(loop: asyncio.AbstractEventLoop, fut: asyncio.Future[Any], value: Any) -> None:
    """Complete ``fut`` on its loop, from any thread."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        _resolve(fut, value)
        return
    try:
        loop.call_soon_threadsafe(_resolve, fut, value)
    except RuntimeError:  # the loop is closed: nobody is waiting any more
        pass


class Waiter:
    """A one-shot latch: :meth:`signal` wakes every waiter, threads and coroutines alike."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._signaled = False
        self._value: Any = None
        self._futures: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[Any]]] = []

    @property
    def is_signaled(self) -> bool:
        """True once :meth:`signal` has been called."""
        with self._cond:
            return self._signaled

    def signal(self, value: Any = None) -> None:
        """Store ``value`` and wake all waiters (``None`` is a valid value)."""
        with self._cond:
            self._value = value
            self._signaled = True
            self._cond.notify_all()
            futures, self._futures = self._futures, []
        for loop, fut in futures:
            _resolve_on(loop, fut, value)

    def wait(self, timeout: float | None = None) -> Any:
        """Block the calling thread until signaled; the value, or :data:`TIMEOUT`."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._signaled, timeout):
                return TIMEOUT
            return self._value

    async def wait_async(self, timeout: float | None = None) -> Any:
        """Wait without blocking the event loop; the value, or :data:`TIMEOUT`."""
        loop = asyncio.get_running_loop()
        with self._cond:
            if self._signaled:
                return self._value
            if timeout is not None and timeout <= 0:
                return TIMEOUT
            fut: asyncio.Future[Any] = loop.create_future()
            entry = (loop, fut)
            self._futures.append(entry)
        try:
            return await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            return TIMEOUT
        finally:
            with self._cond:
                if entry in self._futures:
                    self._futures.remove(entry)


# --------------------------------------------------------------------------------------------
# StateProxy



def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None



def _future_loop(fut: asyncio.Future[Any]) -> asyncio.AbstractEventLoop | None:
    try:
        return fut.get_loop()
    except Exception:
        return None
