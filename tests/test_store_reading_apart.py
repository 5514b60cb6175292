"""Workers reading much of a store read apart: through a connection of their own, and held back on request.

The window's thread opens a search hit far up a long thread while workers read the same thread (its
conversation, the inspector's events, the context meter's count). They held the store's lock, a read of a few
hundred turns at a time, and the interpreter, and each of the window's reads waited behind them. Here, on real
databases: a read apart goes on while another thread holds the store's lock; held back, a worker reads nothing
until the hold ends, then reads all of it, and one held back after its read waits within the decoding of it; the holder's own reads never wait for themselves; closing the store
lets a held-back reader go (to the store's "closed" error).
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.long_threads import add_long_thread
from workspace.persistence import Store, StoreError
from workspace.providers.testing import ScriptedProvider
from workspace.session import Workspace
from workspace.session.thread_history import CONVERSATION_READ

#: Bounds a hang (a worker waiting for a lock or a hold that never ends), not a speed.
HANG_S = 60


class WatchedStore(Store):
    """A real store that counts the rows its reads in other threads than the one that made it return, and says
    when a read apart is about to wait."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(path)
        self._maker = threading.get_ident()
        self.worker_rows = 0
        self.waiting = threading.Event()

    def wait_background(self) -> None:
        self.waiting.set()
        super().wait_background()

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        found = super()._read(sql, params)
        if threading.get_ident() != self._maker:
            self.worker_rows += len(found)
        return found


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    db = tmp_path_factory.mktemp("apart") / "long.db"
    store = Store(db)
    thread_id, _ids = add_long_thread(store, 2 * CONVERSATION_READ + 10)
    store.close()
    return db, thread_id


@pytest.fixture
def long_db(built: tuple[Path, str], tmp_path: Path) -> tuple[Path, str]:
    """A copy of a thread longer than two reads of the conversation, and the thread's id."""
    db = tmp_path / "long.db"
    shutil.copy(built[0], db)
    return db, built[1]


async def test_the_conversation_read_ahead_reads_through_a_connection_of_its_own(long_db: tuple[Path, str]) -> None:
    db, thread_id = long_db
    store = WatchedStore(db)
    workspace = Workspace(store=store, provider=ScriptedProvider(default="Fine."))
    on_the_stores: list[str] = []  # the statements run on the store's own connection (behind its lock) by workers

    def traced(sql: str) -> None:
        if threading.get_ident() != store._maker:
            on_the_stores.append(sql)

    try:
        session = workspace.open_thread(thread_id)
        store._conn.set_trace_callback(traced)
        await asyncio.wait_for(session.load_conversation(), HANG_S)
        store._conn.set_trace_callback(None)
        assert store.worker_rows > 0 and not on_the_stores, on_the_stores[:3]
        assert session._conversation is not None
        assert session._conversation.messages == store.history_messages(thread_id)
    finally:
        workspace.close()


async def test_a_read_apart_held_back_reads_nothing_until_the_hold_ends(long_db: tuple[Path, str]) -> None:
    db, thread_id = long_db
    store = WatchedStore(db)
    workspace = Workspace(store=store, provider=ScriptedProvider(default="Fine."))
    try:
        session = workspace.open_thread(thread_id)
        with store.background_held():
            reading = asyncio.ensure_future(session.load_conversation())
            assert await asyncio.to_thread(store.waiting.wait, HANG_S), "the read ahead never started"
            for _ in range(20):  # (a read not held back reads its first rows within this, even on a busy machine)
                await asyncio.sleep(0.01)
                assert store.worker_rows == 0 and not reading.done()
        await asyncio.wait_for(reading, HANG_S)
        assert session._conversation is not None and store.worker_rows > 0
        assert session._conversation.messages == store.history_messages(thread_id)
    finally:
        workspace.close()


def test_the_holders_own_reads_apart_do_not_wait(long_db: tuple[Path, str]) -> None:
    db, thread_id = long_db
    store = Store(db)
    try:
        with store.background_held(), store.background_held(), store.reading_apart():
            assert len(store.path_ids(thread_id)) == 2 * CONVERSATION_READ + 10
    finally:
        store.close()
    memory = Store(":memory:")  # nothing to open again: read through the store's own connection
    try:
        thread_id, ids = add_long_thread(memory, 3)
        with memory.background_held(), memory.reading_apart():
            assert memory.path_ids(thread_id) == ids
    finally:
        memory.close()


def test_closing_the_store_lets_a_held_back_reader_go(long_db: tuple[Path, str]) -> None:
    db, thread_id = long_db
    store = WatchedStore(db)
    outcome: list[BaseException | None] = []

    def worker() -> None:
        with store.reading_apart():
            try:
                store.path_ids(thread_id)
                outcome.append(None)
            except StoreError as exc:
                outcome.append(exc)

    with store.background_held():
        reader = threading.Thread(target=worker)
        reader.start()
        assert store.waiting.wait(HANG_S)
        store.close()
        reader.join(HANG_S)  # (still held back: only the close lets it go)
        assert not reader.is_alive(), "a reader held back was not let go when the store closed"
    assert isinstance(outcome[0], StoreError) and outcome[0].reason == "closed"


def test_a_reader_held_back_after_its_read_waits_within_the_decoding(long_db: tuple[Path, str]) -> None:
    """Held back while it decodes what it read (the hold came after its read): it waits within it, not at the end
    of a few hundred turns' events."""
    db, thread_id = long_db

    class Paused(WatchedStore):
        """Each read in a worker ends, then goes on once the test holds the readers back."""

        def __init__(self, path: Path) -> None:
            super().__init__(path)
            self.read_done, self.go_on = threading.Event(), threading.Event()

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
            found = super()._read(sql, params)
            if threading.get_ident() != self._maker and "FROM events" in sql:
                self.read_done.set()
                self.go_on.wait(HANG_S)
            return found

    store = Paused(db)
    ids = store.path_ids(thread_id)
    found: list[dict[str, list[Any]]] = []

    def worker() -> None:
        with store.reading_apart():
            found.append(store.events_of(ids))

    reader = threading.Thread(target=worker)
    try:
        reader.start()
        assert store.read_done.wait(HANG_S)
        with store.background_held():
            store.go_on.set()
            for _ in range(20):  # (decoding 1,200 events takes 20-40 ms of CPU)
                reader.join(0.01)
                assert reader.is_alive() and not found, "the reader went on decoding while held back"
        reader.join(HANG_S)
        assert sum(len(events) for events in found[0].values()) == 3 * len(ids)
    finally:
        store.go_on.set()
        reader.join(HANG_S)
        store.close()
