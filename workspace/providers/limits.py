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

from workspace.urls import is_loopback_url

__all__ = ["DEFAULT_LOCAL_LIMIT", "default_limit", "semaphore"]

#: Requests at a time to a server on this machine, unless ``llm.max_concurrent_requests`` says otherwise.
DEFAULT_LOCAL_LIMIT = 1

_lock = threading.Lock()
_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, tuple[int, asyncio.Semaphore]]] = (
    weakref.WeakKeyDictionary())


def default_limit(endpoint: str | None) -> int:
    """The limit for ``endpoint`` when none is configured: 1 on this machine, 0 (none) elsewhere."""
    return DEFAULT_LOCAL_LIMIT if endpoint and is_loopback_url(endpoint) else 0


def semaphore(endpoint: str, limit: int) -> asyncio.Semaphore | None:
    """The slots of ``endpoint`` on the running loop, ``limit`` at a time (None for 0: no limit). A request
    holds one while it runs; ``locked()`` says whether the next one would queue."""
    if limit <= 0:
        return None
    loop = asyncio.get_running_loop()
    table = _slots.get(loop)  # the common case: no lock, no new entry
    found = table.get(endpoint) if table is not None else None
    if found is not None and found[0] == limit:
        return found[1]
    with _lock:
        table = _slots.setdefault(loop, {})
        found = table.get(endpoint)
        if found is None or found[0] != limit:
            found = table[endpoint] = (limit, asyncio.Semaphore(limit))
        return found[1]
