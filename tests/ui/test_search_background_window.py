"""The thread list's search runs off the window's thread: typing shows the newest query's hits only, and a
change of the thread list that did not change the database does not search again."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from tests.fakes.app_window import wait_until
from workspace.persistence import BackgroundSearch


async def test_typing_shows_the_newest_querys_hits_searched_off_the_windows_thread(desktop: Any, provider: Any,
                                                                                   monkeypatch: Any) -> None:
    w = desktop.window
    provider.enqueue("Pelicans fly in lines.", "Rivers run to the sea.")
    w.runs.send("tell me about pelicans")
    await wait_until(lambda: desktop.controller.idle, what="the first run")
    w.threads.new()
    w.runs.send("and rivers")
    await wait_until(lambda: desktop.controller.idle, what="the second run")
    await asyncio.sleep(0.05)

    searched: list[tuple[str, bool]] = []
    run = BackgroundSearch._run

    def spy(self: BackgroundSearch, query: str, number: int) -> Any:
        searched.append((query, threading.current_thread() is threading.main_thread()))
        return run(self, query, number)

    monkeypatch.setattr(BackgroundSearch, "_run", spy)
    for text in ("r", "ri", "riv", "rivers"):  # typed faster than a search ends
        w.sidebar.search.setText(text)
        w.threads.refresh()
    await wait_until(lambda: w.thread_model.searching and w.thread_model.rowCount() == 1
                     and "rivers" in (w.thread_model.item(0).snippet or "").lower(), what="the hits for 'rivers'")
    assert searched and not any(on_window for _q, on_window in searched)  # never on the window's thread
    assert searched[-1][0] == "rivers"

    # The thread list changes (a refresh) while the database does not: no new search.
    count = len(searched)
    w.threads.refresh()
    w.threads.refresh()
    await asyncio.sleep(0.2)
    assert len(searched) == count and w.thread_model.rowCount() == 1
