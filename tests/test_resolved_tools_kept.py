"""A robot's tools are resolved once across its runs (the tool and MCP levels are not worked through again for
every message), and again as soon as what they come from changed: the levels, the robot's own tools, the
registry, a script tool, its MCP servers' tools."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from workspace import robot_tools, script_tools
from workspace.config import load_config
from workspace.providers.testing import ScriptedProvider
from workspace.robot import Robot
from workspace.tools import Tool, registry, selection, tool


@tool
async def get_weather(city: str) -> dict[str, str]:
    """Current weather for a city."""
    return {"city": city, "sky": "sunny"}


def named(name: str, text: str = "x") -> Tool:
    return Tool(name, text, {"type": "object", "properties": {}}, lambda args: text)


@pytest.fixture
def chains(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple[Any, ...]]:
    """Every resolution of the tool and MCP levels (``selection.resolve_chain``); no user script tools."""
    calls: list[tuple[Any, ...]] = []
    real = selection.resolve_chain

    def counted(*levels: Any) -> Any:
        calls.append(levels)
        return real(*levels)

    monkeypatch.setattr(selection, "resolve_chain", counted)
    monkeypatch.setattr(script_tools, "user_tools_dir", lambda: tmp_path / "user-tools")
    return calls


def robot(**options: Any) -> Robot:
    options.setdefault("provider", ScriptedProvider(default="Done."))
    return Robot("r", system_prompt="You help.", config=load_config(env={}), **options)


async def test_the_tools_are_resolved_once_across_a_robots_runs(chains: list[tuple[Any, ...]]) -> None:
    r = robot(tools=[get_weather])
    for _ in range(3):
        r.reset()
        result = await r.arun("Weather in Oslo?")
        assert str(result.last_text_content) == "Done."
    assert len(chains) == 2  # the tool and MCP levels of the first run; the next runs took them as they were
    assert [t.name for t in r.provider.history[-1].tools] == ["get_weather"]  # type: ignore[attr-defined]
    another = robot(tools=[get_weather])  # another robot resolves its own
    await another.arun("Weather in Oslo?")
    assert len(chains) == 4


async def test_a_changed_level_or_own_tool_is_resolved_again(chains: list[tuple[Any, ...]],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry._TOOLS, "kept_first", named("kept_first"))
    monkeypatch.setitem(registry._TOOLS, "kept_second", named("kept_second"))
    r = robot(tools=["kept_first"])
    assert (await r.resolve_tools()).names == ["kept_first"]
    assert (await r.resolve_tools()).names == ["kept_first"]
    assert len(chains) == 2
    r.tools_config.append("kept_second")  # the robot's list changed in place
    assert (await r.resolve_tools()).names == ["kept_first", "kept_second"]
    assert (await r.resolve_tools(run_tools=["kept_second"])).names == ["kept_second"]  # the run's level
    r.local_tools.append(named("own"))
    r.tools_config.append("own")
    assert (await r.resolve_tools()).names == ["own", "kept_first", "kept_second"]


async def test_a_tool_registered_or_replaced_since_is_used(chains: list[tuple[Any, ...]],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    first = named("swapped", "first")
    monkeypatch.setitem(registry._TOOLS, "swapped", first)
    r = robot(tools=["swapped", "late*"])
    assert (await r.resolve_tools()).get("swapped") is first
    second = named("swapped", "second")
    monkeypatch.setitem(registry._TOOLS, "swapped", second)  # replaced, the registry as long as it was
    manifest = await r.resolve_tools()
    assert manifest.get("swapped") is second
    monkeypatch.setitem(registry._TOOLS, "late_one", named("late_one"))
    assert (await r.resolve_tools()).names == ["swapped", "late_one"]


async def test_a_script_tool_added_since_is_used(chains: list[tuple[Any, ...]], tmp_path: Path) -> None:
    r = robot(tools=["get_weather", "greet*"], local_tools=[get_weather])
    assert (await r.resolve_tools()).names == ["get_weather"]
    folder = tmp_path / "user-tools"
    folder.mkdir()
    greet = folder / "greet"
    greet.write_text("#!/bin/sh\n# ---\n# description: Greet\n# ---\necho hello\n")
    greet.chmod(0o755)
    assert (await r.resolve_tools()).names == ["get_weather", "greet"]
    greet.unlink()
    assert (await r.resolve_tools()).names == ["get_weather"]


class _Servers:
    """An MCP manager stand-in whose server's tools change between runs."""

    def __init__(self) -> None:
        self.tools: list[Tool] = []
        self.asked = 0

    async def tools_for(self, servers: list[Any], config: Any) -> list[Tool]:
        self.asked += 1
        return list(self.tools)


async def test_the_mcp_servers_tools_are_asked_for_every_run(chains: list[tuple[Any, ...]]) -> None:
    servers = _Servers()
    r = robot(mcp=["calc"], mcp_manager=servers)
    assert (await r.resolve_tools()).names == []
    servers.tools = [named("calc__add")]
    assert (await r.resolve_tools()).names == ["calc__add"]
    assert (await r.resolve_tools()).names == ["calc__add"]
    servers.tools = []
    assert (await r.resolve_tools()).names == []
    assert servers.asked == 4


async def test_a_robot_whose_tool_is_missing_hears_of_it_every_run(chains: list[tuple[Any, ...]],
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    r = robot(tools=["calc__add"])
    for _ in range(2):
        caplog.clear()
        assert (await r.resolve_tools()).names == []
        assert "not available now" in caplog.text
    assert robot_tools._RESOLVED.get(r) is None
