"""Network threads: a Workspace thread whose messages run a network of robots, recorded per task."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from workspace import events as ev
from workspace.errors import ConfigurationError
from workspace.messages import Message
from workspace.network import list_networks
from workspace.providers.testing import AgentInfo, FunctionProvider, ToolCall
from workspace.session import Workspace

# Two writers at once, then a reader that waits for both keys in the shared memory.
WRITERS = """\
name: writers
description: two writers at once, then a reader
mcp: none
robots:
  left_bot: {system_prompt: "You are LEFT.", tools: [remember]}
  right_bot: {system_prompt: "You are RIGHT.", tools: [remember]}
  reader_bot: {system_prompt: "You are READER.", tools: none}
tasks:
  left: {robot: left_bot}
  right: {robot: right_bot}
  reader:
    robot: reader_bot
    depends_on: [left, right]
    wait_for: [left_key, right_key]
"""


def triage_reply(messages: list[Message], info: AgentInfo) -> Any:
    """The classifier says "billing" for anything about money; every specialist echoes."""
    system = info.system or ""
    text = str(messages[-1].content)
    if "triage desk" in system:
        return "billing" if "charge" in text or "refund" in text else "general"
    who = "billing" if "billing specialist" in system else "general"
    return f"{who} answer to: {text}"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "workspace.db"


@pytest.fixture
def triage() -> FunctionProvider:
    return FunctionProvider(triage_reply)


@pytest.fixture
def writers_file(robotlab_home: Path) -> Path:
    path = robotlab_home / "config" / "networks" / "writers.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(WRITERS, encoding="utf-8")
    return path


def _statuses(events: list[ev.Event]) -> dict[str, str]:
    return {e.task: e.status for e in events if isinstance(e, ev.TaskFinished) and e.task}


async def test_networks_are_listed_like_the_cli(db: Path, writers_file: Path) -> None:
    ws = Workspace(db_path=db)
    try:
        names = [n.name for n in ws.networks()]
        assert names == [n.name for n in list_networks(None)]
        assert {"support-triage", "parallel-analysis", "writers"} <= set(names)
        with pytest.raises(ConfigurationError, match="Available networks"):
            ws.new_network_thread("no-such-network")
    finally:
        await ws.aclose()


async def test_a_network_thread_records_every_event_with_its_task(db: Path, triage: FunctionProvider) -> None:
    ws = Workspace(db_path=db, provider=triage)
    session = ws.new_thread("support-triage", kind="network")
    assert session.kind == "network" and session.thread.kind == "network"
    assert session.network.name == "support-triage"
    with pytest.raises(RuntimeError, match="network"):
        _ = session.robot
    run = session.send("I was charged twice")
    seen = [e async for e in run]
    await run.wait()
    assert run.status == "finished" and run.is_network
    assert isinstance(seen[-1], ev.RunFinished)
    assert set(run.tasks) == {"classifier", "billing", "technical", "general"}
    assert _statuses(seen) == {"classifier": "done", "billing": "done", "technical": "skipped",
                               "general": "skipped"}
    stored = ws.store.turn_events(run.turn_id)
    assert [(e.kind, e.task, e.seq) for e in stored if e.kind != "text_delta"] == \
        [(e.kind, e.task, e.seq) for e in seen if e.kind != "text_delta"]
    # every event of a task's robot carries the task
    assert all(e.task for e in stored if e.kind in ("text", "usage", "task_started", "task_finished"))
    assert session.thread.title == "I was charged twice"
    turn = ws.store.get_turn(run.turn_id)
    assert turn.status == "finished" and turn.run_id == run.run_id
    await ws.aclose()

    # reopened in a new workspace: the transcript has the tasks' events, in order
    again = Workspace(db_path=db, provider=triage)
    try:
        reopened = again.open_thread(session.thread_id)
        assert reopened.is_network and reopened.network.name == "support-triage"
        views = reopened.transcript()
        assert len(views) == 1 and views[0].status == "finished"
        events = views[0].events
        assert _statuses(events) == _statuses(seen)
        texts = [(e.task, e.text) for e in events if isinstance(e, ev.Text)]
        assert texts == [("classifier", "billing"), ("billing", "billing answer to: I was charged twice")]
        assert [e.task for e in events if isinstance(e, ev.TaskStarted)] == ["classifier", "billing"]
    finally:
        await again.aclose()


async def test_each_robot_continues_its_own_conversation(db: Path, triage: FunctionProvider) -> None:
    ws = Workspace(db_path=db, provider=triage)
    session = ws.new_network_thread("support-triage")
    await session.send("I was charged twice").wait()
    await ws.aclose()

    # after a restart: the histories are rebuilt from the store
    ws = Workspace(db_path=db, provider=triage)
    try:
        session = ws.open_thread(session.thread_id)
        histories = session.network_histories(session.thread.current_turn_id)
        assert set(histories) == {"classifier", "billing"}
        assert [(m.role, m.content) for m in histories["billing"]] == [
            ("user", "I was charged twice"), ("assistant", "billing answer to: I was charged twice")]
        before = len(triage.history)
        run = session.send("and I want a refund")
        await run.wait()
        calls = triage.history[before:]
        billing = next(c for c in calls if "billing specialist" in (c.system or ""))
        assert [(m.role, str(m.content)) for m in billing.messages] == [
            ("user", "I was charged twice"), ("assistant", "billing answer to: I was charged twice"),
            ("user", "and I want a refund")]
        classifier = next(c for c in calls if "triage desk" in (c.system or ""))
        assert [str(m.content) for m in classifier.messages] == ["I was charged twice", "billing",
                                                                 "and I want a refund"]
        assert len(session.transcript()) == 2
    finally:
        await ws.aclose()


async def test_edit_and_regenerate_start_a_new_network_run_from_the_parent(db: Path,
                                                                           triage: FunctionProvider) -> None:
    ws = Workspace(db_path=db, provider=triage)
    try:
        session = ws.new_network_thread("support-triage")
        first = session.send("hello there")
        await first.wait()
        assert _statuses(first.events)["general"] == "done"
        edited = session.edit_and_resend(first.turn_id, "refund please")
        await edited.wait()
        assert ws.store.get_turn(edited.turn_id).parent_turn_id is None
        assert _statuses(edited.events)["billing"] == "done"
        # the edit is a sibling: the general robot's first answer is not in the billing branch
        views = session.transcript()
        assert len(views) == 1 and views[0].sibling_count == 2 and views[0].user_text == "refund please"
        again = session.regenerate(edited.turn_id)
        await again.wait()
        assert session.transcript()[0].sibling_count == 3
        assert session.network_histories(again.turn_id)["billing"][0].content == "refund please"
    finally:
        await ws.aclose()


async def test_memory_starts_fresh_for_every_run_and_writers_are_recorded(db: Path, writers_file: Path) -> None:
    def reply(messages: list[Message], info: AgentInfo) -> Any:
        system = info.system or ""
        last = messages[-1]
        if last.is_tool_result:
            return "stored"
        if "LEFT" in system:
            return ToolCall("remember", {"key": "left_key", "value": "L"})
        if "RIGHT" in system:
            return ToolCall("remember", {"key": "right_key", "value": "R"})
        return "read both"

    ws = Workspace(db_path=db, provider=FunctionProvider(reply))
    try:
        session = ws.new_network_thread("writers")
        for _ in range(2):
            run = session.send("go")
            await run.wait()
            assert run.status == "finished"
            changes = [e for e in run.events if isinstance(e, ev.MemoryChanged)]
            assert {(c.key, c.writer, c.task) for c in changes} == {("left_key", "left_bot", "left"),
                                                                    ("right_key", "right_bot", "right")}
            assert all(c.previous is None for c in changes)  # a fresh memory every run
        stored = [e for e in ws.store.turn_events(run.turn_id) if isinstance(e, ev.MemoryChanged)]
        assert {(c.key, c.writer) for c in stored} == {("left_key", "left_bot"), ("right_key", "right_bot")}
    finally:
        await ws.aclose()


async def test_stop_mid_run_cancels_every_running_task(db: Path, writers_file: Path) -> None:
    started = asyncio.Event()
    calls: list[str] = []

    async def reply(messages: list[Message], info: AgentInfo) -> Any:
        calls.append(info.system or "")
        if len(calls) >= 2:
            started.set()
        await asyncio.Event().wait()  # never answers
        return "unreachable"

    ws = Workspace(db_path=db, provider=FunctionProvider(reply))
    try:
        session = ws.new_network_thread("writers")
        run = session.send("go")
        await asyncio.wait_for(started.wait(), 5)
        network_run = session.network_run
        assert network_run is not None
        assert {n: s.status for n, s in network_run.tasks.items()} == {
            "left": "running", "right": "running", "reader": "waiting"}
        session.stop()
        terminal = await asyncio.wait_for(run.wait(), 5)
        assert isinstance(terminal, ev.RunCancelled)
        assert _statuses(run.events) == {"left": "cancelled", "right": "cancelled", "reader": "cancelled"}
        assert not session.running
        stored = ws.store.turn_events(run.turn_id)
        assert isinstance(stored[-1], ev.RunCancelled)
        assert _statuses(stored) == _statuses(run.events)
        assert ws.store.get_turn(run.turn_id).status == "cancelled"
    finally:
        await ws.aclose()


async def test_a_broken_network_file_is_reported_before_anything_runs(db: Path, writers_file: Path) -> None:
    ws = Workspace(db_path=db, provider=FunctionProvider(lambda m, i: "ok"))
    try:
        session = ws.new_network_thread("writers")
        writers_file.write_text(WRITERS.replace("depends_on: [left, right]", "depends_on: [left, nobody]"),
                                encoding="utf-8")
        with pytest.raises(ConfigurationError, match="nobody"):
            session.send("go")
        assert session.transcript() == [] and not session.running
    finally:
        await ws.aclose()
