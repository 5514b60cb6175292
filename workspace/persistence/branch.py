"""A branch's turn ids, read from a turn up towards the root: a page of them (the last turns, which a window
shows first) or all the rest, in a worker thread of its own (:class:`BackgroundBranch`).

Walking a branch is one recursive query, one indexed lookup a turn: for a branch of 10,000 turns that is
about 100 ms. Walking from the leaf up with a limit stops after a page, so a long thread's last turns show
without it; the rest is read where it does not hold the window.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from workspace.persistence.database import Database, NotFoundError, StoreError, classify
from workspace.persistence.search import Reader

log = logging.getLogger("workspace.persistence")

_WALK = ("WITH RECURSIVE p(id, parent) AS ("
         " SELECT id, parent_turn_id FROM turns WHERE id = ? AND thread_id = ?"
         " UNION ALL SELECT t.id, t.parent_turn_id FROM turns t JOIN p ON t.id = p.parent LIMIT ?)"
         " SELECT id, parent FROM p")  # from the turn up, in the order the walk reached them


@dataclass(frozen=True, slots=True)
class PathPage:
    """Some of a branch's turn ids, root first, ending at the turn the walk started from."""

    ids: list[str]
    #: The parent of ``ids[0]``, where the walk goes on; None when ``ids[0]`` is the root (or ``ids`` is empty).
    above: str | None


def walk_up(read: Reader, thread_id: str, turn_id: str, *, limit: int | None = None,
            path: Path | str | None = None) -> PathPage:
    """The ids from ``turn_id`` up towards the root, at most ``limit`` of them (None: up to the root).
    ``path``: the database, named in the error when the turn is not one of the thread's."""
    rows = read(_WALK, (turn_id, thread_id, -1 if limit is None else limit))
    if not rows:
        raise NotFoundError(f"No turn {turn_id!r} in thread {thread_id!r}.", path=path)
    return PathPage([r[0] for r in reversed(rows)], rows[-1][1])


class BackgroundBranch:
    """Branch walks off the caller's thread (the window's): one worker thread reading through a read-only
    connection of its own, so a walk holds neither the caller's thread nor the store's lock.
    ``store``: the :class:`~workspace.persistence.Store` read (an in-memory one is read through its own
    connection, in the worker)."""

    def __init__(self, store: Database) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None
        self._own = str(store.db_path) != ":memory:"

    async def walk_up(self, thread_id: str, turn_id: str) -> PathPage:
        """:func:`walk_up` from ``turn_id`` to the root, read in the worker."""
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="branch-walk")
            executor = self._executor
        return await asyncio.get_running_loop().run_in_executor(
            executor, lambda: walk_up(self._reader(), thread_id, turn_id, path=self.store.db_path))

    def _reader(self) -> Reader:
        if self._own and self._conn is None:
            try:
                made = sqlite3.connect(f"file:{quote(str(self.store.db_path))}?mode=ro", uri=True,
                                       timeout=self.store.busy_timeout, check_same_thread=False)
                made.row_factory = sqlite3.Row
                self._conn = made
            except sqlite3.Error as exc:  # read through the store's own connection instead
                log.info("a read-only connection to %s could not be opened: %s", self.store.db_path, exc)
                self._own = False
        opened = self._conn
        if opened is None:
            return self.store._read
        conn, path = opened, self.store.db_path

        def read(sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
            try:
                return conn.execute(sql, tuple(params)).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"Reading {path} failed: {exc}", path=path, reason=classify(exc)) from exc

        return read

    def close(self) -> None:
        """End the worker (a walk under way finishes first) and close its connection."""
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


__all__ = ["BackgroundBranch", "PathPage", "walk_up"]
