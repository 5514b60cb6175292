"""Searching the threads: what is indexed, the FTS5 query with snippets, the ``LIKE`` fallback.

Every user message, every robot text and every tool call (name and arguments) is a row of
``search_docs``; with FTS5 the ``search_fts`` index covers them (created by
:func:`~workspace.persistence.schema.ensure_fts`), otherwise search falls back to ``LIKE``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from workspace.persistence.database import Statement, StoreError

#: Reads rows (``Database._read``).
Reader = Callable[[str, Sequence[Any]], list[sqlite3.Row]]


@dataclass(frozen=True, slots=True)
class SearchHit:
    thread_id: str
    title: str | None
    turn_id: str | None
    #: The matching text around the match, the matched words between the ``highlight`` marks.
    snippet: str
    #: "user", "assistant" or "tool".
    kind: str = "user"
    #: The thread's robot (or network).
    robot: str = ""
    #: When the matching message was sent (the thread's last update when the hit has no turn).
    created_at: float | None = None


def index_statements(thread_id: str, turn_id: str | None, kind: str, body: str, *, fts: bool) -> list[Statement]:
    """The statements that make ``body`` searchable (none for blank text); ``kind`` as in :class:`SearchHit`."""
    body = body.strip()
    if not body:
        return []
    out: list[Statement] = [
        ("INSERT INTO search_docs (thread_id, turn_id, kind, body) VALUES (?, ?, ?, ?)",
         (thread_id, turn_id, kind, body))
    ]
    if fts:
        out.append(("INSERT INTO search_fts (rowid, body) VALUES (last_insert_rowid(), ?)", (body,)))
    return out


def search_threads(read: Reader, query: str, limit: int = 50, *, highlight: tuple[str, str] = ("[", "]"),
                   include_deleted: bool = False, fts: bool) -> list[SearchHit]:
    """Full-text search over user text, robot text and tool calls of every thread (best first)."""
    words = [w for w in (t.replace('"', "").strip() for t in query.split()) if w]
    if not words:
        return []
    deleted = "" if include_deleted else " AND t.deleted_at IS NULL"
    if fts:
        match = " ".join(f'"{w}"*' for w in words)
        start, end = highlight
        try:
            rows = read(
                "SELECT d.thread_id, t.title, d.turn_id, d.kind, t.robot, COALESCE(u.created_at, t.updated_at) AS ts,"
                " snippet(search_fts, 0, ?, ?, '…', 12) AS snip"
                " FROM search_fts JOIN search_docs d ON d.id = search_fts.rowid"
                " JOIN threads t ON t.id = d.thread_id LEFT JOIN turns u ON u.id = d.turn_id"
                f" WHERE search_fts MATCH ?{deleted} ORDER BY rank, d.id DESC LIMIT ?",
                (start, end, match, int(limit)),
            )
        except StoreError:
            rows = []
        return [SearchHit(r["thread_id"], r["title"], r["turn_id"], r["snip"], r["kind"], r["robot"] or "", r["ts"])
                for r in rows]
    conditions = " AND ".join("d.body LIKE ? ESCAPE '\\'" for _ in words)
    params: list[Any] = [f"%{_like_escape(w)}%" for w in words]
    rows = read(
        "SELECT d.thread_id, t.title, d.turn_id, d.kind, d.body, t.robot, COALESCE(u.created_at, t.updated_at) AS ts"
        " FROM search_docs d JOIN threads t ON t.id = d.thread_id LEFT JOIN turns u ON u.id = d.turn_id"
        f" WHERE {conditions}{deleted} ORDER BY d.id DESC LIMIT ?",
        (*params, int(limit)),
    )
    return [SearchHit(r["thread_id"], r["title"], r["turn_id"], _snippet(r["body"], words, highlight), r["kind"],
                      r["robot"] or "", r["ts"]) for r in rows]


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
