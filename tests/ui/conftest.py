"""Qt test set-up: offscreen, one QApplication, and async tests on a qasync loop.

Async tests in this folder run on the window's loop (``ui.event_loop.WindowLoop``, a ``qasync.QEventLoop``)
through pytest-asyncio's ``pytest_asyncio_loop_factories`` hook; the runner closes each loop after its test. Inside
them never call ``qtbot.wait*`` (a nested Qt loop hangs qasync): poll with
``await asyncio.sleep`` (see ``wait_until`` in ``tests/fakes/app_window.py``, with the app's start and close).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.app_window import running_app

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def _qapp() -> Any:
    from ui.app import get_app

    return get_app()


def _qasync_loop() -> asyncio.AbstractEventLoop:
    from ui.event_loop import WindowLoop

    return WindowLoop(_qapp())


def pytest_asyncio_loop_factories(config: Any, item: Any) -> dict[str, Callable[[], asyncio.AbstractEventLoop]]:
    return {"qasync": _qasync_loop}


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


@pytest.fixture
async def desktop(provider: Any, db_path: Path) -> AsyncIterator[Any]:
    """The whole app (window, controller, bridge) on a ScriptedProvider and a fresh database."""
    async with running_app(provider=provider, db_path=db_path, theme_name="light", size=(1200, 800)) as root:
        yield root


@pytest.fixture
def server() -> Iterator[Any]:
    """The loopback model server of the comparison tests (``fakes.candidates.window_server``); a module that needs
    another one defines its own ``server``."""
    from fakes.candidates import window_server

    with window_server() as srv:
        yield srv


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The comparison tests' project folder (``fakes.candidates.project``); a module may define its own."""
    from fakes.candidates import project

    return project(tmp_path)


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


@pytest.fixture
async def scene(robotlab_home: Path, db_path: Path, tmp_path: Path, provider: Any, slow_server: Any,
                monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Any]:
    """The app with the robot ``manager``, whose tool ``start_helper`` delegates to ``helper`` (on ``slow_server``)
    in the background: ``fakes.delegating_manager``'s ``Scene``, what the tests of stopping that work use."""
    from tests.fakes.delegating_manager import slow_helper_app

    async with slow_helper_app(slow_server, provider=provider, robotlab_home=robotlab_home, db_path=db_path,
                               tmp_path=tmp_path, monkeypatch=monkeypatch) as built:
        yield built
