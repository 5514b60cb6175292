"""The first thread opened in a fresh process: what its first widget of each kind costs against its second, and the
longest step of the window's thread after the click.

Each round starts the window in a fresh process as ``robotlab`` does (staged start-up, no thread left open), waits
``--wait`` seconds after showing it, or once start-up is over if later (a person looks at the window before clicking), opens a thread of 100 turns
(``bench_ui_thread_scale``'s) and notes until the turns on screen are widgets: the click's step and the longest step
after it (wall, and the window's thread's CPU time), and each widget the turn window makes (the window thread's CPU
time, by kind: the first of a kind against the second). ``--against DIR`` runs the same rounds, alternating, on
another checkout (e.g. ``git archive`` of main): both then see the same machine load. Medians; the load average
with each figure. ``--reopen``: the thread is the one left open last time, reopened by start-up's steps (its widgets
made then); no click, and the longest start-up step (``Application.step_times``) is printed as "longest step".

``QT_QPA_PLATFORM=offscreen .venv/bin/python bench/bench_ui_first_open.py [--rounds 3] [--wait 2.5] [--against DIR]
[--reopen]``. Target: the click's step and the longest step after it under a frame (16 ms) on a quiet machine, under
50 ms on a busy one (judged by ``bench/scale_report.py``). Writes this checkout's medians to
bench/results/ui_first_open.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from scratch import scratch_dir

ROOT = Path(__file__).resolve().parent.parent

_CHILD = """
import asyncio, json, os, sys, time
root_dir, keep, wait, reopen = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4] == "reopen"
sys.path.insert(0, root_dir); sys.path.insert(0, root_dir + "/bench")
from pathlib import Path
from bench_ui_open_long_thread import built_threads, paint_probe, screen_made
from scratch import leave
db, thread_id = built_threads(Path(keep), (100,))[100]
from workspace.persistence import Store
store = Store(db)  # a new thread at start (a person opens the thread), or the thread reopened by start-up
store.set_meta("last_thread", thread_id if reopen else None)
store.close()
from ui.app import Application, get_app, new_event_loop
from ui.chat.view import virtual
app = get_app()
loop = new_event_loop(app)
costs = {}
make = virtual.TurnWindow._make
def timed(self, turn):  # each widget's cost (the window thread's CPU), by kind: the turn window's own kinds
    widgets, kind = make(self, turn), "user"
    while True:
        cpu = time.thread_time()
        following = next(widgets, None)
        costs.setdefault(kind, []).append((time.thread_time() - cpu) * 1000)
        if following is None:
            return
        kind = following
        yield following
virtual.TurnWindow._make = timed
found = {}
async def main(root):
    shown = time.perf_counter()
    warmed = None
    probe = paint_probe()
    while time.perf_counter() < shown + wait or not root.whole:  # (and never before start-up is over)
        await asyncio.sleep(0.01)
        if warmed is None and getattr(root, "warmed", False):
            warmed = time.perf_counter() - shown
        if probe.parent() is None and time.perf_counter() > shown + wait - 0.5:
            # Half a second ahead: the first events a Python filter of the application sees have PySide create the
            # Python types (and their enums) of the objects they are sent to, all of a module's at once (20-60
            # enums in one step, 10-20 ms): a cost of the probe, not of the window, paid before the click.
            probe.setParent(app)
            app.installEventFilter(probe)
    if reopen:  # the thread's widgets were made by start-up's steps: its longest step on the window's thread
        worst = max(root.step_times, key=lambda t: t.cpu_ms)
        found.update(load=os.getloadavg()[0], warmed_s=warmed, whole=root.whole, click_ms=0.0, click_cpu_ms=0.0,
                     longest_ms=worst.wall_ms, longest_cpu_ms=worst.cpu_ms,
                     kinds={k: v[:2] for k, v in costs.items() if len(v) >= 2})
        return
    chat = root.window.chat
    probe.chat = chat
    load = os.getloadavg()[0]
    start, start_cpu = time.perf_counter(), time.thread_time()
    root.window.threads.open(thread_id)
    last, last_cpu = time.perf_counter(), time.thread_time()
    click = ((last - start) * 1000, (last_cpu - start_cpu) * 1000)
    longest = (0.0, 0.0)
    while not (probe.last_turn and screen_made(chat)) and time.perf_counter() < start + 60:
        await asyncio.sleep(0)
        now, cpu = time.perf_counter(), time.thread_time()
        longest = max(longest, ((now - last) * 1000, (cpu - last_cpu) * 1000), key=lambda x: x[1])
        last, last_cpu = now, cpu
    await asyncio.sleep(1.0)  # the margin's turns too (more widgets of each kind)
    found.update(load=load, warmed_s=warmed, whole=root.whole, click_ms=click[0], click_cpu_ms=click[1],
                 longest_ms=longest[0], longest_cpu_ms=longest[1],
                 kinds={k: v[:2] for k, v in costs.items() if len(v) >= 2})
with loop:
    root = Application(db_path=db, defer=True)
    root.window.resize(1400, 900)
    root.window.show()
    root.finish_startup(staged=True)
    loop.run_until_complete(main(root))
    print("RESULT " + json.dumps(found), flush=True)
    leave(0)
"""


def run(tree: Path, keep: Path, wait: float, *, reopen: bool = False) -> dict[str, object]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "ROBOTLAB_HOME": str(scratch_dir("robotlab-bench-"))}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tree), str(keep), str(wait), "reopen" if reopen else "click"],
                          capture_output=True,
                          text=True, env=env, cwd=tree, timeout=600)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            result: dict[str, object] = json.loads(line[7:])
            return result
    raise RuntimeError(f"no result from {tree}: {done.stderr[-2000:]}")


def _median(rows: list[dict[str, object]], key: str) -> float:
    return round(statistics.median(float(r[key]) for r in rows if r[key] is not None), 1)  # type: ignore[arg-type]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--wait", type=float, default=2.5, help="seconds from showing the window to the click")
    parser.add_argument("--against", type=Path, help="another checkout, run alternately with this one")
    parser.add_argument("--reopen", action="store_true", help="start-up reopens the thread (left open last time): "
                        "no click; the longest start-up step instead of the click's figures")
    args = parser.parse_args(argv)
    keep = scratch_dir("robotlab-bench-threads-")
    trees = {"this": ROOT, **({"against": args.against.resolve()} if args.against else {})}
    rows: dict[str, list[dict[str, object]]] = {name: [] for name in trees}
    for tree in trees.values():
        run(tree, keep, 0.5)  # (byte-code caches, the threads built)
    for _ in range(args.rounds):
        for name, tree in trees.items():
            rows[name].append(run(tree, keep, args.wait, reopen=args.reopen))
            row = rows[name][-1]
            print(f"{name:>8} (load {row['load']:.2f}): click {row['click_ms']:.1f} ms ({row['click_cpu_ms']:.1f} CPU), "
                  f"longest step after {row['longest_ms']:.1f} ms ({row['longest_cpu_ms']:.1f} CPU), warm-up done at "
                  f"{row['warmed_s'] if row['warmed_s'] is None else round(float(row['warmed_s']), 2)} s", flush=True)
    print(f"medians of {args.rounds} rounds, click {args.wait} s after the window shows (ms; the window thread's CPU):")
    for name, found in rows.items():
        loads = [float(r["load"]) for r in found]  # type: ignore[arg-type]
        print(f"  {name} ({trees[name]}), load {min(loads):.2f}-{max(loads):.2f}:")
        print(f"    click's step {_median(found, 'click_ms')} wall, {_median(found, 'click_cpu_ms')} CPU; longest step "
              f"after it {_median(found, 'longest_ms')} wall, {_median(found, 'longest_cpu_ms')} CPU")
        kinds = sorted({k for r in found for k in r["kinds"]})  # type: ignore[attr-defined]
        for kind in kinds:
            firsts = [r["kinds"][kind][0] for r in found if kind in r["kinds"]]  # type: ignore[index,operator]
            seconds = [r["kinds"][kind][1] for r in found if kind in r["kinds"]]  # type: ignore[index,operator]
            print(f"    {kind:<18} first {statistics.median(firsts):5.1f}  second {statistics.median(seconds):5.1f}")
    this = rows["this"]
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "ui_first_open.json").write_text(json.dumps({
        "rounds": args.rounds, "wait_s": args.wait, "reopen": args.reopen,
        **{key: _median(this, key) for key in ("click_ms", "click_cpu_ms", "longest_ms", "longest_cpu_ms")},
        "loads": [r["load"] for r in this], "warmed_before_click": sum(r["warmed_s"] is not None for r in this)},
        indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
