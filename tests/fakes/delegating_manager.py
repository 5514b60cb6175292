"""The window with a robot whose tool delegates work in the background: the scene of the tests of stopping,
deleting and quitting while a delegation still runs (``tests/ui``'s ``scene`` fixture: the delegate's model on a
slow loopback server), and what those tests check it with."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.fakes.app_window import running_app, wait_until
from workspace import Robot
from workspace.providers.testing import Pause, ScriptedProvider, ToolCall

if TYPE_CHECKING:
    from tests.fakes.llm_server import FakeLLMServer

MANAGER = "---\nname: manager\ndescription: hands work on\ntools: [start_helper]\nmcp: none\n---\nYou manage.\n"


def write_manager(robotlab_home: Path) -> None:
    """The user's robot file ``manager`` (whose tool is ``start_helper``) in ``robotlab_home``."""
    path = robotlab_home / "config" / "robots" / "manager.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(MANAGER, encoding="utf-8")


@asynccontextmanager
async def manager_app(helper: Robot, task: str, *, provider: ScriptedProvider, robotlab_home: Path, db_path: Path,
                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[Any, list[Any]]]:
    """The whole app (on ``provider``, its store at ``db_path``, the folder ``tmp_path/project``) with the robot
    ``manager`` picked, whose tool ``start_helper`` delegates ``task`` to ``helper`` in the background and answers
    "started". Yields the app and the delegations' futures, in the order the tool started them (a list it fills)."""
    from workspace.delegation import delegate
    from workspace.tools import registry
    from workspace.tools.base import Tool

    futures: list[Any] = []

    async def start(arguments: dict[str, Any]) -> str:
        futures.append(await delegate(helper, task, delegated_by="manager", background=True))
        return "started"

    monkeypatch.setitem(registry._TOOLS, "start_helper",
                        Tool("start_helper", "Start the helper", {"type": "object", "properties": {}}, start))
    write_manager(robotlab_home)
    folder = tmp_path / "project"
    folder.mkdir()
    async with running_app(provider=provider, db_path=db_path, theme_name="light", folder=folder,
                           size=(1280, 720)) as root:
        root.window.robots.refresh()
        root.window.robot_picker.setCurrentIndex(root.window.robot_model.row_of("manager"))
        yield root, futures


@dataclass
class Scene:
    """The app of :func:`slow_helper_app`, the delegate's slow server and the delegations' futures."""

    root: Any
    server: FakeLLMServer
    futures: list[Any] = field(default_factory=list)


@asynccontextmanager
async def slow_helper_app(server: FakeLLMServer, *, provider: ScriptedProvider, robotlab_home: Path, db_path: Path,
                          tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Scene]:
    """:func:`manager_app` whose ``start_helper`` delegates "work slowly" to ``helper``, on the loopback ``server``
    (whose model takes its time). A delegation left running stops at the end."""
    from tests.fakes.bus_robots import robot

    helper = robot("helper", server, "You help.")
    async with manager_app(helper, "work slowly", provider=provider, robotlab_home=robotlab_home, db_path=db_path,
                           tmp_path=tmp_path, monkeypatch=monkeypatch) as (root, futures):
        yield Scene(root, server, futures)
        for future in futures:
            future.cancel()


async def assert_stopped(scene: Scene) -> None:
    """The delegation ended cancelled, its model request was cut off and nothing more was asked."""
    (future,) = scene.futures
    await wait_until(future.done, what="the delegation to stop")
    with pytest.raises(asyncio.CancelledError):
        await future.value(timeout=5)
    await wait_until(lambda: scene.server.disconnects >= 1, what="the delegate's request to be cut off")
    await asyncio.sleep(0.3)
    assert len(scene.server.requests) == 1
    assert scene.root.controller.delegations_running(scene.root.controller.thread_id) == []


def lane_of_the_call(window: Any) -> Any:
    """The delegate's lane in the card of the call ``c1`` (``start_helper``)."""
    call = window.chat.presenter.call("c1")
    assert call is not None and call.inner is not None and call.inner.robot == "helper"
    return call.inner


async def run_ends_while_it_delegates(scene: Scene, provider: ScriptedProvider) -> str:
    """The caller's run starts its delegation and ends while the delegate's model still thinks: the thread's id."""
    from ui.chat.model.runs import BACKGROUND_NOT_FOLLOWED

    hold = asyncio.Event()
    provider.enqueue([ToolCall("start_helper", {}, id="c1")], [Pause(event=hold), "Started it."])
    window, controller = scene.root.window, scene.root.controller
    window.runs.send("get the helper going")
    await wait_until(lambda: scene.server.requests and len(provider.history) == 2, what="the delegate's model call")
    hold.set()
    await wait_until(lambda: scene.futures and controller.idle,
                     what="the caller's run to end while its delegation waits")
    await wait_until(lambda: lane_of_the_call(window).reason == BACKGROUND_NOT_FOLLOWED, what="the lane to end")
    assert controller.thread_id is not None
    return controller.thread_id
