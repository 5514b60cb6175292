"""A robot file can take its system prompt from an MCP server's prompt (``mcp_prompt:`` front matter)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.mcp_servers import EVERYTHING, require_servers

from workspace.errors import RunFailedError
from workspace.mcp.manager import MCPManager
from workspace.providers.testing import ScriptedProvider
from workspace.robot import Robot
from workspace.templates import Template


def robot_file(tmp_path: Path, front: str, body: str = "Answer in one sentence.") -> Template:
    path = tmp_path / "weather.md"
    path.write_text(f"---\n{front}\ntools: []\nmcp: none\n---\n{body}\n", encoding="utf-8")
    return Template.load(path)


async def test_the_prompt_comes_from_the_server_before_the_files_text(tmp_path: Path) -> None:
    require_servers()
    manager = MCPManager({"mcpServers": {"everything": {"command": str(EVERYTHING), "timeout": 30}}})
    try:
        template = robot_file(tmp_path, "mcp_prompt: {server: everything, prompt: args-prompt, "
                                        "arguments: {city: Paris}}")
        provider = ScriptedProvider(["Sunny."])
        robot = Robot("weather", template=template, provider=provider, mcp_manager=manager)
        result = await robot.arun("and tomorrow?")
        assert result.last_text_content == "Sunny."
        assert provider.history[0].system == "What's weather in Paris?\n\nAnswer in one sentence."
    finally:
        await manager.aclose()


async def test_a_bad_mcp_prompt_fails_the_run_naming_the_file(tmp_path: Path) -> None:
    template = robot_file(tmp_path, "mcp_prompt: args-prompt")
    robot = Robot("weather", template=template, provider=ScriptedProvider(["never"]))
    with pytest.raises(RunFailedError, match=r"weather\.md: mcp_prompt must be a mapping"):
        await robot.arun("hi")


async def test_a_misspelt_mcp_prompt_key_names_the_line_and_the_closest_key(tmp_path: Path) -> None:
    template = robot_file(tmp_path, "description: weather\nmcp_prompt: {server: everything, promt: args-prompt}")
    robot = Robot("weather", template=template, provider=ScriptedProvider(["never"]))
    with pytest.raises(RunFailedError, match=r"weather\.md:3: unknown setting 'promt' in mcp_prompt — did you mean "
                                             r"'prompt'\?"):
        await robot.arun("hi")
