"""The window with a robot whose tool delegates work in the background: the scene of the tests of stopping,
deleting and quitting while a delegation still runs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.ui.conftest import running_app
from workspace import Robot
from workspace.providers.testing import ScriptedProvider

MANAGER = "---\nname: manager\ndescription: hands work on\ntools: [start_helper]\nmcp: none\n---\nYou manage.\n"


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
    path = robotlab_home / "config" / "robots" / "manager.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(MANAGER, encoding="utf-8")
    folder = tmp_path / "project"
    folder.mkdir()
    async with running_app(provider=provider, db_path=db_path, theme_name="light", folder=folder,
                           size=(1280, 720)) as root:
        root.window.robots.refresh()
        root.window.robot_picker.setCurrentIndex(root.window.robot_model.row_of("manager"))
        yield root, futures
