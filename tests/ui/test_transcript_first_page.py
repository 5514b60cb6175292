"""Opening a long stored thread reads a page of it, not the whole branch.

A branch of 400 turns (with a second answer to an early turn and to a late one) is opened in the chat's
presenter over the window's ``LazyTranscript``. The rows the store hands back are counted: before the
last turns show, only a page of the branch's ids, a page of turn rows and the events of the turns shown are read;
loading earlier turns reads their pages as they come; and every turn shows the sibling counts
(‹ 2/2 ›) the whole branch would give.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fakes.long_threads import add_long_thread

from ui.chat.model.presenter import INITIAL_TURNS, ChatPresenter
from ui.transcript import PAGE, LazyTranscript
from workspace import events as ev
from workspace.persistence import Store

TURNS = 400


class CountingStore(Store):
    """A real store that counts the rows its reads return, by what they are."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.turn_rows = 0  # rows of the turns table, every column (a TurnInfo each)
        self.id_rows = 0  # rows of ids only
        self.event_reads: list[int] = []  # rows of each read of events

        self.window_event_rows = 0  # rows of events read on the thread that made the store (the window's)
        self._maker = threading.get_ident()

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        rows = super()._read(sql, params)
        columns = rows[0].keys() if rows else []  # (a Row's ``in`` looks at its values)
        if "FROM events" in sql:
            self.event_reads.append(len(rows))
            if threading.get_ident() == self._maker:
                self.window_event_rows += len(rows)
        elif "user_text" in columns:
            self.turn_rows += len(rows)
        else:
            self.id_rows += len(rows)
        return rows


def _thread(path: Path) -> tuple[str, list[str]]:
    store = Store(path)
    thread_id, ids = add_long_thread(store, TURNS)
    for i in (5, TURNS - 3):  # a second answer to turn 5's and to a late turn's question: branches
        store.add_turn(thread_id, user_text=f"again {i}", parent_turn_id=ids[i - 1])
    store.set_current(thread_id, ids[-1])
    store.close()
    return thread_id, ids


def test_opening_a_long_thread_reads_a_page_and_the_rest_as_it_loads(tmp_path: Path) -> None:
    thread_id, _ids = _thread(tmp_path / "long.db")
    store = CountingStore(tmp_path / "long.db")
    try:
        presenter = ChatPresenter()
        presenter.load_thread(LazyTranscript(store, thread_id))
        shown = presenter.state.turns
        assert [t.user.text for t in shown] == [f"question {i}" for i in range(TURNS - INITIAL_TURNS, TURNS)]
        assert presenter.hidden_turns == PAGE - INITIAL_TURNS  # the earlier turns known so far: the last page's
        # Before the first paint: the last page of the branch's ids, one page of turn rows, the shown turns' events.
        assert store.id_rows <= 2 * PAGE + 2  # the ids of the page and of the shown turns' siblings
        assert store.turn_rows <= PAGE + 1
        assert len(store.event_reads) == INITIAL_TURNS
        counts = {t.user.text: (t.user.sibling_index, t.user.sibling_count) for t in shown}
        assert counts[f"question {TURNS - 3}"] == (0, 2)
        assert counts[f"question {TURNS - 4}"] == (0, 1)

        loaded = 0
        while presenter.hidden_turns:
            before = store.turn_rows
            loaded += presenter.load_earlier()
            assert store.turn_rows - before <= PAGE  # each load reads at most the page it reaches into
        assert loaded == TURNS - INITIAL_TURNS
        assert store.turn_rows == TURNS  # every turn's row read once
        turns = presenter.state.turns
        assert [t.user.text for t in turns] == [f"question {i}" for i in range(TURNS)]
        assert (turns[5].user.sibling_index, turns[5].user.sibling_count) == (0, 2)
        assert all(t.user.sibling_count == 1 for i, t in enumerate(turns) if i not in (5, TURNS - 3))
    finally:
        store.close()


def test_earlier_turns_show_with_their_events_read_ahead_in_a_worker(tmp_path: Path) -> None:
    # Loading an earlier turn read its events on the window's thread, a read of the store and their decoding
    # a turn: about half of what paging to a long thread's top cost the window. Once earlier turns are being
    # loaded, the events of the page above are read in a worker meanwhile, and its turns take them from there.
    thread_id, _ids = _thread(tmp_path / "long.db")
    store = CountingStore(tmp_path / "long.db")
    try:
        presenter = ChatPresenter()
        lazy = LazyTranscript(store, thread_id)
        presenter.load_thread(lazy)
        opened = store.window_event_rows
        assert opened == 3 * INITIAL_TURNS and not lazy._ahead  # the last turns' own: nothing read ahead yet
        while presenter.hidden_turns:
            presenter.load_earlier()
            deadline = time.monotonic() + 30  # (bounds a hang: a page's read takes milliseconds)
            while not all(f.done() for f in lazy._ahead.values()) and time.monotonic() < deadline:
                time.sleep(0.01)
        texts = [t.user.text for t in presenter.state.turns]
        assert texts == [f"question {i}" for i in range(TURNS)]
        answers = [i.text for t in presenter.state.turns for i in t.items if hasattr(i, "text")]
        assert [a for a in answers if a.startswith("answer")] == [f"answer {i}" for i in range(TURNS)]
        # On the window's thread: the events of the last page's turns only (the first two pages: the one
        # opened, and the one whose reading starts the read ahead); the rest came from the worker.
        read_here = (store.window_event_rows - opened) // 3
        assert read_here <= 2 * PAGE - INITIAL_TURNS, f"{read_here} turns' events read on the window's thread"
        assert sum(store.event_reads) == 3 * TURNS  # every turn's events read once
    finally:
        store.close()


def test_a_branch_shown_from_an_earlier_leaf_and_an_empty_thread(tmp_path: Path) -> None:
    thread_id, ids = _thread(tmp_path / "long.db")
    store = Store(tmp_path / "long.db")
    try:
        lazy = LazyTranscript(store, thread_id, ids[5])
        assert len(lazy) == 6 and [t.id for t in lazy.turns] == ids[:6]
        assert lazy.turns[-1].user_text == "question 5" and [t.id for t in lazy.turns[2:4]] == ids[2:4]
        assert lazy.view(lazy.turns[-1]).sibling_count == 2
        assert [e.text for e in lazy.all_events() if isinstance(e, ev.Text)] == [f"answer {i}" for i in range(6)]
        empty = store.create_thread(robot="assistant")
        assert len(LazyTranscript(store, empty.id).turns) == 0
    finally:
        store.close()


def test_the_inspectors_read_of_a_long_branch_stops_when_no_longer_wanted(tmp_path: Path) -> None:
    # The inspector reads a long thread's events in a worker; a person who leaves the thread meanwhile made it
    # read on to the root, holding the store's lock read after read while the next thread opened (2.4 s of
    # opening a 10,000-turn thread went to waiting for it). It reads a few hundred turns at a time and stops.
    from ui.transcript import EVENTS_READ

    thread_id, _ids = _thread(tmp_path / "long.db")
    store = CountingStore(tmp_path / "long.db")
    try:
        lazy = LazyTranscript(store, thread_id)
        turn_rows = store.turn_rows
        whole = lazy.all_events()
        assert [e.text for e in whole if isinstance(e, ev.Text)] == [f"answer {i}" for i in range(TURNS)]
        # The branch is walked by its ids a read at a time: no read of every turn's row in one query (at 10,000
        # turns that one held the store's lock for 250-300 ms while the window's own reads waited).
        assert store.turn_rows == turn_rows, store.turn_rows - turn_rows
        assert len(store.event_reads) == -(-TURNS // EVENTS_READ) > 1  # in reads of EVENTS_READ turns
        assert lazy.events_while(lambda: True) == whole
        store.event_reads.clear()

        def wanted() -> bool:  # the person leaves the thread after the first read
            return len(store.event_reads) < 1

        assert lazy.events_while(wanted) is None
        assert store.event_reads and len(store.event_reads) == 1, store.event_reads
    finally:
        store.close()
