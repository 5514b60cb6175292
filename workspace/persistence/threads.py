"""Threads and turns: the :class:`Store`, the one object the app and the command line use.

A *thread* is a conversation with a robot (or a network). Each message the user sends starts
a *turn*; the turn records the run's events as they happen (:mod:`.eventlog`). Turns form a tree
(a turn points at its parent), so editing a past message and resending it, or regenerating an
answer, adds a sibling turn instead of overwriting anything; ``threads.current_turn_id`` is the
leaf of the branch on screen. Messages, results and the transcript are derived from the events
(:mod:`.conversation`).

Turns left ``running`` by a process that is gone (a crash, a kill) are marked ``interrupted``
when the store is opened; their events are kept. :meth:`Store.close` marks its own unfinished
turns ``interrupted`` too.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from workspace import events as ev
from workspace.messages import Message, TextMessage
from workspace.persistence import blobs
from workspace.persistence.branch import PathPage, walk_up
from workspace.persistence.conversation import (
    conversation_from_events,
    conversation_from_result,
    terminal_result,
    unindexed_tail,
)
from workspace.persistence.database import (
    NotFoundError,
    Statement,
    StoreError,
    dumps,
    new_id,
    now,
    owner_alive,
)
from workspace.persistence.eventlog import EventLog, event_from_row
from workspace.persistence.search import EVAL_THREAD, SearchHit, index_statements, search_threads
from workspace.result import RobotResult, Usage

log = logging.getLogger("workspace.persistence")

#: Turn statuses. ``interrupted``: the app stopped (crash, quit) before the run ended.
STATUSES: tuple[str, ...] = ("running", "finished", "failed", "cancelled", "interrupted")
THREAD_KINDS: tuple[str, ...] = ("robot", "network")
#: Ids bound in one ``IN (...)`` query (older SQLite builds allow 999 parameters).
_IDS_PER_QUERY = 500
#: How thread lists name an origin (``ThreadInfo.origin_label``).
ORIGIN_LABELS: dict[str, str] = {"cli": "terminal", "eval": "eval"}


@dataclass(frozen=True, slots=True)
class ThreadInfo:
    """One thread as listed: ``turn_count`` counts turns on every branch; usage sums all runs."""

    id: str
    title: str | None
    robot: str
    kind: str
    folder: str | None
    created_at: float
    updated_at: float
    deleted_at: float | None
    turn_count: int
    input_tokens: int
    output_tokens: int
    cost: float | None
    current_turn_id: str | None
    #: The model label of the latest run ("openai/gpt-4o-mini", "Offline demo ...").
    model: str | None = None
    #: Where the thread came from and how to continue it (``{"origin": "cli", "command": "run"}``
    #: for threads the command line recorded; empty for the window's).
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def origin(self) -> str | None:
        """``"cli"`` for a thread recorded by ``robotlab run``, ``network run`` or ``chat``; None
        for the window's own threads (and threads recorded before origins were kept)."""
        value = self.metadata.get("origin")
        return str(value) if value else None

    @property
    def origin_label(self) -> str:
        """How lists show the origin: ``"terminal"`` for command-line threads, else ``""``."""
        return ORIGIN_LABELS.get(self.origin or "", self.origin or "")

    @property
    def is_deleted(self) -> bool:
        return self.deleted_at is not None

    @property
    def usage(self) -> Usage:
        return Usage(self.input_tokens, self.output_tokens, self.cost)

    @property
    def display_title(self) -> str:
        return self.title or "New thread"


@dataclass(frozen=True, slots=True)
class TurnInfo:
    """One user message and the run that answered it."""

    id: str
    thread_id: str
    parent_turn_id: str | None
    user_text: str
    created_at: float
    finished_at: float | None
    run_id: str | None
    status: str
    #: Creation order within the thread (siblings are ordered by it).
    ordinal: int
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None

    @property
    def usage(self) -> Usage:
        return Usage(self.input_tokens, self.output_tokens, self.cost)

    @property
    def is_running(self) -> bool:
        return self.status == "running"


def _metadata(text: str | None) -> dict[str, Any]:
    """The metadata column as a dict (a damaged value reads as empty rather than failing the list)."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class Store(EventLog):
    """The SQLite thread store. ``Store(path)`` or ``Store.open(path)``; :meth:`close` when done.

    Opening creates missing folders and the database, applies pending migrations and marks turns
    of crashed processes ``interrupted``. A file that is not a usable database raises
    :class:`StoreError` (``reason="corrupt"``) naming the file; with ``recover=True`` it is moved
    aside as ``<name>.corrupt-<time>`` (see :attr:`recovered_from`) and a fresh database is
    created. A database another program keeps locked raises ``reason="locked"`` after
    ``busy_timeout`` seconds instead of hanging.

    Options: ``busy_timeout`` (s) how long opening waits for a lock; ``write_timeout`` (s) how long
    a write waits for one once open (short: writes run on the UI thread); ``flush_interval`` (s)
    how long text deltas may be held (0: every delta is its own row); ``retry_after`` (s) how long
    to keep writes queued in memory, without touching the file, after a write failed;
    ``integrity_check`` when SQLite's ``quick_check`` runs at open: ``"always"``, or
    ``"after_unclean_exit"`` (the window: a process that opened it is gone without closing it; else the
    caller runs :meth:`integrity_problem` in a worker thread). The path
    ``":memory:"`` gives a temporary in-memory store (the desktop's fallback).

    Built in layers, one noun each: :class:`~workspace.persistence.database.Database` (the file,
    the connection, writes and their queue), :class:`~workspace.persistence.eventlog.EventLog`
    (the events of the turns, held text deltas) and this class (threads, turns, what is derived
    from them).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        recover: bool = False,
        busy_timeout: float = 5.0,
        write_timeout: float = 0.5,
        flush_interval: float = 0.25,
        retry_after: float = 2.0,
        integrity_check: str = "always",
    ) -> None:
        #: Ids of the turns this open marked ``interrupted`` (left running by a crashed process).
        self.interrupted_turns: list[str] = []
        super().__init__(path, recover=recover, busy_timeout=busy_timeout, write_timeout=write_timeout,
                         flush_interval=flush_interval, retry_after=retry_after, integrity_check=integrity_check)

    @classmethod
    def open(cls, path: str | Path, **options: Any) -> Store:
        """Open (creating if needed) the database at ``path``; see :class:`Store` for options."""
        return cls(path, **options)

    # -- opening and closing ---------------------------------------------------------------------
    def _prepare(self, conn: sqlite3.Connection) -> None:
        super()._prepare(conn)
        self._recover_interrupted(conn)

    def _recover_interrupted(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute("SELECT id, thread_id, owner FROM turns WHERE status = 'running'").fetchall()
        dead = [(turn_id, thread_id) for turn_id, thread_id, owner in rows if not owner_alive(owner)]
        stamp = now()
        for turn_id, thread_id in dead:
            conn.execute("UPDATE turns SET status = 'interrupted', finished_at = ? WHERE id = ?", (stamp, turn_id))
            # The streamed text after the last complete ``text`` event was never indexed.
            resolver = blobs.Resolver(lambda digest: conn.execute(
                "SELECT codec, data FROM blobs WHERE hash = ?", (digest,)).fetchone())
            tail = unindexed_tail(
                [event_from_row(r[0], resolver) for r in
                 conn.execute("SELECT data FROM events WHERE turn_id = ? ORDER BY id", (turn_id,))]
            )
            for sql, params in index_statements(thread_id, turn_id, "assistant", tail, fts=self.fts):
                conn.execute(sql, params)
            self.interrupted_turns.append(turn_id)
        if dead:
            log.info("marked %d turn(s) left running by a stopped process as interrupted", len(dead))

    def _closing_statements(self) -> list[Statement]:
        """The held deltas, then this store's unfinished turns marked interrupted."""
        return [*super()._closing_statements(), (
            "UPDATE turns SET status = 'interrupted', finished_at = ? WHERE status = 'running' AND owner = ?",
            (now(), self._owner),
        )]

    # -- threads ----------------------------------------------------------------------------------
    # A thread's turns are numbered 1, 2, 3... as they are added (``add_turn``) and only ever deleted with the
    # thread: the highest number is their count, read from the index in O(log n) where COUNT(*) walked every
    # turn of the thread (a send, which reads its thread, cost more at turn 10,000 than at turn 10).
    _THREAD_SQL = ("SELECT t.*, (SELECT COALESCE(MAX(u.ordinal), 0) FROM turns u WHERE u.thread_id = t.id) "
                   "AS turn_count FROM threads t")

    @staticmethod
    def _thread(row: sqlite3.Row) -> ThreadInfo:
        return ThreadInfo(
            id=row["id"], title=row["title"], robot=row["robot"], kind=row["kind"], folder=row["folder"],
            created_at=row["created_at"], updated_at=row["updated_at"], deleted_at=row["deleted_at"],
            turn_count=row["turn_count"], input_tokens=row["input_tokens"], output_tokens=row["output_tokens"],
            cost=row["cost"], current_turn_id=row["current_turn_id"], model=row["model"],
            metadata=_metadata(row["metadata"]),
        )

    def create_thread(self, *, robot: str, title: str | None = None, kind: str = "robot",
                      folder: str | Path | None = None, metadata: Mapping[str, Any] | None = None) -> ThreadInfo:
        """A new thread; ``metadata`` is a small JSON object kept with it (its origin, see
        :attr:`ThreadInfo.origin`; strings are redacted like everything stored)."""
        if kind not in THREAD_KINDS:
            raise ValueError(f"Invalid thread kind: {kind}. Must be one of: {', '.join(THREAD_KINDS)}")
        thread_id = new_id()
        stamp = now()
        self._write([(
            "INSERT INTO threads (id, title, robot, kind, folder, created_at, updated_at, metadata) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (thread_id, title or None, robot, kind, str(folder) if folder else None, stamp, stamp,
             dumps(dict(metadata or {}))),
        )])
        return self.get_thread(thread_id)

    def update_thread_metadata(self, thread_id: str, **values: Any) -> ThreadInfo:
        """Merge ``values`` into the thread's metadata (a value of None removes its key)."""
        merged = dict(self.get_thread(thread_id).metadata)
        for key, value in values.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        self._write([("UPDATE threads SET metadata = ? WHERE id = ?", (dumps(merged), thread_id))])
        return self.get_thread(thread_id)

    def latest_thread(self, *, kind: str | None = None, robot: str | None = None) -> ThreadInfo | None:
        """The most recently updated thread that is not deleted (of that kind, with that robot), or None; never
        an eval case's thread."""
        where, params = ["t.deleted_at IS NULL", f"NOT {EVAL_THREAD}"], []
        if kind is not None:
            where.append("t.kind = ?")
            params.append(kind)
        if robot is not None:
            where.append("t.robot = ?")
            params.append(robot)
        rows = self._read(self._THREAD_SQL + " WHERE " + " AND ".join(where)
                          + " ORDER BY t.updated_at DESC, t.created_at DESC LIMIT 1", tuple(params))
        return self._thread(rows[0]) if rows else None

    def get_thread(self, thread_id: str) -> ThreadInfo:
        rows = self._read(self._THREAD_SQL + " WHERE t.id = ?", (thread_id,))
        if not rows:
            raise NotFoundError(f"No thread with id {thread_id!r} in {self.db_path}.", path=self.db_path)
        return self._thread(rows[0])

    def list_threads(self, include_deleted: bool = False, *, include_evals: bool = False) -> list[ThreadInfo]:
        """Threads, most recently updated first (soft-deleted ones only with ``include_deleted``, the threads
        of eval cases, ``metadata.origin == "eval"``, only with ``include_evals``)."""
        conditions = ([] if include_deleted else ["t.deleted_at IS NULL"]) + ([] if include_evals else
                                                                                [f"NOT {EVAL_THREAD}"])
        where = " WHERE " + " AND ".join(conditions) if conditions else ""
        rows = self._read(self._THREAD_SQL + where + " ORDER BY t.updated_at DESC, t.created_at DESC")
        return [self._thread(r) for r in rows]

    def resolve_thread_id(self, prefix: str, *, include_deleted: bool = True) -> str:
        """The id of the one thread whose id is or starts with ``prefix``."""
        prefix = prefix.strip()
        if not prefix:
            raise NotFoundError("Give a thread id (`robotlab threads list` shows them).", path=self.db_path)
        where = "" if include_deleted else " AND deleted_at IS NULL"
        rows = self._read(f"SELECT id FROM threads WHERE id = ? OR substr(id, 1, ?) = ?{where} LIMIT 3",
                          (prefix, len(prefix), prefix))
        ids = {r["id"] for r in rows}
        if prefix in ids:
            return prefix
        if not ids:
            raise NotFoundError(f"No thread id starts with {prefix!r} (`robotlab threads list` shows them).",
                                path=self.db_path)
        if len(ids) > 1:
            raise NotFoundError(f"{prefix!r} matches more than one thread; give more of the id.", path=self.db_path)
        return ids.pop()

    def rename_thread(self, thread_id: str, title: str | None) -> ThreadInfo:
        self.get_thread(thread_id)
        clean = " ".join((title or "").split()) or None
        self._write([("UPDATE threads SET title = ? WHERE id = ?", (clean, thread_id))])
        return self.get_thread(thread_id)

    # -- small settings kept with the threads ------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        with self._lock:
            self._check_open()
            row = self._conn.execute("SELECT value FROM _meta WHERE key = ?", (f"app.{key}",)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, key: str, value: str | None) -> None:
        """Keep (or with None, forget) a small value, e.g. the thread the app had open."""
        if value is None:
            self._write([("DELETE FROM _meta WHERE key = ?", (f"app.{key}",))])
        else:
            self._write([("INSERT OR REPLACE INTO _meta (key, value) VALUES (?, ?)", (f"app.{key}", value))])

    # -- change sets awaiting review ------------------------------------------------------------
    def save_change_set(self, thread_id: str, snapshot: Mapping[str, Any]) -> None:
        """Keep the thread's change set for its folder (:meth:`ChangeSet.snapshot`) until it is settled."""
        self._write([(
            "INSERT OR REPLACE INTO change_sets (thread_id, folder, id, data, updated_at) VALUES (?, ?, ?, ?, ?)",
            (thread_id, str(snapshot["folder"]), str(snapshot["id"]), dumps(dict(snapshot)), now()),
        )])

    def load_change_set(self, thread_id: str, folder: str | Path) -> dict[str, Any] | None:
        with self._lock:
            self._check_open()
            row = self._conn.execute("SELECT data FROM change_sets WHERE thread_id = ? AND folder = ?",
                                     (thread_id, str(folder))).fetchone()
        if row is None:
            return None
        try:
            data = json.loads(row[0])
        except ValueError:
            log.warning("the saved change set of thread %s is unreadable; it is dropped", thread_id)
            return None
        return data if isinstance(data, dict) else None

    def change_set_folders(self, thread_id: str | None = None) -> list[tuple[str, str]]:
        """``(thread_id, folder)`` of every kept change set (of one thread)."""
        sql = "SELECT thread_id, folder FROM change_sets"
        params: tuple[Any, ...] = ()
        if thread_id is not None:
            sql, params = sql + " WHERE thread_id = ?", (thread_id,)
        with self._lock:
            self._check_open()
            return [(r[0], r[1]) for r in self._conn.execute(sql + " ORDER BY updated_at", params)]

    def drop_change_set(self, thread_id: str, folder: str | Path) -> None:
        self._write([("DELETE FROM change_sets WHERE thread_id = ? AND folder = ?", (thread_id, str(folder)))])

    def delete_thread(self, thread_id: str) -> ThreadInfo:
        """Soft delete: hidden from lists and search until :meth:`restore_thread` or :meth:`purge_deleted`."""
        self.get_thread(thread_id)
        self._write([("UPDATE threads SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL", (now(), thread_id))])
        return self.get_thread(thread_id)

    def restore_thread(self, thread_id: str) -> ThreadInfo:
        """Undo :meth:`delete_thread`."""
        self.get_thread(thread_id)
        self._write([("UPDATE threads SET deleted_at = NULL WHERE id = ?", (thread_id,))])
        return self.get_thread(thread_id)

    def purge_deleted(self, older_than: float | timedelta | None = None) -> int:
        """Remove for good threads soft-deleted more than ``older_than`` (seconds) ago; all when None."""
        if isinstance(older_than, timedelta):
            older_than = older_than.total_seconds()
        if older_than is None:
            rows = self._read("SELECT id FROM threads WHERE deleted_at IS NOT NULL")
        else:
            rows = self._read("SELECT id FROM threads WHERE deleted_at IS NOT NULL AND deleted_at <= ?",
                              (now() - float(older_than),))
        ids = [r["id"] for r in rows]
        if not ids:
            return 0
        self._purge(ids)
        return len(ids)

    def purge_thread(self, thread_id: str) -> None:
        """Remove one thread for good, at once (a replay cancelled half-way leaves nothing behind)."""
        self.get_thread(thread_id)
        self._purge([thread_id])

    def _purge(self, ids: list[str]) -> None:
        statements: list[Statement] = []
        for thread_id in ids:
            # Children before parents: the turn tree's self-reference cascades, but be explicit.
            statements.append(("DELETE FROM events WHERE thread_id = ?", (thread_id,)))
            statements.append(("DELETE FROM search_docs WHERE thread_id = ?", (thread_id,)))
            statements.append(("UPDATE turns SET parent_turn_id = NULL WHERE thread_id = ?", (thread_id,)))
            statements.append(("DELETE FROM turns WHERE thread_id = ?", (thread_id,)))
            statements.append(("DELETE FROM threads WHERE id = ?", (thread_id,)))
        statements.append((blobs.unreferenced_sql(), ()))  # their large payloads, unless kept elsewhere
        if self.fts:
            statements.append(("INSERT INTO search_fts(search_fts) VALUES ('rebuild')", ()))
        self._write(statements)

    # -- turns -------------------------------------------------------------------------------------
    @staticmethod
    def _turn(row: sqlite3.Row) -> TurnInfo:
        return TurnInfo(
            id=row["id"], thread_id=row["thread_id"], parent_turn_id=row["parent_turn_id"],
            user_text=row["user_text"], created_at=row["created_at"], finished_at=row["finished_at"],
            run_id=row["run_id"], status=row["status"], ordinal=row["ordinal"],
            input_tokens=row["input_tokens"], output_tokens=row["output_tokens"], cost=row["cost"],
        )

    def add_turn(self, thread_id: str, *, user_text: str, parent_turn_id: str | None,
                 turn_id: str | None = None) -> TurnInfo:
        """A new ``running`` turn under ``parent_turn_id`` (None: a first message); it becomes current.

        When the database is unavailable the turn is kept queued (see :meth:`append_event`) and
        :class:`StoreError` is raised; give ``turn_id`` to go on with that turn regardless.
        """
        self.get_thread(thread_id)
        if parent_turn_id is not None:
            parent = self.get_turn(parent_turn_id)
            if parent.thread_id != thread_id:
                raise StoreError(f"Turn {parent_turn_id!r} belongs to another thread.", path=self.db_path,
                                 reason="invalid")
        turn_id = turn_id or new_id()
        stamp = now()
        text = user_text or ""
        statements: list[Statement] = [
            ("INSERT INTO turns (id, thread_id, parent_turn_id, ordinal, user_text, created_at, status, owner) "
             "VALUES (?, ?, ?, (SELECT COALESCE(MAX(ordinal), 0) + 1 FROM turns WHERE thread_id = ?), ?, ?, "
             "'running', ?)",
             (turn_id, thread_id, parent_turn_id, thread_id, text, stamp, self._owner)),
            ("UPDATE threads SET current_turn_id = ?, updated_at = ? WHERE id = ?", (turn_id, stamp, thread_id)),
        ]
        statements += index_statements(thread_id, turn_id, "user", text, fts=self.fts)
        self._write(statements)
        return self.get_turn(turn_id)

    def get_turn(self, turn_id: str) -> TurnInfo:
        rows = self._read("SELECT * FROM turns WHERE id = ?", (turn_id,))
        if not rows:
            raise NotFoundError(f"No turn with id {turn_id!r} in {self.db_path}.", path=self.db_path)
        return self._turn(rows[0])

    def turns(self, thread_id: str) -> list[TurnInfo]:
        """Every turn of the thread, on every branch, in creation order."""
        return [self._turn(r) for r in self._read("SELECT * FROM turns WHERE thread_id = ? ORDER BY ordinal",
                                                    (thread_id,))]

    def finish_turn(self, turn_id: str, status: str) -> None:
        """Record how the turn's run ended (writes its held text first)."""
        if status not in STATUSES or status == "running":
            raise ValueError(f"Invalid turn status: {status}. Must be one of: {', '.join(STATUSES[1:])}")
        stamp = now()
        statements = self._held_statements(turn_id)
        statements.append(("UPDATE turns SET status = ?, finished_at = ? WHERE id = ?", (status, stamp, turn_id)))
        statements.append(("UPDATE threads SET updated_at = ? WHERE id = (SELECT thread_id FROM turns WHERE id = ?)",
                           (stamp, turn_id)))
        self._live_text.pop(turn_id, None)
        self._write(statements)

    def path(self, thread_id: str, leaf_turn_id: str | None = None) -> list[TurnInfo]:
        """The turns from the root to ``leaf_turn_id`` (default: the thread's current turn)."""
        leaf = leaf_turn_id if leaf_turn_id is not None else self.get_thread(thread_id).current_turn_id
        if leaf is None:
            return []
        rows = self._read(
            "WITH RECURSIVE p(id, parent, depth) AS ("
            " SELECT id, parent_turn_id, 0 FROM turns WHERE id = ? AND thread_id = ?"
            " UNION ALL SELECT t.id, t.parent_turn_id, p.depth + 1 FROM turns t JOIN p ON t.id = p.parent)"
            " SELECT turns.* FROM p JOIN turns ON turns.id = p.id ORDER BY p.depth DESC",
            (leaf, thread_id),
        )
        if not rows:
            raise NotFoundError(f"No turn {leaf!r} in thread {thread_id!r}.", path=self.db_path)
        return [self._turn(r) for r in rows]

    def path_ids(self, thread_id: str, leaf_turn_id: str | None = None) -> list[str]:
        """The ids of :meth:`path`'s turns, root first: one query reading ids only, so that a long
        thread's last turns show without reading every turn's row (:meth:`turns_by_id` reads a page)."""
        leaf = leaf_turn_id if leaf_turn_id is not None else self.get_thread(thread_id).current_turn_id
        if leaf is None:
            return []
        return walk_up(self._read, thread_id, leaf, path=self.db_path).ids

    def path_page(self, thread_id: str, turn_id: str | None = None, *, limit: int | None) -> PathPage:
        """The last ``limit`` ids of the path to ``turn_id`` (default: the thread's current turn), root first,
        and where the path goes on above them: a long branch's end without walking all of it (the walk
        goes from the turn up and stops after ``limit``; None: up to the root)."""
        leaf = turn_id if turn_id is not None else self.get_thread(thread_id).current_turn_id
        if leaf is None:
            return PathPage([], None)
        return walk_up(self._read, thread_id, leaf, limit=limit, path=self.db_path)

    def turns_by_id(self, ids: Sequence[str]) -> list[TurnInfo]:
        """The turns of ``ids``, in that order (a turn not stored raises :class:`NotFoundError`)."""
        found: dict[str, TurnInfo] = {}
        for start in range(0, len(ids), _IDS_PER_QUERY):
            chunk = ids[start:start + _IDS_PER_QUERY]
            marks = ", ".join("?" * len(chunk))
            for row in self._read(f"SELECT * FROM turns WHERE id IN ({marks})", chunk):
                found[row["id"]] = self._turn(row)
        missing = [turn_id for turn_id in ids if turn_id not in found]
        if missing:
            raise NotFoundError(f"No turn with id {missing[0]!r} in {self.db_path}.", path=self.db_path)
        return [found[turn_id] for turn_id in ids]

    def children_ids(self, thread_id: str, parents: Iterable[str | None]) -> dict[str | None, list[str]]:
        """:meth:`branch_map` for the given parents only (None: the thread's first messages)."""
        wanted = list(dict.fromkeys(parents))
        out: dict[str | None, list[str]] = {parent: [] for parent in wanted}
        if None in out:
            for row in self._read("SELECT id FROM turns WHERE thread_id = ? AND parent_turn_id IS NULL "
                                  "ORDER BY ordinal", (thread_id,)):
                out[None].append(row[0])
        named = [parent for parent in wanted if parent is not None]
        for start in range(0, len(named), _IDS_PER_QUERY):
            chunk = named[start:start + _IDS_PER_QUERY]
            marks = ", ".join("?" * len(chunk))
            for row in self._read(f"SELECT id, parent_turn_id FROM turns WHERE parent_turn_id IN ({marks}) "
                                  "ORDER BY ordinal", chunk):
                out[row[1]].append(row[0])
        return out

    def siblings(self, turn_id: str) -> list[TurnInfo]:
        """The turns with the same parent as ``turn_id`` (itself included), oldest first."""
        turn = self.get_turn(turn_id)
        rows = self._read("SELECT * FROM turns WHERE thread_id = ? AND parent_turn_id IS ? ORDER BY ordinal",
                          (turn.thread_id, turn.parent_turn_id))
        return [self._turn(r) for r in rows]

    def children(self, turn_id: str) -> list[TurnInfo]:
        rows = self._read("SELECT * FROM turns WHERE parent_turn_id = ? ORDER BY ordinal", (turn_id,))
        return [self._turn(r) for r in rows]

    def branch_map(self, thread_id: str) -> dict[str | None, list[str]]:
        """Parent turn id (None for first messages) -> its children's ids, oldest first."""
        out: dict[str | None, list[str]] = {}
        for row in self._read("SELECT id, parent_turn_id FROM turns WHERE thread_id = ? ORDER BY ordinal",
                              (thread_id,)):
            out.setdefault(row["parent_turn_id"], []).append(row["id"])
        return out

    def set_current(self, thread_id: str, turn_id: str) -> TurnInfo:
        """Show the branch through ``turn_id``: the current turn becomes its latest descendant.

        That is the turn created last in ``turn_id``'s subtree (always a leaf), so switching to a
        branch returns to where that branch was last continued.
        """
        turn = self.get_turn(turn_id)
        if turn.thread_id != thread_id:
            raise StoreError(f"Turn {turn_id!r} belongs to another thread.", path=self.db_path, reason="invalid")
        rows = self._read(
            "WITH RECURSIVE d(id) AS (SELECT ? UNION ALL"
            " SELECT c.id FROM turns c JOIN d ON c.parent_turn_id = d.id)"
            " SELECT turns.id FROM d JOIN turns ON turns.id = d.id ORDER BY turns.ordinal DESC LIMIT 1",
            (turn_id,),
        )
        leaf = rows[0]["id"] if rows else turn_id
        self._write([("UPDATE threads SET current_turn_id = ? WHERE id = ?", (leaf, thread_id))])
        return self.get_turn(leaf)

    def path_events(self, thread_id: str, leaf_turn_id: str | None = None, *,
                    classes: Sequence[type[ev.Event]] | None = None) -> list[tuple[TurnInfo, list[ev.Event]]]:
        """Each turn along the path with its events (only those of ``classes``, if given; one query for all)."""
        turns = self.path(thread_id, leaf_turn_id)
        if not turns:
            return []
        by_turn = self._events_of([t.id for t in turns], classes)
        return [(t, by_turn.get(t.id, [])) for t in turns]

    # -- derived --------------------------------------------------------------------------------
    def history_messages(self, thread_id: str, leaf_turn_id: str | None = None) -> list[Message]:
        """The robot conversation along the path: user text, assistant text, tool calls and results.

        Built from each turn's terminal result (``run_finished.result``, or the ``partial`` of
        ``run_cancelled`` / ``run_failed``); for a turn without one (interrupted) from its events.
        Every tool call is answered (an unanswered one gets an error result), so the
        conversation is valid to send to a model.
        """
        return self.turn_messages(self.path(thread_id, leaf_turn_id))

    def turn_messages(self, turns: Sequence[TurnInfo]) -> list[Message]:
        """What :meth:`history_messages` makes of these turns (in this order): reading only theirs, so
        a session that keeps the conversation so far adds a finished turn without re-reading the thread."""
        if not turns:
            return []
        ids = [t.id for t in turns]
        terminals = self._events_of(ids, ev.TERMINAL)
        results = {tid: terminal_result(terminals.get(tid) or []) for tid in ids}
        missing = [tid for tid in ids if results[tid] is None]
        full = self._events_of(missing, fold=True) if missing else {}  # (repeated statuses make no message)
        attached = self.turn_attachments(ids)
        messages: list[Message] = []
        for turn in turns:
            refs = attached.get(turn.id)
            if refs and _refused_attachments(terminals.get(turn.id) or []):
                refs = None  # the model never took them (it cannot see images): the text alone
            if refs:
                from workspace.attachments import user_content

                messages.append(TextMessage(role="user", content=user_content(turn.user_text,
                                                                              self.load_attachments(refs))))
            elif turn.user_text:
                messages.append(TextMessage(role="user", content=turn.user_text))
            result = results[turn.id]
            if result is not None:
                messages += conversation_from_result(result)
            else:
                messages += conversation_from_events(full.get(turn.id, []))
        return messages

    def turn_result(self, turn_id: str) -> RobotResult | None:
        """The RobotResult the turn's run ended with (partial after a stop or failure), or None."""
        events = self._events_of([turn_id], ev.TERMINAL)[turn_id]
        return terminal_result(events)

    def usage(self, thread_id: str) -> Usage:
        """Tokens and cost of every run of the thread (all branches)."""
        info = self.get_thread(thread_id)
        return Usage(info.input_tokens, info.output_tokens, info.cost)

    def search(self, query: str, limit: int = 50, *, highlight: tuple[str, str] = ("[", "]"),
               include_deleted: bool = False, include_evals: bool = False) -> list[SearchHit]:
        """Full-text search over user text, robot text and tool calls of every thread (best first); the threads of
        eval cases only with ``include_evals`` (as :meth:`list_threads`)."""
        return search_threads(self._read, query, limit, highlight=highlight, include_deleted=include_deleted,
                              include_evals=include_evals, fts=self.fts)


def _refused_attachments(terminals: Sequence[ev.Event]) -> bool:
    """Whether the turn's run failed because of its attachments (before anything was sent)."""
    return any(isinstance(e, ev.RunFailed) and e.error_type == "AttachmentError" and not e.nested for e in terminals)
