"""Thread search off the caller's thread (``BackgroundSearch``), on a real SQLite store: the same ranked hits
as ``Store.search``, the newest query winning (older ones skipped before they run, or their hits dropped
when they had started), and the ranking by bm25 with deleted threads left out."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from workspace import events as ev
from workspace.persistence import BackgroundSearch, Store


@pytest.fixture
def store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "threads.db")
    for t in range(40):
        thread = store.create_thread(robot="helper", title=f"Thread {t}")
        turn = store.add_turn(thread.id, user_text=f"question {t} about pelicans" + " and rivers" * (t % 5),
                              parent_turn_id=None)
        store.append_events(thread.id, turn.id, [
            ev.Text(run_id="r", robot="helper", seq=1, text=f"answer {t}: pelicans fly " + "pelicans " * (t % 7)),
            ev.RunFinished(run_id="r", robot="helper", seq=2)])
    return store


async def test_the_same_hits_as_the_store_gives_on_the_callers_thread(store: Store) -> None:
    searcher = BackgroundSearch(store)
    try:
        for query in ("pelicans", "rivers", "pelic fly", "nothing-like-this", 'a"b'):
            got = await searcher.search(query)
            assert got is not None
            assert [(h.turn_id, h.kind, h.snippet) for h in got] == \
                [(h.turn_id, h.kind, h.snippet) for h in store.search(query)]
        assert searcher._conn is not None  # its own connection, not the store's (whose lock writes need)
        assert threading.get_ident() not in {searcher._executor._threads.pop().ident}  # type: ignore[union-attr]
    finally:
        searcher.close()
        store.close()


async def test_hits_are_ranked_best_first_and_deleted_threads_left_out(store: Store) -> None:
    hits = store.search("pelicans", limit=5)
    # bm25: the answers that say "pelicans" most often rank first.
    assert all(h.kind == "assistant" for h in hits[:3])
    assert hits[0].snippet.count("[pelicans]") >= hits[-1].snippet.count("[pelicans]")
    best = hits[0].thread_id
    store.delete_thread(best)
    assert best not in {h.thread_id for h in store.search("pelicans", limit=50)}
    assert len(store.search("pelicans", limit=50)) == 50  # the places it took are filled by the next best
    store.close()


async def test_queries_asked_while_one_waits_are_skipped_and_only_the_newest_is_answered(store: Store) -> None:
    searcher = BackgroundSearch(store)
    try:
        await searcher.search("warm")  # the worker and its connection exist
        release = threading.Event()
        assert searcher._executor is not None
        searcher._executor.submit(release.wait)  # the worker busy (a long search)
        typed = [asyncio.ensure_future(searcher.search(q)) for q in ("p", "pe", "pel", "pelicans")]
        await asyncio.sleep(0.05)
        release.set()
        results = await asyncio.gather(*typed)
        assert results[:3] == [None, None, None]
        assert results[3] and all("pelicans" in h.snippet.lower() for h in results[3])
    finally:
        searcher.close()
        store.close()


async def test_a_search_under_way_when_a_newer_one_is_asked_gives_nothing(store: Store) -> None:
    searcher = BackgroundSearch(store)
    try:
        await searcher.search("warm")
        conn = searcher._conn
        assert conn is not None
        started, go = threading.Event(), threading.Event()

        def hold() -> int:  # SQLite's progress handler, in the worker: the first query waits, once
            if not started.is_set():
                started.set()
                go.wait(10)
            return 0

        conn.set_progress_handler(hold, 1)
        first = asyncio.ensure_future(searcher.search("pelicans"))
        assert await asyncio.to_thread(started.wait, 10)
        second = asyncio.ensure_future(searcher.search("rivers"))
        go.set()
        assert await first is None  # its hits came after a newer query was asked: dropped
        newest = await second
        assert newest and all("rivers" in h.snippet.lower() for h in newest)
    finally:
        searcher.close()
        store.close()


async def test_an_in_memory_store_is_searched_through_its_own_connection() -> None:
    store = Store(":memory:")
    thread = store.create_thread(robot="helper")
    store.add_turn(thread.id, user_text="pelicans in memory", parent_turn_id=None)
    searcher = BackgroundSearch(store)
    try:
        got = await searcher.search("pelicans")
        assert got is not None and [h.thread_id for h in got] == [thread.id]
    finally:
        searcher.close()
        store.close()
