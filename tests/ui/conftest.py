"""Qt test set-up: offscreen, one QApplication, and async tests on a qasync loop.

Async tests in this folder run on a ``qasync.QEventLoop`` through pytest-asyncio's
``pytest_asyncio_loop_factories`` hook; the runner closes each loop after its test. Inside
them never call ``qtbot.wait*`` (a nested Qt loop hangs qasync): poll with
``await asyncio.sleep`` (see :func:`wait_until`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def _qapp() -> Any:
    from ui.app import get_app

    return get_app()


def _qasync_loop() -> asyncio.AbstractEventLoop:
    import qasync

    return qasync.QEventLoop(_qapp())


def pytest_asyncio_loop_factories(config: Any, item: Any) -> dict[str, Callable[[], asyncio.AbstractEventLoop]]:
    return {"qasync": _qasync_loop}


async def wait_until(predicate: Callable[[], Any], timeout: float = 30.0, *, what: str = "the condition") -> None:
    """Poll ``predicate`` on the running (qasync) loop until it is true. The time limit only stops a hang:
    it is generous because the suite runs on a busy two-core machine."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.01)


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


@pytest.fixture(autouse=True)
def collect_qt_garbage_here() -> Iterator[None]:
    """After each test (its event loop closed): collect the garbage on this, the GUI thread.

    Left for later, a test's leftovers (its loop's timers, closed windows) may be collected by a
    garbage collection that a worker thread of the next test happens to start (the window's warm-up,
    ``asyncio.to_thread``): Qt objects destroyed there keep their timers ("Timers cannot be stopped
    from another thread"), which then fire on freed memory and crash the process.
    """
    import gc

    yield
    gc.collect()


@pytest.fixture
def qapp_instance() -> Iterator[Any]:
    yield _qapp()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "workspace.db"


@pytest.fixture
def provider() -> Any:
    from workspace.providers.testing import ScriptedProvider

    return ScriptedProvider()


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


@pytest.fixture
async def desktop(provider: Any, db_path: Path) -> AsyncIterator[Any]:
    """The whole app (window, controller, bridge) on a ScriptedProvider and a fresh database."""
    async with running_app(provider=provider, db_path=db_path, theme_name="light", size=(1200, 800)) as root:
        yield root


@pytest.fixture
async def compare_app(server: Any, folder: Path, db_path: Path) -> AsyncIterator[Any]:
    """The whole app on the test module's loopback model server (its ``server`` fixture, answering
    ``openai/model-a`` and the other candidates) and folder (its ``folder`` fixture), with file-helper picked:
    what a test of a comparison opens."""
    from workspace.config import load_config

    config = load_config(folder, env={}, overrides={"llm": {"model": "openai/model-a", "max_retries": 1,
                                                            "api_base": server.base_url + "/v1"}})
    async with running_app(db_path=db_path, config=config, folder=folder, theme_name="light", size=(1400, 900)) as root:
        root.controller.set_robot("file-helper")
        yield root


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
