"""What robots learn and know, kept across runs (RobotLab 0.2's ``learn`` and durable knowledge).

* :class:`KnowledgeStore`: one SQLite file (``knowledge.db`` in the data folder, or a path of your own)
  holding each robot's *learnings* (``robot.learn(text)``) and *knowledge entries* (the
  ``record_knowledge`` tool), both per robot name and opened folder, so the same robot in two folders
  learns apart. Every stored string goes through :func:`workspace.secrets.redact` first.
* :class:`KnowledgeEntry`: RobotLab's ``Durable::Entry`` (content, reasoning, category, domain,
  confidence, use_count); :meth:`KnowledgeEntry.confirm` raises the confidence by 0.1, up to 1.0.
* :class:`PendingMemoryWrite`: a durable write proposed instead of stored, when the robot's review of
  memory says ``ask`` (``review.memory: ask``, or ``Robot(review_memory="ask")``). The caller (the window,
  a program) :meth:`~PendingMemoryWrite.accept`\\ s it, maybe edited, or :meth:`~PendingMemoryWrite.reject`\\ s
  it with a reason; a run waiting on it is told the outcome (:meth:`~PendingMemoryWrite.outcome`).
* :func:`similarity`: RobotLab's term-frequency cosine of two texts (``search_history``, ``Convergence``).
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import sqlite3

#: RobotLab's categories of knowledge.
CATEGORIES = ("fact", "preference", "pattern", "correction")
#: The confidence a newly recorded entry starts with, and what each confirmation adds (capped at 1.0).
START_CONFIDENCE = 0.1
CONFIRM_STEP = 0.1
#: Query words shorter than this are ignored by :meth:`KnowledgeStore.recall` (RobotLab's rule).
MIN_WORD_LENGTH = 3
#: The heading of the learnings a robot's later runs are given.
LEARNINGS_HEADING = "LEARNINGS FROM PREVIOUS RUNS:"


def similarity(a: str, b: str) -> float:
    """The cosine of the stemmed word counts of ``a`` and ``b`` (0.0 to 1.0; stop words left out)."""
    from workspace.agent_skills import lexical_similarity

    return lexical_similarity(a, b)


def learnings_block(learnings: Iterable[str]) -> str:
    """RobotLab's block of learnings (``"LEARNINGS FROM PREVIOUS RUNS:\\n- a\\n- b"``; empty when none)."""
    items = [f"- {text}" for text in learnings]
    return f"{LEARNINGS_HEADING}\n" + "\n".join(items) if items else ""


def merge_learning(learnings: list[str], text: str) -> bool:
    """Add ``text`` to ``learnings`` by RobotLab's rule (two-way substring): learnings it contains go, and it
    is added unless one it is part of is there. True when it was added."""
    learnings[:] = [existing for existing in learnings if existing not in text]
    if any(text in existing for existing in learnings):
        return False
    learnings.append(text)
    return True


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


@dataclass(frozen=True, slots=True)
class KnowledgeEntry:
    """One piece of durable knowledge (RobotLab's ``Durable::Entry``)."""

    content: str
    reasoning: str = ""
    category: str = "fact"
    domain: str = "general"
    confidence: float = START_CONFIDENCE
    use_count: int = 0
    created_at: str = field(default_factory=_now)
    updated_at: str = field(default_factory=_now)

    def confirm(self) -> KnowledgeEntry:
        """A copy seen once more: confidence + 0.1 (at most 1.0), ``use_count`` + 1."""
        return replace(self, confidence=round(min(self.confidence + CONFIRM_STEP, 1.0), 6),
                       use_count=self.use_count + 1, updated_at=_now())

    def line(self) -> str:
        """How the ``recall_knowledge`` tool shows it: ``[fact/conf:0.1] content — reasoning``."""
        return f"[{self.category}/conf:{self.confidence:.1f}] {self.content} — {self.reasoning}"

    def to_dict(self) -> dict[str, object]:
        return {"content": self.content, "reasoning": self.reasoning, "category": self.category,
                "domain": self.domain, "confidence": self.confidence, "use_count": self.use_count,
                "created_at": self.created_at, "updated_at": self.updated_at}


def check_category(category: str) -> str:
    """``category`` if it is one of :data:`CATEGORIES`, else a ValueError naming them."""
    value = str(category or "fact").strip().lower()
    if value not in CATEGORIES:
        raise ValueError(f"category must be one of {', '.join(CATEGORIES)} (got {category!r})")
    return value


_SCHEMA = """
CREATE TABLE IF NOT EXISTS learnings (
    robot TEXT NOT NULL, folder TEXT NOT NULL, position INTEGER NOT NULL, text TEXT NOT NULL,
    created_at TEXT NOT NULL, PRIMARY KEY (robot, folder, position));
CREATE TABLE IF NOT EXISTS knowledge (
    robot TEXT NOT NULL, folder TEXT NOT NULL, domain TEXT NOT NULL, key TEXT NOT NULL,
    content TEXT NOT NULL, reasoning TEXT NOT NULL, category TEXT NOT NULL, confidence REAL NOT NULL,
    use_count INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    PRIMARY KEY (robot, folder, domain, key));
"""


class KnowledgeStore:
    """Learnings and knowledge entries in one SQLite file, per robot name and folder (see the module).

    ``path``: the file (created with its folder); None: ``knowledge.db`` in the data folder
    (``ROBOTLAB_HOME/data`` or the platform's). Calls are short and synchronous, behind a lock.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        if path is None:
            from workspace.paths import data_dir

            path = data_dir() / "knowledge.db"
        self.path = Path(path).expanduser()
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            import sqlite3  # imported on use: a robot that never learns does not pay for it

            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, check_same_thread=False, timeout=5.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_SCHEMA)
            self._conn = conn
        return self._conn

    def _absent(self) -> bool:
        """Nothing was ever written (no file): reads answer at once, and a robot that never learns creates none."""
        return self._conn is None and not self.path.exists()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- learnings ----------------------------------------------------------------------------------
    def learnings(self, *, robot: str, folder: str | Path | None = None) -> list[str]:
        """The learnings of ``robot`` in ``folder``, oldest first."""
        if self._absent():
            return []
        with self._lock:
            rows = self._db().execute("SELECT text FROM learnings WHERE robot=? AND folder=? ORDER BY position",
                                      (robot, _folder_key(folder))).fetchall()
        return [row[0] for row in rows]

    def save_learnings(self, texts: Iterable[str], *, robot: str, folder: str | Path | None = None) -> None:
        """Replace the learnings of ``robot`` in ``folder`` with ``texts`` (redacted)."""
        from workspace.secrets import redactor

        clean = redactor()
        key, now = _folder_key(folder), _now()
        with self._lock:
            db = self._db()
            with db:
                # A learning kept keeps the time it was first learnt (the Memory dock shows when).
                since = dict(db.execute("SELECT text, created_at FROM learnings WHERE robot=? AND folder=?",
                                        (robot, key)).fetchall())
                db.execute("DELETE FROM learnings WHERE robot=? AND folder=?", (robot, key))
                rows = [(robot, key, i, text, since.get(text, now))
                        for i, text in enumerate(clean(t) for t in texts)]
                db.executemany("INSERT INTO learnings VALUES (?, ?, ?, ?, ?)", rows)

    def learnt(self, *, folder: str | Path | None = None) -> dict[str, list[str]]:
        """What every robot learnt in ``folder``: robot name -> its learnings, oldest first (for a view of
        what was learnt, by whom)."""
        if self._absent():
            return {}
        with self._lock:
            rows = self._db().execute("SELECT robot, text FROM learnings WHERE folder=? ORDER BY robot, position",
                                      (_folder_key(folder),)).fetchall()
        out: dict[str, list[str]] = {}
        for robot, text in rows:
            out.setdefault(robot, []).append(text)
        return out

    def learnt_when(self, *, folder: str | Path | None = None) -> list[tuple[str, str, str]]:
        """What every robot learnt in ``folder``, with when: (robot, learning, ISO time first learnt), by robot,
        oldest first."""
        if self._absent():
            return []
        with self._lock:
            rows = self._db().execute("SELECT robot, text, created_at FROM learnings WHERE folder=? "
                                      "ORDER BY robot, position", (_folder_key(folder),)).fetchall()
        return [(str(robot), str(text), str(at)) for robot, text, at in rows]

    def forget_learning(self, text: str, *, robot: str, folder: str | Path | None = None) -> bool:
        """Forget one learning of ``robot`` in ``folder``; True when it was there. A robot object already
        holding its learnings keeps them until it is made again (``robot.forget_learning`` forgets in both)."""
        learnings = self.learnings(robot=robot, folder=folder)
        if text not in learnings:
            return False
        learnings.remove(text)
        self.save_learnings(learnings, robot=robot, folder=folder)
        return True

    # -- knowledge ----------------------------------------------------------------------------------
    def entries(self, *, robot: str, folder: str | Path | None = None, domain: str | None = None
                ) -> list[KnowledgeEntry]:
        """Every entry of ``robot`` in ``folder`` (of ``domain`` only, when given), most confident first."""
        if self._absent():
            return []
        sql = ("SELECT content, reasoning, category, domain, confidence, use_count, created_at, updated_at "
               "FROM knowledge WHERE robot=? AND folder=?")
        args: list[object] = [robot, _folder_key(folder)]
        if domain is not None:
            sql += " AND domain=?"
            args.append(_domain_key(domain))
        with self._lock:
            rows = self._db().execute(sql + " ORDER BY confidence DESC, updated_at DESC", args).fetchall()
        return [KnowledgeEntry(*row) for row in rows]

    def recall(self, query: str, *, robot: str, folder: str | Path | None = None, domain: str | None = None,
               min_confidence: float = 0.0) -> list[KnowledgeEntry]:
        """RobotLab's recall: the entries one of whose words of 3 or more letters (lowercased) is in
        ``"content domain"``, at ``min_confidence`` or more, most confident first."""
        words = [w for w in str(query).lower().split() if len(w) >= MIN_WORD_LENGTH]
        found = []
        for entry in self.entries(robot=robot, folder=folder, domain=domain):
            text = f"{entry.content} {entry.domain}".lower()
            if entry.confidence >= min_confidence and any(w in text for w in words):
                found.append(entry)
        return found

    def record(self, entry: KnowledgeEntry, *, robot: str, folder: str | Path | None = None) -> KnowledgeEntry:
        """Store ``entry``; the same content (any case) in its domain is confirmed instead. Returns what is
        stored."""
        existing = self._find(entry, robot=robot, folder=folder)
        stored = existing.confirm() if existing is not None else entry
        self._write(stored, robot=robot, folder=folder)
        return stored

    def confirm(self, entry: KnowledgeEntry, *, robot: str, folder: str | Path | None = None) -> KnowledgeEntry:
        """Raise the confidence of a stored entry (recalling it confirms it)."""
        current = self._find(entry, robot=robot, folder=folder)
        if current is None:
            raise KeyError(f"Cannot confirm: entry not found in domain '{entry.domain}'")
        updated = current.confirm()
        self._write(updated, robot=robot, folder=folder)
        return updated

    def forget(self, content: str, *, robot: str, folder: str | Path | None = None,
               domain: str | None = None) -> int:
        """Remove the entries with this content (any case; of ``domain`` only, when given). Returns how many."""
        if self._absent():
            return 0
        sql = "DELETE FROM knowledge WHERE robot=? AND folder=? AND key=?"
        args: list[object] = [robot, _folder_key(folder), _content_key(content)]
        if domain is not None:
            sql += " AND domain=?"
            args.append(_domain_key(domain))
        with self._lock:
            db = self._db()
            with db:
                return db.execute(sql, args).rowcount

    def _find(self, entry: KnowledgeEntry, *, robot: str, folder: str | Path | None) -> KnowledgeEntry | None:
        if self._absent():
            return None
        with self._lock:
            row = self._db().execute(
                "SELECT content, reasoning, category, domain, confidence, use_count, created_at, updated_at "
                "FROM knowledge WHERE robot=? AND folder=? AND domain=? AND key=?",
                (robot, _folder_key(folder), _domain_key(entry.domain), _content_key(entry.content))).fetchone()
        return KnowledgeEntry(*row) if row else None

    def _write(self, entry: KnowledgeEntry, *, robot: str, folder: str | Path | None) -> None:
        from workspace.secrets import redactor

        clean = redactor()
        with self._lock:
            db = self._db()
            with db:
                db.execute("INSERT OR REPLACE INTO knowledge VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           (robot, _folder_key(folder), _domain_key(entry.domain), _content_key(entry.content),
                            clean(entry.content), clean(entry.reasoning), entry.category, entry.confidence,
                            entry.use_count, entry.created_at, entry.updated_at))


def _folder_key(folder: str | Path | None) -> str:
    return str(Path(folder).resolve()) if folder is not None else ""


def _content_key(content: str) -> str:
    from workspace.secrets import redact

    return redact(content.strip()).lower()


def _domain_key(domain: str) -> str:
    return " ".join(str(domain or "general").lower().split()) or "general"


# -- proposed durable writes ------------------------------------------------------------------------------
Status = Literal["pending", "accepted", "rejected"]


@dataclass(eq=False)
class PendingMemoryWrite:
    """A durable write proposed, not stored: a ``learn`` or a ``record_knowledge`` of ``robot``, or a key its run
    changed in a shared memory that outlives the run (``kind="memory"``: :mod:`workspace.memory_review`).

    ``text`` is what would be stored (a learning, the entry's content, the key's new value as JSON); ``entry``
    the knowledge entry (None otherwise); ``key``, ``previous`` and ``value`` the memory key, its value before the
    run (``existed`` False: it had none) and the value proposed (``deleted``: the run deleted the key). :meth:`accept` stores it (``text=`` an edited version; for a memory key, JSON or plain
    text), :meth:`reject` does not; either once. ``await wait()`` waits for the decision; :meth:`outcome` is what
    the robot is told.
    """

    kind: Literal["learn", "knowledge", "memory"]
    robot: str
    text: str
    entry: KnowledgeEntry | None = None
    key: str = ""
    previous: Any = None
    existed: bool = False
    value: Any = None
    deleted: bool = False
    id: str = field(default_factory=lambda: f"memory-{uuid.uuid4().hex[:12]}")
    status: Status = "pending"
    reason: str = ""
    #: Whether the robot was told the outcome (a tool's result, or its next run's system prompt).
    told: bool = False
    #: The text as proposed (``text`` may be edited on accept).
    proposed: str = ""
    _apply: Callable[[PendingMemoryWrite], None] | None = field(default=None, repr=False)
    _decided: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    def __post_init__(self) -> None:
        self.proposed = self.proposed or self.text

    @property
    def pending(self) -> bool:
        return self.status == "pending"

    def accept(self, text: str | None = None) -> PendingMemoryWrite:
        """Store it (``text``: what to store instead, an edit). Returns itself."""
        self._check_pending()
        if text is not None and text.strip() and text.strip() != self.text:
            self.text = text.strip()
            if self.entry is not None:
                self.entry = replace(self.entry, content=self.text)
            if self.kind == "memory":
                self.value, self.deleted = memory_value(self.text), False
        if self._apply is not None:
            self._apply(self)
        self.status = "accepted"
        self._decided.set()
        return self

    def reject(self, reason: str = "") -> PendingMemoryWrite:
        """Do not store it; ``reason`` is told to the robot. Returns itself."""
        self._check_pending()
        self.status, self.reason = "rejected", reason.strip()
        self._decided.set()
        return self

    async def wait(self, timeout: float | None = None) -> Status:
        """Wait for :meth:`accept` or :meth:`reject` (``timeout`` seconds at most: TimeoutError)."""
        async with asyncio.timeout(timeout):
            await self._decided.wait()
        return self.status

    def outcome(self) -> str:
        """What the robot is told: ``Recorded: <text>``, ``Not recorded: ... rejected it (<reason>)`` or that
        it waits for review."""
        because = f": {self.reason}" if self.reason else ""
        if self.kind == "memory":
            change = f"memory '{self.key}': {self.describe_change()}"
            if self.status == "accepted":
                return f"Kept {change}"
            if self.status == "rejected":
                return f"Not kept {change} (it stays {self.shown_previous()}): the person reviewing memory rejected " \
                       f"it{because}"
            return f"Proposed for review (not kept yet) {change}"
        what = "Learnt" if self.kind == "learn" else "Recorded"
        if self.status == "accepted":
            return f"{what}: {self.text}"
        if self.status == "rejected":
            return f"Not recorded: the person reviewing memory rejected it{because}"
        return f"Proposed for review (not stored yet): {self.text}"

    def shown_previous(self) -> str:
        """A memory key's value before the run, as people read it."""
        return memory_text(self.previous) if self.existed else "unset"

    def describe_change(self) -> str:
        """A memory key's change: ``old → new``."""
        return f"{self.shown_previous()} → {'deleted' if self.deleted else self.text}"

    def _check_pending(self) -> None:
        if self.status != "pending":
            raise RuntimeError(f"This memory write was already {self.status}; a proposal is decided once")

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "id": self.id, "kind": self.kind, "robot": self.robot, "text": self.text, "status": self.status,
            "reason": self.reason, "entry": self.entry.to_dict() if self.entry is not None else None}
        if self.kind == "memory":
            out.update(key=self.key, previous=self.previous if self.existed else None, existed=self.existed,
                       value=None if self.deleted else self.value, deleted=self.deleted)
        return out


def memory_text(value: Any) -> str:
    """A memory value as people read and edit it: text as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    import json

    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def memory_value(text: str) -> Any:
    """An edited memory value back: JSON when it reads as JSON (numbers, lists, objects, true), else the text."""
    import json

    try:
        return json.loads(text)
    except ValueError:
        return text


__all__ = [
    "CATEGORIES", "LEARNINGS_HEADING", "KnowledgeEntry", "KnowledgeStore", "PendingMemoryWrite", "check_category",
    "learnings_block", "memory_text", "memory_value", "merge_learning", "similarity",
]
