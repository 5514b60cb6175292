"""Whether the window is idle: what may wait for it waits (the lexers' compiling thread, a full garbage collection).

The window's thread shares the interpreter with every other thread of the process. A worker busy in Python keeps
the interpreter lock up to the switch interval (``ui.app.SWITCH_INTERVAL_S``) each time the window's thread gives
it up and wants it back (each return from Qt into Python), so a pass of the event loop that crosses a few dozen
times waits a few dozen intervals: while the lexers' compiling thread prepared the common languages (300-400 ms
of CPU, 5 s after start-up), four comparison columns streaming stalled 50-108 ms with 2-11 ms of the window's
thread's CPU in the stall (``bench/bench_compare_window.py --gc``).

:class:`IdleWatch` (started by the application once its window is whole) samples the window's thread's CPU every
:data:`TICK_MS`: the window is idle once :data:`QUIET_TICKS` ticks in a row used less than :data:`BUSY_SHARE` of
their time (a stream, a scroll, typing take more). :data:`IDLE` says so to other threads (set when no watch runs:
nothing waits then, as before), and :func:`when_idle` runs a callable on the window's thread at the next idle tick,
or after :data:`LONGEST_WAIT_S` at the latest, so what waits for an idle moment is not put off without bound.

The garbage collector's full passes walk every object not frozen, and the window freezes what it loads (start-up's
libraries, a thread's conversation, earlier turns: ``workspace.shared_imports.gc_paused``), but a freeze freezes
whatever exists, garbage too, and a closed thread's frozen state stays so: switching between two 2,000-turn threads
paged to their tops, 85,000 more objects were frozen and RSS grew 25-28 MB at each switch, without bound
(``bench/bench_ui_gc.py --switch``). Unfreezing everything when the chat was reset made every full pass walk all of
it (172,000 objects: 40 ms, 104 ms the first) until the next freeze. So the watch refreezes at idle moments
(``workspace.shared_imports.refreeze``: a full collection, then what lives frozen again): when asked
(:func:`refreeze_when_idle`: the chat's reset) and when the objects frozen grew by :data:`FROZEN_GROWTH` since the
last refreeze. And what the window made while busy (a stream's texts and widgets, 30,000-70,000 objects in
``bench/bench_ui_streaming.py``: full passes of 20-40 ms in the streams after) is frozen at the idle moment after
(``workspace.shared_imports.freeze_survivors``: a collection of what is not frozen) once more than
:data:`UNFROZEN_MOST` objects are not; what of it dies later is frozen garbage, freed by the refreeze the growth
brings. The growth is read from the count the freezes keep (``workspace.shared_imports.frozen_count``; once past
the limit, confirmed by counting them: the kept count is not lowered when frozen objects die, and a refreeze for
growth that died already would be a full collection for nothing), not at every tick from
``gc.get_freeze_count()``, which walks every frozen object: with 3 million frozen (a 10,000-turn thread paged in)
each idle tick took 26-28 ms and the idle window spent half its thread on it (``bench/bench_ui_idle.py``); in a
window-test process grown to 1.2 GB the ticks outran their interval and a demo answer of 2 s took over 30.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable
from typing import Any

from workspace.shared_imports import freeze_survivors, frozen_count, refreeze

#: Set while the window is idle, or while no :class:`IdleWatch` runs (read by other threads).
IDLE = threading.Event()
IDLE.set()
#: How often (ms) the watch samples the window's thread, the share of a tick's time that is busy, and how many
#: quiet ticks in a row make the window idle.
TICK_MS = 50
BUSY_SHARE = 0.15
QUIET_TICKS = 6
#: The longest (s) a callable given to :func:`when_idle` waits for an idle moment.
LONGEST_WAIT_S = 30.0
#: How much the objects frozen may grow (a share of what the last refreeze left) before an idle moment refreezes.
FROZEN_GROWTH = 0.25
#: The most objects not frozen an idle moment after busy ones leaves so (more: the survivors are frozen): a full
#: pass walks them, 20,000 about 5 ms.
UNFROZEN_MOST = 20_000

_WATCH: list[IdleWatch] = []


class IdleWatch:
    """Samples the window's thread (see the module's docstring); :meth:`stop` sets :data:`IDLE` again."""

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self.timer = QTimer()
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)
        self._wall, self._cpu = time.perf_counter(), time.thread_time()
        self._quiet = 0
        #: What waits for an idle moment, each with the latest time it runs anyway.
        self._waiting: list[tuple[float, Callable[[], Any]]] = []
        #: Ticks that found the window busy, and idle (for tests and benches).
        self.busy_ticks = self.idle_ticks = 0
        #: The objects frozen after the last refreeze (when it began: start-up's), and the refreezes run.
        self.frozen = frozen_count()
        self.refreezes = 0
        #: The longest refreeze (s): a full collection of every object, run when the window is idle.
        self.longest_refreeze = 0.0
        self._refreeze_asked = False
        #: Whether a tick found the window busy since the last idle one (what it made is looked at then).
        self._was_busy = False
        #: Survivors frozen at idle moments (:data:`UNFROZEN_MOST`).
        self.settles = 0

    def start(self) -> None:
        self.frozen = frozen_count(walk=True)  # (once: what the freezes since counted grows from the true count)
        self._wall, self._cpu = time.perf_counter(), time.thread_time()
        self._quiet = 0
        IDLE.clear()
        self.timer.start()
        _WATCH.append(self)

    def stop(self) -> None:
        self.timer.stop()
        if self in _WATCH:
            _WATCH.remove(self)
        if not _WATCH:
            IDLE.set()
        waiting, self._waiting = self._waiting, []
        for _deadline, call in waiting:  # (nothing is left undone: what waited runs now)
            call()

    def when_idle(self, call: Callable[[], Any]) -> None:
        self._waiting.append((time.perf_counter() + LONGEST_WAIT_S, call))

    def _tick(self) -> None:
        wall, cpu = time.perf_counter(), time.thread_time()
        share = (cpu - self._cpu) / max(wall - self._wall, 1e-6)
        self._wall, self._cpu = wall, cpu
        if share < BUSY_SHARE:
            self._quiet += 1
        else:
            self._quiet = 0
        idle = self._quiet >= QUIET_TICKS
        if idle:
            self.idle_ticks += 1
            IDLE.set()
            if self._was_busy:
                self._was_busy = False
                if len(gc.get_objects()) > UNFROZEN_MOST and freeze_survivors():
                    self.settles += 1
        else:
            self.busy_ticks += 1
            self._was_busy = True
            IDLE.clear()
        if idle and not self._refreeze_asked:
            limit = self.frozen * (1 + FROZEN_GROWTH)
            # The kept count only grows (a frozen object that dies is not taken off it): past the limit, the frozen
            # objects are counted (a walk: 9 ns each, once a crossing, ~a tenth of the refreeze it may spare).
            if frozen_count() > limit and frozen_count(walk=True) > limit:
                self.refreeze_when_idle()
        due = [entry for entry in self._waiting if idle or entry[0] <= wall]
        if due:
            self._waiting = [entry for entry in self._waiting if entry not in due]
            for _deadline, call in due:
                call()
        self._cpu = time.thread_time()  # (what this tick ran is not the window's own work)

    def refreeze_when_idle(self) -> None:
        if not self._refreeze_asked:
            self._refreeze_asked = True
            self.when_idle(self._refreeze)

    def _refreeze(self) -> None:
        self._refreeze_asked = False
        began = time.perf_counter()
        if refreeze():
            self.longest_refreeze = max(self.longest_refreeze, time.perf_counter() - began)
            self.refreezes += 1
            self.frozen = frozen_count()
        elif self.timer.isActive():  # (a pause is on: its end freezes, and the next idle moment refreezes)
            self.refreeze_when_idle()


def refreeze_when_idle() -> None:
    """Refreeze (``workspace.shared_imports.refreeze``) at the window's next idle moment; with no watch, now."""
    if _WATCH:
        _WATCH[-1].refreeze_when_idle()
    else:
        refreeze()


def when_idle(call: Callable[[], Any]) -> None:
    """Run ``call`` on the window's thread at its next idle moment (at the latest :data:`LONGEST_WAIT_S` from now);
    with no :class:`IdleWatch` running, now."""
    if _WATCH:
        _WATCH[-1].when_idle(call)
    else:
        call()
