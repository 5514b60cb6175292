"""Persistence: one SQLite file holding every conversation as an append-only event log.

A *thread* is a conversation with a robot (or a network). Each message the user sends starts
a *turn*; the turn records the run's events as they happen. Turns form a tree (a turn points
at its parent), so editing a past message and resending it, or regenerating an answer, adds a
sibling turn instead of overwriting anything; ``threads.current_turn_id`` is the leaf of the
branch on screen. Messages, results and the transcript are derived from the events. A compaction
of the conversation (``context_compacted``) is an event too: nothing stored is ever replaced, the
robot is sent the summary in place of the messages it stands for.

Storage choices:

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
  :func:`workspace.secrets.redact` in the one place writes pass (``Database._write``): keys held
  in the environment or the keyring are replaced by ``<VAR>``, credentials recognised by their
  shape (``Bearer …``, URL passwords, ``?api-key=``) by ``<redacted>``.
* Large payloads are stored once: a string of 32 KB or more in an event (a 10 MB tool result,
  which reaches the tool_result payload, its raw MCP blocks and the run's result) goes into the
  ``blobs`` table, zlib-compressed and keyed by its SHA-256; the row keeps a reference
  (:mod:`~workspace.persistence.blobs`). Reading puts it back, one string shared by every place.
* Opening runs ``PRAGMA quick_check`` (about 1 ms per MB) and refuses a file cut to 0 bytes: a
  damaged file raises :class:`StoreError` with ``reason="corrupt"`` at open, so the recovery path
  (“Move aside and start fresh”, ``robotlab threads recover``) is offered before anything is
  read from it. The window opens with ``integrity_check="after_unclean_exit"``: the check runs at
  open only when a process that opened the file is gone without closing it (a marker file beside
  the database says so), and otherwise in a worker thread after the start
  (``Store.integrity_problem``).
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

The package, by noun: :mod:`~workspace.persistence.schema` (migrations, the FTS5 check),
:mod:`~workspace.persistence.database` (the file and its connection, WAL, damaged and locked
files, the write queue, owners), :mod:`~workspace.persistence.eventlog` (event rows, held text
deltas), :mod:`~workspace.persistence.threads` (the :class:`Store`: threads and turns),
:mod:`~workspace.persistence.conversation` (messages and transcripts rebuilt from events),
:mod:`~workspace.persistence.blobs` (large payloads), :mod:`~workspace.persistence.search`,
:mod:`~workspace.persistence.branch` (a branch's turn ids) and :mod:`~workspace.persistence.readonly`
(the worker thread and read-only connection both read through off the caller's thread).
"""

from __future__ import annotations

from workspace.persistence.branch import BackgroundBranch, PathPage
from workspace.persistence.conversation import (
    coalesce_text,
    conversation_from_events,
    conversation_from_result,
    latest_compaction,
)
from workspace.persistence.database import NotFoundError, StoreError
from workspace.persistence.eventlog import status_for
from workspace.persistence.schema import MIGRATIONS, fts5_available
from workspace.persistence.search import BackgroundSearch, SearchHit
from workspace.persistence.threads import STATUSES, Store, ThreadInfo, TurnInfo

__all__ = [
    "MIGRATIONS",
    "STATUSES",
    "BackgroundBranch",
    "BackgroundSearch",
    "NotFoundError",
    "PathPage",
    "SearchHit",
    "Store",
    "StoreError",
    "ThreadInfo",
    "TurnInfo",
    "coalesce_text",
    "conversation_from_events",
    "conversation_from_result",
    "fts5_available",
    "latest_compaction",
    "status_for",
]
