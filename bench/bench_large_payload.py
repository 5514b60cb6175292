"""A large tool result in a recorded thread: what recording, reading and exporting it costs.

One thread, one turn: the robot calls a tool that returns ``SIZE_MB`` MB of text (a log file, a
big listing), then answers. By default the way a user meets it: the tool is an MCP server's
(tests/faults/mcp_fault_server.py, whose result carries the text twice: for the model and as
the raw content blocks) and the model is reached through litellm on the loopback server
(tests/fakes/llm_server.py), which is sent the 10 MB back. ``--scripted``: a local tool and the
ScriptedProvider (the store's share alone). Each phase runs in a fresh Python process, so its
peak RSS (``ru_maxrss``) is its own:

1. ``record``: ``session.send`` through a real run (ScriptedProvider) until the run ended and the
   store is closed: wall time, peak RSS, database size (file + WAL) and the rows of the largest
   tables;
2. ``open``: open the workspace and the thread's transcript (what the window does) and rebuild
   the conversation the next message sends (``history_messages``);
3. ``export``: the Markdown, JSON and JSONL exports, and a search for a word of the answer;
4. ``store``: the store's own share, without the run: ``append_event`` of the ``tool_result``
   (payload and raw MCP blocks) and the ``run_finished`` holding it, timed, and the peak RSS it adds
   over the events themselves; then reading the turn back.

Run: ``.venv/bin/python bench/bench_large_payload.py [SIZE_MB] [--scripted]``; with
``BENCH_CODE=/path/to/another/checkout`` it measures that code (before/after figures). Prints the figures and writes
bench/results/large_payload.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: The code measured: this checkout, or another one (BENCH_CODE=/path) with the same servers.
CODE = Path(os.environ.get("BENCH_CODE") or ROOT)
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(CODE))

ROBOT = """\
---
name: big-reader
description: reads something big
tools: [big_result]
---
You read things.
"""
MCP_ROBOT = """\
---
name: big-reader
description: reads something big
model: openai/fake
mcp: [big]
---
You read things.
"""


def _peak_rss_mb() -> float:
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def _setup(size_mb: float) -> None:
    from workspace.tools import registry
    from workspace.tools.base import Tool

    line = "2024-05-01 12:00:00 INFO worker-7 processed request id=0123456789 in 12 ms status=ok\n"
    payload = (line * (int(size_mb * 1024 * 1024) // len(line) + 1))[: int(size_mb * 1024 * 1024)]

    def big_result(arguments: dict[str, Any]) -> str:
        return payload

    registry.register(Tool("big_result", "Return a big text", None, big_result))


def phase_record(db: Path, size_mb: float, scripted: bool) -> dict[str, Any]:
    import asyncio

    from workspace.providers.testing import ScriptedProvider, ToolCall
    from workspace.session import Workspace

    server: Any = None
    if scripted:
        _setup(size_mb)
    else:
        from tests.fakes.llm_server import FakeLLMServer, Reply

        server = FakeLLMServer().start()
        server.enqueue(Reply.tool("big__huge", {"mb": size_mb}), "The log shows every request finished.")
        fault_server = ROOT / "tests" / "faults" / "mcp_fault_server.py"
        from workspace import paths

        paths.user_config_file().write_text(json.dumps({
            "llm": {"api_base": server.base_url},
            "mcpServers": {"big": {"command": sys.executable, "args": [str(fault_server), "ok"],
                            "autoApprove": ["huge"]}},
        }), encoding="utf-8")

    async def main() -> str:
        provider = None
        if scripted:
            provider = ScriptedProvider()
            provider.enqueue([ToolCall("big_result", {})], "The log shows every request finished.")
        workspace = Workspace(db_path=db, provider=provider)
        session = workspace.new_thread("big-reader", title="Big result")
        run = session.send("Read the big log")
        terminal = await run.wait()
        assert terminal is not None and terminal.kind == "run_finished", terminal
        await workspace.aclose()
        from workspace.mcp import default_manager

        await default_manager().aclose()
        return session.thread_id

    t0 = time.perf_counter()
    thread_id = asyncio.run(main())
    elapsed = time.perf_counter() - t0
    if server is not None:
        server.stop()
    return {"thread_id": thread_id, "seconds": round(elapsed, 2), "peak_rss_mb": _peak_rss_mb()}


def phase_open(db: Path, thread_id: str) -> dict[str, Any]:
    from workspace.providers.testing import ScriptedProvider
    from workspace.session import Workspace

    t0 = time.perf_counter()
    workspace = Workspace(db_path=db, provider=ScriptedProvider())
    views = workspace.open_thread(thread_id).transcript()
    transcript_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    history = workspace.store.history_messages(thread_id)
    history_s = time.perf_counter() - t0
    size = sum(len(json.dumps(m.to_dict())) for m in history)
    workspace.close()
    return {"transcript_s": round(transcript_s, 2), "history_s": round(history_s, 2),
            "events": sum(len(v.events) for v in views), "history_chars": size, "peak_rss_mb": _peak_rss_mb()}


def phase_export(db: Path, thread_id: str) -> dict[str, Any]:
    from workspace.exports import export_events_jsonl, export_markdown, export_results_json
    from workspace.persistence import Store

    out: dict[str, Any] = {}
    with Store(db) as store:
        for name, fn in (("markdown", export_markdown), ("json", export_results_json), ("jsonl", export_events_jsonl)):
            t0 = time.perf_counter()
            text = fn(store, thread_id)
            out[f"{name}_s"] = round(time.perf_counter() - t0, 2)
            out[f"{name}_mb"] = round(len(text.encode("utf-8")) / 1e6, 1)
        t0 = time.perf_counter()
        hits = store.search("finished")
        out["search_s"] = round(time.perf_counter() - t0, 3)
        out["search_hits"] = len(hits)
    out["peak_rss_mb"] = _peak_rss_mb()
    return out


def phase_store(db: Path, size_mb: float) -> dict[str, Any]:
    from workspace import events as ev
    from workspace.messages import ToolMessage, ToolResultMessage
    from workspace.persistence import Store
    from workspace.result import RobotResult

    text = (("2024-05-01 12:00:00 INFO worker-7 processed request id=0123456789 in 12 ms status=ok\n")
            * (int(size_mb * 1024 * 1024) // 86 + 1))[: int(size_mb * 1024 * 1024)]
    raw = {"content": [{"type": "text", "text": text[:-1] + text[-1:]}], "isError": False}  # a copy, as MCP gives
    call = ToolMessage(id="c1", name="big__huge", input={"mb": size_mb})
    result = RobotResult(robot_name="big", output=[], tool_calls=[ToolResultMessage(tool=call, content={"data": text})],
                         stop_reason="stop")
    events: list[ev.Event] = [
        ev.ToolUse(run_id="r", robot="big", seq=1, id="c1", name="big__huge", input={"mb": size_mb}),
        ev.ToolResult(run_id="r", robot="big", seq=2, id="c1", name="big__huge", payload={"data": text}, raw=raw),
        ev.RunFinished(run_id="r", robot="big", seq=3, result=result),
    ]
    before = _peak_rss_mb()
    store = Store(db)
    thread = store.create_thread(robot="big")
    turn = store.add_turn(thread.id, user_text="go", parent_turn_id=None)
    t0 = time.perf_counter()
    for event in events:
        store.append_event(thread.id, turn.id, event)
    append_s = time.perf_counter() - t0
    after_append = _peak_rss_mb()
    t0 = time.perf_counter()
    back = store.turn_events(turn.id)
    read_s = time.perf_counter() - t0
    assert back[1].payload["data"] == text  # type: ignore[union-attr]
    store.close()
    files = list(db.parent.glob(db.name + "*"))
    return {"append_s": round(append_s, 3), "read_s": round(read_s, 3), "rss_before_mb": before,
            "rss_added_by_append_mb": round(after_append - before, 1), "peak_rss_mb": _peak_rss_mb(),
            "db_mb": round(sum(p.stat().st_size for p in files) / 1e6, 2)}


def _db_figures(db: Path) -> dict[str, Any]:
    import sqlite3

    files = list(db.parent.glob(db.name + "*"))
    size = sum(p.stat().st_size for p in files)
    conn = sqlite3.connect(db)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        largest = {}
        for table in ("events", "search_docs", "blobs"):
            if table in tables:
                largest[table] = conn.execute(f"SELECT COALESCE(SUM(LENGTH(data)), 0) FROM {table}").fetchone()[0] \
                    if table != "search_docs" else conn.execute("SELECT SUM(LENGTH(body)) FROM search_docs").fetchone()[0]
    finally:
        conn.close()
    return {"db_mb": round(size / 1e6, 2), "bytes_by_table": largest}


def _child(phase: str, db: str, arg: str, mode: str = "") -> None:
    os.environ["ROBOTLAB_HOME"] = str(Path(db).parent / "home")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price-map download (offline here)
    path = Path(db)
    if phase == "record":
        result = phase_record(path, float(arg), mode == "scripted")
    elif phase == "open":
        result = phase_open(path, arg)
    elif phase == "store":
        result = phase_store(path, float(arg))
    else:
        result = phase_export(path, arg)
    print("RESULT " + json.dumps(result))


def _run_child(phase: str, db: Path, arg: str, mode: str = "") -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, "--child", phase, str(db), arg, mode], capture_output=True,
                          text=True, check=False, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(CODE), str(ROOT)])})
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            data: dict[str, Any] = json.loads(line[len("RESULT "):])
            return data
    raise SystemExit(f"phase {phase} failed:\n{proc.stdout}\n{proc.stderr}")


def main() -> None:
    scripted = "--scripted" in sys.argv
    numbers = [a for a in sys.argv[1:] if not a.startswith("--")]
    size_mb = float(numbers[0]) if numbers else 10.0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        robots = folder / "home" / "config" / "robots"
        robots.mkdir(parents=True)
        (robots / "big-reader.md").write_text(ROBOT if scripted else MCP_ROBOT, encoding="utf-8")
        db = folder / "threads.db"
        record = _run_child("record", db, str(size_mb), "scripted" if scripted else "mcp")
        record.update(_db_figures(db))
        opened = _run_child("open", db, record["thread_id"])
        exported = _run_child("export", db, record["thread_id"])
        store = _run_child("store", folder / "store.db", str(size_mb))
    result = {"size_mb": size_mb, "mode": "scripted" if scripted else "mcp+litellm", "record": record, "open": opened, "export": exported,
              "store": store,
              "python": sys.version.split()[0]}
    how = "local tool, ScriptedProvider" if scripted else "MCP tool, litellm on the loopback server"
    print(f"a {size_mb:g} MB tool result in a recorded thread ({how}; each phase in its own process):")
    print(f"  record:  {record['seconds']:6.2f} s   peak RSS {record['peak_rss_mb']:6.1f} MB   database "
          f"{record['db_mb']:.2f} MB   bytes by table {record['bytes_by_table']}")
    print(f"  open:    transcript {opened['transcript_s']:.2f} s, history {opened['history_s']:.2f} s   "
          f"peak RSS {opened['peak_rss_mb']:6.1f} MB")
    print(f"  export:  markdown {exported['markdown_s']:.2f} s ({exported['markdown_mb']} MB), json "
          f"{exported['json_s']:.2f} s ({exported['json_mb']} MB), jsonl {exported['jsonl_s']:.2f} s "
          f"({exported['jsonl_mb']} MB), search {exported['search_s'] * 1000:.0f} ms ({exported['search_hits']} "
          f"hits)   peak RSS {exported['peak_rss_mb']:6.1f} MB")
    print(f"  store's share: append tool_result + run_finished {store['append_s']:.2f} s, adding "
          f"{store['rss_added_by_append_mb']:.1f} MB to the peak RSS; database {store['db_mb']:.2f} MB; reading the "
          f"turn back {store['read_s']:.2f} s")
    if CODE != ROOT:
        print(f"  (the code of {CODE})")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"large_payload{'_scripted' if scripted else ''}.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(*sys.argv[2:6])
    else:
        main()
