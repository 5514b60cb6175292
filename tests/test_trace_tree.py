"""The trace tree (ui.inspector.trace_tree, Qt-free) of real runs against the loopback model server: a run
with a tool call and a robot used as a tool nests the inner run under its call; each model call carries
the usage the server reported, and a run's totals are their sum; the export is JSON with secrets masked;
a search keeps the path to what it found."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from ui.inspector.trace_tree import TraceNode, TraceTree, build_tree
from workspace import events as ev
from workspace.providers.openai_provider import OpenAICompatibleProvider
from workspace.robot import Robot
from workspace.secrets import forget_secrets, register_secret

pytestmark = pytest.mark.timeout(120)

#: (prompt, completion) tokens the server reports for each of its four answers, in order.
USAGE = [(100, 7), (40, 5), (60, 9), (130, 11)]


def provider(server: FakeLLMServer) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider("openai/fake", api_base=server.base_url + "/v1", api_key="sk-test",
                                    timeout=10.0, backoff=0.01, max_retries=0)


def lookup(query: str) -> str:
    """Look something up."""
    return f"{query} is green"


async def nested_run_events() -> list[ev.Event]:
    """boss asks helper (a robot as a tool); helper calls lookup, answers; boss answers."""
    with FakeLLMServer() as server:
        server.enqueue(
            Reply.tool("helper", {"message": "What is tea?"}, id="call-helper", usage=USAGE[0]),
            Reply.tool("lookup", {"query": "tea"}, id="call-lookup", usage=USAGE[1]),
            Reply.say("Tea is green.", usage=USAGE[2]),
            Reply.say("The helper says tea is green.", usage=USAGE[3]),
        )
        helper = Robot("helper", system_prompt="You look things up.", provider=provider(server), tools=[lookup])
        boss = Robot("boss", system_prompt="You ask the helper.", provider=provider(server), robots=[helper])
        events = [e async for e in boss.stream("Tell me about tea")]
        assert len(server.requests) == 4
    return events


def shape(node: TraceNode) -> Any:
    """A node as (kind, children) with labels cut to their first word: the tree's structure."""
    kids = [shape(c) for c in node.children if c.kind != "text"]
    return (node.kind, node.tool or node.label.split(" ")[0], kids) if kids else (node.kind, node.tool or
                                                                                 node.label.split(" ")[0])


async def test_a_robot_used_as_a_tool_nests_under_its_call_and_totals_are_the_reported_usage() -> None:
    events = await nested_run_events()
    tree = build_tree(events)
    assert len(tree.roots) == 1
    boss = tree.roots[0]
    assert shape(boss) == (
        "run", "Run", [
            ("model_call", "Model", [
                ("request", "Request"),  # the request as sent
                ("tool_call", "helper", [
                    ("request", "Request"),
                    ("run", "Run", [
                        ("model_call", "Model", [
                            ("request", "Request"),
                            ("tool_call", "lookup", [("request", "Request"), ("response", "Response")]),
                        ]),
                        ("model_call", "Model", [("request", "Request")]),
                    ]),
                    ("response", "Response"),
                ]),
            ]),
            ("model_call", "Model", [("request", "Request")]),
        ])
    calls = [n for n in boss.walk() if n.kind == "model_call"]
    # Each model call holds what the server reported for it, in order.
    assert [(c.own_input_tokens, c.own_output_tokens) for c in calls] == [USAGE[0], USAGE[1], USAGE[2], USAGE[3]]
    # The run's totals: what the provider reported, summed (the inner run's included), and the inner run's own.
    assert (boss.input_tokens, boss.output_tokens) == (sum(u[0] for u in USAGE), sum(u[1] for u in USAGE))
    inner = next(n for n in boss.walk() if n.kind == "run" and n is not boss)
    assert inner.label.startswith("Run helper") and (inner.input_tokens, inner.output_tokens) == (100, 14)
    # ... which is the total the run itself reported (the inner run's usage counted in its caller's).
    boss_usage = [e for e in events if isinstance(e, ev.Usage) and e.run_id == boss.run_id]
    assert (boss_usage[-1].total_input_tokens, boss_usage[-1].total_output_tokens) == (330, 32)
    # The tool call's result and its answer are there; times run forwards.
    tool = next(n for n in boss.walk() if n.tool == "lookup")
    assert tool.arguments == {"query": "tea"} and tool.result == {"data": "tea is green"}
    assert boss.duration is not None and boss.duration >= inner.duration  # type: ignore[operator]
    answers = [n.data["text"] for n in boss.children[-1].children if n.kind == "text"]
    assert answers == ["The helper says tea is green."]


async def test_search_keeps_the_path_and_export_masks_secrets() -> None:
    events = await nested_run_events()
    secret = "sk-live-0123456789abcdefghijklmnop"
    register_secret(secret, name="TEA_KEY")
    try:
        tree = TraceTree()
        # A tool's argument that holds a key (as a careless model might send it).
        for event in events:
            if isinstance(event, ev.ToolUse) and event.name == "lookup":
                event = ev.ToolUse(id=event.id, name=event.name, input={"query": secret}, run_id=event.run_id,
                                   robot=event.robot, seq=event.seq, ts=event.ts,
                                   parent_run_id=event.parent_run_id, parent_tool_id=event.parent_tool_id)
            tree.add(event)
        exported = tree.to_json()
        assert secret not in exported and "<TEA_KEY>" in exported
        data = json.loads(exported)
        assert data["trace"][0]["input_tokens"] == 330
        keep = tree.matching("lookup")
        found = [n for n in tree.walk() if id(n) in keep]
        # The call, and the path to it: the inner run, the helper call, the model calls, the boss run.
        assert {n.kind for n in found} >= {"run", "model_call", "tool_call"}
        assert not any(n.kind == "model_call" and n.label.startswith("Model call 2") and n.parent is tree.roots[0]
                       for n in found)
    finally:
        forget_secrets([secret])


def test_live_events_in_batches_give_the_same_tree() -> None:
    import asyncio

    events = asyncio.run(nested_run_events())
    whole = build_tree(events)
    live = TraceTree()
    for i in range(0, len(events), 3):
        live.extend(events[i:i + 3])
    assert json.loads(live.to_json()) == json.loads(whole.to_json())


async def test_an_mcp_servers_tool_call_shows_its_json_rpc_request_and_the_servers_result() -> None:
    from fakes.mcp_servers import EVERYTHING, require_servers

    from workspace.mcp.manager import MCPManager
    from workspace.providers.testing import ScriptedProvider, ToolCall

    require_servers()
    manager = MCPManager({"mcpServers": {"everything": {"command": str(EVERYTHING), "autoApprove": ["echo"]}}})
    try:
        provider = ScriptedProvider([[ToolCall("everything__echo", {"message": "hi"}, id="c1")], "Done."])
        robot = Robot("helper", system_prompt="You help.", provider=provider, mcp_manager=manager, mcp=["everything"])
        events = [e async for e in robot.stream("echo something")]
    finally:
        await manager.aclose()
    tree = build_tree(events)
    [call] = [n for n in tree.walk() if n.kind == "tool_call"]
    request, response = call.children
    assert request.label == "MCP request → everything"
    assert request.data == {"jsonrpc": "2.0", "method": "tools/call",
                            "params": {"name": "echo", "arguments": {"message": "hi"}}}
    assert response.label == "MCP response ← everything (ok)"
    assert response.data["result"]["content"] == [{"type": "text", "text": "Echo: hi"}]
    assert call.result == {"data": "Echo: hi"}
