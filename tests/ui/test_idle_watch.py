"""The window's idle moments (:mod:`ui.idle`): what waits for one waits while the window's thread is busy, runs once
it is quiet, and never waits without bound."""

from __future__ import annotations

import gc
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ui import idle
from workspace.shared_imports import gc_paused


def _run(app: Any, seconds: float, *, busy: bool, until: Callable[[], bool] = lambda: False) -> None:
    """The event loop's passes for ``seconds`` (or until ``until``): each spending 20 ms of CPU when ``busy``."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end and not until():
        if busy:
            spin = time.thread_time() + 0.02
            while time.thread_time() < spin:
                pass
        else:
            time.sleep(0.005)
        app.processEvents()


@pytest.fixture
def watch(qapp_instance: Any) -> Iterator[idle.IdleWatch]:
    made = idle.IdleWatch()
    made.start()
    yield made
    made.stop()
    assert idle.IDLE.is_set()  # no watch: nothing waits


def test_what_waits_for_an_idle_moment_runs_once_the_window_is_quiet(qapp_instance: Any,
                                                                   watch: idle.IdleWatch) -> None:
    ran: list[bool] = []
    idle.when_idle(lambda: ran.append(idle.IDLE.is_set()))
    _run(qapp_instance, 1.0, busy=True)
    assert watch.busy_ticks >= 3 and not idle.IDLE.is_set()
    assert ran == []  # the window was busy all along
    _run(qapp_instance, 30, busy=False, until=lambda: bool(ran))
    assert ran == [True] and watch.idle_ticks >= 1
    idle.when_idle(lambda: ran.append(True))  # (stopping runs what still waits)
    watch.stop()
    assert ran == [True, True] and idle.IDLE.is_set()


def test_what_waits_runs_after_the_longest_wait_however_busy(qapp_instance: Any, watch: idle.IdleWatch,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(idle, "LONGEST_WAIT_S", 0.3)
    ran: list[bool] = []
    idle.when_idle(lambda: ran.append(idle.IDLE.is_set()))
    _run(qapp_instance, 30, busy=True, until=lambda: bool(ran))
    assert ran == [False]  # run while still busy: the bound, not an idle moment


def test_with_no_watch_nothing_waits() -> None:
    ran: list[int] = []
    idle.when_idle(lambda: ran.append(1))
    assert ran == [1] and idle.IDLE.is_set()


class _Node:
    """Cyclic garbage: itself and a thousand lists (each an object the collector tracks)."""

    def __init__(self) -> None:
        self.me = self
        self.lists: list[list[int]] = [[] for _ in range(1000)]


def test_garbage_frozen_by_pauses_is_freed_at_an_idle_moment(qapp_instance: Any, watch: idle.IdleWatch) -> None:
    """A pause's end freezes whatever exists, cyclic garbage too, which no collection frees then: the objects frozen
    grown by a quarter, the watch refreezes at the next idle moment, so garbage made in a loop is still freed."""
    refs = []
    for _ in range(int(gc.get_freeze_count() * idle.FROZEN_GROWTH / 1000) + 5):
        refs.append(weakref.ref(_Node()))
        with gc_paused():  # (a library loaded, a thread's conversation read)
            pass
    gc.collect()
    assert all(ref() is not None for ref in refs)  # frozen: out of the collector's reach
    _run(qapp_instance, 30, busy=False, until=lambda: watch.refreezes > 0)
    gc.collect()
    assert watch.refreezes >= 1 and all(ref() is None for ref in refs)


def test_what_the_window_made_while_busy_is_frozen_at_the_idle_moment_after(qapp_instance: Any,
                                                                           watch: idle.IdleWatch) -> None:
    """A stream makes tens of thousands of objects that live on (its texts, its widgets' wrappers), and every full
    pass walked them all (20-40 ms): the idle moment after a busy one freezes the survivors once more than
    ``UNFROZEN_MOST`` objects are not frozen."""
    kept = [[i] for i in range(idle.UNFROZEN_MOST + 5000)]
    _run(qapp_instance, 0.5, busy=True)
    _run(qapp_instance, 30, busy=False, until=lambda: watch.settles > 0)
    walked = {id(o) for o in gc.get_objects()}
    assert watch.settles >= 1 and not any(id(k) in walked for k in kept)
    assert len(gc.get_objects()) <= idle.UNFROZEN_MOST


def test_an_idle_tick_does_not_walk_the_frozen_objects(qapp_instance: Any, watch: idle.IdleWatch,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """CPython counts the frozen objects by walking them all (45 ms with a 10,000-turn thread paged): the watch,
    which looks at their growth at every idle tick (20 a second), reads the count the freezes kept instead."""
    walks: list[int] = []
    real = gc.get_freeze_count

    def counted() -> int:
        walks.append(1)
        return real()

    monkeypatch.setattr(gc, "get_freeze_count", counted)
    _run(qapp_instance, 30, busy=False, until=lambda: watch.idle_ticks >= 10)
    assert watch.idle_ticks >= 10 and walks == []
    with gc_paused():  # (a freeze: what it moved is counted, without a walk)
        kept = [[i] for i in range(5000)]
    assert abs(idle.frozen_count() - real()) <= real() // 100 and walks == []  # (the count kept: close, unwalked)
    del kept


def test_frozen_objects_that_died_bring_no_refreeze(qapp_instance: Any, watch: idle.IdleWatch) -> None:
    """The count the freezes keep is not lowered when a frozen object dies (reference counting frees it, frozen or
    not): past the growth limit the watch counts the frozen objects before it refreezes (a full collection of every
    object), so what was frozen and died since (a stream's objects, frozen at the idle moment after it and freed by
    the next) brings none."""
    limit = watch.frozen * (1 + idle.FROZEN_GROWTH)
    for _ in range(3):
        with gc_paused():  # (frozen at its end)
            made = [[i] for i in range(int(watch.frozen * idle.FROZEN_GROWTH / 2) + 5000)]
        del made  # freed, frozen as they were
    assert idle.frozen_count() > limit  # the kept count crossed the limit; the objects frozen did not
    _run(qapp_instance, 30, busy=False, until=lambda: watch.idle_ticks >= 10)
    assert watch.idle_ticks >= 10 and watch.refreezes == 0
    assert idle.frozen_count() <= limit  # counted again
