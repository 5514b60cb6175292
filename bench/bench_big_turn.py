"""What opening a stored turn of very many events costs: the window's ``LazyTranscript.view`` of it (the chat)
and ``LazyTranscript.all_events`` (the inspector's trace), with this tree's code and with another's.

A thread is recorded through a real run (tests/fakes/llm_server.py), then its one turn gets N more copies of
its ``run_status`` row (SQL): what a run repeating one status (a retry loop, a silent local server) leaves; with
``--distinct`` each copy says something else (its ``detail`` numbered), N different events none of which folds,
which the window reads at most ``ui.transcript.TURN_EVENTS_SHOWN`` of.
Each measurement runs in a fresh Python process (its peak RSS is its own, the app's modules imported first):
wall time, the thread's CPU time (time.thread_time), the events the view gets, peak RSS.

``--old DIR`` runs each case with DIR's code too (e.g. ``git archive`` of main's commit in /tmp), alternating
new and old runs, ``--rounds`` of each; medians are printed with the load average (os.getloadavg()).

Run: ``PYTHONPATH=$PWD .venv/bin/python bench/bench_big_turn.py --events 300000 [--distinct] --old /tmp/bigturn-main``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r'''
import json, os, resource, sys, time
db, thread_id, case = sys.argv[1], sys.argv[2], sys.argv[3]
from workspace.persistence import Store
from ui.transcript import LazyTranscript

def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024

store = Store.open(db)
lazy = LazyTranscript(store, thread_id)
turn = store.path(thread_id)[-1]
before = peak()
wall, cpu = time.perf_counter(), time.thread_time()
if case == "view":
    count = len(lazy.view(turn).events)
else:
    count = len(lazy.all_events())
wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
print(json.dumps({"wall": wall, "cpu": cpu, "events": count, "peak": peak(), "before": before}))
store.close()
'''


def make(folder: Path, extra: int, *, distinct: bool = False) -> tuple[Path, str]:
    sys.path.insert(0, str(ROOT / "tests"))
    os.environ["ROBOTLAB_HOME"] = str(folder / "home")
    from fakes.llm_server import FakeLLMServer

    from workspace.config import load_config
    from workspace.session import Workspace

    db = folder / "big.db"

    async def record(url: str) -> str:
        config = load_config(env={}, overrides={"llm": {"model": "openai/fake", "api_base": url + "/v1"}})
        ws = Workspace(config=config, db_path=db)
        session = ws.new_thread("assistant")
        await asyncio.wait_for(session.send("hi").wait(), 60)
        await ws.aclose()
        return session.thread_id

    with FakeLLMServer() as server:
        thread_id = asyncio.run(record(server.base_url))
    conn = sqlite3.connect(db)
    columns = "thread_id, turn_id, run_id, seq, kind, robot, task, ts, data, blobs"
    row = conn.execute(f"SELECT {columns} FROM events WHERE kind = 'run_status' LIMIT 1").fetchone()
    event = json.loads(row[8])

    def copies() -> Iterator[tuple[object, ...]]:  # each with its own number and time, as a run writes them
        for i in range(extra):
            seq, ts = event["seq"] + 1 + i, event["ts"] + 0.001 * (i + 1)
            data = {**event, "seq": seq, "ts": ts}
            if distinct:
                data["detail"] = f"still waiting ({i + 1})"
            yield (*row[:3], seq, *row[4:7], ts, json.dumps(data, separators=(",", ":")), row[9])

    conn.executemany(f"INSERT INTO events ({columns}) VALUES (?,?,?,?,?,?,?,?,?,?)", copies())
    conn.commit()
    conn.close()
    return db, thread_id


def run(code_root: Path, db: Path, thread_id: str, case: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(code_root), "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run([sys.executable, "-c", CHILD, str(db), thread_id, case], capture_output=True, text=True, cwd=code_root,
                          env=env, timeout=600, check=True)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--distinct", action="store_true", help="each extra row says something else (none folds)")
    parser.add_argument("--old", type=Path, help="another tree's root (its workspace and ui), run alternately")
    args = parser.parse_args()
    trees = [("new", ROOT)] + ([("old", args.old)] if args.old else [])
    with tempfile.TemporaryDirectory(prefix="bench-big-turn-") as scratch:
        db, thread_id = make(Path(scratch), args.events, distinct=args.distinct)
        print(f"one turn with {args.events:,} extra {'different ' if args.distinct else ''}run_status rows: "
              f"{db.stat().st_size >> 20} MiB database")
        for case in ("view", "all_events"):
            seen: dict[str, list[dict[str, float]]] = {name: [] for name, _ in trees}
            loads: list[float] = []
            for _ in range(args.rounds):
                for name, root in trees:
                    seen[name].append(run(root, db, thread_id, case))
                    loads.append(os.getloadavg()[0])
            for name, _ in trees:
                rows = seen[name]
                print(f"{case:10s} {name}: wall {statistics.median(r['wall'] for r in rows):6.2f} s  "
                      f"thread CPU {statistics.median(r['cpu'] for r in rows):6.2f} s  "
                      f"events {int(rows[0]['events']):,}  peak RSS {statistics.median(r['peak'] for r in rows):.0f} MiB "
                      f"(before the read {statistics.median(r['before'] for r in rows):.0f})  "
                      f"load {statistics.median(loads):.2f} (rounds {len(rows)})")


if __name__ == "__main__":
    main()
