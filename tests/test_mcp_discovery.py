"""RobotLab's MCP additions on a robot: ``mcp_discovery`` (the servers the first message is about),
``connect_mcp`` (start them now) and ``failed_mcp_server_names``, with real MCP server processes."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from fakes.mcp_servers import BAD_SERVER

from workspace.mcp.discovery import THRESHOLD, select
from workspace.mcp.manager import MCPManager
from workspace.providers.testing import ScriptedProvider
from workspace.robot import Robot

pytestmark = [pytest.mark.timeout(120)]
in_module_loop = pytest.mark.asyncio(loop_scope="module")


def server(mode: str = "ok", description: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": sys.executable, "args": [str(BAD_SERVER), mode]}
    if description is not None:
        entry["description"] = description
    return entry


SERVERS: dict[str, Any] = {
    "weather": server(description="Weather forecasts and temperatures for cities"),
    "files": server(description="Read and search the files of a git repository"),
    "plain": server(),
    "plain2": server(),
    "broken": server("exit", description="Nothing that works"),
}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def manager() -> AsyncIterator[MCPManager]:
    mgr = MCPManager({"mcpServers": SERVERS})
    yield mgr
    await mgr.aclose()


def servers_offered(provider: ScriptedProvider, call: int = 0) -> set[str]:
    return {name.split("__")[0] for name in provider.history[call].tool_names}


def test_select_keeps_the_servers_like_the_message() -> None:
    servers = {"weather": "Weather forecasts for cities", "git": "Commits, branches and diffs of a repository"}
    assert select("What is the weather forecast in Oslo?", servers) == ["weather"]
    assert select("Show the last commits on this branch", servers) == ["git"]
    assert select("Tell me a joke", servers) == ["weather", "git"]  # none alike: all of them
    assert select("   ", servers) == ["weather", "git"]  # a blank message: all
    assert select("weather", {"weather": None, "git": ""}) == ["weather", "git"]  # no descriptions: all
    assert THRESHOLD == 0.05


@in_module_loop
async def test_discovery_chooses_on_the_first_run_only(manager: MCPManager) -> None:
    provider = ScriptedProvider(["ok", "ok"])
    robot = Robot("r", system_prompt="You help.", provider=provider, mcp_manager=manager,
                  mcp=["weather", "files"], mcp_discovery=True)
    await robot.arun("What is the weather forecast for Oslo tomorrow?")
    assert servers_offered(provider) == {"weather"}
    assert robot.discovered_mcp_servers == ["weather"]
    await robot.arun("Search the files of the repository")  # chosen once: the same servers
    assert servers_offered(provider, 1) == {"weather"}
    # Without discovery, both; with it and a message like neither, both too.
    both = ScriptedProvider(["ok"])
    await Robot("r", system_prompt="x", provider=both, mcp_manager=manager, mcp=["weather", "files"]).arun(
        "What is the weather forecast?")
    assert servers_offered(both) == {"weather", "files"}
    unlike = ScriptedProvider(["ok"])
    await Robot("r", system_prompt="x", provider=unlike, mcp_manager=manager, mcp=["weather", "files"],
                mcp_discovery=True).arun("Tell me a joke")
    assert servers_offered(unlike) == {"weather", "files"}
    undescribed = ScriptedProvider(["ok"])
    await Robot("r", system_prompt="x", provider=undescribed, mcp_manager=manager, mcp=["plain", "plain2"],
                mcp_discovery=True).arun("plain please")
    assert servers_offered(undescribed) == {"plain", "plain2"}


@in_module_loop
async def test_connect_mcp_starts_the_servers_now(manager: MCPManager) -> None:
    provider = ScriptedProvider(["ok"])
    robot = Robot("r", system_prompt="x", provider=provider, mcp_manager=manager, mcp=["weather", "broken"])
    assert robot.failed_mcp_server_names == [] and robot.mcp_tools == []
    assert await robot.connect_mcp() is robot
    assert provider.history == []  # no model call: only the servers
    assert {t.mcp for t in robot.mcp_tools} == {"weather"} and "weather__echo" in {t.name for t in robot.mcp_tools}
    assert robot.failed_mcp_server_names == ["broken"]
    await robot.arun("hi")  # the failed one is tried again at the run, and still fails
    assert robot.failed_mcp_server_names == ["broken"] and servers_offered(provider) == {"weather"}


def test_a_robot_file_asks_for_discovery(tmp_path: Path) -> None:
    (tmp_path / "finder.md").write_text("---\nmcp_discovery: true\nmcp: [weather, files]\n---\nYou find things.\n")
    assert Robot("finder", template=tmp_path / "finder.md").mcp_discovery is True
    assert Robot("finder", template=tmp_path / "finder.md", mcp_discovery=False).mcp_discovery is False
