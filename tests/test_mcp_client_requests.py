"""What servers ask of the client, against the reference server (server-everything): sampling as an
approval in the run (edit, approve, deny; the server's policy), elicitation from its JSON schema
(accept, decline, a malformed schema), progress events, roots and their change, log levels."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from fakes.mcp_servers import BAD_SERVER, EVERYTHING, require_servers

from workspace import events as ev
from workspace.approval import ApprovalDecision, ApprovalGate, ApprovalPolicy, ApprovalRequest
from workspace.mcp.manager import MCPManager
from workspace.mcp.requests import ELICITATION, SAMPLING, defaults, schema_problem
from workspace.providers.testing import ScriptedProvider, ToolCall
from workspace.robot import Robot

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(90)]

SERVERS: dict[str, Any] = {
    "everything": {"command": str(EVERYTHING)},
    "trusting": {"command": str(EVERYTHING), "sampling": "allow"},
    "fake": {"command": sys.executable, "args": [str(BAD_SERVER), "ok"]},
}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def manager(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[MCPManager]:
    require_servers()
    folder = tmp_path_factory.mktemp("project")
    mgr = MCPManager({"mcpServers": SERVERS}, folder=folder, state_file=folder / "mcp-tools.json")
    yield mgr
    await mgr.aclose()


def gate(answer: Any) -> tuple[ApprovalGate, list[ApprovalRequest]]:
    asked: list[ApprovalRequest] = []

    async def ask(request: ApprovalRequest) -> ApprovalDecision:
        if request.tool not in (SAMPLING, ELICITATION):
            return ApprovalDecision(approved=True)  # the tool call itself
        asked.append(request)
        return answer(request) if callable(answer) else answer

    return ApprovalGate(ApprovalPolicy(), ask), asked  # the default policy: MCP tools and requests ask


async def run_robot(manager: MCPManager, provider: ScriptedProvider, approval: ApprovalGate | None,
                    servers: list[str]) -> list[ev.Event]:
    robot = Robot("helper", system_prompt="You help.", provider=provider, mcp_manager=manager, mcp=servers)
    options: dict[str, Any] = {"approval": approval} if approval is not None else {}
    return [event async for event in robot.stream("go", **options)]


async def test_sampling_is_asked_edited_and_answered_by_the_threads_model(manager: MCPManager) -> None:
    def edit(request: ApprovalRequest) -> ApprovalDecision:
        edited = dict(request.input)
        edited["messages"] = [{"role": "user", "text": "an edited question"}]
        return ApprovalDecision(approved=True, input=edited)

    approval, asked = gate(edit)
    provider = ScriptedProvider([[ToolCall("everything__trigger-sampling-request", {"prompt": "hello?"}, id="t1")],
                                 "A sampled answer", "Done."])
    events = await run_robot(manager, provider, approval, ["everything"])
    request = next(r for r in asked if r.tool == SAMPLING)
    assert request.server == "everything" and request.annotations == {"mcpRequest": "sampling"}
    assert "hello?" in request.input["messages"][0]["text"]
    assert request.input["systemPrompt"] == "You are a helpful test server." and request.input["maxTokens"] == 100
    # The model saw the edited message; the server got the answer; the tool's result says so.
    assert "an edited question" in str(provider.history[1].messages[-1].to_dict())
    card = [e for e in events if getattr(e, "name", "") == SAMPLING]
    assert [type(e).__name__ for e in card] == ["ApprovalRequested", "ApprovalDecided", "ToolResult"]
    result = next(e for e in events if isinstance(e, ev.ToolResult) and e.id == "t1")
    assert "A sampled answer" in str(result.payload)
    assert isinstance(events[-1], ev.RunFinished)


async def test_denied_sampling_is_an_error_for_the_server_and_the_run_goes_on(manager: MCPManager) -> None:
    approval, asked = gate(ApprovalDecision(approved=False, reason="not now"))
    provider = ScriptedProvider([[ToolCall("everything__trigger-sampling-request", {"prompt": "x"}, id="t2")],
                                 "Done."])
    events = await run_robot(manager, provider, approval, ["everything"])
    assert [r.tool for r in asked] == [SAMPLING]
    outcome = next(e for e in events if getattr(e, "id", "") == "t2" and isinstance(e, ev.ToolResult | ev.ToolError))
    assert "declined the sampling request: not now" in str(getattr(outcome, "payload", None) or outcome.error)
    assert isinstance(events[-1], ev.RunFinished)
    assert len(provider.history) == 2  # no completion was asked of the model


async def test_a_server_allowed_to_sample_is_not_asked(manager: MCPManager) -> None:
    approval, asked = gate(ApprovalDecision(approved=False))
    provider = ScriptedProvider([[ToolCall("trusting__trigger-sampling-request", {"prompt": "x"}, id="t3")],
                                 "Sampled without asking", "Done."])
    events = await run_robot(manager, provider, approval, ["trusting"])
    assert asked == []
    assert any(isinstance(e, ev.ToolUse) and e.name == SAMPLING for e in events)
    result = next(e for e in events if isinstance(e, ev.ToolResult) and e.id == "t3")
    assert "Sampled without asking" in str(result.payload)


async def test_elicitation_accept_and_decline(manager: MCPManager) -> None:
    def fill(request: ApprovalRequest) -> ApprovalDecision:
        values = dict(request.input["content"])
        values["name"] = "Ada"
        return ApprovalDecision(approved=True, input={**request.input, "content": values})

    approval, asked = gate(fill)
    provider = ScriptedProvider([[ToolCall("everything__trigger-elicitation-request", {}, id="e1")], "Done."])
    events = await run_robot(manager, provider, approval, ["everything"])
    request = next(r for r in asked if r.tool == ELICITATION)
    assert request.input["message"] and "name" in request.input["requestedSchema"]["properties"]
    result = next(e for e in events if isinstance(e, ev.ToolResult) and e.id == "e1")
    assert "Ada" in str(result.payload) and "accept" in str(result.payload).lower()

    approval, asked = gate(ApprovalDecision(approved=False))
    provider = ScriptedProvider([[ToolCall("everything__trigger-elicitation-request", {}, id="e2")], "Done."])
    events = await run_robot(manager, provider, approval, ["everything"])
    result = next(e for e in events if isinstance(e, ev.ToolResult) and e.id == "e2")
    assert "decline" in str(result.payload).lower()


async def test_elicitation_schemas_are_checked() -> None:
    good = {"type": "object", "properties": {"name": {"type": "string", "default": "x"},
                                             "n": {"type": "integer"}, "ok": {"type": "boolean"},
                                             "pet": {"type": "string", "enum": ["cat", "dog"]}},
            "required": ["name"]}
    assert schema_problem(good) is None
    assert defaults(good) == {"name": "x", "n": 0, "ok": False, "pet": "cat"}
    assert "top level" in str(schema_problem({"type": "array"}))
    assert "nested" not in str(schema_problem({"type": "object", "properties": {"a": {"type": "object"}}}))
    assert "elicitation allows" in str(schema_problem({"type": "object", "properties": {"a": {"type": "object"}}}))
    assert "required" in str(schema_problem({"type": "object", "properties": {}, "required": ["ghost"]}))
    assert schema_problem("garbage") is not None


async def test_progress_notifications_become_events(manager: MCPManager) -> None:
    provider = ScriptedProvider([[ToolCall("everything__trigger-long-running-operation",
                                           {"duration": 1, "steps": 4}, id="p1")], "Done."])
    events = await run_robot(manager, provider, None, ["everything"])
    progress = [e for e in events if isinstance(e, ev.ToolProgress)]
    assert len(progress) >= 3
    assert all(p.id == "p1" and p.name == "everything__trigger-long-running-operation" for p in progress)
    assert progress[-1].total == 4 and progress[-1].progress == 4
    restored = ev.event_from_json(ev.to_json(progress[0]))
    assert restored == progress[0]


async def test_roots_are_the_open_folder_and_a_change_is_announced(manager: MCPManager, tmp_path: Path) -> None:
    out = await manager.call_tool("everything", "get-roots-list", {})
    assert manager.folder is not None and manager.folder.as_uri() in str(out.data)
    manager.set_roots([tmp_path])
    deadline = asyncio.get_running_loop().time() + 10
    while True:
        out = await manager.call_tool("everything", "get-roots-list", {})
        if tmp_path.as_uri() in str(out.data):
            break
        assert asyncio.get_running_loop().time() < deadline, out.data
        await asyncio.sleep(0.1)


async def test_log_notifications_keep_their_levels(manager: MCPManager) -> None:
    await manager.call_tool("everything", "toggle-simulated-logging", {})
    conn = manager.connection("everything")
    deadline = asyncio.get_running_loop().time() + 20
    while not conn.log:
        assert asyncio.get_running_loop().time() < deadline, "no log notification arrived"
        await asyncio.sleep(0.1)
    _, level, _, text = conn.log[-1]
    assert level in ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency") and text
    await manager.call_tool("everything", "toggle-simulated-logging", {})


async def test_outside_a_run_sampling_is_refused_with_a_clear_message(manager: MCPManager) -> None:
    out = await manager.call_tool("everything", "trigger-sampling-request", {"prompt": "x"})
    assert out.is_error or "no model is available" in str(out.data)
