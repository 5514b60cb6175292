"""A task whose wakeup comes due while another task's step runs Qt's events (a nested loop) is stepped after it.

qasync runs the loop's callbacks from Qt's event loop, so a task pumping Qt's events (``processEvents``; a bench
paging a thread does) runs them inside its step; a callback there that steps another task failed ("Cannot enter
into task ... while another task ... is being executed") and that task stayed pending for good, with what it held.
Switching between two threads long enough for the inspector to read them in a worker, each switch's
``inspector-load`` task was lost so, kept by the window's tasks with the thread's transcript (``TurnInfo``) and its
tool calls (``ToolCallRecord``, each with an ``AnsiParser``): they grew by a thread's worth at every switch. On the
window's loop (``ui.event_loop.WindowLoop``) the step waits for the nested loop's end and the counts stay flat.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication

from tests.fakes.app_window import running_app, wait_until
from tests.fakes.long_threads import add_tool_thread
from ui.inspector.contents import InspectorContents
from ui.window.docks import INSPECTOR_SYNC_EVENTS
from workspace.persistence import Store

#: Enough turns that the inspector reads each thread in its worker.
TURNS = INSPECTOR_SYNC_EVENTS + 20
SWITCHES = 6
WATCHED = ("ToolCallRecord", "AnsiParser", "TurnInfo")


def _pump(passes: int = 20) -> None:
    """Qt's events run here, inside the running task's step (a nested loop)."""
    app = QApplication.instance()
    assert app is not None
    for _ in range(passes):
        app.processEvents()


async def test_a_task_woken_inside_a_nested_qt_loop_is_stepped_after_it() -> None:
    loop = asyncio.get_running_loop()
    gate: asyncio.Future[str] = loop.create_future()

    async def waiting() -> str:
        return await gate

    task = asyncio.ensure_future(waiting())
    await asyncio.sleep(0)  # (it awaits the gate now)
    gate.set_result("open")  # its wakeup is due ...
    _pump()  # ... and comes while this task's step runs Qt's events
    assert not task.done()  # (not inside this step: it waits for its end)
    await asyncio.wait({task}, timeout=20)  # (a task never stepped again stays pending)
    assert task.done() and task.result() == "open"


def _live() -> Counter[str]:
    gc.unfreeze()  # (what the window froze is counted too)
    gc.collect()
    return Counter(name for name in (type(o).__name__ for o in gc.get_objects()) if name in WATCHED)


async def test_switching_two_long_threads_keeps_their_objects_bounded(
        tmp_path: Path, provider: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "two.db"
    store = Store(db)
    try:
        ids = [add_tool_thread(store, TURNS, title="one"), add_tool_thread(store, TURNS, title="two")]
    finally:
        store.close()
    entered, release, returned = threading.Event(), threading.Event(), threading.Event()
    made = InspectorContents.of.__func__  # type: ignore[attr-defined]

    def held(cls: type[InspectorContents], *args: Any, **kwargs: Any) -> InspectorContents:
        if threading.get_ident() == main:  # (a short read, done where it is asked)
            return made(cls, *args, **kwargs)  # type: ignore[no-any-return]
        entered.set()  # (the worker has read the thread: its result waits for the test)
        release.wait(30)
        try:
            return made(cls, *args, **kwargs)  # type: ignore[no-any-return]
        finally:
            returned.set()

    monkeypatch.setattr(InspectorContents, "of", classmethod(held))
    main = threading.get_ident()
    counts: list[Counter[str]] = []
    async with running_app(provider=provider, db_path=db, theme_name="light", size=(1200, 800)) as root:
        w = root.window
        for switch in range(SWITCHES):
            entered.clear()
            release.clear()
            returned.clear()
            w.threads.open(ids[switch % 2])
            await wait_until(entered.is_set, what="the inspector's worker")
            loads = [t for t in root.controller.tasks.tasks if t.get_name() == "inspector-load"]
            release.set()  # the worker's result comes while this task runs Qt's events, and the load's wakeup
            deadline = time.monotonic() + 20  # (a limit against a hang only)
            while time.monotonic() < deadline and not (returned.is_set() and all(
                    getattr(t, "_fut_waiter", None) is None or t._fut_waiter.done() for t in loads)):
                _pump(1)
                time.sleep(0.001)
            _pump()
            with contextlib.suppress(AssertionError):  # (a load never stepped again: what it holds is counted)
                await wait_until(lambda: not any(t.get_name() == "inspector-load" for t in root.controller.tasks.tasks)
                                 and w.tool_model.rowCount() == TURNS, 5, what="the inspector's load")
            counts.append(_live())
    assert counts[1]["ToolCallRecord"] >= TURNS and counts[1]["AnsiParser"] >= TURNS, counts  # (the open thread's)
    for name in WATCHED:  # no more after any later switch than after the second
        assert max(c[name] for c in counts[2:]) <= counts[1][name], (name, counts)
