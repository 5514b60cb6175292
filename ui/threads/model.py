"""ThreadListModel: the sidebar's threads, or the hits of a full-text search across threads."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QModelIndex, QObject, QPersistentModelIndex, QStringListModel, Qt

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from workspace.persistence import SearchHit, ThreadInfo

from ui.formatting import HIGHLIGHT

Index = QModelIndex | QPersistentModelIndex


@dataclass(slots=True)
class ThreadItem:
    thread_id: str
    title: str
    robot: str = ""
    updated: float | None = None
    #: For search hits: the matching text (the match between HIGHLIGHT marks) and the turn it is in.
    snippet: str = ""
    turn_id: str | None = None
    #: For search hits: where the match is ("user", "assistant" or "tool").
    kind: str = ""


def thread_item(thread: ThreadInfo) -> ThreadItem:
    """A ThreadItem from a store thread record."""
    return ThreadItem(
        thread_id=thread.id,
        title=thread.title or "Untitled thread",
        robot=" · ".join(p for p in (thread.robot, thread.origin_label) if p),
        updated=float(thread.updated_at),
    )


#: A thread's run state (the window's session model says which), in words for the accessible text and the tooltip.
RUN_STATES = {
    "streaming": "answering now",
    "background": "working in the background",
    "approval": "waiting for your approval",
    "review": "changes waiting for your review",
    "finished": "finished, not seen yet",
    "failed": "failed",
}

#: Where a search hit's match is, for people.
HIT_KINDS = {"user": "in your message", "assistant": "in an answer", "tool": "in a tool call"}


def hit_item(hit: SearchHit) -> ThreadItem:
    return ThreadItem(
        thread_id=hit.thread_id,
        title=hit.title or "Untitled thread",
        robot=hit.robot or "",
        updated=float(hit.created_at) if hit.created_at is not None else None,
        snippet=hit.snippet or "",
        turn_id=hit.turn_id,
        kind=hit.kind or "",
    )


def plain_snippet(snippet: str) -> str:
    """A snippet without its highlight marks."""
    return snippet.replace(HIGHLIGHT[0], "").replace(HIGHLIGHT[1], "")


def snippet_parts(snippet: str) -> list[tuple[str, bool]]:
    """A snippet as (text, is_match) runs, from its HIGHLIGHT marks."""
    parts: list[tuple[str, bool]] = []
    rest = snippet
    start, end = HIGHLIGHT
    while rest:
        i = rest.find(start)
        if i < 0:
            parts.append((rest, False))
            break
        if i:
            parts.append((rest[:i], False))
        j = rest.find(end, i + 1)
        if j < 0:
            parts.append((rest[i + 1:], True))
            break
        parts.append((rest[i + 1:j], True))
        rest = rest[j + 1:]
    return [(text, match) for text, match in parts if text]


def fitted_parts(parts: Sequence[tuple[str, bool]], room: int, width: Callable[[str, bool], int],
                 elide_left: Callable[[str, int], str]) -> list[tuple[str, bool]]:
    """``parts`` (:func:`snippet_parts`) cut so that the first match shows within ``room`` pixels: when the text before
    it leaves too little room, its start is elided (``elide_left(text, pixels)``: "…" and the end of ``text`` that
    fits), so a long line's match is not cut away at the right. ``width(text, is_match)``: its pixels."""
    first = next((i for i, (_text, match) in enumerate(parts) if match), None)
    if first is None or first == 0:
        return list(parts)
    before = "".join(text for text, _match in parts[:first])
    match = parts[first][0]
    # The match and a little of what follows it (a word's worth) should fit after the text before it.
    wanted = min(width(match, True), room * 2 // 3)
    if first + 1 < len(parts):
        wanted += min(width(parts[first + 1][0], False), room // 6)
    if width(before, False) + wanted <= room:
        return list(parts)
    kept = elide_left(before, max(0, room - wanted))
    return ([(kept, False)] if kept else []) + list(parts[first:])


def hit_date(ts: float | None, now: float | None = None) -> str:
    """When a matching message was sent: the time today, else the day (and the year when not this one)."""
    if ts is None:
        return ""
    now = time.time() if now is None else now
    then, today = time.localtime(ts), time.localtime(now)
    if then[:3] == today[:3]:
        return time.strftime("%H:%M", then)
    if then.tm_year == today.tm_year:
        return time.strftime("%d %b", then).lstrip("0")
    return time.strftime("%d %b %Y", then).lstrip("0")


def relative_time(ts: float | None, now: float | None = None) -> str:
    if ts is None:
        return ""
    now = time.time() if now is None else now
    delta = max(0.0, now - ts)
    if delta < 60:
        return "now"
    if delta < 3600:
        return f"{int(delta // 60)} min"
    if delta < 86400:
        return f"{int(delta // 3600)} h"
    if delta < 86400 * 7:
        return f"{int(delta // 86400)} d"
    return time.strftime("%d %b", time.localtime(ts))


class ThreadListModel(QStringListModel):
    """The sidebar's threads, or a search's hits: a row each, its data answered here from :class:`ThreadItem`.

    Its rows are counted in C++: the model keeps its rows' thread ids as its string list (set in the one reset
    that changes the rows), and Python answers only :meth:`data` and :meth:`flags`. The list's layout asks the
    model for every row's index twice, and each index asks the row count: counted in Python, a user's 3,000 threads
    took about 6,000 calls into Python, 10 ms of the window's thread right after start-up read the thread list."""

    ThreadIdRole = Qt.ItemDataRole.UserRole
    ItemRole = Qt.ItemDataRole.UserRole + 1
    SubtitleRole = Qt.ItemDataRole.UserRole + 2
    #: The thread's run state (a key of RUN_STATES), or None when no run goes or waits to be seen.
    RunStateRole = Qt.ItemDataRole.UserRole + 3

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._items: list[ThreadItem] = []
        self.searching = False
        #: Run states by thread id (threads with none are not in it).
        self.run_states: dict[str, str] = {}

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self._items):
            return None
        item = self._items[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return item.title
        if role == self.ThreadIdRole:
            return item.thread_id
        if role == self.ItemRole:
            return item
        if role == self.RunStateRole:
            return self.run_states.get(item.thread_id)
        if role == self.SubtitleRole:
            return self.subtitle(item)
        state = RUN_STATES.get(self.run_states.get(item.thread_id, ""), "")
        if role == Qt.ItemDataRole.ToolTipRole:
            tip = plain_snippet(item.snippet) or item.title
            return f"{tip}\n{state[:1].upper()}{state[1:]}" if state else tip
        if role == Qt.ItemDataRole.AccessibleTextRole:
            if self.searching:
                where = HIT_KINDS.get(item.kind, "")
                parts = [item.title, item.robot, hit_date(item.updated), where, plain_snippet(item.snippet)]
            else:
                parts = [item.title, state, item.robot, relative_time(item.updated)]
            return ", ".join(p for p in parts if p)
        return None

    def subtitle(self, item: ThreadItem) -> str:
        """A row's second line: the robot and the thread's age, or a search hit's matching text."""
        if self.searching:
            return plain_snippet(item.snippet)
        return " · ".join(p for p in (item.robot, relative_time(item.updated)) if p)

    def flags(self, index: Index) -> Qt.ItemFlag:
        # (a plain list's flags, not the string list's: its rows are not dragged nor dropped on)
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        base = Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemNeverHasChildren
        return base if self.searching else base | Qt.ItemFlag.ItemIsEditable

    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        # Renames go through the window (which saves to the store and reloads).
        return False

    @property
    def items(self) -> list[ThreadItem]:
        return list(self._items)

    def set_threads(self, threads: Sequence[ThreadInfo | ThreadItem]) -> None:
        self._set_items([t if isinstance(t, ThreadItem) else thread_item(t) for t in threads], searching=False)

    def set_hits(self, hits: Sequence[SearchHit | ThreadItem]) -> None:
        seen: set[tuple[str, str | None]] = set()
        items = []
        for hit in hits:
            item = hit if isinstance(hit, ThreadItem) else hit_item(hit)
            key = (item.thread_id, item.turn_id)
            if key not in seen:
                seen.add(key)
                items.append(item)
        self._set_items(items, searching=True)

    def _set_items(self, items: list[ThreadItem], *, searching: bool) -> None:
        """The rows, in one reset: the string list's (its count is the model's row count)."""
        self.searching = searching
        self._items = items
        self.setStringList([item.thread_id for item in items])

    def set_run_states(self, states: dict[str, str]) -> None:
        """Which threads have a run going, waiting or ended unseen (by thread id: a key of RUN_STATES)."""
        changed = {t for t in set(states) | set(self.run_states) if states.get(t) != self.run_states.get(t)}
        self.run_states = dict(states)
        for row, item in enumerate(self._items):
            if item.thread_id in changed:
                index = self.index(row)
                self.dataChanged.emit(index, index, [self.RunStateRole, Qt.ItemDataRole.AccessibleTextRole,
                                                     Qt.ItemDataRole.ToolTipRole])

    def row_of(self, thread_id: str) -> int:
        for row, item in enumerate(self._items):
            if item.thread_id == thread_id:
                return row
        return -1

    def item(self, row: int) -> ThreadItem:
        return self._items[row]
