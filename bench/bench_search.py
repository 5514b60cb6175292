"""Thread search over 10,000 threads: ms per query against bare FTS5 on the same database, and what the
caller's thread (the window's) is held meanwhile.

Builds a database of ``THREADS`` threads (a question and an answer each, words drawn from a small
vocabulary so queries match hundreds to thousands of messages), then, per query of ``QUERIES``:

* ``bare FTS5``: ``SELECT rowid FROM search_fts WHERE search_fts MATCH ? ORDER BY rank LIMIT 50`` on a
  plain sqlite3 connection (ranked by bm25, nothing joined, no snippet): the floor;
* ``store.search``: :meth:`Store.search` called on the caller's thread (what the window did: its event
  loop held for the whole query);
* ``background``: :class:`workspace.persistence.BackgroundSearch` awaited on an event loop, with the
  worst stall of that loop meanwhile (a 1 ms ticker).

Then a person typing: five ever longer queries asked without waiting; the newest one's hits are the
only ones given, the stale ones skipped or dropped.

Targets: ``store.search`` within 1.5 x bare FTS5 (ranked hits with snippets, not much more than the
ranking itself), the background search within 1.2 x ``store.search`` (the worker's cost), and the event
loop's worst stall during a search under 16 ms (the median over the queries; the same ticker with no
search is printed beside it: this machine's own noise). Medians, with the load average; the exit status is 1
when a target is missed. Writes bench/results/search.json.
``.venv/bin/python bench/bench_search.py [--db PATH]`` (an existing database of the bench is reused).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sqlite3
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from scratch import scratch_dir

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

THREADS = 10_000
QUERIES = ("pelican", "river delta", "config", "migration plan", "tokenizer window", "bench")
ROUNDS = 5
WORDS = ["pelican", "river", "delta", "config", "file", "migration", "plan", "tokenizer", "window", "bench", "robot", "thread", "answer", "question", "model", "server", "local", "hosted", "search", "index", "database", "page", "sqlite", "event", "stream", "chunk", "provider", "loop", "tool", "call", "result", "change", "review", "folder", "sandbox", "command", "output", "memory", "skill", "network", "task", "route"]


def build(db: Path) -> None:
    from workspace import events as ev
    from workspace.persistence import Store

    rng = random.Random(25)
    store = Store(db)
    for t in range(THREADS):
        thread = store.create_thread(robot="assistant", title=" ".join(rng.choices(WORDS, k=4)))
        turn = store.add_turn(thread.id, user_text=" ".join(rng.choices(WORDS, k=20)), parent_turn_id=None)
        store.append_events(thread.id, turn.id, [
            ev.Text(run_id=f"r{t}", robot="assistant", seq=1, text=" ".join(rng.choices(WORDS, k=120)))])
        store.finish_turn(turn.id, "finished")
    store.close()


def bare_fts(db: Path, query: str) -> float:
    conn = sqlite3.connect(db)
    try:
        match = " ".join(f'"{w}"*' for w in query.split())
        start = time.perf_counter()
        conn.execute("SELECT rowid FROM search_fts WHERE search_fts MATCH ? ORDER BY rank LIMIT 50", (match,)).fetchall()
        return time.perf_counter() - start
    finally:
        conn.close()


class Ticker:
    def __init__(self) -> None:
        self.worst = 0.0

    async def run(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            self.worst = max(self.worst, now - last - 0.001)
            last = now


async def measure(db: Path) -> dict[str, Any]:
    from workspace.persistence import BackgroundSearch, Store

    store = Store(db)
    background = BackgroundSearch(store)
    rows: dict[str, dict[str, float]] = {}
    try:
        await background.search("warm")  # the worker and its connection
        for query in QUERIES:
            bare, direct, worker, stalls = [], [], [], []
            hits = 0
            for _ in range(ROUNDS):
                bare.append(bare_fts(db, query))
                start = time.perf_counter()
                found = store.search(query)
                direct.append(time.perf_counter() - start)
                start = time.perf_counter()
                got = await background.search(query)
                worker.append(time.perf_counter() - start)
                ticker = Ticker()  # again, with a 1 ms ticker on the loop (which competes for the interpreter)
                task = asyncio.get_running_loop().create_task(ticker.run())
                await asyncio.sleep(0.003)
                await background.search(query)
                task.cancel()
                stalls.append(ticker.worst)
                assert got is not None and [h.turn_id for h in got] == [h.turn_id for h in found]
                hits = len(found)
            rows[query] = {"bare_ms": statistics.median(bare) * 1000, "store_ms": statistics.median(direct) * 1000,
                           "background_ms": statistics.median(worker) * 1000,
                           "loop_stall_ms": statistics.median(stalls) * 1000, "hits": hits}
        idle = []
        for _ in range(ROUNDS):  # the same ticker with no search: this machine's own noise
            ticker = Ticker()
            task = asyncio.get_running_loop().create_task(ticker.run())
            await asyncio.sleep(0.2)
            task.cancel()
            idle.append(ticker.worst)
        typed = ["p", "pe", "pel", "peli", "pelic"]
        results = await asyncio.gather(*(background.search(q) for q in typed))
        typing = {"asked": len(typed), "given": sum(r is not None for r in results),
                  "newest_given": results[-1] is not None}
    finally:
        background.close()
        store.close()
    return {"queries": rows, "typing": typing, "idle_stall_ms": statistics.median(idle) * 1000}


def main(argv: list[str]) -> int:
    db = Path(argv[argv.index("--db") + 1]) if "--db" in argv else scratch_dir("robotlab-search-") / "b.db"
    if not db.exists():
        start = time.perf_counter()
        build(db)
        print(f"built {THREADS:,} threads in {time.perf_counter() - start:.0f} s: {db} ({db.stat().st_size / 1e6:.0f} MB)")
    load = os.getloadavg()[0]
    result = asyncio.run(measure(db))
    print(f"{'query':<18} {'hits':>5} {'bare FTS5':>10} {'store.search':>13} {'background':>11} {'loop stall':>11}")
    for query, row in result["queries"].items():
        print(f"{query:<18} {row['hits']:>5} {row['bare_ms']:>7.1f} ms {row['store_ms']:>10.1f} ms "
              f"{row['background_ms']:>8.1f} ms {row['loop_stall_ms']:>8.1f} ms")
    rows = list(result["queries"].values())
    store_ratio = statistics.median(r["store_ms"] / max(r["bare_ms"], 0.01) for r in rows)
    worker_ratio = statistics.median(r["background_ms"] / max(r["store_ms"], 0.01) for r in rows)
    stall = statistics.median(r["loop_stall_ms"] for r in rows)
    typing = result["typing"]
    checks = {
        "store.search / bare FTS5 <= 1.5": store_ratio <= 1.5,
        "background / store.search <= 1.2": worker_ratio <= 1.2,
        "median loop stall during a search < 16 ms": stall < 16,
        "typing: only the newest query's hits given": typing["given"] == 1 and typing["newest_given"],
    }
    print(f"store.search / bare FTS5: {store_ratio:.2f} x; background / store.search: {worker_ratio:.2f} x; "
          f"loop stall during a search: {stall:.1f} ms (with no search: {result['idle_stall_ms']:.1f} ms); typing {typing['asked']} queries: "
          f"{typing['given']} given (the newest: {typing['newest_given']}); load average {load:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} at the end")
    for name, met in checks.items():
        print(f"  target {name}: {'met' if met else 'missed'}")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "search.json").write_text(json.dumps({**result, "store_ratio": round(store_ratio, 2),
                                                 "worker_ratio": round(worker_ratio, 2), "worst_stall_ms": stall,
                                                 "checks": checks}, indent=2) + "\n")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
