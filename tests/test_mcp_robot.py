"""Robots using MCP servers through the agent loop: events carry the server, the tool and MCP
selection levels apply, a stop cancels the in-flight MCP call, a crash is a tool_error."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from fakes.mcp_servers import BAD_SERVER, EVERYTHING, require_servers

from workspace import events as ev
from workspace.approval import ApprovalGate, ApprovalPolicy, ApprovalRequest
from workspace.config import Config
from workspace.mcp.manager import MCPManager
from workspace.mcp.status import ServerState
from workspace.providers.testing import ScriptedProvider, ToolCall
from workspace.robot import Robot

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(60)]

SERVERS: dict[str, Any] = {
    "everything": {"command": str(EVERYTHING), "autoApprove": ["echo"]},
    "fake": {"command": sys.executable, "args": [str(BAD_SERVER), "ok"]},
}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def manager() -> AsyncIterator[MCPManager]:
    require_servers()
    mgr = MCPManager({"mcpServers": SERVERS})
    yield mgr
    await mgr.aclose()


def robot(manager: MCPManager, provider: ScriptedProvider, **options: Any) -> Robot:
    return Robot("helper", system_prompt="You help.", provider=provider, mcp_manager=manager, **options)


async def collect(run: Any) -> list[ev.Event]:
    return [event async for event in run]


async def test_a_robot_calls_an_mcp_tool_through_the_agent_loop(manager: MCPManager) -> None:
    provider = ScriptedProvider([[ToolCall("everything__echo", {"message": "hi from a robot"}, id="c1")], "Done."])
    events = await collect(robot(manager, provider, mcp=["everything"]).stream("echo something"))
    use = next(e for e in events if isinstance(e, ev.ToolUse))
    result = next(e for e in events if isinstance(e, ev.ToolResult))
    assert use.name == "everything__echo" and use.server == "everything" and use.input == {"message": "hi from a robot"}
    assert result.server == "everything" and result.id == "c1"
    assert result.payload == {"data": "Echo: hi from a robot"}
    assert result.raw["content"] == [{"type": "text", "text": "Echo: hi from a robot"}]
    assert isinstance(events[-1], ev.RunFinished)
    offered = provider.history[0].tool_names
    assert "everything__echo" in offered and "fake__echo" not in offered
    # The model's second turn saw the tool result.
    assert "Echo: hi from a robot" in str(provider.history[1].messages[-1].to_dict())


async def test_mcp_selection_levels(manager: MCPManager) -> None:
    async def offered(**options: Any) -> list[str]:
        provider = ScriptedProvider(["ok"])
        run_options = options.pop("run", {})
        await robot(manager, provider, **options).arun("hi", **run_options)
        return provider.history[0].tool_names

    assert await offered(mcp="none") == []
    assert await offered(mcp=[]) == []  # the empty list means none
    # "all" at the robot level: every server of the configuration the robot is given.
    both = await offered(mcp="all", config=Config({"mcpServers": SERVERS, "agent": {"tools": "all", "mcp": "all"}}))
    assert any(n.startswith("everything__") for n in both) and any(n.startswith("fake__") for n in both)
    # The run level overrides the robot level; the tools whitelist also filters MCP tools (globs allowed).
    assert await offered(mcp=["everything"], run={"mcp": "none"}) == []
    assert await offered(mcp="inherit", run={"mcp": ["fake"], "tools": ["fake__e*"]}) == ["fake__echo"]



async def test_to_dict_names_the_mcp_tools_and_servers_of_the_last_run(manager: MCPManager) -> None:
    r = robot(manager, ScriptedProvider(["ok", "ok"]), mcp_servers=["everything", "fake"])  # RobotLab's older name
    assert r.mcp_config == ["everything", "fake"]
    before = r.to_dict()
    assert before["mcp_tools"] == [] and before["mcp_servers"] == []  # nothing connected before a run
    await r.arun("hi")
    d = r.to_dict()
    # RobotLab's keys first, in its order (nil ones left out), then ours
    spec = ["name", "description", "template", "system_prompt", "local_tools", "mcp_tools", "mcp_config",
            "tools_config", "mcp_servers", "model"]
    present = [k for k in spec if k in d]
    assert list(d)[:len(present)] == present
    assert {"mcp_tools", "mcp_config", "tools_config", "mcp_servers"} <= set(present)
    assert "everything__echo" in d["mcp_tools"] and "fake__echo" in d["mcp_tools"]
    assert d["mcp_servers"] == ["everything", "fake"]
    await r.arun("hi", mcp=["fake"])  # the last run's servers
    d = r.to_dict()
    assert d["mcp_servers"] == ["fake"] and "fake__echo" in d["mcp_tools"]
    assert all(name.startswith("fake__") for name in d["mcp_tools"])


async def test_stopping_a_run_cancels_the_mcp_call(manager: MCPManager) -> None:
    provider = ScriptedProvider([[ToolCall("fake__sleep", {"seconds": 30}, id="s1")], "never reached"])
    run = robot(manager, provider, mcp=["fake"]).stream("sleep")
    events: list[ev.Event] = []

    async def consume() -> None:
        async for event in run:
            events.append(event)
            if isinstance(event, ev.ToolUse):
                await asyncio.sleep(0.3)
                run.cancel()

    await asyncio.wait_for(consume(), 10)
    assert isinstance(events[-1], ev.RunCancelled)
    deadline = asyncio.get_running_loop().time() + 5
    while not any("cancelled request" in line for line in manager.status("fake").stderr):
        assert asyncio.get_running_loop().time() < deadline, "the server never saw notifications/cancelled"
        await asyncio.sleep(0.02)
    assert (await manager.call_tool("fake", "echo", {"message": "still fine"})).data == "echo: still fine"
    assert manager.status("fake").state is ServerState.READY


async def test_a_crash_mid_call_is_a_tool_error_and_the_next_call_works(manager: MCPManager) -> None:
    provider = ScriptedProvider([
        [ToolCall("fake__crash", {}, id="x1")],
        [ToolCall("fake__echo", {"message": "after the crash"}, id="x2")],
        "Recovered.",
    ])
    events = await collect(robot(manager, provider, mcp=["fake"]).stream("crash it"))
    error = next(e for e in events if isinstance(e, ev.ToolError))
    assert error.id == "x1" and error.server == "fake" and "may have crashed" in str(error.error)
    result = next(e for e in events if isinstance(e, ev.ToolResult))
    assert result.id == "x2" and result.payload == {"data": "echo: after the crash"}
    assert isinstance(events[-1], ev.RunFinished)


async def test_auto_approve_reaches_the_approval_request(manager: MCPManager) -> None:
    asked: list[ApprovalRequest] = []
    policy = ApprovalPolicy()

    class Gate(ApprovalGate):
        def decide(self, request: ApprovalRequest) -> Any:
            asked.append(request)
            return super().decide(request)

    provider = ScriptedProvider([[ToolCall("everything__echo", {"message": "x"}),
                                  ToolCall("everything__get-sum", {"a": 1, "b": 2})], "ok"])
    await robot(manager, provider, mcp=["everything"], approval=Gate(policy)).arun("go")
    by_tool = {r.tool: r for r in asked}
    assert by_tool["everything__echo"].annotations.get("autoApprove") is True
    assert by_tool["everything__echo"].server == "everything"
    assert "autoApprove" not in by_tool["everything__get-sum"].annotations
