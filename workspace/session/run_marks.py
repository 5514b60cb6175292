"""A run's end that nobody saw yet, kept with its thread: "finished", "failed" or "review" (changes wait).

A run that ends while its thread is not on screen leaves a mark in the thread's metadata (``run_mark``), so
the thread list still shows it after a restart; opening the thread clears it (:func:`clear_mark`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workspace.persistence import Store, ThreadInfo

__all__ = ["MARKS", "MARK_KEY", "clear_mark", "keep_mark", "marks"]

#: The metadata key of the mark.
MARK_KEY = "run_mark"
#: The marks kept (a cancelled run leaves none: the person stopped it).
MARKS = ("finished", "failed", "review")


def keep_mark(store: Store, thread_id: str, state: str) -> None:
    """Mark ``thread_id``'s run as ended unseen with ``state`` (one of :data:`MARKS`; anything else clears it)."""
    store.update_thread_metadata(thread_id, **{MARK_KEY: state if state in MARKS else None})


def clear_mark(store: Store, thread: ThreadInfo) -> bool:
    """The thread was seen: its mark goes (True: it had one)."""
    if MARK_KEY not in thread.metadata:
        return False
    store.update_thread_metadata(thread.id, **{MARK_KEY: None})
    return True


def marks(threads: Iterable[ThreadInfo]) -> dict[str, str]:
    """The marks of ``threads`` (as read with the thread list), by thread id."""
    out: dict[str, str] = {}
    for thread in threads:
        mark = thread.metadata.get(MARK_KEY)
        if isinstance(mark, str) and mark in MARKS:
            out[thread.id] = mark
    return out
