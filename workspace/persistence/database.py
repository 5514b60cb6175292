"""The threads database file: one SQLite connection shared behind a lock.

Opening creates missing folders and the database, switches to WAL (``synchronous=NORMAL``,
foreign keys on, a busy timeout) and applies pending migrations (:mod:`.schema`). SQLite's
errors are classified (:func:`classify`): a damaged file raises :class:`StoreError` with
``reason="corrupt"`` naming the file (``recover=True`` moves it aside as
``<name>.corrupt-<time>`` and starts a fresh database), a database another program keeps locked
raises ``reason="locked"`` after the busy timeout instead of hanging.

Every write is one short ``BEGIN IMMEDIATE`` transaction, and every text it stores is redacted
first (:func:`redacted`: the database's one choke point for secrets). A write that fails for a passing
reason (locked, disk full) raises :class:`StoreError` but keeps its rows queued in memory; the
next write (or :meth:`Database.close`) writes them first, so a short outage loses nothing and
keeps the order. After a failure the file is left alone for ``retry_after`` seconds, so a locked
database cannot stall the caller (the UI thread) on every event.

Each open database has an *owner* token (``pid:random``): rows a process marks as its own (the
turns it is running) can be told apart from those of a process that is gone
(:func:`owner_alive`).

SQLite's ``quick_check`` reads every page (about 1 ms per MB: 177 ms for a 163 MB database). Each open
database leaves a marker file beside it (``<name>.open-<pid>-<token>``) until it is closed; a marker
whose process is gone says the last exit was not clean. ``integrity_check="always"`` (the default: the
command line, the library) checks at every open; ``"after_unclean_exit"`` (the window) checks at open
only when such a marker is found, and :meth:`Database.integrity_problem` checks a cleanly closed file
afterwards, off the caller's thread, on a connection of its own.

A worker thread reading much of the database (a long thread's events, its conversation) reads inside
:meth:`Database.reading_apart`: through a read-only connection of its own, so it never holds the store's lock
the caller's own reads and writes need, and each of its reads first waits while the caller holds such readers
back (:meth:`Database.background_held`: the window bringing in a search hit far up a long thread).
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
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Self, TypeAlias
from urllib.parse import quote

from workspace.errors import Error
from workspace.persistence.schema import ensure_fts, migrate

log = logging.getLogger("workspace.persistence")

#: One SQL statement and its parameters, written in a batch by :meth:`Database._write`.
Statement: TypeAlias = tuple[str, tuple[Any, ...]]

_MAX_QUEUED = 200_000

#: When the file's structure is checked at open (see the module docstring).
INTEGRITY_CHECKS = ("always", "after_unclean_exit")

# Tokens of this process's open databases: a row owned by one of them belongs to a live store.
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


# ------------------------------------------------------------------------------------------
# Helpers


def now() -> float:
    """The time stored in the database (seconds since the epoch)."""
    return time.time()


def new_id() -> str:
    """A new thread or turn id."""
    return uuid.uuid4().hex


def dumps(value: Any) -> str:
    """JSON as stored in the database's text columns (compact, UTF-8)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def redact(text: str) -> str:
    """``text`` with the secrets of the environment replaced (nothing secret reaches the file)."""
    from workspace.secrets import redact

    return redact(text)


def redacted(statements: list[Statement]) -> list[Statement]:
    """``statements`` with every text parameter redacted (:func:`workspace.secrets.redact`): the
    one place where what is stored is cleaned, whatever the table. Bytes (compressed blobs) are
    redacted before they are compressed (:mod:`.blobs`)."""
    texts = [p for _, params in statements for p in params if isinstance(p, str) and len(p) >= 6]
    if not texts:
        return statements
    from workspace.secrets import redactor

    clean = redactor()
    joined = "\n".join(texts)
    if clean(joined) == joined:  # the usual case: nothing to hide anywhere, one pass over it all
        return statements
    return [(sql, tuple(clean(p) if isinstance(p, str) else p for p in params)) for sql, params in statements]


def pid_alive(pid: int) -> bool:
    """Whether a process with that id runs (on Windows too)."""
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


def owner_alive(owner: str | None) -> bool:
    """Whether the database owner token ``pid:token`` belongs to a store still open (in this
    process) or to a process still running."""
    if not owner:
        return False
    pid_text, _, _token = owner.partition(":")
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    if pid == os.getpid():
        return owner in _LIVE_OWNERS
    return pid_alive(pid)


def _glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[]" else c for c in name)


def open_read_only(path: Path, *, timeout: float) -> sqlite3.Connection:
    """A read-only connection to the database file ``path`` (rows as :class:`sqlite3.Row`), usable from any
    thread: what a worker reads through instead of the store's own connection."""
    conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=timeout, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    return conn


def classify(exc: sqlite3.Error) -> str:
    """What went wrong, as :attr:`StoreError.reason`: ``locked``, ``corrupt``, ``io`` or ``invalid``."""
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


def transient(exc: sqlite3.Error) -> bool:
    """True for errors that pass (a lock, a full disk): the rows are kept and written later."""
    return classify(exc) in ("locked", "io")


# ------------------------------------------------------------------------------------------
# The database


class Database:
    """One SQLite file behind a lock: opening, classified errors, short writes, a queue for outages.

    :class:`~workspace.persistence.Store` builds the threads, turns and events on it; see
    there for the options. ``":memory:"`` gives a temporary in-memory database.
    """

    def __init__(self, path: str | Path, *, recover: bool = False, busy_timeout: float = 5.0,
                 write_timeout: float = 0.5, retry_after: float = 2.0, integrity_check: str = "always") -> None:
        if integrity_check not in INTEGRITY_CHECKS:
            raise ValueError(f"integrity_check must be one of {', '.join(INTEGRITY_CHECKS)} (got {integrity_check!r})")
        self.integrity_check = integrity_check
        #: Whether opening ran ``quick_check`` (else :meth:`integrity_problem` is the caller's to run).
        self.checked_at_open = False
        #: Markers of earlier opens whose process is gone (an unclean exit), found at open.
        self.unclean_exit = False
        self.db_path = Path(path) if str(path) != ":memory:" else Path(":memory:")
        self._memory = str(path) == ":memory:"
        self.busy_timeout = float(busy_timeout)
        self.write_timeout = float(write_timeout)
        self.retry_after = float(retry_after)
        #: Where a corrupt database was moved to when ``recover=True`` had to act, else None.
        self.recovered_from: Path | None = None
        #: True when the full-text index (FTS5) is in use; else search falls back to ``LIKE``.
        self.fts = False
        self._lock = threading.RLock()
        #: The calling thread's own read-only connection while it reads apart (:meth:`reading_apart`).
        self._apart = threading.local()
        #: Set while no caller holds the readers apart back (:meth:`background_held`); their reads wait for it.
        self._background_free = threading.Event()
        self._background_free.set()
        #: The threads holding them back, and how many holds each (a holder's own reads never wait for itself).
        self._holders: dict[int, int] = {}
        self._holds_lock = threading.Lock()
        self._owner = f"{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self._queued: list[Statement] = []
        #: Transactions written by this store: what was read earlier (a search's hits) is still current while
        #: it is the same.
        self.write_count = 0
        self._quiet_until = 0.0
        self._closed = False
        self._conn: sqlite3.Connection = self._connect(recover=recover)
        _LIVE_OWNERS.add(self._owner)
        self._marker: Path | None = None
        self._mark_open()

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
            kind = classify(exc)
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
        kind = classify(exc)
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
        self._check_not_empty()
        conn = sqlite3.connect(str(self.db_path), timeout=self.busy_timeout, isolation_level=None,
                               check_same_thread=False)
        conn.row_factory = sqlite3.Row
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            if not self._memory:
                self.unclean_exit = bool(self._unclean_markers())
                if self.integrity_check == "always" or self.unclean_exit:
                    self._quick_check(conn)
                    self.checked_at_open = True
            conn.execute("PRAGMA foreign_keys = ON")
            if not self._memory:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
                if mode is None or str(mode[0]).lower() != "wal":
                    log.warning("the database %s could not switch to WAL mode (%s)", self.db_path, mode)
                conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._prepare(conn)
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

    def _check_not_empty(self) -> None:
        """A database file cut to 0 bytes (and no journal holding its pages) lost every thread:
        report it as damaged rather than quietly starting over in it."""
        if self._memory:
            return
        try:
            if self.db_path.stat().st_size != 0:
                return
        except OSError:
            return  # not there yet: a new database
        wal = self.db_path.with_name(self.db_path.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            return
        raise sqlite3.DatabaseError("file is not a database: it is empty (0 bytes)")

    def _quick_check(self, conn: sqlite3.Connection) -> None:
        """SQLite's ``quick_check`` (every page's structure, no index contents: a few ms for a
        thousand threads, see bench/bench_store.py): a file damaged in the middle is found at
        open, not when a search quietly answers "Nothing matches"."""
        rows = conn.execute("PRAGMA quick_check(5)").fetchall()
        found = [str(r[0]) for r in rows]
        if found != ["ok"]:
            raise sqlite3.DatabaseError(f"database disk image is malformed (quick_check: {'; '.join(found)[:300]})")

    # -- the marker of an open database -----------------------------------------------------------
    def _markers(self) -> list[Path]:
        try:
            return list(self.db_path.parent.glob(f"{_glob_escape(self.db_path.name)}.open-*"))
        except OSError:
            return []

    def _unclean_markers(self) -> list[Path]:
        """Markers left by opens whose process (or store, in this process) is gone without closing."""
        found: list[Path] = []
        prefix = f"{self.db_path.name}.open-"
        for marker in self._markers():
            pid, _, token = marker.name[len(prefix):].partition("-")
            if not owner_alive(f"{pid}:{token}"):
                found.append(marker)
        return found

    def _mark_open(self) -> None:
        """Leave this open's marker (and clear those of unclean exits, now checked)."""
        if self._memory:
            return
        if self.checked_at_open:
            for marker in self._unclean_markers():
                with contextlib.suppress(OSError):
                    marker.unlink()
        pid, _, token = self._owner.partition(":")
        marker = self.db_path.with_name(f"{self.db_path.name}.open-{pid}-{token}")
        try:
            marker.touch()
        except OSError as exc:  # a read-only folder: the next open checks (no marker says it was clean)
            log.debug("could not leave the open marker %s: %s", marker, exc)
            return
        self._marker = marker

    def integrity_problem(self) -> str | None:
        """SQLite's ``quick_check`` of the file now, on a read-only connection of its own (call it from a
        worker thread: it reads the whole file): None when it is sound, else what is wrong and the fix."""
        if self._memory:
            return None
        try:
            conn = open_read_only(self.db_path, timeout=self.busy_timeout)
            try:
                found = [str(r[0]) for r in conn.execute("PRAGMA quick_check(5)").fetchall()]
            finally:
                conn.close()
        except sqlite3.Error as exc:
            if classify(exc) != "corrupt":
                log.info("the database %s could not be checked: %s", self.db_path, exc)
                return None
            found = [str(exc)]
        if found == ["ok"]:
            return None
        return (f"The database {self.db_path} is damaged (quick_check: {'; '.join(found)[:300]}). Quit, then run "
                "`robotlab threads recover` (it keeps the damaged file and starts a fresh one), or restore a backup.")

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

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """Inside the opening transaction: the migrations and the search index (subclasses add theirs)."""
        migrate(conn)
        self.fts = ensure_fts(conn)

    # -- closing ------------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    def _closing_statements(self) -> list[Statement]:
        """What :meth:`close` writes last (with the queued rows); subclasses add theirs."""
        return []

    def close(self) -> None:
        """Write the queued rows and :meth:`_closing_statements`, then close the connection."""
        with self._lock:
            if self._closed:
                return
            self._quiet_until = 0.0
            try:
                self._conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
                self._write(self._closing_statements())
            except (StoreError, sqlite3.Error) as exc:
                lost = len(self._queued)
                log.error("closing the database %s: %s (%d queued row(s) could not be written)", self.db_path, exc,
                          lost)
            finally:
                self._closed = True
                self._background_free.set()  # readers held back go on (and find the store closed)
                _LIVE_OWNERS.discard(self._owner)
                with contextlib.suppress(sqlite3.Error):
                    self._conn.close()
                if self._marker is not None:  # a clean exit: the next open need not check the file
                    with contextlib.suppress(OSError):
                        self._marker.unlink()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {str(self.db_path)!r}{' closed' if self._closed else ''}>"

    # -- low level ------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"The database {self.db_path} is closed.", path=self.db_path, reason="closed")

    @contextlib.contextmanager
    def reading_apart(self) -> Iterator[None]:
        """Within it, the calling thread's reads (the store's methods that only read) go through a read-only
        connection of its own, opened here and closed at the end, not through the store's connection behind its
        lock; and each of them first waits while :meth:`background_held` is held. For a worker thread reading
        much of the database (a long thread's events or conversation, a few hundred turns a read): the caller's
        thread (the window's) never waits for the lock behind one of its reads, and while it holds them back
        they leave it the interpreter too. An in-memory store (nothing to open again) or a file that cannot be
        opened read-only is read through the store's connection instead, still waiting while held back.
        Nested, the outer one's connection is used."""
        if getattr(self._apart, "active", False):
            yield
            return
        conn: sqlite3.Connection | None = None
        if not self._memory:
            try:
                conn = open_read_only(self.db_path, timeout=self.busy_timeout)
            except sqlite3.Error as exc:
                log.info("a read-only connection to %s could not be opened: %s", self.db_path, exc)
        self._apart.active, self._apart.conn = True, conn
        try:
            yield
        finally:
            self._apart.active, self._apart.conn = False, None
            if conn is not None:
                conn.close()

    @contextlib.contextmanager
    def background_held(self) -> Iterator[None]:
        """Within it, the reads of threads reading apart (:meth:`reading_apart`) wait before they start (one under
        way finishes). The window holds them back while it brings in a search hit far up a long thread, reading
        its turns a few at a time in steps that must stay short: the workers reading the same thread (the
        inspector's events, the conversation, the context meter's count) held the interpreter meanwhile, and each
        of the window's reads waited for it, row after row. Holds nest; the readers go on when the last ends (or
        the store closes)."""
        me = threading.get_ident()
        with self._holds_lock:
            self._holders[me] = self._holders.get(me, 0) + 1
            self._background_free.clear()
        try:
            yield
        finally:
            with self._holds_lock:
                self._holders[me] -= 1
                if not self._holders[me]:
                    del self._holders[me]
                if not self._holders:
                    self._background_free.set()

    def wait_background(self) -> None:
        """In a thread reading apart: wait while :meth:`background_held` is held by another thread (each of its
        reads does; work between reads that takes long calls this between its parts). Elsewhere: returns at once."""
        if getattr(self._apart, "active", False) and threading.get_ident() not in self._holders:
            self._background_free.wait()

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        apart = self._apart
        if getattr(apart, "active", False):
            self.wait_background()
            conn = apart.conn
            if conn is not None:
                self._check_open()
                try:
                    return conn.execute(sql, tuple(params)).fetchall()
                except sqlite3.Error as exc:
                    raise self._runtime_error(exc, "reading") from exc
        with self._lock:
            self._check_open()
            try:
                return self._conn.execute(sql, tuple(params)).fetchall()
            except sqlite3.Error as exc:
                raise self._runtime_error(exc, "reading") from exc

    def _runtime_error(self, exc: sqlite3.Error, doing: str) -> StoreError:
        kind = classify(exc)
        if kind == "locked":
            hint = "another program keeps it locked; close that program (writes are kept and retried)"
        elif kind == "corrupt":
            hint = "the file is damaged; restart the app to move it aside and start a fresh database"
        elif "full" in str(exc).lower():
            hint = "the disk is full; free some space (writes are kept and retried)"
        else:
            hint = "check the disk and the file's permissions"
        return StoreError(f"Error {doing} the database {self.db_path}: {exc}; {hint}.", path=self.db_path, reason=kind)

    def _write(self, statements: list[Statement]) -> None:
        """Run ``statements`` (after any queued ones) in one transaction."""
        with self._lock:
            self._check_open()
            if not statements and not self._queued:
                return
            statements = redacted(statements)  # nothing secret reaches the file
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
            except BaseException as exc:
                # Whatever stopped the batch (a value SQLite cannot hold raises OverflowError, not sqlite3.Error),
                # the transaction ends here: left open, every later write would fail ("cannot start a transaction
                # within a transaction") and the rest of the session would be kept in memory only.
                if conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                if not isinstance(exc, sqlite3.Error):
                    if self._queued and isinstance(exc, Exception):
                        # A row that cannot be written at all: the rows queued with it are dropped too (said),
                        # or the same row would fail every later write again.
                        log.error("dropping %d queued database write(s) with a row that cannot be written: %s",
                                  len(self._queued), exc)
                        self._queued = []
                    raise
                if transient(exc):
                    self._queue(batch)
                    self._quiet_until = time.monotonic() + self.retry_after
                elif self._queued:
                    log.error("dropping %d queued database write(s) after an error: %s", len(self._queued), exc)
                    self._queued = []
                raise self._runtime_error(exc, "writing") from exc
            self._queued = []
            self.write_count += 1

    def _queue(self, batch: list[Statement]) -> None:
        if len(batch) > _MAX_QUEUED:
            log.error("dropping %d queued database writes (the database stayed unavailable too long)",
                      len(batch) - _MAX_QUEUED)
            batch = batch[-_MAX_QUEUED:]
        self._queued = batch

    @property
    def queued_writes(self) -> int:
        """Rows kept in memory because the database was unavailable (written on the next write)."""
        return len(self._queued)

    # -- maintenance ------------------------------------------------------------------------------

    def iter_rows(self, sql: str, params: Sequence[Any] = ()) -> Iterator[sqlite3.Row]:
        """Read-only access for tools and tests (one statement)."""
        yield from self._read(sql, params)
