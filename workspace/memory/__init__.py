"""Reactive, thread-safe key-value memory (spec 1.3): ``Memory``, ``MemoryChange``,
``StateProxy`` and the ``Waiter`` latch.

One ``Memory`` belongs to each robot and one to each network. Writes through :meth:`Memory.set`
(or ``memory[key] = value``) record a :class:`MemoryChange`, wake coroutines blocked in
:meth:`Memory.wait_for`, call observers synchronously and notify subscribers asynchronously,
so a slow or failing subscriber never blocks or breaks the writer.

Keys are strings. The reserved keys ``data``, ``results``, ``messages``, ``session_id`` and
``cache`` have accessors of their own and are written silently. There is no Redis backend and no
semantic cache: ``memory["cache"]`` is always ``None``.
"""

from __future__ import annotations

from workspace.memory.change import MemoryChange
from workspace.memory.proxy import StateProxy
from workspace.memory.store import HISTORY_LIMIT, RESERVED_KEYS, Memory, writer_var
from workspace.memory.waiters import TIMEOUT, Waiter

__all__ = [
    "HISTORY_LIMIT",
    "RESERVED_KEYS",
    "TIMEOUT",
    "Memory",
    "MemoryChange",
    "StateProxy",
    "Waiter",
    "writer_var",
]
