"""The threads database's schema: append-only, named migrations and the full-text index.

Migrations are functions (``m001_initial``, ...) registered with :func:`migration` and recorded
by name in ``_migrations`` (simonw/llm's scheme). Never edit one that shipped: add the next, so
every existing database keeps opening. The FTS5 index (``search_fts``) is not a migration: it is
created, or rebuilt, whenever this SQLite has FTS5 (:func:`ensure_fts`), so a database made
without FTS5 gets the index later.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable

log = logging.getLogger("workspace.persistence")

# ------------------------------------------------------------------------------------------
# Migrations: append-only, named, recorded in _migrations. Never change one that shipped.

Migration = Callable[[sqlite3.Connection], None]
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    """Register ``fn`` as the next migration: applied once per database, in registration order."""
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


@migration
def m004_thread_metadata(db: sqlite3.Connection) -> None:
    # Where a thread came from and what is needed to continue it the same way, as a JSON object:
    # ``{"origin": "cli", "command": "run", "robot_file": ..., "model": ...}`` for threads the
    # command line recorded (``robotlab run``, ``network run``, ``chat``); ``{}`` for the window's.
    db.execute("ALTER TABLE threads ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}'")


@migration
def m005_blobs(db: sqlite3.Connection) -> None:
    # Large payloads (a 10 MB tool result) stored once, zlib-compressed, keyed by the SHA-256 of
    # their text; event rows refer to them (see workspace.persistence.blobs) and list them in
    # events.blobs, so purging threads can drop the blobs nothing refers to any more.
    db.execute("""
        CREATE TABLE blobs (
            hash TEXT PRIMARY KEY,
            size INTEGER NOT NULL,
            codec TEXT NOT NULL,
            data BLOB NOT NULL
        )""")
    db.execute("ALTER TABLE events ADD COLUMN blobs TEXT")


def migrate(conn: sqlite3.Connection) -> None:
    """Apply the migrations ``conn``'s database has not had yet (inside the caller's transaction)."""
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
            conn.execute("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", (fn.__name__, time.time()))


# ------------------------------------------------------------------------------------------
# Full-text search (FTS5) when this SQLite has it


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


def ensure_fts(conn: sqlite3.Connection) -> bool:
    """Create (or rebuild, when marked stale) the FTS5 index; False when this SQLite has no FTS5.

    Without FTS5 an existing index is marked stale (the writes meanwhile do not reach it), so it
    is rebuilt the next time the database is opened by a SQLite that has FTS5.
    """
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'search_fts'").fetchone() is not None
    if not fts5_available():
        if exists:  # writes below do not reach the index: rebuild it when FTS5 is back
            conn.execute("INSERT OR REPLACE INTO _meta (key, value) VALUES ('fts_stale', '1')")
        return False
    stale = conn.execute("SELECT value FROM _meta WHERE key = 'fts_stale'").fetchone()
    if not exists:
        conn.execute("CREATE VIRTUAL TABLE search_fts USING fts5(body, content='search_docs', "
                     "content_rowid='id', tokenize='unicode61 remove_diacritics 2')")
        conn.execute("INSERT INTO search_fts(search_fts) VALUES ('rebuild')")
    elif stale:
        conn.execute("INSERT INTO search_fts(search_fts) VALUES ('rebuild')")
    conn.execute("DELETE FROM _meta WHERE key = 'fts_stale'")
    return True
