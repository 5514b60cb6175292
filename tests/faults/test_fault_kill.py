"""Killed processes: kill -9 in the middle of a recorded run loses at most the streamed text of the
last flush window (250 ms, documented in workspace.persistence) and nothing else, and the turn is
marked interrupted at the next open; Ctrl-C in the terminal that started the window closes it
cleanly (exit 130, the database closed, nothing lost)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from faultkit import ROOT

from workspace import events as ev
from workspace.persistence import Store

pytestmark = pytest.mark.timeout(90)

#: The flush window of held text deltas (Store's flush_interval) and some slack for the kill itself.
WINDOW = 0.25 + 0.15

RECORDER = textwrap.dedent("""
    import asyncio, json, sys
    from workspace.providers.testing import Pause, ScriptedProvider, ToolCall
    from workspace.session import Workspace

    words = [[f"word{i} ", Pause(0.004)] for i in range(2000)]
    turn = [part for pair in words[:300] for part in pair] + [ToolCall("remember", {"key": "k", "value": 1})]
    rest = [part for pair in words[300:] for part in pair]
    provider = ScriptedProvider([turn, rest])

    async def main():
        workspace = Workspace(provider=provider, db_path=sys.argv[1])
        session = workspace.new_thread("helper")
        run = session.send("tell me a long story")
        print(json.dumps({"turn": run.turn_id}), flush=True)
        async for event in run:  # yielded after the recording task appended it
            text = getattr(event, "text", None) if event.kind == "text_delta" else None
            print(json.dumps({"kind": event.kind, "seq": event.seq, "ts": event.ts, "text": text}), flush=True)

    asyncio.run(main())
""")

ROBOT = "---\nname: helper\ntools: [remember]\n---\nYou help.\n"


_rng = random.Random(9)
#: When to kill: after this many streamed words (the tool call comes after word 300): before it, right
#: after it, and at random moments after it.
MOMENTS = sorted({_rng.randint(1, 290), 301, 400, _rng.randint(302, 1200), _rng.randint(302, 1200)})


@pytest.mark.parametrize("moment", MOMENTS, ids=[f"after {m} words" for m in MOMENTS])
def test_kill_9_while_recording_loses_at_most_the_flush_window(tmp_path: Path, matrix: Any, moment: int) -> None:
    matrix.case("kill -9 during recording", f"a recorded run streaming, killed after {moment} words"
                + (" (past a tool call)" if moment > 300 else ""))
    from workspace import paths

    paths.user_robots_dir().mkdir(parents=True, exist_ok=True)
    (paths.user_robots_dir() / "helper.md").write_text(ROBOT, encoding="utf-8")
    db = tmp_path / "threads.db"
    script = tmp_path / "recorder.py"
    script.write_text(RECORDER, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, str(script), str(db)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    seen: list[dict[str, Any]] = []
    turn_id = json.loads(proc.stdout.readline())["turn"]
    try:
        for line in proc.stdout:
            seen.append(json.loads(line))
            if sum(1 for e in seen if e["kind"] == "text_delta") >= moment:
                break
        killed_at = time.time()
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert any(e["kind"] == "tool_result" for e in seen) is (moment > 300)
    with Store(db) as store:
        assert store.get_turn(turn_id).status == "interrupted"
        stored = store.turn_events(turn_id)
    stored_kinds = [e.kind for e in stored if not isinstance(e, ev.TextDelta)]
    seen_kinds = [e["kind"] for e in seen if e["kind"] != "text_delta"]
    lost_events = len(seen_kinds) - len(stored_kinds)
    assert stored_kinds == seen_kinds[: len(stored_kinds)]
    stored_text = "".join(e.text for e in stored if isinstance(e, ev.TextDelta))
    seen_text = "".join(e["text"] for e in seen if e["kind"] == "text_delta")
    assert seen_text.startswith(stored_text)  # what is stored is what was shown, in order
    lost = [e for e in seen if e["kind"] == "text_delta"][len(stored_text.split()):]
    beyond_window = [e for e in lost if e["ts"] < killed_at - WINDOW]
    matrix.lost(lost_events + len(beyond_window), f"events or deltas beyond the {WINDOW:.2f} s window "
                f"({len(lost)} deltas within it)")
    assert lost_events == 0 and beyond_window == []


def test_ctrl_c_in_the_terminal_closes_the_window_cleanly(tmp_path: Path, matrix: Any) -> None:
    matrix.case("signals", "Ctrl-C (SIGINT) to the window's terminal")
    pytest.importorskip("PySide6")
    from workspace import paths

    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "ui.main", "--quit-after", "60"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    db = paths.database_path()
    try:
        deadline = time.monotonic() + 45
        while not db.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert db.exists(), "the window did not open its database"
        time.sleep(0.5)
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert time.monotonic() - started < 30  # not the --quit-after 60
    assert "Closing the window" in err and "Traceback" not in err
    wal = db.with_name(db.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # closed: the last connection checkpointed
    with Store(db) as store:
        store.list_threads()
    matrix.lost(0, "")
