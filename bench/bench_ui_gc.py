"""How long a full pass of Python's garbage collector holds the window with a long thread open.

A collection of the oldest generation (2) walks every tracked object that is not frozen, holding the interpreter
lock: the window's thread (and every other) waits for it, whenever the collector decides, so it is a stall a
person gets at random. The window freezes what start-up loaded and what paging loads
(``workspace.shared_imports.gc_paused``, ``ui.chat.view.virtual``); this bench measures what is left. For threads of
100, 2,000 and 10,000 turns (bench/bench_ui_thread_scale.py's: a question, an answer with a tool card, a final
answer with a code block each), each in a process of its own: the window started as the app starts it (staged,
the libraries loaded after it), then the thread opened from the list (``Threads.open``): the objects a full pass walks and its time (median and longest of
``PASSES`` ``gc.collect(2)``, wall and this thread's CPU), before the thread is opened, once it is open (its last turns on
screen) and again once it is paged to its top (every turn loaded) and after another thread is shown, and the window's
refreezes at idle moments (``ui.idle``: their count and the longest, a full collection each), against the target of one frame (16 ms). The load
average is printed with every figure. Run offscreen:
``QT_QPA_PLATFORM=offscreen .venv/bin/python bench/bench_ui_gc.py [TURNS ...]``; writes bench/results/ui_gc.json.

``--switch N [ROUNDS]``: two threads of N turns opened in turn, each paged to its top, ROUNDS (4) times each: the
objects frozen and walked and RSS after each (what a closed thread held must be freed, not pile up frozen), then
what lives once everything is given back to the collector and collected. ``GC_TYPES=1``: the most common types of
what a pass walks once the thread is open (``--one N``, to stderr) and of what lives at the end of ``--switch``.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from scratch import scratch_dir

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SIZES = (100, 2000, 10000)
PASSES = int(os.environ.get("PASSES", "5"))
#: How long (s) to let the window load what it loads after start-up (the model library, Markdown) before measuring.
STARTED_WAIT = float(os.environ.get("STARTED_WAIT", "8"))
FRAME_MS = 16.0


def full_passes() -> dict[str, float]:
    """``PASSES`` full collections now: the objects walked, the median and longest wall and CPU (ms)."""
    walls, cpus = [], []
    walked = len(gc.get_objects())
    for _ in range(PASSES):
        wall, cpu = time.perf_counter(), time.thread_time()
        gc.collect(2)
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.thread_time() - cpu) * 1000)
    walls.sort()
    cpus.sort()
    return {"walked": walked, "median_ms": round(walls[len(walls) // 2], 1), "longest_ms": round(walls[-1], 1),
            "median_cpu_ms": round(cpus[len(cpus) // 2], 1), "frozen": gc.get_freeze_count(),
            "load": round(os.getloadavg()[0], 1)}


def _new_database() -> Path:
    """A database path in a new home of the app's (``ROBOTLAB_HOME``)."""

    home = scratch_dir("bench-ui-gc-")
    os.environ["ROBOTLAB_HOME"] = str(home)
    return home / "long.db"


def _started_window(db: Path) -> tuple[Any, Any, Any]:
    """The window on ``db`` as a person starts it (staged start-up): the QApplication, the loop and the app."""
    from ui.app import Application, get_app, new_event_loop

    app = get_app()
    loop = new_event_loop(app)
    root = Application(db_path=db, defer=True)
    root.window.resize(1400, 900)
    root.window.show()
    root.finish_startup(staged=True)
    return app, loop, root


def one(turns: int) -> dict[str, Any]:
    """The window as a person starts it (staged start-up, the libraries loaded after it), a thread of ``turns``
    turns opened from the list, then paged to its top: a full collection's figures after each."""
    import asyncio

    from bench_ui_open_long_thread import screen_made
    from bench_ui_thread_scale import build_thread, page_to_top

    db = _new_database()
    thread_id = build_thread(db, turns)
    app, loop, root = _started_window(db)
    figures: dict[str, Any] = {"turns": turns}

    async def run() -> None:
        deadline = time.perf_counter() + 60
        while not (root.whole and gc.isenabled()) and time.perf_counter() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(STARTED_WAIT)  # the libraries loaded after start-up (a worker, frozen after)
        figures["started"] = full_passes()
        root.window.threads.open(thread_id)
        chat = root.window.chat
        while not screen_made(chat) and time.perf_counter() < deadline + 60:
            await asyncio.sleep(0.01)
        await asyncio.sleep(1.0)
        while not gc.isenabled() and time.perf_counter() < deadline + 120:  # (the conversation read ahead, paused)
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        figures["opened"] = full_passes()
        if os.environ.get("GC_TYPES"):
            from collections import Counter

            print(Counter(type(o).__name__ for o in gc.get_objects()).most_common(12), file=sys.stderr)
        paging = page_to_top(app, chat)
        await asyncio.sleep(1.0)
        figures["paged"] = full_passes()
        figures["turns_paged"] = paging["turns_paged"]
        root.window.threads.new()  # another thread shown: the paged one's turns are given back to the collector
        await asyncio.sleep(1.0)
        figures["left"] = full_passes()
        watch = getattr(root, "idle", None)  # (the window's refreezes at idle moments, where there are)
        figures["refreezes"] = None if watch is None else [watch.refreezes, round(watch.longest_refreeze * 1000, 1)]
        await root.aclose()

    with loop:
        loop.run_until_complete(run())
    return figures


def switching(turns: int, rounds: int) -> int:
    """``--switch N``: two threads of N turns opened in turn and each paged to its top, ``rounds`` times: what the
    collector has frozen and walks, and RSS, after each (what a closed thread held must not pile up)."""
    import asyncio

    from bench_ui_open_long_thread import screen_made
    from bench_ui_thread_scale import _rss_mb, build_thread, page_to_top

    db = _new_database()
    ids = [build_thread(db, turns), build_thread(db, turns)]
    app, loop, root = _started_window(db)

    async def run() -> None:
        deadline = time.perf_counter() + 60
        while not (root.whole and gc.isenabled()) and time.perf_counter() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(STARTED_WAIT)
        for index in range(rounds * 2):
            root.window.threads.open(ids[index % 2])
            chat = root.window.chat
            while not screen_made(chat):
                await asyncio.sleep(0.01)
            page_to_top(app, chat)
            await asyncio.sleep(1.0)
            f = full_passes()
            watch = getattr(root, "idle", None)
            refreezes = "-" if watch is None else f"{watch.refreezes}, the longest {watch.longest_refreeze * 1000:.0f} ms"
            print(f"  thread {index % 2 + 1} opened and paged ({index + 1}): {f['frozen']:,} objects frozen, a full pass "
                  f"walks {f['walked']:,} ({f['median_ms']:.1f} ms); RSS {_rss_mb():.0f} MB; refreezes {refreezes}; "
                  f"load {f['load']:.1f}", flush=True)
        gc.unfreeze()
        gc.collect()
        print(f"  everything given back to the collector and collected: {len(gc.get_objects()):,} objects live; "
              f"RSS {_rss_mb():.0f} MB", flush=True)
        if os.environ.get("GC_TYPES"):
            from collections import Counter

            print(Counter(type(o).__name__ for o in gc.get_objects()).most_common(12))
        await root.aclose()

    with loop:
        loop.run_until_complete(run())
    return 0


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(one(int(sys.argv[2]))))
        return 0
    if len(sys.argv) in (3, 4) and sys.argv[1] == "--switch":
        return switching(int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) == 4 else 4)
    sizes = [int(a) for a in sys.argv[1:]] or list(SIZES)
    missed = False
    rows = []
    print(f"A full collection (gen 2) with a thread open, {PASSES} passes each (target: one frame, {FRAME_MS:.0f} ms):")
    for turns in sizes:
        done = subprocess.run([sys.executable, __file__, "--one", str(turns)], capture_output=True, text=True,
                              check=True)
        r = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(r)
        for when, label in (("started", "window started, no thread"), ("opened", "open"),
                            ("paged", f"paged to its top ({r['turns_paged']} turns)"),
                            ("left", "then a new thread shown")):
            f = r[when]
            missed |= f["longest_ms"] > FRAME_MS
            print(f"  {turns:>6,} turns, {label}: walks {f['walked']:,} objects ({f['frozen']:,} frozen): "
                  f"median {f['median_ms']:.1f} ms (CPU {f['median_cpu_ms']:.1f} ms), longest {f['longest_ms']:.1f} ms; "
                  f"load {f['load']:.1f}")
        if r["refreezes"] is not None:
            print(f"    refreezes at idle moments: {r['refreezes'][0]}, the longest {r['refreezes'][1]:.1f} ms")
    print("target met" if not missed else "target missed")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "ui_gc.json").write_text(json.dumps({"sizes": rows, "passes": PASSES, "target_ms": FRAME_MS,
                                                "met": not missed}, indent=2) + "\n")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
