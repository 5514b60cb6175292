"""A fix of asyncio's subprocess transport on Python 3.11: a process whose creation is cancelled hangs for ever.

``loop.subprocess_exec`` connects the child's pipes after starting it. Cancelled then (a run stopped, Ctrl-C or
SIGTERM while an MCP server or a command starts), it kills the child and awaits its exit; but the transport wakes
those waiting for the exit only once every pipe was connected and is closed again, and the pipes never were. The
wait never ends: the task that started the process never finishes, and ``asyncio.run`` waits for it for ever
when it closes (a ``robotlab run`` stopped by SIGTERM while its MCP server started did not exit).

CPython fixed this in 3.12 (``BaseSubprocessTransport._try_finish`` wakes the waiters when the pipes were not
all connected). :func:`install` backports that to the running interpreter once; on newer Pythons it does nothing.
"""

from __future__ import annotations

import sys
from typing import Any

_INSTALLED = False


def install() -> None:
    """Patch ``asyncio.base_subprocess.BaseSubprocessTransport._try_finish`` on Python < 3.12 (idempotent)."""
    global _INSTALLED
    if _INSTALLED or sys.version_info >= (3, 12):
        return
    from asyncio import base_subprocess

    transport = base_subprocess.BaseSubprocessTransport
    original = transport._try_finish

    def _try_finish(self: Any) -> None:
        waiters = self._exit_waiters
        if self._returncode is not None and waiters and any(pipe is None for pipe in self._pipes.values()):
            # The process exited before its pipes were all connected (its start was cancelled): whoever waits
            # for its exit is told now, as the pipes will never close to tell them.
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(self._returncode)
            waiters.clear()
        original(self)

    setattr(transport, "_try_finish", _try_finish)  # noqa: B010 (a method replaced on purpose)
    _INSTALLED = True
