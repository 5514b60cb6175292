"""TraceModel: the raw event stream of a thread, with a filter proxy by kind and text.

The Kind column and the kind filter show each event's serialised name (its ``kind``, as in the
JSON): a label people read and pick from, never something the code dispatches on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import fields, replace
from typing import Any

from PySide6.QtCore import QObject, QSortFilterProxyModel, Qt

# Live text deltas of one stream within JOIN_DELTAS_S (s) of the first are kept as one event (the bridge's
# batches hold them so already), as the store writes them.
from ui.bridge import JOIN_DELTAS_S, event_summary
from ui.widgets.table_model import Index, RowsTableModel
from workspace import events as ev


class TraceModel(RowsTableModel[ev.Event]):
    COLUMNS = ("#", "Time", "Kind", "Robot", "Details")
    EventRole = Qt.ItemDataRole.UserRole
    KindRole = Qt.ItemDataRole.UserRole + 1

    def __init__(self, parent: QObject | None = None, *, limit: int = 200_000) -> None:
        super().__init__(parent)
        self._summaries: dict[int, str] = {}
        self._kinds: set[str] = set()
        self.limit = limit

    def reindex(self) -> None:
        self._summaries.clear()
        self._kinds = {e.kind for e in self._rows}

    def cell(self, event: ev.Event, col: int, role: int) -> Any:
        if role == self.EventRole:
            return event
        if role == self.KindRole:
            return event.kind
        if role == Qt.ItemDataRole.DisplayRole:
            if col == 0:
                return event.seq
            if col == 1:
                return time.strftime("%H:%M:%S", time.localtime(event.ts)) + f".{int(event.ts * 1000) % 1000:03d}"
            if col == 2:
                return event.kind
            if col == 3:
                return event.robot + (f" / {event.task}" if event.task else "")
            if col == 4:
                return self.summary(event)
        if role == Qt.ItemDataRole.ToolTipRole and col == 4:
            return raw_event_json(event)[:2000]
        return None

    def summary(self, event: ev.Event) -> str:
        """``event``'s Details, worked out once when first shown (kept by the event, which the rows hold)."""
        summary = self._summaries.get(id(event))
        if summary is None:
            summary = self._summaries[id(event)] = event_summary(event)
        return summary

    @property
    def events(self) -> list[ev.Event]:
        return list(self._rows)

    def event_at(self, row: int) -> ev.Event:
        return self._rows[row]

    def set_events(self, events: list[ev.Event], *, kinds: set[str] | None = None) -> None:
        """Show ``events`` (the last :attr:`limit` of them); ``kinds``: theirs, worked out already (by a worker
        thread, for a long thread's), else worked out here."""
        rows = list(events)[-self.limit:]
        if kinds is None:
            self.set_rows(rows)
            return
        self.beginResetModel()
        self._rows, self._kinds = rows, set(kinds)
        self._summaries.clear()
        self.endResetModel()

    def append_events(self, events: list[ev.Event]) -> None:
        self._kinds.update(e.kind for e in events)
        self.append_rows(events)

    def replace_last(self, event: ev.Event) -> None:
        """The last row shows ``event`` instead (a live text delta joined with the ones after it)."""
        if not self._rows:
            return
        self._summaries.pop(id(self._rows[-1]), None)
        self._rows[-1] = event
        self._kinds.add(event.kind)
        self.row_changed(len(self._rows) - 1)

    def kinds(self) -> list[str]:
        return sorted(self._kinds)


def join_text_deltas(last: ev.Event | None, events: list[ev.Event]) -> tuple[ev.TextDelta | None, list[ev.Event]]:
    """``events`` (a live batch after ``last``) with the text deltas of one stream joined: what replaces
    ``last`` (a delta the batch's first ones join), or None, and the events to add after it. A joined delta
    keeps the first one's ``seq`` and time, as the store's joined row does.

    Called with every delta of a stream (one per token), so a delta costs a comparison of its stamp and
    its text appended to a list; a run of joined deltas becomes one event once, at its end."""
    replaced: ev.TextDelta | None = None
    out: list[ev.Event] = []
    head = last if isinstance(last, ev.TextDelta) else None  # the delta the next ones join (out[-1] or last)
    key = _stream_key(head) if head is not None else None
    parts: list[str] = []  # the texts joining ``head``

    def settle() -> None:
        nonlocal replaced
        assert head is not None
        joined = replace(head, text=head.text + "".join(parts))
        if out:
            out[-1] = joined
        else:
            replaced = joined
        parts.clear()

    for event in events:
        if (head is not None and isinstance(event, ev.TextDelta) and type(event) is type(head)
                and event.ts - head.ts < JOIN_DELTAS_S and _stream_key(event) == key):  # the same stream
            parts.append(event.text)
            continue
        if parts:
            settle()
        out.append(event)
        head = event if isinstance(event, ev.TextDelta) else None
        key = _stream_key(head) if head is not None else None
    if parts:
        settle()
    return replaced, out


def _stream_key(event: ev.TextDelta) -> tuple[Any, ...]:
    """What two deltas of one stream have in common: every field but the text, ``seq`` and the time."""
    names = _STREAM_FIELDS.get(type(event))
    if names is None:
        names = _STREAM_FIELDS[type(event)] = tuple(f.name for f in fields(event) if f.name not in ("text", "seq", "ts"))
    return tuple(getattr(event, name) for name in names)


#: The fields :func:`_stream_key` compares, by class of delta.
_STREAM_FIELDS: dict[type, tuple[str, ...]] = {}


def raw_event_json(event: ev.Event) -> str:
    try:
        data = event.to_dict()
    except Exception:
        data = {"repr": repr(event)}
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)


class TraceFilterModel(QSortFilterProxyModel):
    """Keeps events of the chosen kinds whose text contains the filter text."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._kinds: set[str] | None = None
        self._text = ""

    def _refilter(self, change: Callable[[], object]) -> None:
        if hasattr(self, "beginFilterChange"):  # Qt >= 6.10
            self.beginFilterChange()
            change()
            self.endFilterChange(QSortFilterProxyModel.Direction.Rows)
        else:  # pragma: no cover - older Qt
            change()
            self.invalidateFilter()

    def set_kinds(self, kinds: set[str] | None) -> None:
        self._refilter(lambda: setattr(self, "_kinds", set(kinds) if kinds is not None else None))

    def set_text(self, text: str) -> None:
        self._refilter(lambda: setattr(self, "_text", text.strip().lower()))

    def filterAcceptsRow(self, source_row: int, _source_parent: Index) -> bool:
        model = self.sourceModel()
        if not isinstance(model, TraceModel):
            return True
        event = model.event_at(source_row)
        if self._kinds is not None and event.kind not in self._kinds:
            return False
        if self._text:
            hay = f"{event.kind} {event.robot} {event_summary(event)}".lower()
            if self._text not in hay and self._text not in raw_event_json(event).lower():
                return False
        return True
