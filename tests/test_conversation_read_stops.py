"""What a thread's session reads in the background after it opens does not outlast the thread, nor grow with it.

A window that opens a long thread reads, in workers, the conversation the next message continues and the
context meter's last count. Opened at start-up and left for another thread a moment later, those reads went
on to the root of a 10,000-turn branch and held the interpreter while the next thread made its widgets (its
first paint took 1.7-2.2 x a 100-turn thread's). Here, on real databases: the meter's count is looked for
from the branch's end (the rows read are the same at 100 and at 1,000 turns), and the conversation's read
stops at its next step once it is no longer wanted, and goes on to the whole conversation when it is.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fakes.long_threads import build_thread

from workspace.persistence import Store
from workspace.providers.testing import ScriptedProvider
from workspace.session import Workspace
from workspace.session.thread_history import CONVERSATION_READ


class CountingStore(Store):
    """A real store that counts the event rows its reads return."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.event_rows = 0

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        rows = super()._read(sql, params)
        if "FROM events" in sql:
            self.event_rows += len(rows)
        return rows


def meter_rows(db: Path, thread_id: str) -> tuple[int, int | None]:
    """The event rows the meter's count reads, and the count's ``used``."""
    store = CountingStore(db)
    workspace = Workspace(store=store, provider=ScriptedProvider(default="Fine."))
    try:
        usage = workspace.open_thread(thread_id).context_usage()
        return store.event_rows, None if usage is None else usage.used
    finally:
        workspace.close()


def test_the_meters_count_reads_the_same_rows_at_100_and_1000_turns(tmp_path: Path) -> None:
    short, long = tmp_path / "short.db", tmp_path / "long.db"
    short_rows, short_used = meter_rows(short, build_thread(short, 100))
    long_rows, long_used = meter_rows(long, build_thread(long, 1000))
    assert (short_used, long_used) == (99, 999)  # the last turn's count
    assert long_rows == short_rows, f"{long_rows} event rows read at 1,000 turns, {short_rows} at 100"

    # A count far up the branch (none since turn 3) is still found, reading up to it.
    far = tmp_path / "far.db"
    assert meter_rows(far, build_thread(far, 300, counted={1, 3}))[1] == 3
    none = tmp_path / "none.db"
    assert meter_rows(none, build_thread(none, 120, counted=set()))[1] is None


async def test_the_conversation_read_ahead_stops_when_no_longer_wanted(tmp_path: Path) -> None:
    db = tmp_path / "thread.db"
    turns = 3 * CONVERSATION_READ
    thread_id = build_thread(db, turns)
    store = CountingStore(db)
    workspace = Workspace(store=store, provider=ScriptedProvider(default="Fine."))
    try:
        session = workspace.open_thread(thread_id)
        asked = 0

        def left_after_one_read() -> bool:  # the window's question: is the thread still open?
            nonlocal asked
            asked += 1
            return asked == 1

        await session.load_conversation(wanted=left_after_one_read)
        assert asked == 2  # asked before each read: it stopped at the second
        stopped = store.event_rows

        # Opened again (wanted throughout): the whole conversation, as the store gives it, kept for the send.
        await session.load_conversation()
        whole = store.event_rows - stopped
        # The stopped read read one of the three reads' rows (each turn's end and start), not the thread's.
        assert 0 < stopped * 3 <= whole, f"{stopped} event rows read after being left, {whole} for all of it"
        before = store.event_rows
        kept = session._conversation_to(workspace.store.get_thread(thread_id).current_turn_id)
        assert store.event_rows == before  # the one read ahead, not read again
        assert kept.messages == workspace.store.history_messages(thread_id)
        assert len(kept.messages) == 2 * turns
    finally:
        workspace.close()
