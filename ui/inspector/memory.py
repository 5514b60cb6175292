"""MemoryModel: the live key/value view of a robot's (or network's) memory, with history."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, Qt

from ui.widgets.table_model import RowsTableModel
from workspace import events as ev


@dataclass(slots=True)
class MemoryEntry:
    key: str
    value: Any
    writer: str | None
    ts: float
    deleted: bool = False
    #: Every change of this key, oldest first: (ts, writer, value, previous).
    history: list[tuple[float, str | None, Any, Any]] = field(default_factory=list)


class MemoryModel(RowsTableModel[MemoryEntry]):
    COLUMNS = ("Key", "Value", "Writer", "Time")
    EntryRole = Qt.ItemDataRole.UserRole

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._by_key: dict[str, int] = {}

    def reindex(self) -> None:
        self._by_key = {entry.key: i for i, entry in enumerate(self._rows)}

    def cell(self, entry: MemoryEntry, col: int, role: int) -> Any:
        if role == self.EntryRole:
            return entry
        if role == Qt.ItemDataRole.DisplayRole:
            if col == 0:
                return entry.key
            if col == 1:
                return "(deleted)" if entry.deleted else preview(entry.value)
            if col == 2:
                return entry.writer or "—"
            if col == 3:
                return time.strftime("%H:%M:%S", time.localtime(entry.ts))
        if role == Qt.ItemDataRole.ToolTipRole and col == 1:
            return pretty(entry.value)[:2000]
        if role == Qt.ItemDataRole.FontRole and entry.deleted:
            from PySide6.QtGui import QFont

            font = QFont()
            font.setStrikeOut(True)
            return font
        return None

    def entry(self, key: str) -> MemoryEntry | None:
        row = self._by_key.get(key)
        return self._rows[row] if row is not None else None

    @property
    def entries(self) -> list[MemoryEntry]:
        return list(self._rows)

    def set_events(self, events: list[ev.Event]) -> None:
        """Replace everything with the memory changes in ``events`` (one reset)."""
        self.set_rows(memory_entries(events))

    def add_events(self, events: list[ev.Event]) -> None:
        for event in events:
            if isinstance(event, ev.MemoryChanged):
                self.apply(event.key, event.value, previous=event.previous, writer=event.writer, ts=event.ts)

    def apply(self, key: str, value: Any, *, previous: Any = None, writer: str | None = None,
              ts: float | None = None) -> None:
        """``key`` now holds ``value`` (None: deleted); values are whatever JSON the robots wrote (any)."""
        ts = time.time() if ts is None else ts
        row = self._by_key.get(key)
        if row is None:
            self._by_key[key] = len(self._rows)
            self.append_rows([_new_entry(key, value, previous=previous, writer=writer, ts=ts)])
            return
        _change(self._rows[row], value, previous=previous, writer=writer, ts=ts)
        self.row_changed(row)


def memory_entries(events: Iterable[ev.Event]) -> list[MemoryEntry]:
    """The keys the memory changes in ``events`` left, in the order they were first written, each with its history
    (no Qt: a worker thread reads a long thread's)."""
    entries: list[MemoryEntry] = []
    by_key: dict[str, int] = {}
    for event in events:
        if isinstance(event, ev.MemoryChanged):
            row = by_key.get(event.key)
            if row is None:
                by_key[event.key] = len(entries)
                entries.append(_new_entry(event.key, event.value, previous=event.previous, writer=event.writer,
                                          ts=event.ts))
            else:
                _change(entries[row], event.value, previous=event.previous, writer=event.writer, ts=event.ts)
    return entries


def _new_entry(key: str, value: Any, *, previous: Any, writer: str | None, ts: float) -> MemoryEntry:
    entry = MemoryEntry(key, value, writer, ts, deleted=value is None and previous is not None)
    entry.history.append((ts, writer, value, previous))
    return entry


def _change(entry: MemoryEntry, value: Any, *, previous: Any, writer: str | None, ts: float) -> None:
    entry.value = value
    entry.writer = writer
    entry.ts = ts
    entry.deleted = value is None and previous is not None
    entry.history.append((ts, writer, value, previous))


def pretty(value: Any) -> str:
    """A memory value (any JSON) as indented text."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def preview(value: Any, limit: int = 80) -> str:
    """A memory value (any JSON) on one line, cut to ``limit`` characters."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
