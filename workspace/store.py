"""The thread store: one SQLite file holding every conversation as an append-only event log.

A *thread* is a conversation with a robot (or a network). Each message the user sends starts
a *turn*; the turn records the run's events as they happen. Turns form a tree (a turn points
at its parent), so editing a past message and resending it, or regenerating an answer, adds a
sibling turn instead of overwriting anything; ``threads.current_turn_id`` is the leaf of the
branch on screen. Messages, results and the transcript are derived from the events.

Storage choices (see also DESIGN.md section 6):

* WAL journal, ``synchronous=NORMAL``, foreign keys on, a busy timeout. Every write is one short
  ``BEGIN IMMEDIATE`` transaction, so a crash of the app (or a kill) loses nothing that was
  committed; with ``synchronous=NORMAL`` only a power failure can roll back the last commits.
* Migrations are append-only named functions (``m001_initial``, ...) recorded in ``_migrations``
  (simonw/llm's scheme). Never edit one that shipped: add the next.
* **Text deltas are coalesced.** A ``text_delta`` event is held in memory and written as one
  ``text_delta`` row whose ``text`` is the joined text of the deltas it covers (it keeps the
  first delta's ``seq``/``ts`` and adds ``"deltas": n``) when any of these happens first:
  ``flush_interval`` (250 ms) has passed since the oldest held delta (checked on every append,
  and :class:`workspace.session.RecordedRun` arms a timer so a stalled stream is flushed too),
  any other event of the same turn is appended (the held text is written first, in the same
  transaction, so the order is kept), the turn is finished, :meth:`Store.flush` or
  :meth:`Store.close` is called. A crash therefore loses at most the last 250 ms of streamed
  text; everything else already shown is on disk. Holding a delta costs about 1 µs; a written
  event 30-100 µs (``bench/bench_store.py``). ``flush_interval=0`` writes every delta as its own
  row (nothing held, but 5 to 40 times the rows, depending on the stream rate). Deltas of
  different runs or tasks in one turn (a network) are held apart. Readers see held deltas too
  (:meth:`Store.turn_events` includes them), and :func:`coalesce_text` turns the delta rows of a
  model turn into one ``text`` event for transcripts.
* Secrets never reach the database: every stored string goes through
  :func:`workspace.secrets.redact` (keys held in the environment are replaced by ``<VAR>``).
* A write that fails for a passing reason (database locked by another program, disk full) raises
  :class:`StoreError` but keeps the rows queued in memory; the next write (or :meth:`close`)
  writes them first, so a short outage loses nothing and keeps the order. After a failure the
  store waits ``retry_after`` seconds before touching the file again, so a locked database
  cannot stall the caller (the UI thread) on every event.
* Turns left ``running`` by a process that is gone (a crash, a kill) are marked ``interrupted``
  when the store is opened; their events are kept. :meth:`close` marks its own unfinished
  turns ``interrupted`` too.
* All calls are synchronous and short (microseconds to a few milliseconds; a WAL checkpoint
  every ~1000 pages can take a few ms), so they run on the event-loop thread without blocking it
  noticeably. The connection is shared behind a lock, so other threads may call in too.

Full-text search uses FTS5 over the user's text, the robots' text and tool names/arguments,
falling back to ``LIKE`` when this SQLite has no FTS5.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from workspace import events as ev
from workspace.errors import Error
from workspace.messages import Message, TextMessage, ToolCallMessage, ToolMessage, ToolResultMessage
from workspace.result import RobotResult, Usage

log = logging.getLogger("workspace.store")

__all__ = [
    "STATUSES",
    "NotFoundError",
    "SearchHit",
    "Store",
    "StoreError",
    "ThreadInfo",
    "TurnInfo",
    "coalesce_text",
    "conversation_from_events",
    "conversation_from_result",
    "status_for",
]

#: Turn statuses. ``interrupted``: the app stopped (crash, quit) before the run ended.
STATUSES: tuple[str, ...] = ("running", "finished", "failed", "cancelled", "interrupted")
_TERMINAL_STATUS = {"run_finished": "finished", "run_failed": "failed", "run_cancelled": "cancelled"}
THREAD_KINDS: tuple[str, ...] = ("robot", "network")
INTERRUPTED_TOOL_ERROR = "The run was interrupted before this tool call finished."
MISSING_RESULT_ERROR = "No result was recorded for this tool call."
_MAX_QUEUED = 200_000

# Tokens of this process's open stores: a ``running`` turn owned by one of them is alive.
_LIVE_OWNERS: set[str] = set()


class StoreError(Error):
    """The database could not be used; the message names the file and the fix.

    ``reason`` is ``"corrupt"``, ``"locked"``, ``"io"``, ``"not_found"``, ``"closed"`` or
    ``"invalid"``; ``path`` the database file.
    """

    def __init__(self, message: str, *, path: Path | str | None = None, reason: str = "io") -> None:
        super().__init__(message)
        self.path = Path(path) if path is not None else None
        self.reason = reason


class NotFoundError(StoreError, KeyError):
    """No thread or turn with that id."""

    def __init__(self, message: str, *, path: Path | str | None = None) -> None:
        StoreError.__init__(self, message, path=path, reason="not_found")

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


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


@dataclass(frozen=True, slots=True)
class SearchHit:
    thread_id: str
    title: str | None
    turn_id: str | None
    #: The matching text around the match, the matched words between the ``highlight`` marks.
    snippet: str
    #: "user", "assistant" or "tool".
    kind: str = "user"


@dataclass(slots=True)
class _Held:
    """Text deltas held in memory until the next flush (see the module docstring)."""

    thread_id: str
    turn_id: str
    first: ev.TextDelta
    parts: list[str] = field(default_factory=list)
    count: int = 0
    since: float = 0.0


# ------------------------------------------------------------------------------------------
# Migrations: append-only, named, recorded in _migrations. Never change one that shipped.

Migration = Callable[[sqlite3.Connection], None]
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


@migration
def m001_initial(db: sqlite3.Connection) -> None:
    db.execute("""
        CREATE TABLE threads (
            id TEXT PRIMARY KEY,
            title TEXT,
            robot TEXT NOT NULL,
            kind TEXT NOT NULL DEFAULT 'robot' CHECK (kind IN ('robot', 'network')),
            folder TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            deleted_at REAL,
            current_turn_id TEXT,
            model TEXT,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cost REAL
        )""")
    db.execute("CREATE INDEX threads_updated ON threads(updated_at)")
    db.execute("""
        CREATE TABLE turns (
            id TEXT PRIMARY KEY,
            thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
            parent_turn_id TEXT REFERENCES turns(id) ON DELETE CASCADE,
            ordinal INTEGER NOT NULL,
            user_text TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL,
            finished_at REAL,
            run_id TEXT,
            status TEXT NOT NULL DEFAULT 'running'
                CHECK (status IN ('running', 'finished', 'failed', 'cancelled', 'interrupted')),
            owner TEXT,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cost REAL
        )""")
    db.execute("CREATE INDEX turns_thread ON turns(thread_id, ordinal)")
    db.execute("CREATE INDEX turns_parent ON turns(parent_turn_id, ordinal)")
    db.execute("CREATE INDEX turns_running ON turns(status) WHERE status = 'running'")
    db.execute("""
        CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
            turn_id TEXT NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
            run_id TEXT,
            seq INTEGER,
            kind TEXT NOT NULL,
            robot TEXT,
            task TEXT,
            ts REAL,
            data TEXT NOT NULL
        )""")
    db.execute("CREATE INDEX events_turn ON events(turn_id, id)")
    db.execute("CREATE INDEX events_thread ON events(thread_id, id)")


@migration
def m002_search(db: sqlite3.Connection) -> None:
    # The searchable text; the FTS5 index over it (search_fts) is created by _ensure_fts when this
    # SQLite has FTS5, so a database made without FTS5 still gets the index later.
    db.execute("""
        CREATE TABLE search_docs (
            id INTEGER PRIMARY KEY,
            thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
            turn_id TEXT,
            kind TEXT NOT NULL,
            body TEXT NOT NULL
        )""")
    db.execute("CREATE INDEX search_docs_thread ON search_docs(thread_id)")
    db.execute("CREATE TABLE _meta (key TEXT PRIMARY KEY, value TEXT)")


@migration
def m003_change_sets(db: sqlite3.Connection) -> None:
    # Proposed file changes still awaiting review (or whose outcome the model has not heard yet),
    # one set per thread and folder, so quitting the app in the middle of a review, or opening
    # another folder, loses nothing. File contents live in the checkpoint store
    # (content-addressed); this row holds their hashes.
    db.execute("""
        CREATE TABLE change_sets (
            thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
            folder TEXT NOT NULL,
            id TEXT NOT NULL,
            data TEXT NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (thread_id, folder)
        )""")


# ------------------------------------------------------------------------------------------
# Helpers


def _now() -> float:
    return time.time()


def _new_id() -> str:
    return uuid.uuid4().hex


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _redact(text: str) -> str:
    from workspace.secrets import redact

    return redact(text)


def status_for(event: ev.Event) -> str:
    """The turn status a terminal event means ("finished", "failed", "cancelled")."""
    return _TERMINAL_STATUS.get(event.kind, "finished")


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    if os.name == "nt":  # pragma: no cover - Windows only
        import ctypes

        kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
        handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return False
        code = ctypes.c_ulong()
        try:
            ok = kernel32.GetExitCodeProcess(handle, ctypes.byref(code))
            return bool(ok) and code.value == 259  # STILL_ACTIVE
        finally:
            kernel32.CloseHandle(handle)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def _owner_alive(owner: str | None) -> bool:
    if not owner:
        return False
    pid_text, _, _token = owner.partition(":")
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    if pid == os.getpid():
        return owner in _LIVE_OWNERS
    return _pid_alive(pid)


def _event_from_row(data: str) -> ev.Event:
    event = ev.event_from_dict(json.loads(data))
    if isinstance(event, ev.RunFailed) and isinstance(event.partial, dict):
        event = event.replace(partial=RobotResult.from_dict(event.partial))
    return event


def _fts_available() -> bool:
    try:
        probe = sqlite3.connect(":memory:")
        try:
            probe.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        finally:
            probe.close()
    except sqlite3.Error:
        return False
    return True


_FTS5: bool | None = None


def fts5_available() -> bool:
    """True when this Python's SQLite has the FTS5 extension (checked once)."""
    global _FTS5
    if _FTS5 is None:
        _FTS5 = _fts_available()
    return _FTS5


def _classify(exc: sqlite3.Error) -> str:
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return "locked"
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return "corrupt"
    if isinstance(exc, sqlite3.OperationalError):
        return "io"
    if isinstance(exc, sqlite3.DatabaseError) and not isinstance(
        exc, sqlite3.IntegrityError | sqlite3.ProgrammingError | sqlite3.InterfaceError
    ):
        return "corrupt"
    return "invalid"


def _transient(exc: sqlite3.Error) -> bool:
    return _classify(exc) in ("locked", "io")


# ------------------------------------------------------------------------------------------
# The store


class Store:
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
    to keep writes queued in memory, without touching the file, after a write failed. The path
    ``":memory:"`` gives a temporary in-memory store (the desktop's fallback).
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
    ) -> None:
        self.db_path = Path(path) if str(path) != ":memory:" else Path(":memory:")
        self._memory = str(path) == ":memory:"
        self.busy_timeout = float(busy_timeout)
        self.write_timeout = float(write_timeout)
        self.flush_interval = float(flush_interval)
        self.retry_after = float(retry_after)
        #: Where a corrupt database was moved to when ``recover=True`` had to act, else None.
        self.recovered_from: Path | None = None
        #: Ids of the turns this open marked ``interrupted`` (left running by a crashed process).
        self.interrupted_turns: list[str] = []
        self.fts = False
        self._lock = threading.RLock()
        self._owner = f"{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self._held: dict[tuple[str, str, str, str | None], _Held] = {}
        self._live_text: dict[str, list[str]] = {}
        self._queued: list[tuple[str, tuple[Any, ...]]] = []
        self._quiet_until = 0.0
        self._closed = False
        self._conn: sqlite3.Connection = self._connect(recover=recover)
        _LIVE_OWNERS.add(self._owner)

    @classmethod
    def open(cls, path: str | Path, **options: Any) -> Store:
        """Open (creating if needed) the database at ``path``; see :class:`Store` for options."""
        return cls(path, **options)

    # -- opening -----------------------------------------------------------------------------
    def _connect(self, *, recover: bool) -> sqlite3.Connection:
        if not self._memory:
            try:
                self.db_path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"Cannot create the folder for the database {self.db_path}: {exc.strerror or exc}. "
                    "Check the permissions, or set ROBOTLAB_HOME to a writable folder.",
                    path=self.db_path, reason="io",
                ) from exc
            if self.db_path.is_dir():
                raise StoreError(f"The database path {self.db_path} is a folder; remove it or set ROBOTLAB_HOME "
                                 "to another location.", path=self.db_path, reason="io")
        try:
            return self._open_connection()
        except sqlite3.Error as exc:
            kind = _classify(exc)
            if kind == "corrupt":
                if recover and not self._memory:
                    self.recovered_from = self._move_aside()
                    log.warning("the database %s was not usable (%s); it was moved aside as %s and a fresh "
                                "database was created", self.db_path, exc, self.recovered_from)
                    try:
                        return self._open_connection()
                    except sqlite3.Error as again:
                        raise self._open_error(again) from again
                raise StoreError(
                    f"{self.db_path} is not a usable RobotLab database ({exc}). Nothing was changed. To start "
                    f"over with a fresh database, keeping this file as {self.db_path.name}.corrupt-<time>: "
                    "“Move aside and start fresh” in the app, or `robotlab threads recover`; or move the file "
                    "away yourself and restore a backup.",
                    path=self.db_path, reason="corrupt",
                ) from exc
            raise self._open_error(exc) from exc

    def _open_error(self, exc: sqlite3.Error) -> StoreError:
        kind = _classify(exc)
        if kind == "locked":
            return StoreError(
                f"The database {self.db_path} is locked by another program (another RobotLab window, or a tool "
                f"such as the sqlite3 shell keeping a transaction open) and did not become free within "
                f"{self.busy_timeout:g} s. Close that program and try again.",
                path=self.db_path, reason="locked",
            )
        if kind == "corrupt":
            return StoreError(f"{self.db_path} is not a usable RobotLab database ({exc}). Move it aside and try "
                              "again.", path=self.db_path, reason="corrupt")
        return StoreError(
            f"Cannot open the database {self.db_path}: {exc}. Check that the folder exists and is writable "
            "(`robotlab paths` shows where the database lives; ROBOTLAB_HOME moves it).",
            path=self.db_path, reason="io",
        )

    def _open_connection(self) -> sqlite3.Connection:
        conn = sqlite3.connect(str(self.db_path), timeout=self.busy_timeout, isolation_level=None,
                               check_same_thread=False)
        conn.row_factory = sqlite3.Row
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            conn.execute("PRAGMA foreign_keys = ON")
            if not self._memory:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
                if mode is None or str(mode[0]).lower() != "wal":
                    log.warning("the database %s could not switch to WAL mode (%s)", self.db_path, mode)
                conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._migrate(conn)
                self._ensure_fts(conn)
                self._recover_interrupted(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute(f"PRAGMA busy_timeout = {int(self.write_timeout * 1000)}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _move_aside(self) -> Path:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        target = self.db_path.with_name(f"{self.db_path.name}.corrupt-{stamp}")
        n = 1
        while target.exists():
            n += 1
            target = self.db_path.with_name(f"{self.db_path.name}.corrupt-{stamp}-{n}")
        try:
            os.replace(self.db_path, target)
            for suffix in ("-wal", "-shm", "-journal"):
                side = self.db_path.with_name(self.db_path.name + suffix)
                if side.exists():
                    os.replace(side, target.with_name(target.name + suffix))
        except OSError as exc:
            raise StoreError(f"{self.db_path} is not a usable database and could not be moved aside: {exc}. "
                             "Move or delete it yourself.", path=self.db_path, reason="corrupt") from exc
        return target

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
        done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
        known = {fn.__name__ for fn in MIGRATIONS}
        newer = sorted(done - known)
        if newer:
            log.warning("the database has migrations this version does not know (%s): it was used by a newer "
                        "RobotLab Workspace", ", ".join(newer))
        for fn in MIGRATIONS:
            if fn.__name__ not in done:
                fn(conn)
                conn.execute("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", (fn.__name__, _now()))

    def _recover_interrupted(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute("SELECT id, thread_id, owner FROM turns WHERE status = 'running'").fetchall()
        dead = [(turn_id, thread_id) for turn_id, thread_id, owner in rows if not _owner_alive(owner)]
        now = _now()
        for turn_id, thread_id in dead:
            conn.execute("UPDATE turns SET status = 'interrupted', finished_at = ? WHERE id = ?", (now, turn_id))
            # The streamed text after the last complete ``text`` event was never indexed.
            tail = _unindexed_tail(
                [_event_from_row(r[0]) for r in
                 conn.execute("SELECT data FROM events WHERE turn_id = ? ORDER BY id", (turn_id,))]
            )
            if tail:
                self._index(conn, thread_id, turn_id, "assistant", tail)
            self.interrupted_turns.append(turn_id)
        if dead:
            log.info("marked %d turn(s) left running by a stopped process as interrupted", len(dead))

    def _ensure_fts(self, conn: sqlite3.Connection) -> None:
        exists = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'search_fts'").fetchone() is not None
        if not fts5_available():
            self.fts = False
            if exists:  # writes below do not reach the index: rebuild it when FTS5 is back
                conn.execute("INSERT OR REPLACE INTO _meta (key, value) VALUES ('fts_stale', '1')")
            return
        self.fts = True
        stale = conn.execute("SELECT value FROM _meta WHERE key = 'fts_stale'").fetchone()
        if not exists:
            conn.execute("CREATE VIRTUAL TABLE search_fts USING fts5(body, content='search_docs', "
                         "content_rowid='id', tokenize='unicode61 remove_diacritics 2')")
            conn.execute("INSERT INTO search_fts(search_fts) VALUES ('rebuild')")
        elif stale:
            conn.execute("INSERT INTO search_fts(search_fts) VALUES ('rebuild')")
        conn.execute("DELETE FROM _meta WHERE key = 'fts_stale'")

    def _index(self, conn: sqlite3.Connection, thread_id: str, turn_id: str | None, kind: str, body: str) -> None:
        for sql, params in self._index_statements(thread_id, turn_id, kind, body):
            conn.execute(sql, params)

    def _index_statements(self, thread_id: str, turn_id: str | None, kind: str,
                          body: str) -> list[tuple[str, tuple[Any, ...]]]:
        body = body.strip()
        if not body:
            return []
        out: list[tuple[str, tuple[Any, ...]]] = [
            ("INSERT INTO search_docs (thread_id, turn_id, kind, body) VALUES (?, ?, ?, ?)",
             (thread_id, turn_id, kind, body))
        ]
        if self.fts:
            out.append(("INSERT INTO search_fts (rowid, body) VALUES (last_insert_rowid(), ?)", (body,)))
        return out

    # -- closing ------------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Write held deltas and queued rows, mark this store's unfinished turns interrupted, close."""
        with self._lock:
            if self._closed:
                return
            self._quiet_until = 0.0
            try:
                self._conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
                statements = self._held_statements(None)
                statements.append((
                    "UPDATE turns SET status = 'interrupted', finished_at = ? WHERE status = 'running' AND owner = ?",
                    (_now(), self._owner),
                ))
                self._write(statements)
            except (StoreError, sqlite3.Error) as exc:
                lost = len(self._queued)
                log.error("closing the database %s: %s (%d queued row(s) could not be written)", self.db_path, exc,
                          lost)
            finally:
                self._closed = True
                _LIVE_OWNERS.discard(self._owner)
                with contextlib.suppress(sqlite3.Error):
                    self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Store {str(self.db_path)!r}{' closed' if self._closed else ''}>"

    # -- low level ------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"The database {self.db_path} is closed.", path=self.db_path, reason="closed")

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            self._check_open()
            try:
                return self._conn.execute(sql, tuple(params)).fetchall()
            except sqlite3.Error as exc:
                raise self._runtime_error(exc, "reading") from exc

    def _runtime_error(self, exc: sqlite3.Error, doing: str) -> StoreError:
        kind = _classify(exc)
        if kind == "locked":
            hint = "another program keeps it locked; close that program (writes are kept and retried)"
        elif kind == "corrupt":
            hint = "the file is damaged; restart the app to move it aside and start a fresh database"
        elif "full" in str(exc).lower():
            hint = "the disk is full; free some space (writes are kept and retried)"
        else:
            hint = "check the disk and the file's permissions"
        return StoreError(f"Error {doing} the database {self.db_path}: {exc}; {hint}.", path=self.db_path, reason=kind)

    def _write(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        """Run ``statements`` (after any queued ones) in one transaction."""
        with self._lock:
            self._check_open()
            if not statements and not self._queued:
                return
            batch = self._queued + statements if self._queued else statements
            if self._queued and time.monotonic() < self._quiet_until:
                self._queue(batch)
                raise StoreError(f"The database {self.db_path} is unavailable; {len(self._queued)} row(s) are kept "
                                 "in memory and written when it is free again.", path=self.db_path, reason="locked")
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")
                for sql, params in batch:
                    conn.execute(sql, params)
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                if _transient(exc):
                    self._queue(batch)
                    self._quiet_until = time.monotonic() + self.retry_after
                elif self._queued:
                    log.error("dropping %d queued database write(s) after an error: %s", len(self._queued), exc)
                    self._queued = []
                raise self._runtime_error(exc, "writing") from exc
            self._queued = []

    def _queue(self, batch: list[tuple[str, tuple[Any, ...]]]) -> None:
        if len(batch) > _MAX_QUEUED:
            log.error("dropping %d queued database writes (the database stayed unavailable too long)",
                      len(batch) - _MAX_QUEUED)
            batch = batch[-_MAX_QUEUED:]
        self._queued = batch

    @property
    def queued_writes(self) -> int:
        """Rows kept in memory because the database was unavailable (written on the next write)."""
        return len(self._queued)

    # -- threads ----------------------------------------------------------------------------------
    _THREAD_SQL = ("SELECT t.*, (SELECT COUNT(*) FROM turns u WHERE u.thread_id = t.id) AS turn_count "
                   "FROM threads t")

    @staticmethod
    def _thread(row: sqlite3.Row) -> ThreadInfo:
        return ThreadInfo(
            id=row["id"], title=row["title"], robot=row["robot"], kind=row["kind"], folder=row["folder"],
            created_at=row["created_at"], updated_at=row["updated_at"], deleted_at=row["deleted_at"],
            turn_count=row["turn_count"], input_tokens=row["input_tokens"], output_tokens=row["output_tokens"],
            cost=row["cost"], current_turn_id=row["current_turn_id"], model=row["model"],
        )

    def create_thread(self, *, robot: str, title: str | None = None, kind: str = "robot",
                      folder: str | Path | None = None) -> ThreadInfo:
        if kind not in THREAD_KINDS:
            raise ValueError(f"Invalid thread kind: {kind}. Must be one of: {', '.join(THREAD_KINDS)}")
        thread_id = _new_id()
        now = _now()
        self._write([(
            "INSERT INTO threads (id, title, robot, kind, folder, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (thread_id, _redact(title) if title else None, robot, kind, str(folder) if folder else None, now, now),
        )])
        return self.get_thread(thread_id)

    def get_thread(self, thread_id: str) -> ThreadInfo:
        rows = self._read(self._THREAD_SQL + " WHERE t.id = ?", (thread_id,))
        if not rows:
            raise NotFoundError(f"No thread with id {thread_id!r} in {self.db_path}.", path=self.db_path)
        return self._thread(rows[0])

    def list_threads(self, include_deleted: bool = False) -> list[ThreadInfo]:
        """Threads, most recently updated first (soft-deleted ones only with ``include_deleted``)."""
        where = "" if include_deleted else " WHERE t.deleted_at IS NULL"
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
        self._write([("UPDATE threads SET title = ? WHERE id = ?", (_redact(clean) if clean else None, thread_id))])
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
            (thread_id, str(snapshot["folder"]), str(snapshot["id"]), _dumps(dict(snapshot)), _now()),
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
        self._write([("UPDATE threads SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL", (_now(), thread_id))])
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
                              (_now() - float(older_than),))
        ids = [r["id"] for r in rows]
        if not ids:
            return 0
        statements: list[tuple[str, tuple[Any, ...]]] = []
        for thread_id in ids:
            # Children before parents: the turn tree's self-reference cascades, but be explicit.
            statements.append(("DELETE FROM events WHERE thread_id = ?", (thread_id,)))
            statements.append(("DELETE FROM search_docs WHERE thread_id = ?", (thread_id,)))
            statements.append(("UPDATE turns SET parent_turn_id = NULL WHERE thread_id = ?", (thread_id,)))
            statements.append(("DELETE FROM turns WHERE thread_id = ?", (thread_id,)))
            statements.append(("DELETE FROM threads WHERE id = ?", (thread_id,)))
        if self.fts:
            statements.append(("INSERT INTO search_fts(search_fts) VALUES ('rebuild')", ()))
        self._write(statements)
        return len(ids)

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
        turn_id = turn_id or _new_id()
        now = _now()
        text = _redact(user_text or "")
        statements: list[tuple[str, tuple[Any, ...]]] = [
            ("INSERT INTO turns (id, thread_id, parent_turn_id, ordinal, user_text, created_at, status, owner) "
             "VALUES (?, ?, ?, (SELECT COALESCE(MAX(ordinal), 0) + 1 FROM turns WHERE thread_id = ?), ?, ?, "
             "'running', ?)",
             (turn_id, thread_id, parent_turn_id, thread_id, text, now, self._owner)),
            ("UPDATE threads SET current_turn_id = ?, updated_at = ? WHERE id = ?", (turn_id, now, thread_id)),
        ]
        statements += self._index_statements(thread_id, turn_id, "user", text)
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
        now = _now()
        statements = self._held_statements(turn_id)
        statements.append(("UPDATE turns SET status = ?, finished_at = ? WHERE id = ?", (status, now, turn_id)))
        statements.append(("UPDATE threads SET updated_at = ? WHERE id = (SELECT thread_id FROM turns WHERE id = ?)",
                           (now, turn_id)))
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

    # -- events ------------------------------------------------------------------------------------
    def append_event(self, thread_id: str, turn_id: str, event: ev.Event) -> None:
        """Store one event of the turn's run (one short transaction; text deltas are held briefly).

        Raises :class:`StoreError` when the database cannot be written; the event is then kept in
        memory and written with the next write.
        """
        if isinstance(event, ev.TextDelta) and self.flush_interval > 0:
            with self._lock:
                self._check_open()
                self._live_text.setdefault(turn_id, []).append(event.text)
                if self._hold(thread_id, turn_id, event):
                    self._write(self._due_statements())
            return
        self.append_events(thread_id, turn_id, [event])

    def append_events(self, thread_id: str, turn_id: str, events: Iterable[ev.Event]) -> None:
        """Store several events of one turn in one transaction (held deltas of the turn go first)."""
        with self._lock:
            self._check_open()
            statements: list[tuple[str, tuple[Any, ...]]] = []
            for event in events:
                if isinstance(event, ev.TextDelta):
                    self._live_text.setdefault(turn_id, []).append(event.text)
                    if self.flush_interval > 0:
                        self._hold(thread_id, turn_id, event)
                    else:
                        statements += self._event_statements(thread_id, turn_id, event)
                    continue
                statements += self._held_statements(turn_id)
                statements += self._event_statements(thread_id, turn_id, event)
            statements += self._due_statements()
            self._write(statements)

    def _hold(self, thread_id: str, turn_id: str, event: ev.TextDelta) -> bool:
        """Hold one delta; True when some held text is due for writing."""
        key = (turn_id, event.run_id, event.robot, event.task)
        held = self._held.get(key)
        now = time.monotonic()
        if held is None:
            held = self._held[key] = _Held(thread_id, turn_id, event, since=now)
        held.parts.append(event.text)
        held.count += 1
        return any(now - h.since >= self.flush_interval for h in self._held.values())

    def _due_statements(self) -> list[tuple[str, tuple[Any, ...]]]:
        now = time.monotonic()
        out: list[tuple[str, tuple[Any, ...]]] = []
        for key in [k for k, h in self._held.items() if now - h.since >= self.flush_interval]:
            out += self._held_rows(self._held.pop(key))
        return out

    def _held_statements(self, turn_id: str | None) -> list[tuple[str, tuple[Any, ...]]]:
        out: list[tuple[str, tuple[Any, ...]]] = []
        for key in [k for k in self._held if turn_id is None or k[0] == turn_id]:
            out += self._held_rows(self._held.pop(key))
        return out

    def _held_rows(self, held: _Held) -> list[tuple[str, tuple[Any, ...]]]:
        event = held.first.replace(text="".join(held.parts))
        return self._event_statements(held.thread_id, held.turn_id, event, extra={"deltas": held.count})

    def has_held_text(self, turn_id: str | None = None) -> bool:
        """True while text deltas (of ``turn_id``, or of any turn) wait for their flush."""
        return any(turn_id is None or k[0] == turn_id for k in self._held)

    def flush(self, turn_id: str | None = None) -> None:
        """Write the held text deltas (of one turn, or all) now."""
        with self._lock:
            if self._closed:
                return
            self._write(self._held_statements(turn_id))

    def flush_due(self) -> None:
        """Write the held text deltas that are older than ``flush_interval``."""
        with self._lock:
            if self._closed:
                return
            self._write(self._due_statements())

    def _event_statements(self, thread_id: str, turn_id: str, event: ev.Event, *,
                          extra: dict[str, Any] | None = None) -> list[tuple[str, tuple[Any, ...]]]:
        data = event.to_dict()
        if extra:
            data.update(extra)
        out: list[tuple[str, tuple[Any, ...]]] = [(
            "INSERT INTO events (thread_id, turn_id, run_id, seq, kind, robot, task, ts, data) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (thread_id, turn_id, event.run_id, event.seq, event.kind, event.robot, event.task, event.ts,
             _redact(_dumps(data))),
        )]
        kind = event.kind
        if kind == "run_started":
            model = getattr(event, "model", None) or None
            out.append(("UPDATE turns SET run_id = COALESCE(run_id, ?) WHERE id = ?", (event.run_id, turn_id)))
            out.append(("UPDATE threads SET model = COALESCE(?, model), updated_at = ? WHERE id = ?",
                        (model, _now(), thread_id)))
        elif kind == "usage":
            usage: Any = event
            cost = usage.cost
            for table, key in (("turns", turn_id), ("threads", thread_id)):
                out.append((
                    f"UPDATE {table} SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, "
                    "cost = CASE WHEN ? IS NULL THEN cost ELSE COALESCE(cost, 0) + ? END WHERE id = ?",
                    (int(usage.input_tokens or 0), int(usage.output_tokens or 0), cost, cost, key),
                ))
        elif kind == "text":
            self._live_text.pop(turn_id, None)
            out += self._index_statements(thread_id, turn_id, "assistant", _redact(getattr(event, "text", "")))
        elif kind == "tool_use":
            name = getattr(event, "name", "")
            args = getattr(event, "input", None)
            body = f"{name} {_dumps(args) if args not in (None, {}) else ''}"
            out += self._index_statements(thread_id, turn_id, "tool", _redact(body))
        elif event.terminal:
            tail = "".join(self._live_text.pop(turn_id, []))
            if tail and kind != "run_finished":
                out += self._index_statements(thread_id, turn_id, "assistant", _redact(tail))
            out.append((
                "UPDATE turns SET status = ?, finished_at = ? WHERE id = ? AND status = 'running' "
                "AND (run_id IS NULL OR run_id = ?)",
                (status_for(event), _now(), turn_id, event.run_id),
            ))
            out.append(("UPDATE threads SET updated_at = ? WHERE id = ?", (_now(), thread_id)))
        return out

    def turn_events(self, turn_id: str, *, include_held: bool = True) -> list[ev.Event]:
        """The turn's events as stored, in order (held text deltas last, as one delta per run)."""
        rows = self._read("SELECT data FROM events WHERE turn_id = ? ORDER BY id", (turn_id,))
        events = [_event_from_row(r["data"]) for r in rows]
        if include_held:
            with self._lock:
                for key, held in self._held.items():
                    if key[0] == turn_id:
                        events.append(held.first.replace(text="".join(held.parts)))
        return events

    def path_events(self, thread_id: str, leaf_turn_id: str | None = None) -> list[tuple[TurnInfo, list[ev.Event]]]:
        """Each turn along the path with its events (one query for all of them)."""
        turns = self.path(thread_id, leaf_turn_id)
        if not turns:
            return []
        by_turn = self._events_of([t.id for t in turns])
        return [(t, by_turn.get(t.id, [])) for t in turns]

    def _events_of(self, turn_ids: list[str], kinds: Sequence[str] | None = None) -> dict[str, list[ev.Event]]:
        out: dict[str, list[ev.Event]] = {tid: [] for tid in turn_ids}
        for start in range(0, len(turn_ids), 500):
            chunk = turn_ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT turn_id, data FROM events WHERE turn_id IN ({marks})"
            params: list[Any] = list(chunk)
            if kinds is not None:
                sql += f" AND kind IN ({','.join('?' * len(kinds))})"
                params += list(kinds)
            for row in self._read(sql + " ORDER BY id", params):
                out[row["turn_id"]].append(_event_from_row(row["data"]))
        with self._lock:
            for key, held in self._held.items():
                if key[0] in out and (kinds is None or "text_delta" in kinds):
                    out[key[0]].append(held.first.replace(text="".join(held.parts)))
        return out

    def thread_events(self, thread_id: str) -> list[tuple[str, ev.Event]]:
        """Every stored event of the thread, every branch, in the order stored: ``(turn_id, event)``."""
        rows = self._read("SELECT turn_id, data FROM events WHERE thread_id = ? ORDER BY id", (thread_id,))
        return [(r["turn_id"], _event_from_row(r["data"])) for r in rows]

    # -- derived --------------------------------------------------------------------------------
    def history_messages(self, thread_id: str, leaf_turn_id: str | None = None) -> list[Message]:
        """The robot conversation along the path: user text, assistant text, tool calls and results.

        Built from each turn's terminal result (``run_finished.result``, or the ``partial`` of
        ``run_cancelled`` / ``run_failed``); for a turn without one (interrupted) from its events.
        Every tool call is answered (an unanswered one gets an error result), so the
        conversation is valid to send to a model.
        """
        turns = self.path(thread_id, leaf_turn_id)
        if not turns:
            return []
        ids = [t.id for t in turns]
        terminals = self._events_of(ids, kinds=sorted(ev.TERMINAL_KINDS))
        results = {tid: _terminal_result(terminals.get(tid) or []) for tid in ids}
        missing = [tid for tid in ids if results[tid] is None]
        full = self._events_of(missing) if missing else {}
        messages: list[Message] = []
        for turn in turns:
            if turn.user_text:
                messages.append(TextMessage(role="user", content=turn.user_text))
            result = results[turn.id]
            if result is not None:
                messages += conversation_from_result(result)
            else:
                messages += conversation_from_events(full.get(turn.id, []))
        return messages

    def turn_result(self, turn_id: str) -> RobotResult | None:
        """The RobotResult the turn's run ended with (partial after a stop or failure), or None."""
        events = self._events_of([turn_id], kinds=sorted(ev.TERMINAL_KINDS))[turn_id]
        return _terminal_result(events)

    def usage(self, thread_id: str) -> Usage:
        """Tokens and cost of every run of the thread (all branches)."""
        info = self.get_thread(thread_id)
        return Usage(info.input_tokens, info.output_tokens, info.cost)

    def search(self, query: str, limit: int = 50, *, highlight: tuple[str, str] = ("[", "]"),
               include_deleted: bool = False) -> list[SearchHit]:
        """Full-text search over user text, robot text and tool calls of every thread (best first)."""
        words = [w for w in (t.replace('"', "").strip() for t in query.split()) if w]
        if not words:
            return []
        deleted = "" if include_deleted else " AND t.deleted_at IS NULL"
        if self.fts:
            match = " ".join(f'"{w}"*' for w in words)
            start, end = highlight
            try:
                rows = self._read(
                    "SELECT d.thread_id, t.title, d.turn_id, d.kind,"
                    " snippet(search_fts, 0, ?, ?, '…', 12) AS snip"
                    " FROM search_fts JOIN search_docs d ON d.id = search_fts.rowid"
                    " JOIN threads t ON t.id = d.thread_id"
                    f" WHERE search_fts MATCH ?{deleted} ORDER BY rank, d.id DESC LIMIT ?",
                    (start, end, match, int(limit)),
                )
            except StoreError:
                rows = []
            return [SearchHit(r["thread_id"], r["title"], r["turn_id"], r["snip"], r["kind"]) for r in rows]
        conditions = " AND ".join("d.body LIKE ? ESCAPE '\\'" for _ in words)
        params: list[Any] = [f"%{_like_escape(w)}%" for w in words]
        rows = self._read(
            "SELECT d.thread_id, t.title, d.turn_id, d.kind, d.body FROM search_docs d"
            f" JOIN threads t ON t.id = d.thread_id WHERE {conditions}{deleted} ORDER BY d.id DESC LIMIT ?",
            (*params, int(limit)),
        )
        return [SearchHit(r["thread_id"], r["title"], r["turn_id"], _snippet(r["body"], words, highlight), r["kind"])
                for r in rows]

    # -- maintenance ------------------------------------------------------------------------------
    def integrity_check(self) -> str:
        """SQLite's ``quick_check`` result ("ok" when the file is sound)."""
        rows = self._read("PRAGMA quick_check")
        return "; ".join(str(r[0]) for r in rows)

    def iter_rows(self, sql: str, params: Sequence[Any] = ()) -> Iterator[sqlite3.Row]:
        """Read-only access for tools and tests (one statement)."""
        yield from self._read(sql, params)


# ------------------------------------------------------------------------------------------
# Conversations from results and events


def _terminal_result(events: Sequence[ev.Event]) -> RobotResult | None:
    for event in reversed(events):
        if isinstance(event, ev.RunFinished):
            value: Any = event.result
        elif isinstance(event, ev.RunCancelled | ev.RunFailed):
            value = event.partial
        else:
            continue
        if isinstance(value, RobotResult):
            return value
        if isinstance(value, dict):
            return RobotResult.from_dict(value)
        return None
    return None


def conversation_from_result(result: RobotResult) -> list[Message]:
    """The assistant's messages of a run, each tool-call message followed by its results."""
    results = [m for m in result.tool_calls if isinstance(m, ToolResultMessage)]
    by_id: dict[str, ToolResultMessage] = {}
    for r in results:
        if r.tool.id and r.tool.id not in by_id:
            by_id[r.tool.id] = r
    used: set[int] = set()
    out: list[Message] = []
    for message in result.output:
        out.append(message)
        if not isinstance(message, ToolCallMessage):
            continue
        for call in message.tools:
            found = by_id.get(call.id) if call.id else None
            if found is None:  # no id: the first unused result of that tool, in order
                found = next((r for r in results if id(r) not in used and r.tool.id in (None, call.id)
                              and r.tool.name == call.name), None)
            if found is None or id(found) in used:
                found = ToolResultMessage(tool=call, content={"error": MISSING_RESULT_ERROR})
            used.add(id(found))
            out.append(found)
    return out


def conversation_from_events(events: Sequence[ev.Event]) -> list[Message]:
    """The assistant's messages rebuilt from a run's events (for runs that never ended)."""
    out: list[Message] = []
    parts: list[str] = []
    final: list[str | None] = [None]
    calls: list[ToolMessage] = []
    results: dict[str, ToolResultMessage] = {}

    def close_text(stop: str) -> None:
        text = final[0] if final[0] is not None else "".join(parts)
        if text:
            out.append(TextMessage(role="assistant", content=text, stop_reason=stop))
        parts.clear()
        final[0] = None

    def close_calls() -> None:
        if not calls:
            return
        out.append(ToolCallMessage(role="assistant", tools=list(calls)))
        for call in calls:
            out.append(results.get(call.id or "") or ToolResultMessage(tool=call,
                                                                     content={"error": INTERRUPTED_TOOL_ERROR}))
        calls.clear()
        results.clear()

    by_id: dict[str, ToolMessage] = {}
    for event in events:
        if isinstance(event, ev.TextDelta):
            close_calls()
            parts.append(event.text)
        elif isinstance(event, ev.Text):
            close_calls()
            final[0] = event.text
            parts.clear()
        elif isinstance(event, ev.ToolUse):
            if final[0] is not None or parts:
                close_text("tool")
            args = event.input if isinstance(event.input, dict) else {}
            call = ToolMessage(id=event.id or None, name=event.name, input=args)
            calls.append(call)
            by_id[event.id] = call
        elif isinstance(event, ev.ToolResult):
            call_for = by_id.get(event.id) or ToolMessage(id=event.id or None, name=event.name, input={})
            payload = event.payload if isinstance(event.payload, dict) and "data" in event.payload \
                else {"data": event.payload}
            results[event.id] = ToolResultMessage(tool=call_for, content=payload)
        elif isinstance(event, ev.ToolError):
            call_for = by_id.get(event.id) or ToolMessage(id=event.id or None, name=event.name, input={})
            results[event.id] = ToolResultMessage(tool=call_for, content={"error": event.error})
    close_calls()
    close_text("stop")
    return out


def _unindexed_tail(events: Sequence[ev.Event]) -> str:
    parts: list[str] = []
    for event in events:
        if isinstance(event, ev.TextDelta):
            parts.append(event.text)
        elif isinstance(event, ev.Text):
            parts = []
    return "".join(parts)


def coalesce_text(events: Iterable[ev.Event]) -> list[ev.Event]:
    """Events with each model turn's ``text_delta`` run replaced by one ``text`` event.

    The text sits where its first delta was; a later ``text`` event of the same run (the
    complete text of that model turn) replaces the deltas' text. Text of a run that was
    stopped before its ``text`` event (cancelled, failed, interrupted) is kept from the deltas.
    """
    out: list[ev.Event | None] = []
    open_at: dict[tuple[str, str, str | None], tuple[int, list[str]]] = {}
    for event in events:
        key = (event.run_id, event.robot, event.task)
        if isinstance(event, ev.TextDelta):
            if key in open_at:
                open_at[key][1].append(event.text)
            else:
                open_at[key] = (len(out), [event.text])
                out.append(event)
            continue
        if isinstance(event, ev.Text) and key in open_at:
            index, _ = open_at.pop(key)
            out[index] = event
            continue
        if isinstance(event, ev.ToolUse) or event.terminal:
            _close(out, open_at, key)
        out.append(event)
    for key in list(open_at):
        _close(out, open_at, key)
    return [e for e in out if e is not None]


def _close(out: list[ev.Event | None], open_at: dict[tuple[str, str, str | None], tuple[int, list[str]]],
           key: tuple[str, str, str | None]) -> None:
    found = open_at.pop(key, None)
    if found is None:
        return
    index, parts = found
    first = out[index]
    assert first is not None
    out[index] = ev.Text(run_id=first.run_id, robot=first.robot, seq=first.seq, task=first.task, ts=first.ts,
                         text="".join(parts))


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _snippet(body: str, words: Sequence[str], highlight: tuple[str, str], width: int = 60) -> str:
    low = body.lower()
    pos = min((p for p in (low.find(w.lower()) for w in words) if p >= 0), default=0)
    start = max(0, pos - width // 2)
    text = body[start:start + width * 2]
    for w in words:
        i = text.lower().find(w.lower())
        if i >= 0:
            text = text[:i] + highlight[0] + text[i:i + len(w)] + highlight[1] + text[i + len(w):]
    return ("…" if start else "") + " ".join(text.split()) + ("…" if start + width * 2 < len(body) else "")
