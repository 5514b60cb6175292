"""Where the window's time goes while a search hit far up a long thread comes in: a profile, not a benchmark.

The 10,000-turn thread of ``bench_ui_open_long_thread`` (built as it builds it; ``--keep DIR`` uses the one kept
there), opened in the window, and a search hit ``HIT_DEPTH`` turns up opened as that bench opens it. Meanwhile:

- every step of the event loop until the hit shows: its wall time and the window's thread's CPU time;
- the store's lock: each hold, by thread (how long it was waited for, how long held);
- a helper thread samples every thread's stack (``sys._current_frames``) about every ms.

Printed per run: the longest steps; the lock's holds by thread during the reveal; for the three longest steps the
holds that overlapped them, the window's thread's commonest stacks and what the other threads ran. The sampler
takes the interpreter too (and a stack sampled while waiting for it shows where it was given up): its figures
are a picture; the bench's are the measure.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/profile_reveal_long_thread.py [--keep DIR] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SAMPLE_S = 0.001
STACK_DEPTH = 5


class TimedLock:
    """A re-entrant lock that notes each outermost hold: (thread name, asked, got, released)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth: dict[int, int] = {}
        self._started: dict[int, tuple[float, float]] = {}
        self.holds: list[tuple[str, float, float, float]] = []

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        asked = time.perf_counter()
        got = self._lock.acquire(blocking, timeout)
        if got:
            me = threading.get_ident()
            if not self._depth.get(me):
                self._started[me] = (asked, time.perf_counter())
            self._depth[me] = self._depth.get(me, 0) + 1
        return got

    def release(self) -> None:
        me = threading.get_ident()
        self._depth[me] -= 1
        if not self._depth[me]:
            asked, got = self._started[me]
            self.holds.append((threading.current_thread().name, asked, got, time.perf_counter()))
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _stack(frame: FrameType | None) -> tuple[str, ...]:
    out = []
    while frame is not None and len(out) < STACK_DEPTH:
        code = frame.f_code
        out.append(f"{os.path.basename(code.co_filename)}:{code.co_name}:{frame.f_lineno}")
        frame = frame.f_back
    return tuple(out)


class Sampler(threading.Thread):
    """Every thread's stack (but its own), about every :data:`SAMPLE_S`."""

    def __init__(self) -> None:
        super().__init__(name="sampler", daemon=True)
        self.samples: list[tuple[float, dict[int, tuple[str, ...]]]] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        me = threading.get_ident()
        while not self.stopping.is_set():
            now = time.perf_counter()
            self.samples.append((now, {tid: _stack(f) for tid, f in sys._current_frames().items() if tid != me}))
            time.sleep(SAMPLE_S)


def report(steps: list[tuple[float, float, float]], holds: list[tuple[str, float, float, float]],
           samples: list[tuple[float, dict[int, tuple[str, ...]]]], window: int, names: dict[int, str]) -> None:
    start = steps[0][0]
    longest = sorted(steps, key=lambda s: s[1] - s[0])
    print(f"  {len(steps)} steps, {(steps[-1][1] - start) * 1000:.0f} ms; longest (wall / CPU ms): "
          + ", ".join(f"{(b - a) * 1000:.0f} / {cpu * 1000:.1f}" for a, b, cpu in longest[-6:][::-1]))
    by_thread: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for name, asked, got, released in holds:
        if asked >= start:
            row = by_thread[name]
            row[0] += 1
            row[1] += (got - asked) * 1000
            row[2] = max(row[2], (released - got) * 1000)
            row[3] += (released - got) * 1000
    print("  the store's lock during the reveal:")
    for name, (count, waited, most, held) in sorted(by_thread.items(), key=lambda kv: -kv[1][3]):
        print(f"    {name:<24} {int(count):>5} holds, waited {waited:7.1f} ms, held {held:7.1f} ms (longest {most:.1f})")
    for a, b, cpu in longest[-3:][::-1]:
        print(f"  a step of {(b - a) * 1000:.0f} ms ({cpu * 1000:.1f} ms of the window's thread's CPU):")
        for name, asked, got, released in holds:
            if released > a and asked < b and (got - asked > 0.002 or released - got > 0.005):
                print(f"    lock: {name} asked at {(asked - a) * 1000:+.0f} ms, waited {(got - asked) * 1000:.1f}, "
                      f"held {(released - got) * 1000:.1f}")
        inside = [threads for at, threads in samples if a <= at <= b]
        print(f"    {len(inside)} samples; the window's thread:")
        for stack, count in collections.Counter(t.get(window, ()) for t in inside).most_common(4):
            print(f"      {count:>4} {' < '.join(stack)}")
        others: collections.Counter[tuple[str, tuple[str, ...]]] = collections.Counter()
        for threads in inside:
            for tid, stack in threads.items():
                idle = not stack or stack[0].startswith(("threading.py:wait", "queue.py:get", "thread.py:_worker"))
                if tid != window and not idle:
                    others[(names.get(tid, str(tid)), stack[:3])] += 1
        print("    other threads running:" + ("" if others else " none"))
        for (name, stack), count in others.most_common(6):
            print(f"      {count:>4} {name}: {' < '.join(stack)}")


def main() -> int:
    from bench_ui_open_long_thread import HIT_DEPTH, built_threads

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="the folder bench_ui_open_long_thread keeps its threads in")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    db, thread_id = built_threads(args.keep, (10000,))[10000]

    from ui import theme
    from ui.app import Application, get_app, new_event_loop
    from workspace.persistence import Store

    app = get_app()
    theme.apply_theme(app, "light")
    loop = new_event_loop(app)
    store = Store(db)
    path = store.path_ids(thread_id)
    hit = path[max(5, len(path) - HIT_DEPTH)]
    store.close()

    async def reveal(root: Any, lock: TimedLock, sampler: Sampler) -> list[tuple[float, float, float]]:
        """Open the thread and, as the bench does, a search hit far up: the steps until it shows."""
        await asyncio.sleep(1.0)
        root.window.threads.new()
        await asyncio.sleep(0.05)
        root.window.threads.open(thread_id)
        await asyncio.sleep(1.0)
        root.window.sidebar.search.setText("Question")
        await asyncio.sleep(0.5)
        lock.holds.clear()
        sampler.start()
        start, cpu = time.perf_counter(), time.thread_time()
        root.window.threads.open_result(thread_id, hit)
        steps = [(start, time.perf_counter(), time.thread_time() - cpu)]
        while root.window.chat.found_flash is None and time.perf_counter() < start + 300:
            last, cpu = time.perf_counter(), time.thread_time()
            await asyncio.sleep(0)
            steps.append((last, time.perf_counter(), time.thread_time() - cpu))
        sampler.stopping.set()
        return steps

    with loop:
        for run in range(args.runs):
            root = Application(db_path=db)
            lock = TimedLock()
            root.controller.store._lock = lock  # (before any worker reads it)
            root.window.resize(1400, 900)
            root.window.show()
            sampler = Sampler()
            steps = loop.run_until_complete(reveal(root, lock, sampler))
            names = {t.ident: t.name for t in threading.enumerate() if t.ident is not None}
            print(f"run {run + 1} (load {os.getloadavg()[0]:.2f}):")
            report(steps, lock.holds, sampler.samples, threading.get_ident(), names)
            loop.run_until_complete(root.aclose())
            root.window.close()
            root.window.deleteLater()
            app.processEvents()
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown of the windows' Qt objects


if __name__ == "__main__":
    sys.exit(main())
