"""Too many tools: past a share of the model's window the robot searches for its tools (search_tools), so a
26-tool server and an 8k model still run; when even that cannot fit, the error names the tools."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from workspace import Robot, RunFailedError, ScriptedProvider
from workspace.errors import ConfigurationError
from workspace.messages import ToolResultMessage
from workspace.providers.testing import ToolCall
from workspace.tool_search import SEARCH_TOOL, rank
from workspace.tools.base import Tool

TOPICS = ["weather", "calendar", "email", "invoice", "ticket", "deploy", "backup", "translate", "invoice_pdf",
          "stock", "flight", "hotel", "recipe", "music", "podcast", "news", "map", "taxi", "parcel", "bank",
          "crypto", "fitness", "diary", "todo", "contacts", "photos"]


def big_tool(topic: str, seen: list[str]) -> Tool:
    """A tool whose schema is about 400 tokens, like an MCP server's well-documented tools."""
    def handler(arguments: dict[str, Any]) -> str:
        seen.append(topic)
        return f"{topic} done with {arguments}"

    properties = {f"{topic}_option_{i}": {"type": "string", "description": f"Option {i} of the {topic} service. " * 6}
                  for i in range(4)}
    return Tool(f"{topic}_service", f"Works with the {topic} service: look up, create and change {topic} records. "
                * 4, {"type": "object", "properties": properties, "required": []}, handler)


def tool_names(provider: ScriptedProvider, call: int) -> list[str]:
    return [spec.name for spec in provider.history[call].tools]


async def test_26_big_tools_and_an_8k_model_run_through_search_tools() -> None:
    seen: list[str] = []
    provider = ScriptedProvider([[ToolCall(SEARCH_TOOL, {"query": "what is the weather forecast"})],
                                 [ToolCall("weather_service", {"weather_option_0": "Paris"})], "Sunny in Paris."])
    robot = Robot("helper", system_prompt="You help.", provider=provider, context_window=8192,
                  local_tools=[big_tool(t, seen) for t in TOPICS], knowledge_store=False)
    from workspace import events as ev

    run = robot.stream("What is the weather in Paris?")
    notices = [e.detail async for e in run if isinstance(e, ev.RunStatus) and e.state == "notice"]
    result = run.result
    assert result is not None and result.last_text_content == "Sunny in Paris."
    assert any(n.startswith("The 26 tools' descriptions (") and "more than 25% of the model's 8,192-token window: "
               "the model searches for the tools it needs (search_tools)" in n for n in notices), notices
    assert tool_names(provider, 0) == [SEARCH_TOOL]  # not the 26 schemas
    found = [m.content for m in provider.history[1].messages if isinstance(m, ToolResultMessage)]
    assert found[0]["data"].startswith("You can call these tools now:\n- weather_service: Works with the weather")
    assert "weather_service" in tool_names(provider, 1) and len(tool_names(provider, 1)) < 8
    assert seen == ["weather"]


async def test_without_the_search_the_same_run_does_not_fit_and_the_error_names_the_tools() -> None:
    provider = ScriptedProvider(default="never", model_id="scripted-uncalibrated")  # its own token counts
    robot = Robot("helper", system_prompt="You help.", provider=provider, context_window=8192, tool_share=1,
                  local_tools=[big_tool(t, []) for t in TOPICS], knowledge_store=False,
                  context_policy="error")
    with pytest.raises(RunFailedError, match=r"does not fit the context window .* The tools' schemas take [\d,]+ "
                                             r"tokens of it \(the biggest: \w+_service"):
        await robot.arun("What is the weather in Paris?")
    assert provider.history == []  # nothing was sent


async def test_tools_that_fit_are_all_offered() -> None:
    provider = ScriptedProvider(default="ok")
    robot = Robot("helper", system_prompt="You help.", provider=provider, context_window=8192,
                  local_tools=[big_tool(t, []) for t in TOPICS[:3]], knowledge_store=False)
    await robot.arun("hi")
    assert sorted(tool_names(provider, 0)) == ["calendar_service", "email_service", "weather_service"]


async def test_a_search_with_no_match_lists_the_tools() -> None:
    provider = ScriptedProvider([[ToolCall(SEARCH_TOOL, {"query": "zzzz qqqq"})], "ok"])
    robot = Robot("helper", system_prompt="You help.", provider=provider, context_window=8192,
                  local_tools=[big_tool(t, []) for t in TOPICS], knowledge_store=False)
    await robot.arun("hi")
    [answer] = [m.content for m in provider.history[1].messages if isinstance(m, ToolResultMessage)]
    assert answer["data"].startswith("No tool matches 'zzzz qqqq'. The tools there are: backup_service, ")
    assert tool_names(provider, 1) == [SEARCH_TOOL]


def test_rank_puts_a_named_tool_first() -> None:
    tools = [big_tool(t, []) for t in TOPICS]
    assert [t.name for t in rank("invoice_pdf_service please", tools)][:1] == ["invoice_pdf_service"]
    assert rank("", tools) == []


def test_a_bad_share_names_the_fix() -> None:
    with pytest.raises(ConfigurationError, match=r"tool_share must be a fraction of the context window above 0 "
                                                 r"and at most 1, e.g. 0.25 \(got 2\)"):
        Robot("r", system_prompt="x", tool_share=2, knowledge_store=False)


# -- the shipped assistant with a real 26-tool MCP server and an 8k model --------------------------------------
async def test_the_shipped_assistant_with_a_26_tool_mcp_server_and_an_8k_model_runs() -> None:
    import sys
    from pathlib import Path

    from workspace.mcp.manager import MCPManager

    server = Path(__file__).resolve().parent / "fakes" / "mcp_many_tools_server.py"
    manager = MCPManager({"mcpServers": {"many": {"command": sys.executable, "args": [str(server)]}}})
    try:
        assert len(await manager.tools_for(["many"])) == 26  # up before the run: the test is about the window
        provider = ScriptedProvider([[ToolCall(SEARCH_TOOL, {"query": "book a taxi"})],
                                     [ToolCall("many__taxi_service", {"option_0": "airport"})],
                                     "Your taxi to the airport is booked."])
        robot = Robot("assistant", template="assistant", provider=provider, context_window=8192,
                      mcp_manager=manager, mcp=["many"], knowledge_store=False)
        result = await asyncio.wait_for(robot.arun("Book me a taxi to the airport"), 120)  # bounds a hang only
        assert result.last_text_content == "Your taxi to the airport is booked."
        assert tool_names(provider, 0) == [SEARCH_TOOL]
        assert "many__taxi_service" in tool_names(provider, 1)
        [answer] = [m.content for m in provider.history[2].messages if isinstance(m, ToolResultMessage)][-1:]
        assert answer == {"data": {"result": 'taxi done with ["airport", "", "", ""]'}}
        assert len(robot.mcp_tools) == 26  # the server's tools, all reachable through the search
    finally:
        await manager.aclose()


def test_tools_joining_later_are_kept_within_the_window_too() -> None:
    from workspace.context.tokens import TokenCounter
    from workspace.tool_search import WindowedManifest

    small = [Tool(f"small{i}", "A small tool.", {"type": "object", "properties": {}}, lambda a: "ok") for i in range(2)]
    manifest = WindowedManifest(small, budget=2048, cost=TokenCounter().tools)
    assert not manifest.searching and manifest.names == ["small0", "small1"]
    for topic in TOPICS:  # an MCP server that was still starting joins with its 26 tools
        manifest.add(big_tool(topic, []))
    assert manifest.searching and manifest.names == [SEARCH_TOOL]
    assert len(manifest.hidden) == 28
    assert manifest.get("taxi_service") is manifest.hidden["taxi_service"]  # called by name: offered from now on
    assert manifest.names == [SEARCH_TOOL, "taxi_service"]
    manifest.add(big_tool("late", []))
    assert "late_service" in manifest.hidden and "late_service" not in manifest


# -- a local server with an 8k window, on loopback -------------------------------------------------------------
def loopback_model(request: dict[str, Any]) -> Any:
    from fakes.llm_server import Reply

    names = [t["function"]["name"] for t in request.get("tools") or []]
    last = request["messages"][-1]
    if last["role"] == "tool":
        return Reply.say("Sunny in Paris.") if "weather done with" in str(last) else \
            Reply.tool("weather_service", {"weather_option_0": "Paris"})
    if SEARCH_TOOL in names:
        return Reply.tool(SEARCH_TOOL, {"query": "weather forecast"})
    return Reply.say("I was sent every tool.")


@pytest.mark.parametrize("share", [None, 1])
async def test_an_8k_local_server_runs_with_the_search_and_refuses_without_naming_the_tools(share: Any) -> None:
    from fakes.llm_server import FakeLLMServer

    from workspace.providers.openai_provider import OpenAICompatibleProvider

    seen: list[str] = []
    with FakeLLMServer(reply_fn=loopback_model, context_window=8192, report_window=False) as server:
        provider = OpenAICompatibleProvider("openai/fake", api_base=server.base_url + "/v1", api_key="sk-test",
                                            max_retries=1)
        robot = Robot("helper", system_prompt="You help.", provider=provider, tool_share=share,
                      local_tools=[big_tool(t, seen) for t in TOPICS], knowledge_store=False)
        if share is None:
            result = await asyncio.wait_for(robot.arun("Weather in Paris?"), 120)  # bounds a hang only
            assert result.last_text_content == "Sunny in Paris." and seen == ["weather"]
            assert server.overflows == 0
        else:
            with pytest.raises(RunFailedError, match=r"does not fit the context window \(8,192 tokens.* The tools' "
                                                     r"schemas take [\d,]+ tokens of it \(the biggest: "):
                await asyncio.wait_for(robot.arun("Weather in Paris?"), 120)
            assert server.overflows == 1  # the server refused; nothing older to compact: the tools are the cause
