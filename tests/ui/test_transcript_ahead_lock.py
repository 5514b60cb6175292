"""The worker reading ahead of the turns being loaded reads apart: never behind the store's lock, and it waits
while the window holds such reads back.

Paging up a long thread, the window reads each page's turn rows and sibling lists through the store's own
connection, behind its lock; the worker reading the page above's ids and events ahead (``AHEAD_THREAD``)
read through that connection too, holding the lock through each query, and the window's reads waited for it
(3-4 ms in a step of ``bench/bench_ui_thread_scale.py --paging 10000 --blocked``; while a search hit far up
comes in, one hold of 33 ms). Every query on the store's connection is counted with the thread that ran it; and
while the window holds the readers apart back (``Store.background_held``, as it does bringing in a search hit),
the read ahead waits.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from fakes.long_threads import add_long_thread

from ui.chat.model.presenter import ChatPresenter
from ui.transcript import AHEAD_THREAD, LazyTranscript
from workspace.persistence import Store

TURNS = 300


class _CountedConnection:
    """The store's connection, each query counted with the name of the thread running it (under the lock)."""

    def __init__(self, conn: sqlite3.Connection, threads: list[str]) -> None:
        self._conn = conn
        self._threads = threads

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        self._threads.append(threading.current_thread().name)
        return self._conn.execute(sql, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class AheadCountingStore(Store):
    """A real store counting the queries on its own connection by thread, and the reads of the worker ahead."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.locked_queries: list[str] = []
        self.ahead_reads = 0
        self._conn = _CountedConnection(self._conn, self.locked_queries)  # type: ignore[assignment]

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        if threading.current_thread().name.startswith(AHEAD_THREAD):
            self.ahead_reads += 1
        return super()._read(sql, params)


S = TypeVar("S", bound=Store)


def _opened(tmp_path: Path, kind: type[S]) -> tuple[S, ChatPresenter, LazyTranscript]:
    """A long thread written to a new store, opened again through a store of ``kind`` and shown in a presenter."""
    store = Store(tmp_path / "long.db")
    thread_id, ids = add_long_thread(store, TURNS)
    store.set_current(thread_id, ids[-1])
    store.close()
    opened = kind(tmp_path / "long.db")
    presenter = ChatPresenter()
    lazy = LazyTranscript(opened, thread_id)
    presenter.load_thread(lazy)
    return opened, presenter, lazy


def test_the_read_ahead_never_holds_the_store_lock_the_window_reads_behind(tmp_path: Path) -> None:
    store, presenter, lazy = _opened(tmp_path, AheadCountingStore)
    try:
        store.locked_queries.clear()
        while presenter.hidden_turns:
            presenter.load_earlier()
            deadline = time.monotonic() + 30  # (bounds a hang: a page's read takes milliseconds)
            while not all(f.done() for f in lazy._ahead.values()) and time.monotonic() < deadline:
                time.sleep(0.01)
        assert [t.user.text for t in presenter.state.turns] == [f"question {i}" for i in range(TURNS)]
        assert store.ahead_reads > 0  # (the worker did read ahead)
        window = threading.current_thread().name
        assert store.locked_queries and set(store.locked_queries) == {window}, (
            f"queries under the store's lock by other threads: "
            f"{sorted({t for t in store.locked_queries if t != window})}")
    finally:
        store.close()


class HeldSpyStore(Store):
    """A real store noting when a worker reading apart waits while the readers apart are held back."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.worker_held = threading.Event()

    def wait_background(self) -> None:
        if getattr(self._apart, "active", False) and not self._background_free.is_set():
            self.worker_held.set()
        super().wait_background()


def test_the_read_ahead_waits_while_the_window_holds_the_readers_back(tmp_path: Path) -> None:
    store, presenter, lazy = _opened(tmp_path, HeldSpyStore)
    try:
        with store.background_held():
            while not lazy._ahead and presenter.hidden_turns:
                presenter.load_earlier()  # (the window's own reads go on meanwhile)
            assert lazy._ahead
            assert store.worker_held.wait(30), "the read ahead did not wait while held back"
            assert not any(f.done() for f in lazy._ahead.values())
        for future in list(lazy._ahead.values()):
            future.result(timeout=30)  # (bounds a hang) it goes on once let go
    finally:
        store.close()
