"""Searching the threads: what is indexed, the FTS5 query with snippets, the ``LIKE`` fallback, and
:class:`BackgroundSearch` (a search off the caller's thread, the newest query winning).

Every user message, every robot text and every tool call (name and arguments) is a row of
``search_docs``; with FTS5 the ``search_fts`` index covers them (created by
:func:`~workspace.persistence.schema.ensure_fts`), otherwise search falls back to ``LIKE``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workspace.persistence.database import Database, Statement, StoreError
from workspace.persistence.readonly import Reader, ReadOnlyWorker

#: SQL true for a thread an eval case's run was recorded in (``metadata.origin == "eval"``): thread lists leave
#: them out unless asked (an eval of 500 cases makes 500 threads). A damaged metadata value is not one.
EVAL_THREAD = ("(CASE WHEN json_valid(t.metadata) THEN json_extract(t.metadata, '$.origin') IS 'eval' "
               "ELSE 0 END)")


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
                   include_deleted: bool = False, include_evals: bool = False, fts: bool) -> list[SearchHit]:
    """Full-text search over user text, robot text and tool calls of every thread (best first); the threads of eval
    cases (which thread lists leave out) only with ``include_evals``."""
    words = [w for w in (t.replace('"', "").strip() for t in query.split()) if w]
    if not words:
        return []
    deleted = ("" if include_deleted else " AND t.deleted_at IS NULL") + ("" if include_evals else
                                                                          f" AND NOT {EVAL_THREAD}")
    if fts:
        return _ranked(read, " ".join(f'"{w}"*' for w in words), int(limit), highlight, include_deleted,
                       include_evals)
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


def _ranked(read: Reader, match: str, limit: int, highlight: tuple[str, str], include_deleted: bool,
            include_evals: bool) -> list[SearchHit]:
    """The best ``limit`` hits by FTS5's bm25 (``rank``). The ranking and the snippets come from the full-text
    index alone, where FTS5 orders by rank and makes snippets for the best rows only; the threads' titles and
    times are read for those rows after. (Joined in one query, the snippets of every matching message were
    made before sorting: 2-3 x the ranking's cost over 10,000 threads.) Deleted threads' hits (and eval cases'
    threads', unless ``include_evals``) are left out afterwards, asking for more when they took places."""
    start, end = highlight
    fetch = limit + 16
    while True:
        try:
            rows = read("SELECT rowid, snippet(search_fts, 0, ?, ?, '…', 12) FROM search_fts WHERE search_fts MATCH ?"
                        " ORDER BY rank, rowid DESC LIMIT ?", (start, end, match, fetch))
        except StoreError:  # a query FTS5 cannot parse: nothing matches it
            return []
        if not rows:
            return []
        ids = [int(r[0]) for r in rows]
        found = {int(r["id"]): r for r in read(
            f"SELECT d.id, d.thread_id, t.title, d.turn_id, d.kind, t.robot, t.deleted_at, {EVAL_THREAD} AS eval,"
            " COALESCE(u.created_at, t.updated_at) AS ts FROM search_docs d JOIN threads t ON t.id = d.thread_id"
            f" LEFT JOIN turns u ON u.id = d.turn_id WHERE d.id IN ({','.join('?' * len(ids))})", ids)}
        hits = [SearchHit(m["thread_id"], m["title"], m["turn_id"], str(r[1]), m["kind"], m["robot"] or "", m["ts"])
                for r in rows if (m := found.get(int(r[0]))) is not None
                and (include_deleted or m["deleted_at"] is None) and (include_evals or not m["eval"])]
        if len(hits) >= limit or len(rows) < fetch:
            return hits[:limit]
        fetch *= 4


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


class BackgroundSearch(ReadOnlyWorker):
    """Thread search off the caller's thread (the window's): one worker thread reading through a read-only
    connection of its own, so a search (a few hundred ms over 10,000 threads) neither holds the caller's
    thread nor the store's lock the running turn's writes need; hits ranked by FTS5's bm25 (``rank``).

    The newest query wins: :meth:`search` gives None for a query asked before another one finished (a
    person typing) — skipped when it had not started yet, its hits dropped when it had.
    ``store``: the :class:`~workspace.persistence.Store` searched (an in-memory one is read through its
    own connection, in the worker).
    """

    def __init__(self, store: Database, *, limit: int = 50, highlight: tuple[str, str] = ("[", "]")) -> None:
        super().__init__(store, thread_name="thread-search", failing="Searching")
        self.limit = limit
        self.highlight = highlight
        self._asked = 0  # the newest query's number (asked from one thread: the event loop's)

    async def search(self, query: str) -> list[SearchHit] | None:
        """The hits for ``query`` (best first), or None when a newer query was asked meanwhile."""
        with self._lock:
            self._asked += 1
            number = self._asked
        hits = await self._in_worker(lambda: self._run(query, number))
        return hits if number == self._asked else None

    def _run(self, query: str, number: int) -> list[SearchHit] | None:
        if number != self._asked:
            return None  # a newer query is waiting behind this one: not worth reading
        return search_threads(self._reader(), query, self.limit, highlight=self.highlight, fts=self.store.fts)
