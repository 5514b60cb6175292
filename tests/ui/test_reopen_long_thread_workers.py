"""A long thread left right after it opened is not read on in the background while the next one opens.

The window opened the thread left open last time at start-up; a moment later the person opened another
(or the same one again): the conversation's read ahead of the first open went on to the root of its branch
in a worker, holding the interpreter while the next thread made its widgets (10,000 turns: the first paint
1.7-2.2 x a 100-turn thread's). Here, in the whole app on a real database: a thread of 600 turns opened and
left at once reads (nearly) none of its events after being left; opened and kept, its conversation is read
ahead as before.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fakes.long_threads import build_thread

from tests.fakes.app_window import running_app, wait_until
from workspace.session.thread_history import CONVERSATION_READ

TURNS = 3 * CONVERSATION_READ


async def test_a_thread_left_at_once_is_not_read_on_in_the_background(tmp_path: Path, provider: Any) -> None:
    db = tmp_path / "long.db"
    thread_id = build_thread(db, TURNS)
    async with running_app(provider=provider, db_path=db, theme_name="light", size=(1200, 800)) as root:
        c = root.controller
        store = c.store
        window_thread = threading.get_ident()
        worker_rows = [0]
        read = store._read

        def counting(sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
            found = read(sql, params)
            # (events of some kinds: a turn's end and start, the meter's count; not the inspector's, all kinds)
            if "FROM events" in sql and " kind IN " in sql and threading.get_ident() != window_thread:
                worker_rows[0] += len(found)
            return found

        def settled() -> bool:
            return not any(t.get_name() in ("load-conversation", "inspector-load", "thread-context")
                           for t in c.tasks.tasks)

        store._read = counting  # type: ignore[method-assign]
        try:
            root.window.threads.open(thread_id)
            root.window.threads.new()  # left before the workers read anything
            await wait_until(settled, what="the workers of the thread left")
            left = worker_rows[0]
            # The meter's count (the last turns') at most; not the conversation (two rows a turn).
            assert left < TURNS, f"{left} event rows read in workers after the thread was left"

            # Opened and kept open: its conversation is read ahead, to the root.
            worker_rows[0] = 0
            root.window.threads.open(thread_id)
            await wait_until(settled, what="the workers of the thread open")
            assert worker_rows[0] >= 2 * TURNS, f"only {worker_rows[0]} event rows read ahead for the open thread"
        finally:
            store._read = read  # type: ignore[method-assign]
