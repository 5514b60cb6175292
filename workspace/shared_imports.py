"""Shared libraries imported whole, once, before two threads could import them at the same time.

The provider SDKs (litellm, openai, the mcp SDK) are imported in worker threads so the first reply
does not wait for them and the window does not freeze. They all build on pydantic, which the main
thread uses too (the schemas of robot files and settings, tool arguments). When two threads import
pydantic's inner modules at the same moment, Python's import lock breaks the cycle between them by
handing one thread a *partially initialised* module, and that thread fails with "cannot import name
… from partially initialized module 'pydantic._internal._validators'" (seen once in a few hundred
runs of the packaged app under load). :func:`settle_shared_imports` imports those modules on the
calling thread first (about 20 ms when pydantic is already loaded, 100 ms from nothing), so the
worker finds them whole.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: pydantic's modules that model classes, type adapters and validators import on first use.
SHARED = (
    "pydantic",
    "pydantic.main",
    "pydantic.fields",
    "pydantic.functional_validators",
    "pydantic.type_adapter",
    "pydantic.json_schema",
    "pydantic._internal._validators",
    "pydantic._internal._generate_schema",
    "pydantic._internal._model_construction",
)

_settled = False
_lock = threading.Lock()


def settle_shared_imports() -> None:
    """Import :data:`SHARED` on this thread (once per process; later calls return at once)."""
    global _settled
    if _settled:
        return
    with _lock:
        if _settled:
            return
        for name in SHARED:
            try:
                importlib.import_module(name)
            except ImportError:  # a pydantic without this module: nothing to settle there
                continue
        _settled = True


async def import_in_thread(load: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``load(*args, **kwargs)`` (an SDK's import) in a worker thread, the shared imports settled first."""
    settle_shared_imports()
    return await asyncio.to_thread(load, *args, **kwargs)


__all__ = ["SHARED", "import_in_thread", "settle_shared_imports"]
