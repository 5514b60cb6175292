"""How many requests may go to one server at a time (``llm.max_concurrent_requests``).

Some local servers stop a running stream when another request arrives (llama-cpp-python's server
does by default), so the parallel tasks of a network would cut each other's answers. Requests to
one endpoint therefore take a slot first; the others queue (the run shows "queued") and go in
turn. The default: one at a time for a server on this machine, no limit for hosted providers.

Slots belong to an event loop (an ``asyncio.Semaphore`` is bound to the loop that uses it): each
loop has its own, keyed by the endpoint (the API base, or the hosted provider's name).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from workspace.urls import is_loopback_url

__all__ = ["DEFAULT_LOCAL_LIMIT", "default_limit", "slot", "waiting"]

#: Requests at a time to a server on this machine, unless ``llm.max_concurrent_requests`` says otherwise.
DEFAULT_LOCAL_LIMIT = 1

_lock = threading.Lock()
_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, tuple[int, asyncio.Semaphore]]] = (
    weakref.WeakKeyDictionary())


def default_limit(endpoint: str | None) -> int:
    """The limit for ``endpoint`` when none is configured: 1 on this machine, 0 (none) elsewhere."""
    return DEFAULT_LOCAL_LIMIT if endpoint and is_loopback_url(endpoint) else 0


def _semaphore(endpoint: str, limit: int) -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    with _lock:
        table = _slots.setdefault(loop, {})
        found = table.get(endpoint)
        if found is None or found[0] != limit:
            found = table[endpoint] = (limit, asyncio.Semaphore(limit))
        return found[1]


def waiting(endpoint: str, limit: int) -> bool:
    """Whether a request to ``endpoint`` would have to queue now."""
    return limit > 0 and _semaphore(endpoint, limit).locked()


@asynccontextmanager
async def slot(endpoint: str, limit: int) -> AsyncIterator[None]:
    """Hold one of ``limit`` slots of ``endpoint`` (0: no limit) for the duration of a request."""
    if limit <= 0:
        yield
        return
    semaphore = _semaphore(endpoint, limit)
    async with semaphore:
        yield
