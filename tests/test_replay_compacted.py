"""Replays of threads that are not plain: a compacted thread replays from the compaction's summary as the
original run saw it; a network's thread is refused saying why and what to do; a replay cancelled mid-turn,
after a recorded call was served, leaves no half-written thread and says it was cancelled. Against the
loopback model server, with a real SQLite store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from fakes.llm_server import FakeLLMServer, Reply
from fakes.replay_record import MESSAGES, RECORD, Tools, allow_all, record, robot

from tests.fakes.app_window import wait_until
from workspace import events as ev
from workspace.context.compaction import SUMMARY_INSTRUCTIONS
from workspace.persistence import Store
from workspace.replay import ReplayError, replay
from workspace.session import Workspace

pytestmark = pytest.mark.timeout(120)

SUMMARY = "SUMMARY-7Q: the user asked about tea and coffee; both were answered."
SUMMARY_START = SUMMARY_INSTRUCTIONS.split(".")[0]


async def test_a_compacted_thread_replays_from_the_summary_the_original_saw(tmp_path: Path) -> None:
    tools = Tools(tmp_path / "marker.txt")
    store = Store(tmp_path / "threads.db")
    with FakeLLMServer() as server:
        server.enqueue("Tea is a drink.", "Coffee is a drink too.", SUMMARY, "Water is the third.")
        workspace = Workspace(store=store, approval=allow_all(), config=None)
        session = workspace.new_thread("helper", robot=robot(server, tools))
        for text in ("What is tea?", "And coffee?"):
            assert isinstance(await session.send(text).wait(), ev.RunFinished)
        compacted = await session.compact()
        assert compacted is not None and compacted.summary == SUMMARY
        assert isinstance(await session.send("And water?").wait(), ev.RunFinished)
        original = list(server.requests)
    assert SUMMARY in json.dumps(original[-1]["messages"])  # the original's third turn saw the summary ...
    assert "What is tea?" not in json.dumps(original[-1]["messages"])  # ... in place of the first turns

    with FakeLLMServer() as server:
        server.enqueue("Tea is a drink.", "Coffee is a drink too.", "Water is the third.")
        result = await replay(store, session.thread_id, robot(server, Tools(tmp_path / "m2.txt")), tolerance="exact")
        replayed = list(server.requests)
    assert not result.diverged
    assert len(replayed) == 3  # one call a turn: the model was not asked to summarise again
    assert not any(SUMMARY_START in json.dumps(r["messages"]) for r in replayed)
    assert replayed[-1]["messages"] == original[-1]["messages"]  # the third turn sent as the original sent it
    assert "What is tea?" in json.dumps(replayed[1]["messages"])  # before the compaction: the whole conversation
    workspace.close()


async def test_a_networks_thread_is_refused_saying_why_and_what_to_do(tmp_path: Path) -> None:
    store = Store(tmp_path / "threads.db")
    thread = store.create_thread(robot="research-team", kind="network")
    store.add_turn(thread.id, user_text="Find three papers", parent_turn_id=None)
    with FakeLLMServer() as server:
        with pytest.raises(ReplayError) as raised:
            await replay(store, thread.id, robot(server, Tools(tmp_path / "m.txt")))
        assert server.requests == []
    message = str(raised.value)
    assert "network's thread" in message and "routing" in message  # why
    assert "Replay the thread of one robot of the network" in message  # what to do
    assert [t.id for t in store.list_threads()] == [thread.id]  # nothing was created


async def test_a_replay_cancelled_mid_turn_leaves_no_half_written_thread(tmp_path: Path) -> None:
    tools = Tools(tmp_path / "marker.txt")
    store, thread_id = await record(tmp_path, tools)
    with FakeLLMServer() as server:
        # Turn 1: the model calls lookup (served from the record), then its next request hangs: stopped there.
        server.enqueue(RECORD[0], Reply.say("never sent", stall_before=60))
        task = asyncio.get_running_loop().create_task(replay(store, thread_id, robot(server, tools)))
        await wait_until(lambda: len(server.requests) == 2, what="the request after the served call")
        assert "tea is number 1" in json.dumps(server.requests[1]["messages"])  # the recorded result was served
        replay_ids = [t.id for t in store.list_threads() if t.id != thread_id]
        assert len(replay_ids) == 1 and store.path(replay_ids[0])  # the replay's thread, half-written so far
        task.cancel()
        with pytest.raises(asyncio.CancelledError) as raised:
            await task
    assert "cancelled at turn 1 of 2" in str(raised.value) and "removed" in str(raised.value)
    assert [t.id for t in store.list_threads(include_deleted=True)] == [thread_id]  # nothing of the replay kept
    assert store.search("never sent") == [] and tools.ran == []
    assert [t.user_text for t in store.path(thread_id)] == MESSAGES  # the original untouched
