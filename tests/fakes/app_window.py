"""The whole app in a window test, and waiting on its loop: what the window tests (``tests/ui``, on the qasync loop its
``conftest`` sets up) and the helpers of ``tests/fakes`` share."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any


async def wait_until(predicate: Callable[[], Any], timeout: float = 30.0, *, what: str = "the condition") -> None:
    """Poll ``predicate`` on the running (qasync) loop until it is true. The time limit only stops a hang:
    it is generous because the suite runs on a busy two-core machine."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}\n{_where_things_wait()}")
        await asyncio.sleep(0.01)


def _awaiting(coro: Any) -> str:
    """Where a suspended coroutine waits: its chain of awaits (coroutines, async generators), outermost first."""
    steps = []
    for _ in range(40):
        if type(coro).__name__ == "async_generator_asend":  # (the generator it steps is among what it refers to)
            import gc

            coro = next((o for o in gc.get_referents(coro) if hasattr(o, "ag_frame")), None)
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "ag_frame", None) or getattr(coro, "gi_frame", None)
        if frame is None:
            if coro is not None:
                steps.append(type(coro).__name__)
            break
        steps.append(f"{frame.f_code.co_name} ({Path(frame.f_code.co_filename).name}:{frame.f_lineno})")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "ag_await", None) or getattr(coro, "gi_yieldfrom", None)
    return " -> ".join(steps)


def _where_things_wait() -> str:
    """Where each pending task of the loop and each other thread is, for a hang's report."""
    import sys
    import threading
    import traceback

    lines = ["pending tasks:"]
    for task in asyncio.all_tasks():
        if task is asyncio.current_task():
            continue
        lines.append(f"  {task.get_name()}: {_awaiting(task.get_coro()) or repr(task.get_coro())}")
    timer = getattr(asyncio.get_running_loop(), "_timer", None)  # qasync's: its timers' callbacks not yet run
    pending = dict(getattr(timer, "_SimpleTimer__callbacks", None) or {})
    lines.append(f"timers pending (id: interval, time left as Qt has them; 0 ms left is due): {len(pending)}")
    if pending:
        from PySide6.QtCore import QAbstractEventDispatcher

        dispatcher = QAbstractEventDispatcher.instance()
        known = {info.timerId: info.interval for info in dispatcher.registeredTimers(timer)} if dispatcher else {}
        for timer_id, handle in list(pending.items())[:12]:
            left = dispatcher.remainingTime(timer_id) if dispatcher and timer_id in known else None
            lines.append(f"  {timer_id}: {known.get(timer_id, 'not registered')} ms, {left} ms left: {handle}")
    here = traceback.extract_stack(limit=8)[:-2]  # (a nested Qt loop would show: timerEvent, processEvents)
    lines.append("this thread: " + " <- ".join(f"{s.name} ({Path(s.filename).name}:{s.lineno})" for s in reversed(here)))
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    lines.append("threads:")
    for ident, frame in sys._current_frames().items():
        if ident == threading.get_ident():
            continue
        stack = traceback.extract_stack(frame, limit=4)
        lines.append(f"  {names.get(ident, ident)}: " + " <- ".join(
            f"{s.name} ({Path(s.filename).name}:{s.lineno})" for s in reversed(stack)))
    return "\n".join(lines)


async def turns_made(chat: Any, timeout: float = 30.0) -> None:
    """Wait until ``chat`` has made the widgets of the turns near its screen: a thread shown makes them in the
    steps after the one that showed it, the newest first, a frame's budget at a time."""
    await wait_until(lambda: not chat.turn_window.busy, timeout, what="the turns' widgets")


async def close_app(root: Any) -> None:
    """Shut an Application down and delete its window now, in a controlled place.

    Left to the garbage collector, a window can be deleted in the middle of the next test's
    event processing, which can crash Qt.
    """
    import gc

    from PySide6.QtCore import QCoreApplication, QEvent

    await root.aclose()
    root.window.close()
    root.window.deleteLater()
    await asyncio.sleep(0)
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.collect()
    await asyncio.sleep(0)


@contextlib.asynccontextmanager
async def running_app(*, size: tuple[int, int] | None = None, **options: Any) -> AsyncIterator[Any]:
    """``ui.app.Application(**options)`` with its window shown (at ``size``), closed at the end."""
    from ui.app import Application

    root = Application(**options)
    if size is not None:
        root.window.resize(*size)
    root.window.show()
    try:
        yield root
    finally:
        await close_app(root)


@contextlib.asynccontextmanager
async def memory_review_app(*, home: Path, provider: Any, db_path: Path, tmp_path: Path, robot: str,
                            robot_file: str) -> AsyncIterator[Any]:
    """The whole app with ``review.memory: ask`` on a fresh folder (``tmp_path/project``), the robot file
    ``robot_file`` written as the user's robot ``robot`` and picked: what a test of reviewed memory writes opens."""
    from workspace.config import load_config

    path = home / "config" / "robots" / f"{robot}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(robot_file, encoding="utf-8")
    folder = tmp_path / "project"
    folder.mkdir()
    config = load_config(folder, overrides={"review": {"memory": "ask"}})
    async with running_app(provider=provider, db_path=db_path, theme_name="light", folder=folder, config=config,
                           size=(1300, 850)) as root:
        root.window.robots.refresh()
        row = root.window.robot_model.row_of(robot)
        assert row >= 0, f"the robot {robot} is not in the picker"
        root.window.robot_picker.setCurrentIndex(row)
        yield root


def as_read(text: str) -> str:
    """A label's text as a person reads it: its no-break spaces as spaces, its word joiners (drawn as nothing:
    they keep a wrapping label from breaking "tok/s" after the "/") gone."""
    return text.replace("\u00a0", " ").replace("\u2060", "")
