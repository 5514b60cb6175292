"""The thread store: append_event cost on the UI thread, and loading a long thread's transcript.

1. ``append_event`` for 20,000 text deltas and 2,000 tool events (a tool_use/tool_result every ten
   deltas), timed one call at a time: median, p99 and max per event, for the shipped setting
   (deltas held and written every 250 ms or before the next other event) and for
   ``flush_interval=0`` (every delta its own row), with the number of rows each writes.
2. ``ThreadSession.transcript()`` of a thread of 2,000 messages with tool calls (400 turns of five
   messages as the model sees them: the user's message, the robot's text, its tool call, the
   tool's result, the final text), recorded through real runs with a ScriptedProvider: median of 5, each on a freshly opened Workspace; plus
   ``history_messages`` (what the next send pays) and the Markdown export.

3. Opening a database of 1,000 threads (3 turns each, with tool calls: about 18 MB): what
   ``Store.open`` costs in all (median of 7) and the ``PRAGMA quick_check`` it runs to find a
   damaged file, alone on a fresh connection (median of 7).

Prints the figures and writes bench/results/store.json. Run: ``.venv/bin/python bench/bench_store.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DELTAS = 20_000
TOOL_EVENTS = 2_000
TURNS = 400  # x 5 messages = 2,000
REPEATS = 5

ROBOT = """\
---
name: bench-helper
description: benchmark robot
tools: [remember, recall]
---
You help.
"""


def _stats(samples_ns: list[int]) -> dict[str, float]:
    ordered = sorted(samples_ns)
    return {
        "median_us": round(statistics.median(ordered) / 1000, 2),
        "p99_us": round(ordered[int(len(ordered) * 0.99) - 1] / 1000, 2),
        "max_us": round(ordered[-1] / 1000, 2),
        "mean_us": round(sum(ordered) / len(ordered) / 1000, 2),
    }


def bench_append(folder: Path, flush_interval: float) -> dict[str, Any]:
    from workspace import events as ev
    from workspace.persistence import Store

    store = Store(folder / f"append-{flush_interval}.db", flush_interval=flush_interval)
    thread = store.create_thread(robot="bench")
    turn = store.add_turn(thread.id, user_text="go", parent_turn_id=None)
    # Build the events first: only append_event is timed.
    plan: list[ev.Event] = []
    seq = 0
    tools = 0
    for i in range(DELTAS):
        seq += 1
        plan.append(ev.TextDelta(run_id="run", robot="bench", seq=seq, text=f"word{i} "))
        if (i + 1) % 10 == 0 and tools < TOOL_EVENTS:
            seq += 1
            call = f"call_{tools // 2}"
            if tools % 2 == 0:
                plan.append(ev.ToolUse(run_id="run", robot="bench", seq=seq, id=call, name="read_file",
                                       input={"path": f"src/module_{tools}.py"}))
            else:
                plan.append(ev.ToolResult(run_id="run", robot="bench", seq=seq, id=call, name="read_file",
                                          payload={"data": "x" * 200}, duration=0.01))
            tools += 1
    delta_ns: list[int] = []
    tool_ns: list[int] = []
    clock = time.perf_counter_ns
    started = clock()
    for event in plan:
        t0 = clock()
        store.append_event(thread.id, turn.id, event)
        elapsed = clock() - t0
        (delta_ns if event.kind == "text_delta" else tool_ns).append(elapsed)
    store.flush()
    total_s = (clock() - started) / 1e9
    rows = next(store.iter_rows("SELECT COUNT(*) FROM events"))[0]
    store.close()
    return {
        "flush_interval_s": flush_interval,
        "events": len(plan),
        "rows_written": rows,
        "total_s": round(total_s, 3),
        "all": _stats(delta_ns + tool_ns),
        "text_delta": _stats(delta_ns),
        "tool_events": _stats(tool_ns),
    }


async def build_thread(db: Path) -> str:
    from workspace.providers.testing import ScriptedProvider, ToolCall
    from workspace.session import Workspace

    answer = " ".join(f"word{i}" for i in range(30))
    provider = ScriptedProvider()
    for i in range(TURNS):
        provider.enqueue([f"Let me look that up ({i}). ", ToolCall("remember", {"key": f"k{i}", "value": i})],
                         f"Here is what I found: {answer}.")
    workspace = Workspace(db_path=db, provider=provider)
    session = workspace.new_thread("bench-helper", title="Long thread")
    for i in range(TURNS):
        run = session.send(f"Question number {i}: please look this up")
        await run.wait()
    await workspace.aclose()
    return session.thread_id


def bench_transcript(db: Path, thread_id: str) -> dict[str, Any]:
    from workspace.exports import export_markdown
    from workspace.providers.testing import ScriptedProvider
    from workspace.session import Workspace

    transcript_s: list[float] = []
    history_s: list[float] = []
    export_s: list[float] = []
    turns = messages = events = 0
    for _ in range(REPEATS):
        workspace = Workspace(db_path=db, provider=ScriptedProvider())
        t0 = time.perf_counter()
        views = workspace.open_thread(thread_id).transcript()
        transcript_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        history = workspace.store.history_messages(thread_id)
        history_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        export_markdown(workspace.store, thread_id)
        export_s.append(time.perf_counter() - t0)
        turns, messages, events = len(views), len(history), sum(len(v.events) for v in views)
        workspace.close()
    rows = 0
    from workspace.persistence import Store

    with Store(db) as store:
        rows = next(store.iter_rows("SELECT COUNT(*) FROM events"))[0]
    return {
        "turns": turns,
        "messages": messages,
        "transcript_events": events,
        "stored_event_rows": rows,
        "transcript_median_ms": round(statistics.median(transcript_s) * 1000, 1),
        "history_messages_median_ms": round(statistics.median(history_s) * 1000, 1),
        "export_markdown_median_ms": round(statistics.median(export_s) * 1000, 1),
        "db_size_mb": round(sum(p.stat().st_size for p in db.parent.glob(db.name + "*")) / 1e6, 2),
    }


def bench_open(folder: Path, threads: int = 1_000) -> dict[str, Any]:
    import sqlite3

    from workspace import events as ev
    from workspace.persistence import Store

    db = folder / "many.db"
    filler = "the tool read the file and found the lines it was asked about " * 12
    with Store(db) as store:
        for t in range(threads):
            thread = store.create_thread(robot="bench", title=f"Thread {t}")
            parent = None
            for u in range(3):
                turn = store.add_turn(thread.id, user_text=f"question {u} of thread {t}", parent_turn_id=parent)
                parent = turn.id
                store.append_events(thread.id, turn.id, [
                    ev.RunStarted(run_id=turn.id, robot="bench", seq=1, message="q", model="m"),
                    ev.ToolUse(run_id=turn.id, robot="bench", seq=2, id="c", name="read_file", input={"path": "a.py"}),
                    ev.ToolResult(run_id=turn.id, robot="bench", seq=3, id="c", name="read_file",
                                  payload={"data": filler}, duration=0.01),
                    ev.Text(run_id=turn.id, robot="bench", seq=4, text=f"answer {u}: " + filler[:200]),
                    ev.RunFinished(run_id=turn.id, robot="bench", seq=5),
                ])
    size_mb = sum(p.stat().st_size for p in folder.glob("many.db*")) / 1e6
    open_s: list[float] = []
    check_s: list[float] = []
    for _ in range(REPEATS + 2):
        t0 = time.perf_counter()
        Store(db).close()
        open_s.append(time.perf_counter() - t0)
        conn = sqlite3.connect(db)
        t0 = time.perf_counter()
        result = conn.execute("PRAGMA quick_check").fetchall()
        check_s.append(time.perf_counter() - t0)
        conn.close()
        assert result == [("ok",)]
    return {"threads": threads, "db_size_mb": round(size_mb, 1),
            "open_median_ms": round(statistics.median(open_s) * 1000, 1),
            "quick_check_median_ms": round(statistics.median(check_s) * 1000, 1)}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ["ROBOTLAB_HOME"] = str(folder / "home")
        robots = folder / "home" / "config" / "robots"
        robots.mkdir(parents=True)
        (robots / "bench-helper.md").write_text(ROBOT, encoding="utf-8")

        held = bench_append(folder, 0.25)
        every = bench_append(folder, 0.0)
        db = folder / "long.db"
        t0 = time.perf_counter()
        thread_id = asyncio.run(build_thread(db))
        build_s = time.perf_counter() - t0
        load = bench_transcript(db, thread_id)
        load["build_s"] = round(build_s, 1)
        opening = bench_open(folder)

    result = {"append_held_deltas": held, "append_every_delta": every, "long_thread": load, "open": opening,
              "python": sys.version.split()[0]}
    for name, r in (("held deltas (shipped, 250 ms)", held), ("every delta a row", every)):
        print(f"append_event, {name}: {r['events']:,} events -> {r['rows_written']:,} rows in {r['total_s']} s")
        print(f"  all:        median {r['all']['median_us']:8.2f} µs   p99 {r['all']['p99_us']:8.2f} µs   "
              f"max {r['all']['max_us']:9.2f} µs")
        print(f"  text_delta: median {r['text_delta']['median_us']:8.2f} µs   p99 {r['text_delta']['p99_us']:8.2f} µs"
              f"   max {r['text_delta']['max_us']:9.2f} µs")
        print(f"  tool event: median {r['tool_events']['median_us']:8.2f} µs   p99 "
              f"{r['tool_events']['p99_us']:8.2f} µs   max {r['tool_events']['max_us']:9.2f} µs")
    print(f"long thread: {load['turns']} turns, {load['messages']:,} messages, {load['stored_event_rows']:,} event "
          f"rows, {load['db_size_mb']} MB (built through real runs in {load['build_s']} s)")
    print(f"  transcript():      median {load['transcript_median_ms']:7.1f} ms of {REPEATS}")
    print(f"  history_messages:  median {load['history_messages_median_ms']:7.1f} ms")
    print(f"  export_markdown:   median {load['export_markdown_median_ms']:7.1f} ms")
    print(f"opening {opening['threads']:,} threads ({opening['db_size_mb']} MB): Store.open median "
          f"{opening['open_median_ms']} ms, of which PRAGMA quick_check alone median {opening['quick_check_median_ms']} ms")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "store.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
