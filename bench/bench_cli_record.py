"""What recording costs ``robotlab run``: time to the first token and to the end, recorded or not.

Each run starts ``python -m workspace run assistant "hello there" --json`` (the offline demo, no
network) in a fresh process and measures, from the start of the process: the first ``text_delta``
line on stdout (start-up to first token) and the exit. Three variants, interleaved so a busy
machine hurts them alike: ``--no-record`` (nothing written, as before recording existed), recorded
into a new database (the thread, the turn and every event written; the database created), and
recorded into an existing database of ``--threads`` threads (as on a machine used for a while).
Prints the medians and the differences; writes bench/results/cli_record.json.

    python bench/bench_cli_record.py [--runs N] [--threads N] [--delay S] [--base DIR]

``--base DIR``: also run the command from another source tree (e.g. the commit before recording:
``git archive <commit> | tar -x -C DIR``), as "before".

``--delay`` is the demo's delay between streamed chunks (``demo.delay``, default 0.015 s as shipped).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from scratch import scratch_dir

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ("no-record", "record (new database)", "record (existing database)")


def run_once(extra: list[str], *, home: Path, delay: float, cwd: Path = ROOT) -> tuple[float, float]:
    """Seconds until the first text_delta line and until exit."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROBOT_LAB_")}
    env.update(ROBOTLAB_HOME=str(home), ROBOT_LAB_DEMO__DELAY=str(delay), PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "workspace", "run", "assistant", "hello there", "--json", *extra]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    first = None
    for line in proc.stdout:
        if first is None and '"kind":"text_delta"' in line:
            first = time.perf_counter() - start
    code = proc.wait(timeout=120)
    end = time.perf_counter() - start
    if code != 0 or first is None:
        raise SystemExit(f"{' '.join(cmd)} failed (exit {code})")
    return first, end


def fill(home: Path, threads: int) -> None:
    """A database of ``threads`` recorded threads (each a few hundred events)."""
    from workspace.persistence import Store

    db = home / "data" / "workspace.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROBOT_LAB_")}
    env.update(ROBOTLAB_HOME=str(home), ROBOT_LAB_DEMO__DELAY="0")
    subprocess.run([sys.executable, "-m", "workspace", "run", "assistant", "seed", "--json"], cwd=ROOT, env=env,
                   stdout=subprocess.DEVNULL, check=True)
    with Store(db) as store:
        (seed,) = store.list_threads()
        events = [e for _, evs in store.path_events(seed.id) for e in evs]
        for n in range(threads - 1):
            thread = store.create_thread(robot="assistant", title=f"thread {n}", metadata={"origin": "cli"})
            turn = store.add_turn(thread.id, user_text=f"message {n}", parent_turn_id=None)
            for event in events:
                store.append_event(thread.id, turn.id, event)
            store.finish_turn(turn.id, "finished")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--threads", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.015)
    parser.add_argument("--base", type=Path, help="another source tree to run as 'before'")
    args = parser.parse_args()
    variants = (*VARIANTS, "before (--base)") if args.base else VARIANTS

    sys.path.insert(0, str(ROOT))
    work = scratch_dir("robotlab-bench-record-")
    try:
        existing = work / "existing"
        fill(existing, args.threads)
        times: dict[str, list[tuple[float, float]]] = {v: [] for v in variants}
        for n in range(args.runs + 1):  # the first round warms the caches and is not counted
            for variant in variants:
                if variant == "before (--base)":
                    result = run_once([], home=work / f"base-{n}", delay=args.delay, cwd=args.base.resolve())
                elif variant == "no-record":
                    result = run_once(["--no-record"], home=work / f"none-{n}", delay=args.delay)
                elif variant == "record (new database)":
                    result = run_once([], home=work / f"new-{n}", delay=args.delay)
                else:
                    result = run_once([], home=existing, delay=args.delay)
                if n:
                    times[variant].append(result)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    base_first = statistics.median(t[0] for t in times["no-record"])
    base_end = statistics.median(t[1] for t in times["no-record"])
    report: dict[str, dict[str, float]] = {}
    print(f"robotlab run assistant \"hello there\" --json, offline demo (delay {args.delay} s), "
          f"median of {args.runs} runs; existing database: {args.threads} threads")
    best_first = min(t[0] for t in times["no-record"])
    print(f"{'variant':<28} {'first token':>12} {'diff':>9} {'exit':>9} {'diff':>9} {'fastest first':>14} {'diff':>9}")
    for variant in variants:
        first = statistics.median(t[0] for t in times[variant])
        end = statistics.median(t[1] for t in times[variant])
        fastest = min(t[0] for t in times[variant])
        report[variant] = {"first_token_s": round(first, 4), "exit_s": round(end, 4),
                           "first_token_diff_ms": round((first - base_first) * 1000, 1),
                           "exit_diff_ms": round((end - base_end) * 1000, 1),
                           "fastest_first_token_s": round(fastest, 4)}
        print(f"{variant:<28} {first * 1000:>10.0f}ms {(first - base_first) * 1000:>+7.0f}ms "
              f"{end * 1000:>7.0f}ms {(end - base_end) * 1000:>+7.0f}ms {fastest * 1000:>12.0f}ms "
              f"{(fastest - best_first) * 1000:>+7.0f}ms")
    out = ROOT / "bench" / "results" / "cli_record.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"runs": args.runs, "threads": args.threads, "delay": args.delay,
                               "when": time.strftime("%Y-%m-%d %H:%M"), "results": report}, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
