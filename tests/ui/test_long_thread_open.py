"""Opening a thread of 2,000 turns does not walk its whole branch on the window's thread.

A branch of 2,000 turns (with a second answer to turn 5's question) in a real database. Opening it reads a
page of the branch's ids before the last turns show, not the branch from its root (the rest is read by a
worker through a connection of its own); a search hit at turn 5 is brought in a few turns per turn of the
event loop and shown, the workers reading the thread waiting meanwhile; and the ‹ 1/2 › switch deep in the branch shows the other answer and back.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.app_window import running_app, wait_until
from tests.fakes.long_threads import add_long_thread
from ui.chat.model.presenter import INITIAL_TURNS, ChatPresenter
from ui.chat.view.chat import ChatView
from ui.chat.view.stream import MarkdownStream
from ui.transcript import AHEAD_THREAD, PAGE, LazyTranscript
from workspace import events as ev
from workspace.persistence import BackgroundBranch, Store

TURNS = 2000


class CountingStore(Store):
    """A real store that counts the rows its reads return: rows of turns (every column) and rows of ids."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.turn_rows = 0
        self.id_rows = 0

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        rows = super()._read(sql, params)
        columns = rows[0].keys() if rows else []  # (a Row's ``in`` looks at its values)
        if "FROM events" in sql or threading.current_thread().name.startswith(AHEAD_THREAD):
            pass  # (what the worker reads ahead of the turns being loaded: not the window's reads)
        elif "user_text" in columns:
            self.turn_rows += len(rows)
        else:
            self.id_rows += len(rows)
        return rows


@pytest.fixture(scope="module")
def long_thread(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list[str], str]:
    """The database (copied by each test), the thread, its branch's turn ids and turn 5's other answer."""
    path = tmp_path_factory.mktemp("long") / "long.db"
    store = Store(path)
    thread_id, ids = add_long_thread(store, TURNS)
    again = store.add_turn(thread_id, user_text="again 5", parent_turn_id=ids[4])  # a sibling of turn 5
    store.append_events(thread_id, again.id, [
        ev.RunStarted(run_id="again", robot="assistant", seq=1, message="again 5"),
        ev.Text(run_id="again", robot="assistant", seq=2, text="another answer 5"),
        ev.RunFinished(run_id="again", robot="assistant", seq=3),
    ])
    store.finish_turn(again.id, "finished")
    store.set_current(thread_id, ids[-1])
    store.close()
    return path, thread_id, ids, again.id


def _copy(long_thread: tuple[Path, str, list[str], str], tmp_path: Path) -> Path:
    db = tmp_path / "long.db"
    shutil.copy(long_thread[0], db)
    return db


@contextmanager
def _loaded(long_thread: tuple[Path, str, list[str], str],
            tmp_path: Path) -> Iterator[tuple[CountingStore, ChatPresenter, LazyTranscript]]:
    """A copy of the long thread's database read through a :class:`CountingStore`, the thread loaded in a chat
    presenter as a lazy transcript; the store closed after."""
    store = CountingStore(_copy(long_thread, tmp_path))
    try:
        presenter = ChatPresenter()
        lazy = LazyTranscript(store, long_thread[1])
        presenter.load_thread(lazy)
        yield store, presenter, lazy
    finally:
        store.close()


async def _branch_read_in_the_worker(chat: ChatView) -> None:
    """Wait until the worker's walk of the branch came: every turn above the shown ones is known."""
    await wait_until(lambda: chat.hidden_turns == TURNS - INITIAL_TURNS, what="the branch read in the worker")


def test_opening_reads_a_page_of_the_branch_and_the_rest_in_a_worker(
        long_thread: tuple[Path, str, list[str], str], tmp_path: Path) -> None:
    _path, thread_id, ids, _again = long_thread
    with _loaded(long_thread, tmp_path) as (store, presenter, lazy):
        shown = presenter.state.turns
        assert [t.user.text for t in shown] == [f"question {i}" for i in range(TURNS - INITIAL_TURNS, TURNS)]
        # Before the first paint: a page of the branch's ids (and the shown turns' siblings), a page of rows.
        assert store.id_rows <= 2 * PAGE + 2, f"{store.id_rows} ids read before the last turns showed"
        assert store.turn_rows <= PAGE + 1
        assert not lazy.complete and 0 < presenter.hidden_turns <= PAGE  # the earlier turns known so far

        # The rest of the branch, read by the worker through its own connection: the count is the branch's.
        brancher = BackgroundBranch(store)
        try:
            above = lazy.above
            assert above is not None
            rest = asyncio.run(brancher.walk_up(thread_id, above))
        finally:
            brancher.close()
        before = store.id_rows
        assert lazy.add_rest(rest) and lazy.complete
        assert store.id_rows == before  # nothing of it through the window's connection
        assert presenter.hidden_turns == TURNS - INITIAL_TURNS
        assert lazy.ids == ids

        for _ in range(3):  # earlier turns: a page of rows at most each time
            rows = store.turn_rows
            presenter.load_earlier()
            assert store.turn_rows - rows <= PAGE
        assert presenter.state.turns[0].user.text == f"question {TURNS - INITIAL_TURNS - 120}"


def test_earlier_turns_come_a_page_at_a_time_without_the_worker(
        long_thread: tuple[Path, str, list[str], str], tmp_path: Path) -> None:
    """Scrolled up before the worker's walk came: the pages above are read as they are reached."""
    _path, _thread_id, ids, _again = long_thread
    with _loaded(long_thread, tmp_path) as (store, presenter, lazy):
        for _ in range(5):
            read = store.id_rows
            presenter.load_earlier()
            assert store.id_rows - read <= 2 * PAGE + 2  # the ids of the page reached and their siblings'
        turns = presenter.state.turns
        assert [t.user.turn_id for t in turns] == ids[TURNS - INITIAL_TURNS - 200:]
        assert not lazy.complete and presenter.hidden_turns > 0
        # A turn counted from the root reads the branch to its root.
        assert lazy.turns[5].id == ids[5] and lazy.complete and len(lazy) == TURNS
        assert presenter.hidden_turns == TURNS - INITIAL_TURNS - 200


async def test_a_search_hit_at_turn_5_comes_in_steps_and_shows(
        long_thread: tuple[Path, str, list[str], str], tmp_path: Path, provider: Any) -> None:
    _path, thread_id, ids, _again = long_thread
    db = _copy(long_thread, tmp_path)
    async with running_app(provider=provider, db_path=db, theme_name="light", size=(1200, 800)) as root:
        w = root.window
        w.threads.open(thread_id)
        await _branch_read_in_the_worker(w.chat)
        w.sidebar.search.setText("answer 5")
        w.threads.open_result(thread_id, ids[5])
        # The click returns before the turns above the last ones are loaded: they come a step at a time.
        assert w.chat.hidden_turns == TURNS - INITIAL_TURNS
        await wait_until(lambda: w.chat.found_flash is not None, what="the hit at turn 5 shown")
        found = next(x for x in w.chat.items() if isinstance(x, MarkdownStream) and x.text == "answer 5")
        bar = w.chat.verticalScrollBar()
        await wait_until(lambda: bar.value() <= found.mapTo(w.chat.widget(), found.rect().topLeft()).y()
                         < bar.value() + w.chat.viewport().height(), what="the hit scrolled to")
        assert w.chat.hidden_turns <= 5  # (turns 0-4 above it are loaded only when scrolled to)


async def test_the_sibling_switch_deep_in_a_long_branch(
        long_thread: tuple[Path, str, list[str], str], tmp_path: Path, provider: Any) -> None:
    _path, thread_id, ids, again = long_thread
    db = _copy(long_thread, tmp_path)
    async with running_app(provider=provider, db_path=db, theme_name="light", size=(1200, 800)) as root:
        w, c = root.window, root.controller
        w.threads.open(thread_id)
        w.threads.open_result(thread_id, ids[5])
        await wait_until(lambda: w.chat.found_flash is not None, what="turn 5 shown")
        turn5 = next(t for t in w.chat.presenter.state.turns if t.turn_id == ids[5])
        assert (turn5.user.sibling_index, turn5.user.sibling_count) == (0, 2)

        c.switch_branch(ids[5], +1)  # ‹ 1/2 › to 2/2: the other answer, a branch of six turns
        turns = w.chat.presenter.state.turns
        assert [t.user.text for t in turns][-2:] == ["question 4", "again 5"] and w.chat.hidden_turns == 0
        assert (turns[-1].user.sibling_index, turns[-1].user.sibling_count) == (1, 2)
        assert len(turns) == 6

        c.switch_branch(again, -1)  # and back: the long branch, its last turns
        turns = w.chat.presenter.state.turns
        assert [t.user.text for t in turns] == [f"question {i}" for i in range(TURNS - INITIAL_TURNS, TURNS)]
        await _branch_read_in_the_worker(w.chat)
        w.threads.open_result(thread_id, ids[5])
        await wait_until(lambda: any(t.turn_id == ids[5] for t in w.chat.presenter.state.turns), what="turn 5 again")
        turn5 = next(t for t in w.chat.presenter.state.turns if t.turn_id == ids[5])
        assert (turn5.user.sibling_index, turn5.user.sibling_count) == (0, 2)


async def test_the_click_that_opens_it_reads_a_page_of_rows_on_the_window_thread(
        long_thread: tuple[Path, str, list[str], str], tmp_path: Path, provider: Any) -> None:
    """Everything the click's step reads on the window's thread: the branch's last page, the shown turns, a
    few rows of the thread; the rest (the branch above, the inspector's events, the context meter's count
    along the branch) in workers."""
    import threading

    _path, thread_id, _ids, _again = long_thread
    db = _copy(long_thread, tmp_path)
    async with running_app(provider=provider, db_path=db, theme_name="light", size=(1200, 800)) as root:
        store = root.controller.store
        window_thread = threading.get_ident()
        rows: list[tuple[bool, int, str]] = []
        read = store._read

        def counting(sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
            found = read(sql, params)
            rows.append((threading.get_ident() == window_thread, len(found), sql))
            return found

        store._read = counting  # type: ignore[method-assign]
        try:
            root.window.threads.open(thread_id)
            here = sum(count for on_window, count, _sql in rows if on_window)
            assert here <= 4 * PAGE, f"{here} rows read on the window's thread: " + "; ".join(
                f"{count} {sql[:60]}" for on_window, count, sql in rows if on_window and count > 20)
            await _branch_read_in_the_worker(root.window.chat)
        finally:
            store._read = read  # type: ignore[method-assign]


async def test_the_workers_reading_the_thread_wait_while_a_hit_far_up_comes_in(
        long_thread: tuple[Path, str, list[str], str], tmp_path: Path, provider: Any) -> None:
    """Opened and a search hit at turn 5 clicked at once: the workers reading the thread (the inspector's events,
    the conversation, the meter's count) wait while the turns above come in, from the first turns loaded until
    the hit is outlined: each read of theirs asked meanwhile ends after it. Then the inspector fills and the
    conversation is read."""
    import threading
    import time

    _path, thread_id, ids, _again = long_thread
    db = _copy(long_thread, tmp_path)
    async with running_app(provider=provider, db_path=db, theme_name="light", size=(1200, 800)) as root:
        w, store = root.window, root.controller.store
        window_thread = threading.get_ident()
        worker_reads: list[tuple[float, float]] = []  # (asked, ended) of each read in another thread
        loaded: list[float] = []  # when the window loaded earlier turns, and when it outlined the hit
        outlined: list[float] = []
        waits: list[tuple[float, float]] = []  # (entered, left) of each wait of a worker held back
        coming_in = threading.Event()
        read, load, flash = store._read, w.chat.presenter.load_earlier, w.chat.finder.flash
        wait_background = store.wait_background

        def timed_wait() -> None:
            entered = time.perf_counter()
            wait_background()
            if threading.get_ident() != window_thread:
                waits.append((entered, time.perf_counter()))

        def timed(sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
            # (the transcript's own read ahead of the page above serves the hit coming in: not held)
            held = threading.get_ident() != window_thread and not threading.current_thread().name.startswith(AHEAD_THREAD)
            if held:
                # A worker's read waits (bounded) until the hit begins to come in, so that one is asked meanwhile
                # however fast or slow the machine: on a busy one the workers had all ended before (nothing tested).
                coming_in.wait(10)
            asked = time.perf_counter()
            found = read(sql, params)
            if held:
                worker_reads.append((asked, time.perf_counter()))
            return found

        def timed_load(count: int) -> int:
            loaded.append(time.perf_counter())
            coming_in.set()
            return load(count)

        def timed_flash(widget: Any, **options: Any) -> None:
            outlined.append(time.perf_counter())
            flash(widget, **options)

        store._read = timed  # type: ignore[method-assign]
        store.wait_background = timed_wait  # type: ignore[method-assign]
        w.chat.presenter.load_earlier = timed_load  # type: ignore[method-assign]
        w.chat.finder.flash = timed_flash  # type: ignore[method-assign]
        try:
            w.sidebar.search.setText("answer 5")
            w.threads.open(thread_id)
            w.threads.open_result(thread_id, ids[5])
            await wait_until(lambda: w.chat.found_flash is not None, what="the hit at turn 5 shown")
            trace = w.trace_model
            await wait_until(lambda: trace.rowCount() == min(trace.limit, 3 * TURNS), what="the inspector filled")
            session = root.controller.session
            await wait_until(lambda: session._conversation is not None, what="the conversation read ahead")
            assert len(session._conversation.messages) == 2 * TURNS

            start, end = loaded[0], outlined[0]
            asked_meanwhile = [(asked, ended) for asked, ended in worker_reads if start < asked < end]
            # A worker held back may wait between the parts of what it read, before asking its next read.
            waited_meanwhile = [left for entered, left in waits if start < entered < end]
            assert asked_meanwhile or waited_meanwhile, (
                "no worker read or waited while the hit came in (they ended before: nothing was tested)")
            early = [ended for _asked, ended in asked_meanwhile if ended < end]
            assert not early, f"{len(early)} of {len(asked_meanwhile)} worker reads asked while the hit came in ended then"
            assert all(left >= end for left in waited_meanwhile), "a worker held back went on before the hit showed"
        finally:
            store._read = read  # type: ignore[method-assign]
            store.wait_background = wait_background  # type: ignore[method-assign]
