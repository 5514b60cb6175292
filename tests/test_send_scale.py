"""A send costs the same at turn 10 as at turn 300: what it asks of the database and of the conversation
does not grow with the thread (the figures are in bench/bench_send_scale.py; these guard the mechanism)."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import threading
from pathlib import Path
from typing import Any

from tests.fakes.counted_reads import CountedReads
from workspace import events as ev
from workspace.attachments import has_images
from workspace.context.tokens import TokenCounter
from workspace.messages import (
    STOPPED_BEFORE_ANSWERING,
    AlternatingView,
    GrowingFold,
    TextMessage,
    alternating,
    shared_prefix,
)
from workspace.persistence import Store
from workspace.providers.testing import ScriptedProvider
from workspace.result import RobotResult
from workspace.session import Workspace


def build_thread(db: Path, turns: int) -> str:
    store = Store(db)
    thread = store.create_thread(robot="assistant", title=f"{turns} turns")
    parent = None
    for i in range(turns):
        turn = store.add_turn(thread.id, user_text=f"Question {i}", parent_turn_id=parent)
        answer = f"Answer {i}"
        result = RobotResult(robot_name="assistant", output=[TextMessage(role="assistant", content=answer)])
        store.append_events(thread.id, turn.id, [
            ev.RunStarted(run_id=f"r{i}", robot="assistant", seq=1, message=f"Question {i}", model="m"),
            ev.Text(run_id=f"r{i}", robot="assistant", seq=2, text=answer),
            ev.RunFinished(run_id=f"r{i}", robot="assistant", seq=3, result=result),
        ])
        store.finish_turn(turn.id, "finished")
        parent = turn.id
    store.close()
    return thread.id


async def send_cost(db: Path, turns: int) -> tuple[int, list[str]]:
    """The SQLite virtual machine's steps (in hundreds) and the statements of one ``send()`` call on the
    caller's thread, in a thread of ``turns`` turns opened as the window opens it."""
    thread_id = build_thread(db, turns)
    workspace = Workspace(db_path=db, provider=ScriptedProvider(default="Fine."))
    try:
        session = workspace.open_thread(thread_id)
        await session.load_conversation()
        first = session.send("warm up")  # builds the robot (its template), not what a send costs
        await first.wait()
        while not first.done:
            await asyncio.sleep(0.005)
        conn: sqlite3.Connection = workspace.store._conn
        caller = threading.get_ident()
        steps = 0
        statements: list[str] = []

        def step() -> int:
            nonlocal steps
            if threading.get_ident() == caller:
                steps += 1
            return 0

        def traced(sql: str) -> None:
            if threading.get_ident() == caller:
                statements.append(sql)

        conn.set_progress_handler(step, 100)
        conn.set_trace_callback(traced)
        try:
            run = session.send("the message")
        finally:
            conn.set_progress_handler(None, 0)
            conn.set_trace_callback(None)
        await run.wait()
        while not run.done:
            await asyncio.sleep(0.005)
        return steps, statements
    finally:
        await workspace.aclose()


async def test_a_send_reads_no_more_of_a_long_thread_than_of_a_short_one(tmp_path: Path) -> None:
    short_steps, short_sql = await send_cost(tmp_path / "short.db", 10)
    long_steps, long_sql = await send_cost(tmp_path / "long.db", 300)
    # The same statements, and no read that walks the thread: not its turns' path, events or a count of its turns.
    assert len(long_sql) == len(short_sql), (short_sql, long_sql)
    for sql in long_sql:
        assert "RECURSIVE" not in sql.upper() and "COUNT(" not in sql.upper(), sql
        assert "FROM events WHERE thread_id" not in sql, sql
    # 300 turns is 30 x the work of 10 for anything that walks them (a COUNT(*) of the turns alone made the
    # long thread's send cost ~3 x the short one's): the database's work must not grow with the thread.
    assert long_steps <= short_steps * 1.3 + 5, (short_steps, long_steps)


async def test_the_kept_conversation_is_left_out_of_the_garbage_collectors_walks(tmp_path: Path) -> None:
    # A collection of the oldest generation walks every object it tracks; the conversation a thread keeps
    # (two messages a turn, as long as the thread is open) is frozen out of those walks once read, so a
    # collection during a send costs what the send allocated, not what the thread holds.
    thread_id = build_thread(tmp_path / "kept.db", 300)
    workspace = Workspace(db_path=tmp_path / "kept.db", provider=ScriptedProvider(default="Fine."))
    try:
        session = workspace.open_thread(thread_id)
        await session.load_conversation()
        conversation = session._conversation
        assert conversation is not None and len(conversation.messages) == 600
        walked = {id(obj) for obj in gc.get_objects()}
        assert not [m for m in conversation.messages if id(m) in walked]
        # The same messages read again without that step are walked (what the check above tells apart).
        read_again = workspace.store.history_messages(thread_id, conversation.leaf)
        walked = {id(obj) for obj in gc.get_objects()}
        assert len([m for m in read_again if id(m) in walked]) == 600
        run = session.send("one more")
        await run.wait()
        while not run.done:
            await asyncio.sleep(0.005)
        for _ in range(200):  # the turn is read into the kept conversation in a worker thread
            if session._conversation is not None and len(session._conversation.messages) == 602:
                break
            await asyncio.sleep(0.01)
        kept = session._conversation
        assert kept is not None and len(kept.messages) == 602
        walked = {id(obj) for obj in gc.get_objects()}
        assert not [m for m in kept.messages[:600] if id(m) in walked]
    finally:
        await workspace.aclose()


async def test_a_frozen_conversation_is_freed_when_its_thread_lets_it_go(tmp_path: Path) -> None:
    # Freezing keeps objects out of the collector's walks, not alive: a conversation let go (the thread
    # closed, or read again) is freed by its reference counts, so opening threads all day does not pile
    # frozen objects up. Ten reads of a 300-turn conversation (600 messages each) leave the frozen set
    # where one read left it.
    thread_id = build_thread(tmp_path / "freed.db", 300)
    workspace = Workspace(db_path=tmp_path / "freed.db", provider=ScriptedProvider(default="Fine."))
    try:
        counts = []
        for _ in range(10):
            session = workspace.open_thread(thread_id)
            await session.load_conversation()
            assert session._conversation is not None
            session._conversation = None  # let it go (as closing the thread does)
            gc.collect()
            counts.append(gc.get_freeze_count())
        assert max(counts) - counts[0] < 600, counts  # not one more conversation's worth
    finally:
        await workspace.aclose()


def test_shared_prefix_finds_where_two_conversations_part() -> None:
    messages: list[Any] = [object() for _ in range(50)]
    assert shared_prefix(messages, messages) == 50
    assert shared_prefix(messages[:20], messages) == 20
    assert shared_prefix(messages, messages[:20]) == 20
    replaced = [*messages[:37], object(), object()]  # the last turn read back from the store: new objects
    assert shared_prefix(messages, replaced) == 37
    assert shared_prefix([object()], messages) == 0
    assert shared_prefix([], messages) == 0


def test_growing_fold_folds_only_the_new_messages_and_stays_right() -> None:
    folded: list[int] = []

    def add(total: int, value: Any) -> int:
        folded.append(value.n)
        return total + value.n

    class Item:
        def __init__(self, n: int) -> None:
            self.n = n

    total = GrowingFold(0, add)
    items = [Item(n) for n in range(100)]
    assert total(items) == sum(range(100))
    folded.clear()
    longer = [*items, Item(100), Item(101)]
    assert total(longer) == sum(range(102))
    assert folded == [100, 101]  # not the hundred before them
    folded.clear()
    branch = [*items[:60], Item(1000)]  # another branch: its own last messages
    assert total(branch) == sum(range(60)) + 1000
    assert folded == [1000]
    assert total(longer) == sum(range(102))  # the earlier conversation is still known
    assert total([]) == 0


def test_alternating_view_matches_alternating_as_the_conversation_grows_and_forks() -> None:
    view = AlternatingView()
    conversation: list[Any] = [TextMessage(role="user", content="one"), TextMessage(role="assistant", content="One.")]
    for i in range(20):
        conversation.append(TextMessage(role="user", content=f"q{i}"))
        if i % 3:
            conversation.append(TextMessage(role="assistant", content=f"a{i}"))  # else: stopped before answering
        assert [m.to_dict() for m in view(conversation)] == [m.to_dict() for m in alternating(conversation)]
    forked = [*conversation[:5], TextMessage(role="user", content="other"), TextMessage(role="user", content="again")]
    got = view(forked)
    assert [m.to_dict() for m in got] == [m.to_dict() for m in alternating(forked)]
    assert got[-2].content == STOPPED_BEFORE_ANSWERING


def test_counts_and_image_checks_of_a_grown_conversation_equal_a_fresh_count() -> None:
    counter = TokenCounter()
    conversation: list[Any] = []
    for i in range(30):
        conversation += [TextMessage(role="user", content=f"question {i} " * i), TextMessage(role="assistant", content="ok " * i)]
        assert counter.messages(conversation) == TokenCounter().messages(iter(conversation))
    assert not has_images(conversation)
    with_image = [*conversation, TextMessage(role="user", content=[{"type": "image_url", "image_url": {"url": "data:x"}}])]
    assert has_images(with_image)
    assert not has_images(conversation)  # the shorter conversation again: no image in it


async def _ended(session: Any, run: Any) -> None:
    """The run done and its turn read into the kept conversation (in a worker thread)."""
    await run.wait()
    while not run.done:
        await asyncio.sleep(0.005)
    extending = session._extending
    if extending is not None:
        await asyncio.wrap_future(extending)


async def test_a_send_hands_its_run_the_kept_conversation_not_a_copy_of_it(tmp_path: Path) -> None:
    # A send at 4,000 messages: the run's history is the conversation the thread keeps, not a copy made on the
    # window's thread at every send (20,000 messages at turn 10,000), and the messages of the conversation read
    # on the way to the model (the context's view, the token count, the record of the request) are the new ones
    # and a binary search's few. The turn then takes the place of the run's messages in the same list.
    thread_id = build_thread(tmp_path / "reads.db", 2_000)
    provider = ScriptedProvider(default="Fine.")
    workspace = Workspace(db_path=tmp_path / "reads.db", provider=provider)
    try:
        session = workspace.open_thread(thread_id)
        await session.load_conversation()
        await _ended(session, session.send("warm up"))  # builds the robot, its context manager's kept lists
        kept = session._conversation
        assert kept is not None and len(kept.messages) == 4_002
        counted = CountedReads(kept.messages)
        kept.messages = counted
        CountedReads.reads = 0
        run = session.send("the message")
        await _ended(session, run)
        assert CountedReads.reads < 100, CountedReads.reads  # 4,000 and more when the send copied the conversation
        sent = provider.history[-1].messages
        assert [m.to_dict() for m in sent] == [m.to_dict() for m in counted[:4_002]] + [
            TextMessage(role="user", content="the message").to_dict()]
        # The turn as the store keeps it in the run's messages' place, in the same list.
        assert session._conversation is not None and session._conversation.messages is counted
        stored = workspace.store.history_messages(thread_id, run.turn_id)
        assert [m.to_dict() for m in counted] == [m.to_dict() for m in stored]
        # A history changed in place by whoever holds it (the robot's, cleared) is not the conversation sent:
        # the next send reads the thread again.
        session.robot.history.clear()
        await _ended(session, session.send("after a clear"))
        assert len(provider.history[-1].messages) == 4_005
    finally:
        await workspace.aclose()
