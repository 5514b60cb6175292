"""Every pass of Python's cyclic garbage collector timed (``gc.callbacks``), for the benches that look for stalls.

:class:`GcWatch` records each collection while it is installed: the generation, when it began and ended
(``time.perf_counter``), what it freed and the thread that ran it (a collection holds the interpreter lock, so
one run by a worker stalls the window's thread as much as one run by it). :meth:`GcWatch.during` gives the
collections that overlap a stretch of time (a late tick of a bench's stall timer), :meth:`GcWatch.summary` the
count and longest of each generation.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from dataclasses import dataclass
from typing import Any


@dataclass
class Collection:
    generation: int
    began: float
    ended: float
    collected: int
    thread: str

    @property
    def ms(self) -> float:
        return (self.ended - self.began) * 1000

    def describe(self) -> str:
        return f"gen {self.generation} {self.ms:.1f} ms (freed {self.collected}, on {self.thread})"


class GcWatch:
    """Times every collection from :meth:`install` to :meth:`uninstall` (see the module's docstring)."""

    def __init__(self) -> None:
        self.collections: list[Collection] = []
        self._began: dict[int, tuple[float, int]] = {}

    def install(self) -> GcWatch:
        gc.callbacks.append(self._callback)
        return self

    def uninstall(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)

    def clear(self) -> None:
        self.collections.clear()

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        now = time.perf_counter()
        ident = threading.get_ident()
        if phase == "start":
            self._began[ident] = (now, info["generation"])
            return
        began, generation = self._began.pop(ident, (now, info["generation"]))
        self.collections.append(Collection(generation, began, now, info.get("collected", 0),
                                           threading.current_thread().name))

    def during(self, start: float, end: float) -> list[Collection]:
        """The collections that overlap ``start``..``end`` (perf_counter)."""
        return [c for c in self.collections if c.ended > start and c.began < end]

    def longest(self, generation: int | None = None) -> float:
        """The longest collection (ms), of ``generation`` or of any."""
        return max((c.ms for c in self.collections if generation is None or c.generation == generation), default=0.0)

    def summary(self) -> str:
        parts = []
        for generation in (0, 1, 2):
            mine = [c for c in self.collections if c.generation == generation]
            if mine:
                parts.append(f"gen {generation}: {len(mine)}, longest {max(c.ms for c in mine):.1f} ms")
        return "; ".join(parts) or "no collections"


def thread_cpu() -> dict[str, float]:
    """The CPU time (ms) each thread of this process has used so far, by its name and id (Linux: /proc; empty
    elsewhere): what ran beside the window's thread in a stall it spent waiting (the interpreter lock)."""
    out: dict[str, float] = {}
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return out
    tick = os.sysconf("SC_CLK_TCK")
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue
        out[f"{name}/{tid}"] = (int(fields[11]) + int(fields[12])) * 1000 / tick
    return out


def busiest(before: dict[str, float], after: dict[str, float], count: int = 4) -> str:
    """The threads that used the most CPU between two :func:`thread_cpu` readings."""
    used = sorted(((after[k] - before.get(k, 0.0), k) for k in after), reverse=True)[:count]
    return ", ".join(f"{k} {ms:.0f} ms" for ms, k in used if ms > 0)
