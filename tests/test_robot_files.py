"""Mistakes in robot files are reported, never skipped in silence."""

from __future__ import annotations

from pathlib import Path

import pytest

from workspace import paths
from workspace.catalog import list_robots
from workspace.errors import ConfigurationError, RunFailedError
from workspace.providers.testing import ScriptedProvider
from workspace.robot import Robot


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_broken_robot_file_is_named_in_problems(robotlab_home: Path) -> None:
    broken = write(paths.user_robots_dir() / "broken.md", "---\nname: [unclosed\n---\nHi")
    write(paths.user_robots_dir() / "fine.md", "---\ndescription: ok\n---\nHi")
    problems: list[str] = []
    names = [r.name for r in list_robots(problems=problems)]
    assert "fine" in names and "broken" not in names
    assert len(problems) == 1 and str(broken) in problems[0]
    assert [r.name for r in list_robots()] == names  # without a list: same robots, no error


async def test_an_unknown_tool_name_fails_the_run_naming_it(robotlab_home: Path) -> None:
    robot = Robot("typo", system_prompt="You help.", tools=["read_file", "reed_file"],
                  provider=ScriptedProvider(["never"]))
    with pytest.raises(ConfigurationError, match=r"reed_file.*Built-in tools: .*read_file"):
        await robot.resolve_tools()
    with pytest.raises(RunFailedError, match="reed_file"):
        await robot.arun("hello")


async def test_patterns_and_unavailable_mcp_tools_only_warn(robotlab_home: Path,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    robot = Robot("ok", system_prompt="You help.", tools=["read_*", "github__create_issue"],
                  provider=ScriptedProvider(["done"]))
    manifest = await robot.resolve_tools()
    assert "read_file" in manifest.names
    assert "github__create_issue" in caplog.text


async def test_tools_all_on_the_robot_means_every_built_in_tool(robotlab_home: Path) -> None:
    from workspace.tools import registry

    robot = Robot("all", system_prompt="You help.", tools="all", provider=ScriptedProvider(["ok"]))
    names = (await robot.resolve_tools()).names
    assert set(names) == {t.name for t in registry.builtin_tools()}
    plain = Robot("plain", system_prompt="You help.", provider=ScriptedProvider(["ok"]))
    assert (await plain.resolve_tools()).names == []  # the global default alone adds none


async def test_the_shipped_assistant_gets_configured_mcp_tools(robotlab_home: Path) -> None:
    from workspace.catalog import load_robot
    from workspace.tools.base import Tool

    class Source:
        async def tools_for(self, servers: list[object], config: object) -> list[Tool]:
            return [Tool("everything__echo", "Echo", {"type": "object", "properties": {}}, lambda: "x",
                         mcp="everything")]

    from workspace.config import load_config

    write(paths.user_config_file(), "mcpServers:\n  everything: {command: mcp-server-everything}\n")
    robot = load_robot("assistant", mcp_manager=Source(), config=load_config(env={}))
    assert "everything__echo" in (await robot.resolve_tools()).names
