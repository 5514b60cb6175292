"""The event log of the turns: each event of a run one row, text deltas held briefly.

A ``text_delta`` event (and a ``reasoning_delta``, held apart) is held in memory and written as one
row of its kind whose ``text`` is the joined text of the deltas it covers (it keeps the first delta's ``seq``/``ts`` and adds
``"deltas": n``) when any of these happens first: ``flush_interval`` (250 ms) has passed since
the oldest held delta (checked on every append, and :class:`workspace.session.RecordedRun` arms
a timer so a stalled stream is flushed too), any other event of the same turn is appended (the
held text is written first, in the same transaction, so the order is kept), the turn is
finished, :meth:`EventLog.flush` or ``close`` is called. Deltas of different runs or tasks in one
turn (a network) are held apart. Readers see held deltas too (:meth:`EventLog.turn_events`). Written because
their time is up (not because the turn moved on), they are written up to the last boundary between two deltas
with whitespace on one side, the word being written held on (each row is redacted alone: a key streamed over the
interval, split between two rows, was matched in neither; :func:`_safe_split`).

Rows are the events' JSON from the one serialisation registry (:func:`workspace.events.to_json`,
:func:`workspace.events.event_from_json`), with every secret redacted (by the database's writes).
Large strings in them (a 10 MB tool result) are stored once, compressed, in the ``blobs`` table
and the row holds a reference (:mod:`workspace.persistence.blobs`); reading puts them back.
"""

from __future__ import annotations

import json
import re
import time
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspace import events as ev
from workspace.persistence import blobs
from workspace.persistence.database import Database, Statement, StoreError, dumps, now
from workspace.persistence.search import index_statements

if TYPE_CHECKING:
    from workspace.attachments import Attachment

#: Events a read of many turns' events decodes between two waits of a worker reading apart while it is held back
#: (:meth:`Database.background_held`): a few ms of CPU, where a read of 200 turns' took 20-40 ms.
DECODED_BETWEEN_WAITS = 200
#: Rows of one read of turns' events (the next read starts after the last row's id, the store's lock let go
#: between them): a turn of 300,000 events was fetched in one read, all its rows at once beside their events.
EVENT_ROWS_READ = 2000
#: Events a repeat of which is folded into one when asked (``fold=True``): what they say replaces what the
#: one before said (the chat shows a run's last status and a call's last progress).
_FOLDED: tuple[type[ev.Event], ...] = (ev.RunStatus, ev.ToolProgress)
_FOLDED_KINDS = frozenset(cls.kind for cls in _FOLDED)
#: Of each folded kind, the fields a repeat has alike (all but the stamp's number and time), the ones most
#: likely to differ first.
_COMPARED: dict[type[ev.Event], tuple[str, ...]] = {
    cls: tuple(sorted((f.name for f in fields(cls) if f.name not in ("seq", "ts")),
                      key=lambda name: name in ("run_id", "robot", "task", "parent_run_id", "parent_tool_id",
                                                "candidate")))
    for cls in _FOLDED}
_DELTA_KINDS = frozenset((ev.TextDelta.kind, ev.ReasoningDelta.kind))
#: A stored event's number and time (``"seq":3,`` ... ``"ts":1796086816.54,``): the stamp fields come before the
#: event's own, and a quote inside a string is escaped, so the first of each is the event's own.
_STAMP = re.compile(r'"seq":-?\d+,|"ts":[-+.\deE]+,')


def is_repeat(previous: ev.Event, event: ev.Event) -> bool:
    """Whether ``event`` is a status or progress event saying what ``previous`` said (all its fields alike but
    its time and number): one a run repeating itself (a retry loop, a server's progress notes) wrote again."""
    compared = _COMPARED.get(type(event)) if type(event) is type(previous) else None
    return compared is not None and all(getattr(event, name) == getattr(previous, name) for name in compared)


#: What a turn read for display (``shown``) says in place of the events it leaves out (``{count}``: how many).
NOT_SHOWN = ("… {count:,} more events of this turn are not shown here: export the thread's events (File › Export "
             "thread events as JSONL…, or robotlab threads export ID --format jsonl) to see them all.")


class _Shown:
    """A turn's events as read (``limit`` None: all of them). For display (a ``limit``): a run of text or reasoning
    deltas of one run is joined into its first delta as it is read (the text a reopened turn shows, which
    ``coalesce_text`` joins after the read anyway), and at most about ``limit`` events are kept: the first half
    decoded as they come, then the rows of the last half only, decoded once the turn is read (a row pushed out of
    them is never decoded), the ones between counted and said by one ``notice`` status in their place
    (:data:`NOT_SHOWN`). Memory holds ``limit`` events and rows whatever the turn's size: a turn of 300,000
    different events held them all, and decoded them all."""

    __slots__ = ("dropped", "first_dropped", "head", "head_max", "join", "parts", "rows")

    def __init__(self, limit: int | None, *, join: bool | None = None) -> None:
        from collections import deque

        self.head: list[ev.Event] = []
        self.head_max = limit // 2 if limit is not None else None
        self.join = limit is not None if join is None else join
        #: The rows of the last half, not decoded yet (the oldest pushed out and counted past ``maxlen``).
        self.rows: deque[str] = deque(maxlen=max(1, limit - limit // 2) if limit is not None else None)
        self.dropped = 0
        self.first_dropped: str | None = None
        #: The text of the deltas joined into the last event so far (None: it joined none).
        self.parts: list[str] | None = None

    @property
    def full(self) -> bool:
        """Whether the first half is read: the rows that come now are kept as rows (:meth:`add_row`)."""
        return self.head_max is not None and len(self.head) >= self.head_max

    def last(self) -> ev.Event | None:
        self._join()
        return self.head[-1] if self.head else None

    def set_last(self, event: ev.Event) -> None:
        self._join()
        self.head[-1] = event

    def append(self, event: ev.Event) -> None:
        if not self.joins(event):
            self._join()
            self.head.append(event)

    def add(self, event: ev.Event, *, fold: bool) -> None:
        """``event`` kept after the others: in place of the last one when it repeats it (with ``fold``)."""
        last = self.last()
        if fold and last is not None and is_repeat(last, event):
            self.set_last(event)
        else:
            self.append(event)

    def joins(self, event: ev.Event) -> bool:
        """Whether ``event`` is a delta going on from the last one kept (of its kind, run, robot and task): its
        text joined to that one's (only when joining)."""
        if not (self.join and self.head and isinstance(event, ev.TextDelta | ev.ReasoningDelta)):
            return False
        last = self.head[-1]
        if not (isinstance(last, ev.TextDelta | ev.ReasoningDelta) and type(last) is type(event)
                and last.run_id == event.run_id and last.robot == event.robot and last.task == event.task):
            return False
        if self.parts is None:
            self.parts = [last.text]
        self.parts.append(event.text)
        return True

    def add_row(self, data: str) -> None:
        """A row of the last half (the oldest of them left out when there are more)."""
        rows = self.rows
        if len(rows) == rows.maxlen:
            if self.first_dropped is None:
                self.first_dropped = rows[0]
            self.dropped += 1
        rows.append(data)

    def _join(self) -> None:
        if self.parts is None:
            return
        text, self.parts = "".join(self.parts), None
        self.head[-1] = self.head[-1].replace(text=text)

    def events(self, resolver: blobs.Resolver, *, fold: bool) -> list[ev.Event]:
        """The events kept: the first half, the notice of those left out, the last half's rows decoded (their
        repeats folded with ``fold``, their deltas joined)."""
        self._join()
        if not self.rows:
            return self.head
        rest = _Shown(None, join=True)
        for data in self.rows:
            rest.add(event_from_row(data, resolver), fold=fold)
        tail = rest.events(resolver, fold=fold)
        if self.first_dropped is None:
            return [*self.head, *tail]
        first = event_from_row(self.first_dropped, resolver)
        said = ev.RunStatus(run_id=first.run_id, robot=first.robot, seq=first.seq, task=first.task, ts=first.ts,
                            parent_run_id=first.parent_run_id, parent_tool_id=first.parent_tool_id,
                            candidate=first.candidate, state="notice", detail=NOT_SHOWN.format(count=self.dropped))
        return [*self.head, said, *tail]


def status_for(event: ev.Event) -> str:
    """The turn status a terminal event means ("finished", "failed", "cancelled")."""
    match event:
        case ev.RunFailed():
            return "failed"
        case ev.RunCancelled():
            return "cancelled"
        case _:
            return "finished"


def event_row(event: ev.Event, *, extra: dict[str, Any] | None = None,
              externalizer: blobs.Externalizer | None = None) -> str:
    """The ``data`` column of ``event``'s row: its JSON (with ``extra`` keys); with an
    ``externalizer``, its large strings replaced by references to blobs (see :mod:`.blobs`)."""
    text = dumps({**ev.to_dict(event), **extra}) if extra else ev.to_json(event)
    if externalizer is None or len(text) < externalizer.threshold:
        return text
    data = externalizer.value({**ev.to_dict(event), **(extra or {})})
    return dumps(data)


def event_from_row(data: str, resolver: blobs.Resolver | None = None) -> ev.Event:
    """The event a row's ``data`` holds (its blobs read back through ``resolver``)."""
    if resolver is not None and blobs.has_references(data):
        return ev.event_from_dict(resolver.value(json.loads(data)))
    return ev.event_from_json(data)


@dataclass(slots=True)
class _Held:
    """Text deltas held in memory until the next flush (see the module docstring)."""

    thread_id: str
    turn_id: str
    first: ev.TextDelta | ev.ReasoningDelta
    parts: list[str] = field(default_factory=list)
    count: int = 0
    since: float = 0.0
    #: The deltas held, in order (a row written before the turn ends covers the first of them: see _early_rows).
    events: list[ev.TextDelta | ev.ReasoningDelta] = field(default_factory=list)


#: Held text with no whitespace for longer than this is written whole when due (no key is this long).
HOLD_WORD_MOST = 1024


def _safe_split(parts: list[str]) -> int:
    """How many of the held deltas ``parts`` a row written before the turn ends may cover: up to the last boundary
    between two of them with whitespace on one side (each row is redacted alone, and a key, which has no whitespace,
    split between two rows would be matched in neither); all of them when the text after every such boundary runs
    over :data:`HOLD_WORD_MOST` characters without one; 0: none yet (the text is held on)."""
    if parts[-1][-1:].isspace():
        return len(parts)
    tail = 0
    for j in range(len(parts) - 1, 0, -1):
        tail += len(parts[j])
        if tail > HOLD_WORD_MOST:
            return len(parts)
        if parts[j - 1][-1:].isspace() or parts[j][:1].isspace():
            return j
    return len(parts) if tail + len(parts[0]) > HOLD_WORD_MOST else 0


class EventLog(Database):
    """The events of every turn (:class:`~workspace.persistence.Store` adds the threads and turns).

    ``flush_interval`` (s): how long text deltas may be held (0: every delta is its own row).
    """

    def __init__(self, path: str | Path, *, recover: bool = False, busy_timeout: float = 5.0,
                 write_timeout: float = 0.5, flush_interval: float = 0.25, retry_after: float = 2.0,
                 integrity_check: str = "always") -> None:
        self.flush_interval = float(flush_interval)
        self._held: dict[tuple[str, str, str, str | None, str], _Held] = {}
        #: Per turn, the text streamed since its last ``text`` event (indexed if the run stops early).
        self._live_text: dict[str, list[str]] = {}
        super().__init__(path, recover=recover, busy_timeout=busy_timeout, write_timeout=write_timeout,
                         retry_after=retry_after, integrity_check=integrity_check)

    def _closing_statements(self) -> list[Statement]:
        return [*super()._closing_statements(), *self._held_statements(None)]

    def append_event(self, thread_id: str, turn_id: str, event: ev.Event) -> None:
        """Store one event of the turn's run (one short transaction; text deltas are held briefly).

        Raises :class:`StoreError` when the database cannot be written; the event is then kept in
        memory and written with the next write.
        """
        if isinstance(event, ev.TextDelta | ev.ReasoningDelta) and self.flush_interval > 0:
            with self._lock:
                self._check_open()
                if isinstance(event, ev.TextDelta):
                    self._live_text.setdefault(turn_id, []).append(event.text)
                if self._hold(thread_id, turn_id, event):
                    self._write(self._due_statements())
            return
        self.append_events(thread_id, turn_id, [event])

    def append_events(self, thread_id: str, turn_id: str, events: Iterable[ev.Event]) -> None:
        """Store several events of one turn in one transaction (held deltas of the turn go first)."""
        with self._lock:
            self._check_open()
            statements: list[Statement] = []
            for event in events:
                if isinstance(event, ev.TextDelta | ev.ReasoningDelta):
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

    def _hold(self, thread_id: str, turn_id: str, event: ev.TextDelta | ev.ReasoningDelta) -> bool:
        """Hold one delta; True when some held text is due for writing."""
        key = (turn_id, event.run_id, event.robot, event.task, event.kind)
        held = self._held.get(key)
        tick = time.monotonic()
        if held is None:
            held = self._held[key] = _Held(thread_id, turn_id, event, since=tick)
        held.parts.append(event.text)
        held.events.append(event)
        held.count += 1
        return any(tick - h.since >= self.flush_interval for h in self._held.values())

    def _due_statements(self) -> list[Statement]:
        tick = time.monotonic()
        out: list[Statement] = []
        for key in [k for k, h in self._held.items() if tick - h.since >= self.flush_interval]:
            out += self._early_rows(key, tick)
        return out

    def _early_rows(self, key: tuple[str, str, str, str | None, str], tick: float) -> list[Statement]:
        """The row of held deltas written before their turn ends (their time is up): the first of them up to a
        boundary where no key can be split (:func:`_safe_split`); the rest are held on, from ``tick``."""
        held = self._held.pop(key)
        split = _safe_split(held.parts)
        if split >= len(held.parts):
            return self._held_rows(held)
        rest = _Held(held.thread_id, held.turn_id, held.events[split], parts=held.parts[split:],
                     count=len(held.parts) - split, since=tick, events=held.events[split:])
        self._held[key] = rest
        if not split:
            return []
        del held.parts[split:]
        held.count = split
        return self._held_rows(held)

    def _held_statements(self, turn_id: str | None) -> list[Statement]:
        out: list[Statement] = []
        for key in [k for k in self._held if turn_id is None or k[0] == turn_id]:
            out += self._held_rows(self._held.pop(key))
        return out

    def _held_rows(self, held: _Held) -> list[Statement]:
        event = held.first.replace(text="".join(held.parts))
        return self._event_statements(held.thread_id, held.turn_id, event, extra={"deltas": held.count})

    def has_held_text(self, turn_id: str | None = None) -> bool:
        """True while text deltas (of ``turn_id``, or of any turn) wait for their flush."""
        return any(turn_id is None or k[0] == turn_id for k in self._held)

    def flush(self, turn_id: str | None = None, *, whole: bool = True) -> None:
        """Write the held text deltas (of one turn, or all) now; ``whole`` False (a stalled stream's timer): up to
        where no key can be split between two rows (:func:`_safe_split`), the rest held on."""
        with self._lock:
            if self._closed:
                return
            if whole:
                self._write(self._held_statements(turn_id))
            else:
                tick = time.monotonic()
                self._write([row for key in [k for k in self._held if turn_id is None or k[0] == turn_id]
                             for row in self._early_rows(key, tick)])

    def _event_statements(self, thread_id: str, turn_id: str, event: ev.Event, *,
                          extra: dict[str, Any] | None = None) -> list[Statement]:
        """The row of ``event`` and what it changes: the turn's run and totals, the search index, the
        turn's status when the run ends."""
        externalizer = self._externalizer()
        data = event_row(event, extra=extra, externalizer=externalizer)
        out: list[Statement] = [("INSERT OR IGNORE INTO blobs (hash, size, codec, data) VALUES (?, ?, ?, ?)", row)
                                for row in externalizer.rows]
        hashes = list(externalizer.hashes)
        if isinstance(event, ev.RunStarted):  # the message's attachments: their blobs are this row's too
            hashes += [str(a.get("sha256")) for a in event.attachments if a.get("sha256")]
        out.append((
            "INSERT INTO events (thread_id, turn_id, run_id, seq, kind, robot, task, ts, data, blobs) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (thread_id, turn_id, event.run_id, event.seq, event.kind, event.robot, event.task, event.ts,
             data, " ".join(hashes) or None),
        ))
        match event:
            case ev.RunStarted():  # the turn's run, the thread's latest model (not a robot used as a tool's)
                out.append(("UPDATE turns SET run_id = COALESCE(run_id, ?) WHERE id = ?", (event.run_id, turn_id)))
                if event.parent_tool_id is None:
                    out.append(("UPDATE threads SET model = COALESCE(?, model), updated_at = ? WHERE id = ?",
                                (event.model or None, now(), thread_id)))
            case ev.Usage():
                cost = event.cost
                for table, key in (("turns", turn_id), ("threads", thread_id)):
                    out.append((
                        f"UPDATE {table} SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, "
                        "cost = CASE WHEN ? IS NULL THEN cost ELSE COALESCE(cost, 0) + ? END WHERE id = ?",
                        (int(event.input_tokens or 0), int(event.output_tokens or 0), cost, cost, key),
                    ))
            case ev.Text():
                self._live_text.pop(turn_id, None)
                out += index_statements(thread_id, turn_id, "assistant", event.text, fts=self.fts)
            case ev.ToolUse():
                args = event.input
                body = f"{event.name} {dumps(args) if args not in (None, {}) else ''}"
                out += index_statements(thread_id, turn_id, "tool", body, fts=self.fts)
            case ev.RunFinished() | ev.RunFailed() | ev.RunCancelled():
                tail = "".join(self._live_text.pop(turn_id, []))
                if tail and not isinstance(event, ev.RunFinished):  # a finished run's text came as ``text``
                    out += index_statements(thread_id, turn_id, "assistant", tail, fts=self.fts)
                out.append((
                    "UPDATE turns SET status = ?, finished_at = ? WHERE id = ? AND status = 'running' "
                    "AND (run_id IS NULL OR run_id = ?)",
                    (status_for(event), now(), turn_id, event.run_id),
                ))
                out.append(("UPDATE threads SET updated_at = ? WHERE id = ?", (now(), thread_id)))
            case _:
                pass  # every other kind: the row is all
        return out

    def turn_events(self, turn_id: str, *, include_held: bool = True, fold: bool = False,
                    shown: int | None = None) -> list[ev.Event]:
        """The turn's events as stored, in order (held text deltas last, as one delta per run); ``fold``: a
        status or progress event repeating the one before it (:func:`is_repeat`) replaces it as it is read;
        ``shown``: read for display, at most that many events (:class:`_Shown`)."""
        return self._events_of([turn_id], include_held=include_held, fold=fold, shown=shown)[turn_id]

    def events_of(self, turn_ids: Sequence[str], classes: Sequence[type[ev.Event]] | None = None, *,
                  fold: bool = False, shown: int | None = None) -> dict[str, list[ev.Event]]:
        """The events of these turns alone (only those of ``classes``, if given), by turn, held deltas last;
        ``fold`` and ``shown`` as for :meth:`turn_events`."""
        return self._events_of(list(turn_ids), classes, fold=fold, shown=shown)

    def _events_of(self, turn_ids: list[str], classes: Sequence[type[ev.Event]] | None = None, *,
                   include_held: bool = True, fold: bool = False,
                   shown: int | None = None) -> dict[str, list[ev.Event]]:
        """The events of these turns (only those of ``classes``, if given), by turn, held deltas last. Read
        :data:`EVENT_ROWS_READ` rows at a time, so that with ``fold`` a turn that repeated one status 300,000
        times holds one event of them, and with ``shown`` a turn of 300,000 different events holds ``shown`` of
        them, never all its rows and events at once."""
        kept: dict[str, _Shown] = {tid: _Shown(shown) for tid in turn_ids}
        resolver = self._resolver()
        number = 0
        last_key: dict[str, str | None] = {}  # (fold) each turn's last row, stamp left out, when a folded kind
        unread: dict[str, str] = {}  # (fold) each turn's last repeat, not decoded yet
        for start in range(0, len(turn_ids), 500):
            chunk = turn_ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT id, turn_id, kind, data FROM events WHERE turn_id IN ({marks})"
            params: list[Any] = list(chunk)
            if classes is not None:
                sql += f" AND kind IN ({','.join('?' * len(classes))})"
                params += [cls.kind for cls in classes]
            sql += f" AND id > ? ORDER BY id LIMIT {EVENT_ROWS_READ}"
            after = -1
            while True:
                rows = self._read(sql, [*params, after])
                for row in rows:
                    number += 1
                    if not number % DECODED_BETWEEN_WAITS:
                        self.wait_background()  # (a worker reading apart, held back: it waits here too)
                    turn_id, data = row["turn_id"], row["data"]
                    events = kept[turn_id]
                    if events.full:  # (for display, the first half read: the rest kept as rows, the last decoded)
                        if fold:
                            key = _STAMP.sub("", data, 2) if row["kind"] in _FOLDED_KINDS else None
                            if key is not None and last_key.get(turn_id) == key:
                                if events.rows:
                                    events.rows[-1] = data
                                else:
                                    unread[turn_id] = data
                                continue
                            last_key[turn_id] = key
                            if turn_id in unread:
                                events.set_last(event_from_row(unread.pop(turn_id), resolver))
                        if (not events.rows and row["kind"] in _DELTA_KINDS
                                and events.joins(event_from_row(data, resolver))):
                            continue  # (the first half's last text goes on: one text, never cut)
                        events.add_row(data)
                        continue
                    if fold:  # a row saying what the one before said (but for its stamp) is not even decoded
                        key = _STAMP.sub("", data, 2) if row["kind"] in _FOLDED_KINDS else None
                        if key is not None and last_key.get(turn_id) == key:
                            unread[turn_id] = data  # (the last of the repeats is decoded when they end)
                            continue
                        last_key[turn_id] = key
                        if turn_id in unread:
                            events.set_last(event_from_row(unread.pop(turn_id), resolver))
                    events.add(event_from_row(data, resolver), fold=fold)
                if len(rows) < EVENT_ROWS_READ:
                    break
                after = rows[-1]["id"]
                del rows
        for turn_id, data in unread.items():
            kept[turn_id].set_last(event_from_row(data, resolver))
        out = {turn_id: events.events(resolver, fold=fold) for turn_id, events in kept.items()}
        if include_held:
            with self._lock:
                for held_key, held in self._held.items():
                    if held_key[0] in out and (classes is None or type(held.first) in classes):
                        out[held_key[0]].append(held.first.replace(text="".join(held.parts)))
        return out

    def turn_of_run(self, thread_id: str, run_id: str) -> str | None:
        """The turn of the thread whose events hold run ``run_id``'s start (one indexed row is read, not the
        thread's events); None when none does."""
        rows = self._read("SELECT turn_id FROM events WHERE thread_id = ? AND kind = ? AND run_id = ? ORDER BY id "
                          "LIMIT 1", (thread_id, ev.RunStarted.kind, run_id))
        return str(rows[0]["turn_id"]) if rows else None

    def thread_events(self, thread_id: str) -> list[tuple[str, ev.Event]]:
        """Every stored event of the thread, every branch, in the order stored: ``(turn_id, event)``."""
        rows = self._read("SELECT turn_id, data FROM events WHERE thread_id = ? ORDER BY id", (thread_id,))
        resolver = self._resolver()
        return [(r["turn_id"], event_from_row(r["data"], resolver)) for r in rows]

    # -- blobs ----------------------------------------------------------------------------------------
    def _externalizer(self) -> blobs.Externalizer:
        from workspace.secrets import redact

        return blobs.Externalizer(redact=redact, exists=self._blob_exists)

    def _blob_exists(self, digest: str) -> bool:
        try:
            return bool(self._read("SELECT 1 FROM blobs WHERE hash = ?", (digest,)))
        except StoreError:  # unreadable now: write it (again); INSERT OR IGNORE keeps one copy
            return False

    # -- attachments (workspace.attachments): their content as blobs, keyed by its SHA-256 ------------
    def save_attachments(self, attachments: Sequence[Attachment]) -> None:
        """Store the content of ``attachments`` once each (a content already stored costs nothing). The
        ``run_started`` event of the message refers to them (and lists them in its row's ``blobs``)."""
        statements: list[Statement] = []
        for attachment in attachments:
            if any(params[0] == attachment.sha256 for _, params in statements) or self._blob_exists(attachment.sha256):
                continue
            data = attachment.content()
            statements.append(("INSERT OR IGNORE INTO blobs (hash, size, codec, data) VALUES (?, ?, ?, ?)",
                               (attachment.sha256, len(data), blobs.CODEC, zlib.compress(data, blobs.LEVEL))))
        if statements:
            with self._lock:
                self._check_open()
                self._write(statements)

    def attachment_content(self, digest: str) -> bytes | None:
        """The stored content of an attachment (None: not in the database)."""
        rows = self._read("SELECT codec, data FROM blobs WHERE hash = ?", (digest,))
        if not rows or rows[0]["codec"] != blobs.CODEC:
            return None
        try:
            return zlib.decompress(bytes(rows[0]["data"]))
        except zlib.error:
            return None

    def load_attachments(self, refs: Sequence[Mapping[str, Any]]) -> list[Attachment]:
        """The attachments of a ``run_started`` event's references, with their stored content."""
        from workspace.attachments import Attachment

        return [Attachment.from_ref(ref, self.attachment_content(str(ref.get("sha256") or ""))) for ref in refs]

    def turn_attachments(self, turn_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """The attachment references of each turn's message (its run's ``run_started``), for the turns that
        have some."""
        out: dict[str, list[dict[str, Any]]] = {}
        for turn_id, events in self._events_of(list(turn_ids), (ev.RunStarted,)).items():
            started = next((e for e in events if isinstance(e, ev.RunStarted) and not e.nested and e.task is None),
                           None)
            if started is not None and started.attachments:
                out[turn_id] = [dict(a) for a in started.attachments]
        return out

    def _resolver(self) -> blobs.Resolver:
        def fetch(digest: str) -> tuple[str, bytes] | None:
            rows = self._read("SELECT codec, data FROM blobs WHERE hash = ?", (digest,))
            return (str(rows[0]["codec"]), bytes(rows[0]["data"])) if rows else None

        return blobs.Resolver(fetch)
