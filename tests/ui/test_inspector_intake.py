"""A long thread's events reach the inspector without the window's thread going through them.

A thread of 400 turns (each a tool call with its result, every fifth a memory write; every run numbers its call
``call_0``, as local servers do) opened in the window: the inspector's worker reads the events and matches the calls
with their results there, so the window's thread matches none of them (it matched them all in one step when the
read ended: over a second for 10,000 turns), and every call shows with its own result. A read still going when the
thread is left and opened again is not shown: only the latest read fills the inspector.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.app_window import running_app, wait_until
from tests.fakes.long_threads import FILE_CONTENT, TOOL_TURN_EVENTS, add_tool_thread
from ui.inspector import tool_calls
from ui.transcript import LazyTranscript
from workspace import events as ev
from workspace.persistence import Store

TURNS = 400


@pytest.fixture(scope="module")
def tool_thread(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp("tools") / "tools.db"
    store = Store(path)
    try:
        return path, add_tool_thread(store, TURNS, title="tools", same_call_id=True, memory_every=5)
    finally:
        store.close()


def _copy(tool_thread: tuple[Path, str], tmp_path: Path) -> Path:
    import shutil

    db = tmp_path / "tools.db"
    shutil.copy(tool_thread[0], db)
    return db


async def test_the_window_thread_matches_none_of_a_long_threads_calls(
        tool_thread: tuple[Path, str], tmp_path: Path, provider: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _path, thread_id = tool_thread
    main = threading.get_ident()
    on_main: list[int] = []  # the results matched on the window's thread
    matched = tool_calls.result_error

    def counting(payload: Any, raw: Any = None) -> Any:
        if threading.get_ident() == main:
            on_main.append(1)
        return matched(payload, raw)

    monkeypatch.setattr(tool_calls, "result_error", counting)
    async with running_app(provider=provider, db_path=_copy(tool_thread, tmp_path), theme_name="light",
                           size=(1200, 800)) as root:
        w = root.window
        w.threads.open(thread_id)
        model = w.tool_model
        await wait_until(lambda: model.rowCount() == TURNS, what="every call in the Tool calls pane")
        # Every call with its own result, though each run's call is "call_0".
        records = model.records
        assert [(r.run_id, r.input, r.payload, r.status) for r in records] == [
            (f"r{i}", {"path": f"file_{i}.py"}, {"data": {"content": FILE_CONTENT}}, "ok") for i in range(TURNS)]
        assert model.find("call_0", "r7") is records[7] and model.find("call_0") is records[-1]
        memory = {e.key: (e.value, len(e.history)) for e in w.memory_model.entries}
        assert memory == {"k0": (390, 27), "k1": (385, 26), "k2": (395, 27)}
        assert w.trace_model.rowCount() == TURNS * TOOL_TURN_EVENTS + TURNS // 5  # every event, memory writes too
        assert "tool_result" in w.trace_model.kinds()
        assert on_main == [], f"{len(on_main)} of the thread's results matched on the window's thread"
        # Live events go on from the stored ones: a later result of a stored call changes its row.
        w.docks.add_events([ev.ToolResult(run_id="r3", robot="assistant", seq=9, id="call_0", name="read_file",
                                          payload={"error": "gone"}, duration=1.0)])
        assert model.rowCount() == TURNS and records[3].status == "error" and model.failed_count == 1


async def test_a_read_for_the_thread_left_and_opened_again_is_not_shown(
        tool_thread: tuple[Path, str], tmp_path: Path, provider: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _path, thread_id = tool_thread
    release = threading.Event()
    calls: list[str] = []
    read = LazyTranscript.events_while

    def held(self: LazyTranscript, wanted: Callable[[], bool]) -> list[ev.Event] | None:
        first = not calls
        calls.append("started")
        if first:  # the first read waits until the thread was left and opened again
            release.wait(30)
        try:
            return read(self, wanted)
        finally:
            calls.append("ended")

    monkeypatch.setattr(LazyTranscript, "events_while", held)
    async with running_app(provider=provider, db_path=_copy(tool_thread, tmp_path), theme_name="light",
                           size=(1200, 800)) as root:
        w = root.window
        model = w.tool_model
        fills: list[int] = []
        model.modelReset.connect(lambda: fills.append(model.rowCount()))
        w.threads.open(thread_id)
        await wait_until(lambda: calls == ["started"], what="the first read started")
        w.threads.new()
        w.threads.open(thread_id)
        await wait_until(lambda: calls.count("started") == 2, what="the second read started")
        release.set()
        await wait_until(lambda: calls.count("ended") == 2, what="both reads ended")
        await wait_until(lambda: model.rowCount() == TURNS, what="the calls shown")
        for _ in range(20):  # what the first read's task does after its worker returned
            await asyncio.sleep(0.01)
        assert [n for n in fills if n] == [TURNS], "the thread's calls were put in the inspector more than once"


def test_matching_a_long_threads_calls_stops_between_parts_for_the_window() -> None:
    """The worker matching the calls calls ``between`` before each part of them (where it waits while the window
    holds it back), and the calls are the same as matched in one go."""
    events: list[ev.Event] = []
    for i in range(tool_calls.LEDGER_PART):  # two events a call: two parts
        run = f"r{i}"
        events += [ev.ToolUse(run_id=run, robot="assistant", seq=1, id="call_0", name="read_file", input={"n": i}),
                   ev.ToolResult(run_id=run, robot="assistant", seq=2, id="call_0", name="read_file",
                                 payload={"data": i}, duration=0.1)]
    seen: list[int] = []
    ledger = tool_calls.CallLedger.of(events, between=lambda: seen.append(len(seen)))
    assert seen == [0, 1]
    whole = tool_calls.CallLedger.of(events)
    assert [(r.run_id, r.id, r.status) for r in ledger.rows] == [(r.run_id, r.id, r.status) for r in whole.rows]
    assert len(ledger.rows) == tool_calls.LEDGER_PART and all(r.status == "ok" for r in ledger.rows)
