"""Reading the store off the caller's thread: :class:`ReadOnlyWorker`, one worker thread reading through a
read-only connection of its own, the base of :class:`~workspace.persistence.search.BackgroundSearch` and
:class:`~workspace.persistence.branch.BackgroundBranch`.

Its own connection means a long read holds neither the caller's thread (the window's) nor the store's lock the
running turn's writes need. When that connection cannot be opened (an in-memory store has no file to open
again), the worker reads through the store's own connection instead.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from workspace.persistence.database import Database, StoreError, classify, open_read_only

log = logging.getLogger("workspace.persistence")

#: Reads rows (``Database._read``).
Reader = Callable[[str, Sequence[Any]], list[sqlite3.Row]]

T = TypeVar("T")


class ReadOnlyWorker:
    """One worker thread and the read-only connection it reads through, both made on first use.
    ``store``: the :class:`~workspace.persistence.Store` read; ``thread_name``: the worker thread's name
    prefix; ``failing``: the verb a failed read's error starts with ("Reading", "Searching")."""

    def __init__(self, store: Database, *, thread_name: str, failing: str) -> None:
        self.store = store
        self._thread_name = thread_name
        self._failing = failing
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None
        self._own = str(store.db_path) != ":memory:"

    async def _in_worker(self, read: Callable[[], T]) -> T:
        """``read()`` called in the worker thread (after what was asked before it)."""
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self._thread_name)
            executor = self._executor
        return await asyncio.get_running_loop().run_in_executor(executor, read)

    def _reader(self) -> Reader:
        """How the worker reads: through its own read-only connection (opened here the first time), or the
        store's when that cannot be opened. Called in the worker."""
        if self._own and self._conn is None:
            try:
                self._conn = open_read_only(self.store.db_path, timeout=self.store.busy_timeout)
            except sqlite3.Error as exc:  # read through the store's own connection instead
                log.info("a read-only connection to %s could not be opened: %s", self.store.db_path, exc)
                self._own = False
        opened = self._conn
        if opened is None:
            return self.store._read
        conn, path, failing = opened, self.store.db_path, self._failing

        def read(sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
            try:
                return conn.execute(sql, tuple(params)).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"{failing} {path} failed: {exc}", path=path, reason=classify(exc)) from exc

        return read

    def close(self) -> None:
        """End the worker (a read under way finishes first) and close its connection."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is None:
            return

        def close_connection() -> None:
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()

        executor.submit(close_connection)
        executor.shutdown(wait=False)


__all__ = ["ReadOnlyWorker", "Reader"]
