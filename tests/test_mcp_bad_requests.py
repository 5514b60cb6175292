"""Bad input from MCP servers and to them: each a clear error, nothing lost.

A server that asks for a completion with garbage, one that answers our sampling answer with garbage, a
model that fails while answering, a malformed elicitation schema, a prompt called without its required
arguments (server-everything and our own ``mcp serve``), and a resource of 20 MB.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.fakes.mcp_servers import BAD_SERVER, EVERYTHING, require_servers
from workspace import events as ev
from workspace.approval import ApprovalDecision, ApprovalGate, ApprovalPolicy, ApprovalRequest
from workspace.errors import MCPError
from workspace.mcp.manager import MCPManager
from workspace.mcp.requests import ELICITATION, SAMPLING
from workspace.providers.testing import Fail, ScriptedProvider, ToolCall
from workspace.robot import Robot

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(120)]
DYNAMIC = Path(__file__).resolve().parent / "fakes" / "mcp_dynamic_server.py"
SERVERS: dict[str, Any] = {
    "asks": {"command": sys.executable, "args": [str(BAD_SERVER), "asks"], "autoApprove": ["*"]},
    "everything": {"command": str(EVERYTHING), "autoApprove": ["*"]},
    "dynamic": {"command": sys.executable, "args": [str(DYNAMIC)], "env": {"BIG_RESOURCE_MB": "20"}},
}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def manager(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[MCPManager]:
    require_servers()
    folder = tmp_path_factory.mktemp("project")
    mgr = MCPManager({"mcpServers": SERVERS}, folder=folder, state_file=folder / "mcp-tools.json")
    yield mgr
    await mgr.aclose()


def approve_all() -> ApprovalGate:
    async def ask(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(approved=True)

    return ApprovalGate(ApprovalPolicy(), ask)


async def run(manager: MCPManager, provider: ScriptedProvider, server: str) -> list[ev.Event]:
    robot = Robot("helper", system_prompt="You help.", provider=provider, mcp_manager=manager, mcp=[server])
    return [e async for e in robot.stream("go", approval=approve_all())]


def outcome(events: list[ev.Event], call_id: str) -> Any:
    return next(e for e in events if isinstance(e, ev.ToolResult | ev.ToolError) and e.id == call_id)


# -- sampling ------------------------------------------------------------------------------------------
async def test_a_sampling_request_with_garbage_params_is_refused_and_the_run_goes_on(manager: MCPManager) -> None:
    provider = ScriptedProvider([[ToolCall("asks__garbage_sampling", {}, id="g1")], "Fine."])
    events = await run(manager, provider, "asks")
    result = outcome(events, "g1")
    text = str(getattr(result, "payload", None) or result.error)
    assert "sampling/createMessage: the parameters are not valid" in text, text
    assert "messages: Input should be a valid list (got 'garbage')" in text and "maxTokens" in text
    refused = next(e for e in events if isinstance(e, ev.ToolError) and e.name == SAMPLING)
    assert "asks asked for sampling/createMessage, but the parameters are not valid" in str(refused.error)
    assert "the parameters are not valid" in "\n".join(manager.status("asks").stderr)
    assert isinstance(events[-1], ev.RunFinished) and len(provider.history) == 2  # no completion was asked
    assert not any(isinstance(e, ev.ApprovalRequested) and e.name == SAMPLING for e in events)


async def test_a_server_that_answers_our_sampling_answer_with_garbage_fails_clearly(manager: MCPManager) -> None:
    provider = ScriptedProvider([[ToolCall("asks__sample_then_garble", {}, id="s1")], "Hi there.", "Noted."])
    events = await run(manager, provider, "asks")
    sampled = next(e for e in events if isinstance(e, ev.ToolResult) and e.name == SAMPLING)
    assert sampled.payload == {"data": "Hi there."}  # what the model answered is kept
    error = outcome(events, "s1")
    assert isinstance(error, ev.ToolError | ev.ToolResult)
    text = str(getattr(error, "error", None) or getattr(error, "payload", ""))
    assert "not JSON-RPC" in text and "here is your result, in prose" in text
    assert isinstance(events[-1], ev.RunFinished)
    # The server is started again on the next call, and works.
    out = await manager.call_tool("asks", "echo", {"message": "again"})
    assert out.data == "echo: again"


async def test_a_model_that_fails_while_sampling_is_an_error_on_the_card(manager: MCPManager) -> None:
    provider = ScriptedProvider([[ToolCall("asks__sample", {}, id="f1")], Fail("the model is down"), "Carry on."])
    events = await run(manager, provider, "asks")
    failed = next(e for e in events if isinstance(e, ev.ToolError) and e.name == SAMPLING)
    assert "could not answer asks's sampling request" in str(failed.error) and "the model is down" in str(failed.error)
    result = outcome(events, "f1")
    assert "could not answer" in str(getattr(result, "payload", None) or result.error)
    assert isinstance(events[-1], ev.RunFinished)


async def test_sampling_always_allowed_is_saved_in_the_servers_file(robotlab_home: Path) -> None:
    from workspace import paths
    from workspace.config import load_config

    require_servers()
    config = paths.user_config_file()
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("# my servers\nmcpServers:\n  asks:   # the fake one\n"
                      f"    command: {sys.executable}\n    args: [{BAD_SERVER}, asks]\n    autoApprove: ['*']\n",
                      encoding="utf-8")
    mgr = MCPManager(load_config(), state_file=robotlab_home / "state.json")
    asked: list[str] = []

    async def ask(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request.tool)
        return ApprovalDecision(approved=True, scope="server" if request.tool == SAMPLING else "once")

    try:
        robot = Robot("helper", system_prompt="You help.", mcp_manager=mgr, mcp=["asks"],
                      provider=ScriptedProvider([[ToolCall("asks__sample", {}, id="a1")], "One.",
                                                 [ToolCall("asks__sample", {}, id="a2")], "Two.", "Done."]))
        events = [e async for e in robot.stream("go", approval=ApprovalGate(ApprovalPolicy(), ask))]
        assert asked.count(SAMPLING) == 1  # the second request was not asked about
        assert [e.payload for e in events if isinstance(e, ev.ToolResult) and e.name == SAMPLING] == \
            [{"data": "One."}, {"data": "Two."}]
        text = config.read_text(encoding="utf-8")
        assert "sampling: allow" in text and "# my servers" in text and "# the fake one" in text
        assert load_config().mcp_servers["asks"]["sampling"] == "allow"
    finally:
        await mgr.aclose()


# -- elicitation ---------------------------------------------------------------------------------------
async def test_a_malformed_elicitation_schema_is_refused_with_the_reason(manager: MCPManager) -> None:
    provider = ScriptedProvider([[ToolCall("asks__bad_schema", {}, id="b1")], "Ok."])
    events = await run(manager, provider, "asks")
    refused = next(e for e in events if isinstance(e, ev.ToolError) and e.name == ELICITATION)
    assert "schema that is not valid" in str(refused.error) and "'nested'" in str(refused.error)
    result = outcome(events, "b1")
    assert "requested schema is not valid" in str(getattr(result, "payload", None) or result.error)
    assert not any(isinstance(e, ev.ApprovalRequested) for e in events)
    assert isinstance(events[-1], ev.RunFinished)


# -- prompts --------------------------------------------------------------------------------------------
async def test_a_prompt_without_its_required_arguments_says_which(manager: MCPManager) -> None:
    with pytest.raises(MCPError) as caught:
        await manager.get_prompt("everything", "args-prompt", {})
    message = str(caught.value)
    assert "args-prompt" in message and "city" in message and "Name of the city" in message
    result = await manager.get_prompt("everything", "args-prompt", {"city": "Oslo"})
    assert "Oslo" in str(result)
    with pytest.raises(MCPError, match="greet.*needs.*name"):
        await manager.get_prompt("dynamic", "greet", {})
    with pytest.raises(MCPError, match="no prompt 'nope'"):
        await manager.get_prompt("everything", "nope", {})


async def test_our_own_server_names_a_missing_prompt_argument(robotlab_home: Path) -> None:
    """``robotlab mcp serve`` (over stdio): a prompt it does not have; and our server's prompts/get handler
    (over HTTP) with a prompt whose argument is required, called without it."""
    from tests.fakes.mcp_servers import app_in_thread, free_port
    from workspace.mcp.served import PromptArgument, ServedPrompt
    from workspace.mcp.server import build_server

    root = Path(__file__).resolve().parent.parent
    robots = robotlab_home / "config" / "robots"
    robots.mkdir(parents=True, exist_ok=True)
    (robots / "greeter.md").write_text("---\ndescription: Says hello back\n---\nYou are friendly.\n", encoding="utf-8")
    port = free_port()
    ticket = ServedPrompt("ticket", "A support ticket", (PromptArgument("customer", "who writes", required=True),),
                          lambda args: [("user", f"Ticket from {args['customer']}")])
    served = MCPManager({"mcpServers": {
        "served": {"command": sys.executable, "args": ["-m", "workspace", "mcp", "serve"], "cwd": str(root),
                   "env": {"ROBOTLAB_HOME": str(robotlab_home), "PYTHONPATH": str(root)}},
        "ours": {"url": f"http://127.0.0.1:{port}/mcp", "oauth": False}}}, state_file=robotlab_home / "state.json")
    try:
        assert any(p["name"] == "greeter" for p in await served.list_prompts("served"))
        with pytest.raises(MCPError, match="has no prompt 'nope'. Its prompts: .*greeter"):
            await served.get_prompt("served", "nope", {})
        got = await served.get_prompt("served", "greeter", {"message": "hi"})
        assert "hi" in str(got)
        with app_in_thread(build_server([], prompts=[ticket]).streamable_http_app(host="127.0.0.1"), port):
            with pytest.raises(MCPError) as caught:
                await served.get_prompt("ours", "ticket", {})
            message = str(caught.value)
            assert "needs 1 more argument: customer (who writes)" in message
            assert "needs the argument(s): customer" in message  # what the server said
            assert "Ticket from Ada" in str(await served.get_prompt("ours", "ticket", {"customer": "Ada"}))
            await served.stop("ours")
    finally:
        await served.aclose()


# -- a 20 MB resource ------------------------------------------------------------------------------------
async def test_a_20_mb_resource_is_read_cut_for_the_model_and_kept_whole(manager: MCPManager) -> None:
    read = await manager.read_resource_text("dynamic", "big://text")
    assert read.size == 20 * 1024 * 1024 and read.truncated
    assert len(read.full) == read.size and read.full.startswith("line 0 ")
    assert len(read.text) < 200_000 and read.text.startswith("line 0 ")
    assert "cut: the resource big://text has 20,971,520 characters" in read.text
    small = await manager.read_resource_text("dynamic", "small://text")
    assert not small.truncated and small.text == small.full == "just a few words"
