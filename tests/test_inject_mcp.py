"""RobotLab's ``inject_mcp!`` and ``mcp_client``: MCP sessions a program connected itself (the SDK's
``ClientSession`` over stdio to a real MCP server process) given to a robot, whose run against the loopback
OpenAI-compatible server calls the server through that session, without starting the robot's configured
servers; ``mcp_client(name)`` returns the session (an injected one, or the manager's while it is up)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply
from fakes.mcp_servers import BAD_SERVER
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from workspace import ConfigurationError, Robot
from workspace.mcp.manager import MCPManager

pytestmark = pytest.mark.timeout(120)


@asynccontextmanager
async def echo_session(starts: Path) -> AsyncIterator[ClientSession]:
    """A session the test connects itself to the real echo server (the starts file counts its starts)."""
    params = StdioServerParameters(command=sys.executable, args=[str(BAD_SERVER), "ok"],
                                   env={**os.environ, "FAKE_MCP_STARTS": str(starts)})
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def offered(request: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


async def test_a_robot_runs_with_the_programs_own_session_instead_of_starting_servers(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    configured = tmp_path / "configured-starts"
    async with echo_session(starts) as session:
        with FakeLLMServer() as server:
            server.enqueue(Reply.tool("echo__echo", {"message": "hello from the injected session"}))
            server.enqueue("It said hello.")
            server.enqueue("No tools here.")
            # a configured server that would count its start: it is not started while the robot is injected
            robot = Robot("r", system_prompt="You help.", model="openai/fake", api_base=server.base_url + "/v1",
                          mcp=[{"name": "configured", "command": sys.executable, "args": [str(BAD_SERVER), "ok"],
                                "env": {"FAKE_MCP_STARTS": str(configured)}}])
            assert robot.inject_mcp(clients={"echo": session}) is robot
            assert robot.mcp_client("echo") is session and robot.mcp_client("configured") is None

            result = await robot.arun("Say hello through the echo tool")
            assert result.last_text_content == "It said hello."
            assert "echo__echo" in offered(server.requests[0]) and "configured__echo" not in offered(
                server.requests[0])
            answered = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
            assert "hello from the injected session" in json.dumps(answered)  # the real server answered
            assert {t.mcp for t in robot.mcp_tools} == {"echo"}
            assert robot.to_dict()["mcp_servers"] == ["echo"]

            await robot.arun("Nothing to call", mcp="none")  # a run's mcp="none" still offers none
            assert not [name for name in offered(server.requests[2]) if name.startswith("echo__")]
    assert len(starts.read_text().splitlines()) == 1  # one server process: the test's own
    assert not configured.exists()  # the configured server was never started


async def test_tools_given_with_the_clients_are_the_ones_offered(tmp_path: Path) -> None:
    async with echo_session(tmp_path / "starts") as session:
        async def shout(message: str) -> str:
            """Echo the message back in capitals, through the injected session."""
            result = await robot.mcp_client("echo").call_tool("echo", {"message": message})
            return str(result.content[0].text).upper()

        with FakeLLMServer() as server:
            server.enqueue(Reply.tool("shout", {"message": "quiet words"}))
            server.enqueue("Done.")
            robot = Robot("r", system_prompt="You help.", model="openai/fake", api_base=server.base_url + "/v1")
            robot.inject_mcp(clients={"echo": session}, tools=[shout])
            assert [t.name for t in robot.mcp_tools] == ["shout"]
            await robot.arun("Shout it")
            assert "shout" in offered(server.requests[0]) and "echo__echo" not in offered(server.requests[0])
            answered = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
            assert "QUIET WORDS" in json.dumps(answered)


def test_a_client_that_is_not_a_session_is_refused_naming_the_server() -> None:
    robot = Robot("r", system_prompt="You help.")
    with pytest.raises(ConfigurationError) as caught:
        robot.inject_mcp(clients={"github": object()})
    message = str(caught.value)
    assert "'github'" in message and "list_tools or call_tool" in message and "ClientSession" in message


async def test_mcp_client_is_the_managers_session_while_the_server_is_up() -> None:
    manager = MCPManager()
    try:
        robot = Robot("r", system_prompt="You help.", mcp_manager=manager,
                      mcp=[{"name": "echo", "command": sys.executable, "args": [str(BAD_SERVER), "ok"]}])
        assert robot.mcp_client("echo") is None  # not connected yet
        await robot.connect_mcp()
        session = robot.mcp_client("echo")
        assert session is not None
        assert "echo" in [t.name for t in (await session.list_tools()).tools]
        assert robot.mcp_client("nope") is None
    finally:
        await manager.aclose()
    assert robot.mcp_client("echo") is None  # stopped
