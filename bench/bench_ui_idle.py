"""The window's idle watch (``ui.idle.IdleWatch``) against the objects frozen: what an idle window costs its thread.

The watch ticks every ``TICK_MS`` (20 times a second) and, while the window is idle, looks at how much was frozen
since the last refreeze. ``gc.get_freeze_count()`` counts the frozen objects by walking every one of them; with a long
thread paged in that is millions. For each size (objects frozen: lists, the shape of a loaded thread's objects), the
real watch runs ``SECONDS`` on an idle Qt loop, and so does a watch that asks ``gc.get_freeze_count()`` at every tick
(what the watch did before, the baseline, in the same process). Prints the window thread's CPU share while idle and
its longest tick, with the load average. Targets: the CPU share at the largest size within 1.5 × the smallest's, and
no tick over 1 ms. Run offscreen: ``QT_QPA_PLATFORM=offscreen .venv/bin/python bench/bench_ui_idle.py``; writes
bench/results/ui_idle.json.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SIZES = [int(n) for n in os.environ.get("SIZES", "200000,1000000,3000000").split(",")]
SECONDS = float(os.environ.get("SECONDS", "2"))


def idle_for(app: object, watch: object, seconds: float) -> tuple[float, float]:
    """The thread's CPU share over ``seconds`` of an idle loop, and its longest tick (ms)."""
    from PySide6.QtWidgets import QApplication

    from ui import idle

    assert isinstance(app, QApplication) and isinstance(watch, idle.IdleWatch)
    longest = [0.0]
    tick = watch._tick

    def timed_tick() -> None:
        began = time.thread_time()
        tick()
        longest[0] = max(longest[0], time.thread_time() - began)

    watch.timer.timeout.disconnect()
    watch.timer.timeout.connect(timed_tick)
    watch.start()
    end = time.perf_counter() + 0.5  # (idle first: six quiet ticks)
    while time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.002)
    longest[0] = 0.0
    wall, cpu = time.perf_counter(), time.thread_time()
    end = wall + seconds
    while time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.002)  # (an idle loop: it waits for events)
    share = (time.thread_time() - cpu) / (time.perf_counter() - wall)
    watch.stop()
    return share, longest[0] * 1000


def main() -> int:
    from ui import idle
    from ui.app import get_app
    from workspace.shared_imports import gc_paused

    app = get_app()
    counted = idle.frozen_count

    def walked(*, walk: bool = False) -> int:  # (what the watch read before: every frozen object counted)
        return gc.get_freeze_count()

    kept: list[list[int]] = []
    rows = []
    for size in SIZES:
        with gc_paused():  # (frozen when the pause ends, as a loaded thread's objects are)
            kept.extend([i] for i in range(size - len(kept)))
        gc.collect()
        frozen = gc.get_freeze_count()
        figures = {}
        for name, count in (("watch", counted), ("walk each tick (before)", walked)):
            idle.frozen_count = count  # type: ignore[assignment]  # (the name the watch's tick calls)
            try:
                figures[name] = idle_for(app, idle.IdleWatch(), SECONDS)
            finally:
                idle.frozen_count = counted  # type: ignore[assignment]
        rows.append((frozen, figures))
        print(f"load {os.getloadavg()[0]:.2f}; {frozen:>9,} objects frozen: " + "; ".join(
            f"{name}: CPU {share * 100:5.2f} % of the idle time, longest tick {tick:6.2f} ms"
            for name, (share, tick) in figures.items()), flush=True)
    small, large = rows[0][1]["watch"], rows[-1][1]["watch"]
    ratio = large[0] / max(small[0], 1e-9)
    worst = max(figures["watch"][1] for _, figures in rows)
    ok = ratio <= 1.5 and worst <= 1.0
    print(f"the watch: idle CPU at {rows[-1][0]:,} frozen vs {rows[0][0]:,}: {ratio:.2f} × (target <= 1.5); "
          f"longest tick {worst:.2f} ms (target <= 1): {'met' if ok else 'MISSED'}")
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "ui_idle.json").write_text(json.dumps({
        "sizes": [{"frozen": frozen, **{name: {"cpu_share": share, "longest_tick_ms": tick}
                                        for name, (share, tick) in figures.items()}} for frozen, figures in rows],
        "ratio": round(ratio, 3), "longest_tick_ms": round(worst, 3), "target_ratio": 1.5, "target_tick_ms": 1.0,
        "met": ok, "load": round(os.getloadavg()[0], 2)}, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
