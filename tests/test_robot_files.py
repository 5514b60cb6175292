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
