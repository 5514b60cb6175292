"""Where the worst pass of the event loop goes while four comparison columns stream (bench_compare_window's run).

The application's ``notify`` is timed: every event Qt delivers, by its type and its receiver's class, its own
time (without the events delivered inside it: a window's UpdateRequest holds its widgets' Paint events) and,
for the events the loop itself delivers (the outermost ones), their wall and CPU time. A pass is the time
between two ticks of the bench's 2 ms stall timer; the longest pass of each round is kept whole and printed:
its outermost events in order, then its time by event type and receiver class. Python's work in a pass
(asyncio's callbacks: the streams' reading and parsing, the bridges' feeding, the columns' flush) runs inside
the Timer and SockAct events of qasync's objects, so it shows under them; ``PROFILE=1`` adds a cProfile of the
whole streaming, its top functions by their own time.

Run offscreen: ``QT_QPA_PLATFORM=offscreen .venv/bin/python bench/profile_compare_window.py``.
"""

from __future__ import annotations

import asyncio
import cProfile
import os
import pstats
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_compare_window as bcw  # noqa: E402
from scratch import scratch_dir  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "3"))
#: "1": a cProfile of the whole streaming; "flush": of the columns' frame ticks alone.
PROFILE = os.environ.get("PROFILE", "")


def make_app() -> Any:
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    names: dict[int, str] = {}

    def type_name(kind: Any) -> str:
        value = int(kind.value) if hasattr(kind, "value") else int(kind)
        if value not in names:
            try:
                names[value] = QEvent.Type(value).name
            except ValueError:
                names[value] = f"Type{value}"
        return names[value]

    class TimedApp(QApplication):
        """Every event's time: ``current`` holds the outermost events of the current pass (kind, receiver class,
        wall s, CPU s); ``own`` the wall and CPU time of each (kind, class) without what was delivered inside it."""

        def __init__(self, argv: list[str]) -> None:
            super().__init__(argv)
            self.depth = 0
            self.child = [(0.0, 0.0)]
            self.current: list[tuple[str, str, float, float]] = []
            self.own: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
            self.recording = False

        def notify(self, receiver: Any, event: Any) -> bool:
            if not self.recording:
                return super().notify(receiver, event)
            kind = type_name(event.type())
            cls = type(receiver).__name__
            if cls == "QWidget" and receiver.objectName():
                cls = f"QWidget#{receiver.objectName()}"
            self.depth += 1
            self.child.append((0.0, 0.0))
            wall0, cpu0 = time.perf_counter(), time.thread_time()
            try:
                return super().notify(receiver, event)
            finally:
                wall, cpu = time.perf_counter() - wall0, time.thread_time() - cpu0
                inner_wall, inner_cpu = self.child.pop()
                self.depth -= 1
                above = self.child[-1]
                self.child[-1] = (above[0] + wall, above[1] + cpu)
                own = self.own[(kind, cls)]
                own[0] += 1
                own[1] += wall - inner_wall
                own[2] += cpu - inner_cpu
                if self.depth == 0:
                    self.current.append((kind, cls, wall, cpu))

    if PROFILE:  # cProfile alone: a timed notify would be most of what it counts
        return QApplication.instance() or QApplication(["robotlab"])
    return QApplication.instance() or TimedApp(["robotlab"])


def time_handles(app: Any) -> None:
    """asyncio's callbacks timed by what they run (a task's coroutine, else the callback), in ``app.handles``."""
    original = asyncio.events.Handle._run

    def _run(handle: Any) -> None:
        if not getattr(app, "recording", False):
            original(handle)
            return
        callback = handle._callback
        task = getattr(callback, "__self__", None)
        coro = task.get_coro() if isinstance(task, asyncio.Task) else None
        name = getattr(coro, "__qualname__", None) or getattr(callback, "__qualname__", repr(callback))
        wall0, cpu0 = time.perf_counter(), time.thread_time()
        try:
            original(handle)
        finally:
            row = app.handles[name]
            row[0] += 1
            row[1] += time.perf_counter() - wall0
            row[2] += time.thread_time() - cpu0

    asyncio.events.Handle._run = _run  # type: ignore[method-assign]


class PassMeter:
    """The bench's stall meter, keeping the longest pass's outermost events and its own-time table."""

    def __init__(self, app: Any) -> None:
        from PySide6.QtCore import QTimer

        self.app = app
        self.timer = QTimer()
        self.timer.setInterval(2)
        self.timer.timeout.connect(self._tick)

    def start(self) -> None:
        self.last = time.perf_counter()
        self.cpu_last = time.thread_time()
        self.worst = 0.0
        self.cpu_worst = 0.0
        self.worst_events: list[tuple[str, str, float, float]] = []
        self.worst_own: dict[tuple[str, str], list[float]] = {}
        #: The longest passes: (wall, CPU, own time by category).
        self.top: list[tuple[float, float, dict[str, list[float]]]] = []
        self.gaps: list[float] = []
        self.cpus: list[float] = []
        #: The whole round's own time by (kind, class).
        self.total: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
        self._reset()
        self.app.recording = True
        self.timer.start()

    def _reset(self) -> None:
        for key, (n, wall, cpu) in getattr(self.app, "own", {}).items():
            row = self.total[key]
            row[0] += n
            row[1] += wall
            row[2] += cpu
        self.app.current = []
        self.app.own = defaultdict(lambda: [0, 0.0, 0.0])
        self.app.handles = defaultdict(lambda: [0, 0.0, 0.0])

    def _tick(self) -> None:
        now, cpu = time.perf_counter(), time.thread_time()
        gap = now - self.last - 0.002
        self.gaps.append(gap)
        self.cpus.append(cpu - self.cpu_last)
        self.cpu_worst = max(self.cpu_worst, cpu - self.cpu_last)
        if gap > self.worst:
            self.worst = gap
            self.worst_cpu = cpu - self.cpu_last
            self.worst_events = list(self.app.current)
            self.worst_own = dict(self.app.own)
            self.worst_handles = dict(self.app.handles)
        if len(self.top) < 8 or gap > self.top[-1][0]:
            self.top.append((gap, cpu - self.cpu_last, categories(self.app.own)))
            self.top.sort(key=lambda t: -t[0])
            del self.top[8:]
        self.last, self.cpu_last = now, cpu
        self._reset()

    def share(self, pct: float) -> float:
        return bcw.share(self.cpus, pct)

    def stop(self) -> float:
        self.timer.stop()
        self.app.recording = False
        return max(0.0, self.worst)


CATEGORIES = (
    ("streams (asyncio callbacks)", ("Timer:_SimpleTimer", "SockAct:", "SockClose:")),
    ("frame clock and timers", ("Timer:",)),
    ("paint", ("UpdateRequest:", "Paint:", "UpdateLater:")),
    ("layout", ("LayoutRequest:", "Resize:", "Move:", "ChildAdded:", "ChildRemoved:", "Show:", "Hide:")),
    ("polish and style", ("Polish", "StyleChange:", "DynamicPropertyChange:", "FontChange:", "PaletteChange:")),
)


def categories(own: dict[tuple[str, str], list[float]]) -> dict[str, list[float]]:
    """Own wall and CPU time of a pass by category (the first that matches "kind:class")."""
    out: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for (kind, cls), (_n, wall, cpu) in own.items():
        key = f"{kind}:{cls}"
        name = next((name for name, prefixes in CATEGORIES if key.startswith(prefixes)), "other")
        out[name][0] += wall
        out[name][1] += cpu
    return dict(out)


def report(meter: PassMeter) -> None:
    gaps = sorted(meter.gaps)
    over = sum(1 for g in gaps if g > bcw.FRAME_MS / 1000)
    print(f"  longest pass: {meter.worst * 1000:.1f} ms wall, {meter.worst_cpu * 1000:.1f} ms CPU of this thread; "
          f"{len(gaps)} passes, {over} over a frame, p99 {gaps[int(len(gaps) * 0.99)] * 1000:.1f} ms")
    total_wall = sum(e[2] for e in meter.worst_events)
    total_cpu = sum(e[3] for e in meter.worst_events)
    print(f"  its outermost events: {len(meter.worst_events)}, {total_wall * 1000:.1f} ms wall, "
          f"{total_cpu * 1000:.1f} ms CPU (the rest: the loop's own wait and work between events)")
    grouped: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for kind, cls, wall, cpu in meter.worst_events:
        g = grouped[(kind, cls)]
        g[0] += 1
        g[1] += wall
        g[2] += cpu
    for (kind, cls), (n, wall, cpu) in sorted(grouped.items(), key=lambda kv: -kv[1][1])[:10]:
        print(f"    outer {kind:>16} -> {cls:<28} x{n:<4.0f} {wall * 1000:7.1f} ms wall {cpu * 1000:7.1f} ms CPU")
    print("  own time by event and receiver (what was delivered inside excluded), wall / CPU:")
    for (kind, cls), (n, wall, cpu) in sorted(meter.worst_own.items(), key=lambda kv: -kv[1][1])[:14]:
        print(f"    {kind:>16} -> {cls:<28} x{n:<4} {wall * 1000:7.1f} / {cpu * 1000:5.1f} ms")
    print("  the whole round: layout requests and paints by receiver (count, own CPU):")
    for (kind, cls), (n, _wall, cpu) in sorted(meter.total.items(), key=lambda kv: -kv[1][0]):
        if kind in ("LayoutRequest", "Paint", "UpdateRequest") and n >= 20:
            print(f"    {kind:>16} -> {cls:<32} x{n:<5} {cpu * 1000:7.1f} ms")
    print("  its asyncio callbacks by what they run, wall / CPU:")
    for name, (n, wall, cpu) in sorted(meter.worst_handles.items(), key=lambda kv: -kv[1][2])[:8]:
        print(f"    {name:<60} x{n:<4} {wall * 1000:7.1f} / {cpu * 1000:5.1f} ms")
    print("  the 8 longest passes, own CPU by category:")
    for gap, cpu, cats in meter.top:
        parts = ", ".join(f"{name.split(' ')[0]} {c * 1000:.1f}" for name, (_w, c) in
                          sorted(cats.items(), key=lambda kv: -kv[1][1]))
        print(f"    {gap * 1000:6.1f} ms wall, {cpu * 1000:5.1f} ms CPU: {parts}")


def main() -> int:
    proc, base = bcw.start_server()
    assert proc.stdin is not None
    home = scratch_dir("profile-compare-window-")
    os.environ["ROBOTLAB_HOME"] = str(home)
    app = make_app()
    from ui.app import Application, get_app, new_event_loop
    from workspace.config import load_config

    assert get_app() is app
    loop = new_event_loop(app)
    asyncio.set_event_loop(loop)
    config = load_config(env={}, overrides={"llm": {"model": "openai/model-0", "api_base": base, "max_retries": 1,
                                                    "max_concurrent_requests": 4}})
    profiler = cProfile.Profile() if PROFILE == "1" else None
    flush_profiler = cProfile.Profile() if PROFILE == "flush" else None
    if flush_profiler is not None:
        from ui.window.compare import Comparisons

        tick = Comparisons._flush_columns

        def profiled(self: Any, *, every: bool = False) -> None:
            flush_profiler.enable()
            try:
                tick(self, every=every)
            finally:
                flush_profiler.disable()

        Comparisons._flush_columns = profiled  # type: ignore[method-assign]
    root = Application(db_path=home / "bench.db", config=config, theme_name="light")
    root.window.resize(1920, 1080)
    root.window.show()
    try:
        with loop:
            loop.run_until_complete(asyncio.sleep(1.0))
            time_handles(app)
            meter = PassMeter(app)
            loop.run_until_complete(bcw.one_round(root, base, meter))  # warm-up
            print(f"load average {os.getloadavg()[0]:.2f}")
            for _ in range(ROUNDS):
                if profiler is not None:
                    profiler.enable()
                r = loop.run_until_complete(bcw.one_round(root, base, meter))
                if profiler is not None:
                    profiler.disable()
                print(f"round: {r['tokens_per_s']:,.0f} tokens/s, longest stall {r['longest_stall_ms']:.1f} ms, "
                      f"{r['paints_per_s']:.0f} paints/s, {r['layouts_per_s']:.0f} layout requests/s; "
                      f"load {os.getloadavg()[0]:.2f}")
                if not PROFILE:
                    report(meter)
            loop.run_until_complete(root.aclose())
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)
    if flush_profiler is not None:
        pstats.Stats(flush_profiler).sort_stats("cumulative").print_stats(40)
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)
    return 0


if __name__ == "__main__":
    sys.exit(main())
