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

Loading a library also allocates a few hundred thousand long-lived objects, and the cyclic garbage
collector walks all of them every time its oldest generation fills: 80-170 ms with the interpreter
lock held, which froze the window (and any other thread) that long, a dozen times while litellm
loaded. :func:`pause_gc` / :func:`resume_gc` (or :func:`gc_paused`) stop the collector while a
library loads and then *freeze* what was loaded (``gc.freeze``: kept out of later collections, which
then cost what the conversation allocates, not what the libraries did). Cyclic garbage made while
paused is frozen with the rest (``gc.freeze`` cannot tell it apart): :func:`refreeze` (the window runs it when it
is idle, ``ui.idle``) gives everything back to the collector, collects and freezes what lives again, so what was
frozen and is gone since is freed.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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


_gc_lock = threading.Lock()
_gc_pauses = 0
_gc_was_enabled = True
#: How many objects the freezes here froze (:func:`frozen_count`), and whether it is known yet.
_frozen = 0
_frozen_known = False


def frozen_count(*, walk: bool = False) -> int:
    """The objects frozen, as the freezes here counted them: ``gc.get_freeze_count()`` without its walk. CPython
    counts the frozen by walking their list, every one of them (9 ns each: 26 ms with 3 million, a 10,000-turn
    thread paged in; the idle watch asked at every tick, 20 a second, and the idle window spent half its thread on
    it). Each freeze here counts what it moves, without walking it either (a pause's end: what the pause made, the
    youngest generation's count; the survivors of a collection: what it walked), and a refreeze what it leaves.
    The count is close, not exact (the youngest generation's count is allocations less deallocations), and a
    frozen object that dies is not taken off: ``walk`` (or the first call) counts them again, once."""
    global _frozen, _frozen_known
    with _gc_lock:
        if walk or not _frozen_known:
            _frozen, _frozen_known = gc.get_freeze_count(), True
        return _frozen


def _freeze(moved: int) -> None:
    """``gc.freeze()`` (under ``_gc_lock``), counted: ``moved`` is how many objects were not frozen yet."""
    global _frozen
    gc.freeze()
    _frozen += moved


def pause_gc() -> None:
    """Stop the cyclic garbage collector until the matching :func:`resume_gc` (pauses nest, any thread)."""
    global _gc_pauses, _gc_was_enabled
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1


def resume_gc() -> None:
    """End one :func:`pause_gc`; the last one freezes what exists now and restarts the collector."""
    global _gc_pauses
    with _gc_lock:
        if _gc_pauses == 0:
            return
        _gc_pauses -= 1
        if _gc_pauses == 0:
            # (what the pause made is all in the youngest generation, the collector being off, and its count is
            # read without a walk: listing a million objects takes 21 ms, the interpreter lock held; the older
            # generations hold what lived on since the last freeze, a few thousand, listed)
            _freeze(gc.get_count()[0] + len(gc.get_objects(1)) + len(gc.get_objects(2)))
            if _gc_was_enabled:
                gc.enable()


def refreeze() -> bool:
    """Give what is frozen back to the collector, collect everything, and freeze what lives again: what the pauses
    froze and is gone since (a closed thread's state, cyclic garbage that existed when a pause ended: ``gc.freeze``
    freezes it too) is freed. One full collection of every object, tens of ms with a long thread loaded: the
    window runs it when it is idle (``ui.idle``). False (nothing done) while a pause is on."""
    global _frozen, _frozen_known
    with _gc_lock:
        if _gc_pauses:
            return False
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        _frozen, _frozen_known = gc.get_freeze_count(), True  # (one walk, beside the collection's own)
        return True


def freeze_survivors() -> bool:
    """Collect what is not frozen and freeze what lives of it (the frozen are neither walked nor given back): later
    full passes walk only what is made after. False (nothing done) while a pause is on."""
    with _gc_lock:
        if _gc_pauses:
            return False
        gc.collect()
        _freeze(len(gc.get_objects()))  # (the survivors: what the collection just walked)
        return True


@contextmanager
def gc_paused() -> Iterator[None]:
    """:func:`pause_gc` for the ``with`` block (a library loading), then :func:`resume_gc`."""
    pause_gc()
    try:
        yield
    finally:
        resume_gc()


def _load_paused(load: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    with gc_paused():
        return load(*args, **kwargs)


async def import_in_thread(load: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``load(*args, **kwargs)`` (an SDK's import) in a worker thread, the shared imports settled first
    and the garbage collector paused meanwhile (see the module docstring)."""
    settle_shared_imports()
    return await asyncio.to_thread(_load_paused, load, *args, **kwargs)


__all__ = ["SHARED", "freeze_survivors", "gc_paused", "import_in_thread", "pause_gc", "refreeze", "resume_gc", "settle_shared_imports"]
