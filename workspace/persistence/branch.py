"""A branch's turn ids, read from a turn up towards the root: a page of them (the last turns, which a window
shows first) or all the rest, in a worker thread of its own (:class:`BackgroundBranch`).

Walking a branch is one recursive query, one indexed lookup a turn: for a branch of 10,000 turns that is
about 100 ms. Walking from the leaf up with a limit stops after a page, so a long thread's last turns show
without it; the rest is read where it does not hold the window.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from workspace.persistence.database import Database, NotFoundError
from workspace.persistence.readonly import Reader, ReadOnlyWorker

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


class BackgroundBranch(ReadOnlyWorker):
    """Branch walks off the caller's thread (the window's): one worker thread reading through a read-only
    connection of its own, so a walk holds neither the caller's thread nor the store's lock.
    ``store``: the :class:`~workspace.persistence.Store` read (an in-memory one is read through its own
    connection, in the worker)."""

    def __init__(self, store: Database) -> None:
        super().__init__(store, thread_name="branch-walk", failing="Reading")

    async def walk_up(self, thread_id: str, turn_id: str) -> PathPage:
        """:func:`walk_up` from ``turn_id`` to the root, read in the worker."""
        return await self._in_worker(lambda: walk_up(self._reader(), thread_id, turn_id, path=self.store.db_path))


__all__ = ["BackgroundBranch", "PathPage", "walk_up"]
