"""Robots and threads on a loopback server that behaves as real ones do, through both providers.

What the agent loop makes of it: thinking as its own events (kept in the store, left out of exports
unless asked), ``finish_reason: length`` as the stop reason with a way to continue, tool calls written
as text, estimated usage and unknown cost, budgets, fallbacks, per-robot keys and API bases, the
status of every wait, and the library's rough edges (``Tool.call``, ``Robot.run``, ``tools=[fn]`` with
``mcp=[...]``).
"""

from __future__ import annotations

import asyncio
import json
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from workspace import events as ev
from workspace.agent import CONTINUE_PROMPT
from workspace.config import load_config
from workspace.errors import RunFailedError
from workspace.exports import export_events_jsonl, export_markdown
from workspace.robot import Robot
from workspace.session import Workspace
from workspace.tools import Tool, tool

KINDS = ["lean", "litellm"]
kinds = pytest.mark.parametrize("kind", KINDS)


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


def config(kind: str, **llm: Any) -> Any:
    agent = llm.pop("agent", {})
    return load_config(env={}, overrides={"llm": {"provider": "litellm" if kind == "litellm" else "auto",
                                                  "max_retries": 1, **llm}, "agent": agent})


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def robot(kind: str, server: FakeLLMServer, *, model: str = "openai/fake", llm: dict[str, Any] | None = None,
          **options: Any) -> Robot:
    options.setdefault("tools", [get_weather])
    return Robot("r", system_prompt="You help.", model=model, api_base=server.base_url + "/v1",
                 config=config(kind, **(llm or {})), **options)


async def events_of(run: Any) -> list[ev.Event]:
    async def go() -> list[ev.Event]:
        return [e async for e in run]
    return await asyncio.wait_for(go(), timeout=30)


def of(events: list[ev.Event], cls: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


# --------------------------------------------------------------------------------------------
# Thinking


@kinds
@pytest.mark.parametrize("how", ["reasoning_content", "think tags"])
async def test_thinking_is_its_own_event(server: FakeLLMServer, kind: str, how: str) -> None:
    if how == "think tags":
        server.enqueue(Reply.say("<think>The user greets me, so I greet back.</think>\n\nHello!"))
    else:
        server.enqueue(Reply.say("Hello!", reasoning="The user greets me, so I greet back."))
    r = robot(kind, server)
    events = await events_of(r.stream("Hi"))
    assert "".join(e.text for e in of(events, ev.ReasoningDelta)) == "The user greets me, so I greet back."
    assert [e.text for e in of(events, ev.Reasoning)] == ["The user greets me, so I greet back."]
    assert "".join(e.text for e in of(events, ev.TextDelta)) == "Hello!"
    assert [e.text for e in of(events, ev.Text)] == ["Hello!"]
    assert r.history[-1].content == "Hello!"  # the thinking is never sent back to the model
    kinds_seen = [type(e) for e in events]
    assert kinds_seen.index(ev.Reasoning) < kinds_seen.index(ev.Text)


async def test_thinking_is_kept_in_the_thread_and_exported_only_when_asked(server: FakeLLMServer,
                                                                          tmp_path: Path) -> None:
    from workspace.providers.openai_provider import OpenAICompatibleProvider

    server.enqueue(Reply.say("Hello!", reasoning="A secret plan to greet."))
    provider = OpenAICompatibleProvider("openai/fake", api_base=server.base_url + "/v1")
    async with _workspace(tmp_path, provider) as ws:
        session = ws.new_thread("assistant")
        await asyncio.wait_for(session.send("Hi").wait(), timeout=30)
        stored = [e for view in session.transcript() for e in view.events]
        assert [e.text for e in of(stored, ev.Reasoning)] == ["A secret plan to greet."]
        thread = session.thread_id
        assert "A secret plan" not in export_markdown(ws.store, thread)
        assert "A secret plan" not in export_events_jsonl(ws.store, thread)
        shown = export_markdown(ws.store, thread, include_reasoning=True)
        assert "<summary>Thinking</summary>" in shown and "A secret plan to greet." in shown
        assert "reasoning_delta" in export_events_jsonl(ws.store, thread, include_reasoning=True)


class _workspace:
    def __init__(self, tmp_path: Path, provider: Any) -> None:
        self.ws = Workspace(db_path=tmp_path / "w.db", provider=provider)

    async def __aenter__(self) -> Workspace:
        return self.ws

    async def __aexit__(self, *exc: object) -> None:
        await self.ws.aclose()


# --------------------------------------------------------------------------------------------
# Cut answers


@kinds
async def test_an_answer_cut_at_the_token_limit_says_so_and_can_go_on(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply.say("The first half of a long", finish_reason="length"), Reply.say(" answer."))
    r = robot(kind, server)
    events = await events_of(r.stream("Tell me everything"))
    finished = of(events, ev.RunFinished)[0]
    assert finished.result.stop_reason == "length" and r.history[-1].content == "The first half of a long"
    result = await asyncio.wait_for(r.continue_().wait(), timeout=30)
    assert isinstance(result, ev.RunFinished) and result.result.stop_reason == "stop"
    sent = server.requests[1]["messages"]
    assert sent[-2] == {"role": "assistant", "content": "The first half of a long"}
    assert sent[-1] == {"role": "user", "content": CONTINUE_PROMPT}


async def test_a_thread_continues_a_cut_answer(server: FakeLLMServer, tmp_path: Path) -> None:
    from workspace.providers.openai_provider import OpenAICompatibleProvider

    server.enqueue(Reply.say("Part one", finish_reason="length"), Reply.say(" and part two."))
    async with _workspace(tmp_path, OpenAICompatibleProvider("openai/fake", api_base=server.base_url + "/v1")) as ws:
        session = ws.new_thread("assistant")
        first = await asyncio.wait_for(session.send("Go").wait(), timeout=30)
        assert isinstance(first, ev.RunFinished) and first.result.stop_reason == "length"
        assert "cut off at the token limit" in export_markdown(ws.store, session.thread_id)
        await asyncio.wait_for(session.continue_().wait(), timeout=30)
        sent = server.requests[1]["messages"]
        assert sent[-2]["content"] == "Part one" and sent[-1]["content"] == CONTINUE_PROMPT


@kinds
async def test_a_tool_call_cut_at_the_token_limit_is_not_run(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply.tool("get_weather", '{"city": "Os', finish_reason="length"))
    events = await events_of(robot(kind, server).stream("Weather?"))
    assert not of(events, ev.ToolUse) and of(events, ev.RunFinished)[0].result.stop_reason == "length"
    assert any("cut off at the token limit" in s.detail for s in of(events, ev.RunStatus))


# --------------------------------------------------------------------------------------------
# Tools: tool_choice, calls written as text


@kinds
async def test_tool_choice_from_the_robot_and_from_the_configuration(server: FakeLLMServer, kind: str) -> None:
    await robot(kind, server, tool_choice="required").arun("a")
    await robot(kind, server, llm={"tool_choice": "auto"}).arun("b")
    assert [r.get("tool_choice") for r in server.requests] == ["required", "auto"]


@kinds
@pytest.mark.parametrize("written", [
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>',
    '```tool_code\nget_weather(city="Oslo")\n```',
])
async def test_a_tool_call_written_as_text_is_run(server: FakeLLMServer, kind: str, written: str) -> None:
    server.enqueue(Reply.say(f"Let me check.\n{written}"), Reply.say("It is sunny in Oslo."))
    r = robot(kind, server)
    events = await events_of(r.stream("Weather in Oslo?"))
    assert [(e.name, e.input, e.from_text) for e in of(events, ev.ToolUse)] == [
        ("get_weather", {"city": "Oslo"}, True)]
    assert of(events, ev.ToolResult)[0].payload == {"data": "sunny in Oslo"}
    assert [e.text for e in of(events, ev.Text)] == ["Let me check.", "It is sunny in Oslo."]
    notice = [s for s in of(events, ev.RunStatus) if s.state == "notice"]
    assert notice and "as text" in notice[0].detail and "tool_choice" in notice[0].detail
    second = server.requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert second[-1] == {"role": "tool", "tool_call_id": second[-2]["tool_calls"][0]["id"],
                          "content": "sunny in Oslo"}


@kinds
async def test_an_unreadable_tool_call_in_text_is_reported(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply.say('<tool_call>{"name": "search_web", "arguments": {"q": "x"}}</tool_call>'))
    events = await events_of(robot(kind, server).stream("Search"))
    assert not of(events, ev.ToolUse)
    notice = [s.detail for s in of(events, ev.RunStatus) if s.state == "notice"]
    assert notice and "tried to call a tool" in notice[0] and "did not turn into a call" in notice[0]


async def test_text_tool_calls_can_only_be_noticed(server: FakeLLMServer) -> None:
    server.enqueue(Reply.say('<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'))
    events = await events_of(robot("lean", server, llm={"agent": {"text_tool_calls": "notice"}}).stream("W?"))
    assert not of(events, ev.ToolUse)
    assert any("tried to call a tool" in s.detail for s in of(events, ev.RunStatus))


# --------------------------------------------------------------------------------------------
# Usage, cost and budgets


@kinds
async def test_usage_a_server_does_not_send_is_estimated_and_cost_unknown(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply.say("A short answer.", usage=False))
    events = await events_of(robot(kind, server).stream("Hi"))
    usage = of(events, ev.Usage)[0]
    assert usage.estimated and usage.input_tokens > 0 and usage.output_tokens > 0 and usage.cost is None
    result = of(events, ev.RunFinished)[0].result
    assert result.usage.estimated and result.usage.cost is None


@kinds
async def test_max_total_tokens_stops_the_run(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply.tool("get_weather", {"city": "Oslo"}, usage=(50, 10)), Reply.say("never asked"))
    result = await robot(kind, server, max_total_tokens=40).arun("Weather?")
    assert result.stop_reason == "max_total_tokens" and len(server.requests) == 1
    assert result.tool_calls  # the tool the model asked for ran; the next call was not made


async def test_max_cost_stops_a_run_of_a_priced_model(server: FakeLLMServer) -> None:
    server.enqueue(Reply.tool("get_weather", {"city": "Oslo"}, usage=(100_000, 1000)), Reply.say("never asked"))
    result = await robot("litellm", server, model="openai/gpt-4o-mini", max_cost=0.001).arun("Weather?")
    assert result.usage is not None and result.usage.cost is not None and result.usage.cost > 0.001
    assert result.stop_reason == "max_cost" and len(server.requests) == 1


async def test_max_cost_of_a_model_without_a_price_says_it_cannot_be_checked(server: FakeLLMServer) -> None:
    events = await events_of(robot("lean", server, max_cost=0.01).stream("Hi"))
    assert any("max_cost" in s.detail and "not known" in s.detail for s in of(events, ev.RunStatus))


def test_budgets_and_fallbacks_in_front_matter(robotlab_home: Path) -> None:
    from workspace.catalog import load_robot

    path = robotlab_home / "config" / "robots" / "frugal.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("---\nmodel: openai/a\nmax_cost: 0.5\nmax_total_tokens: 10000\ntool_choice: auto\n"
                    "fallback_models: [anthropic/claude-haiku-4-5, {model: openai/b, api_base: 'http://127.0.0.1:9/v1'}]"
                    "\n---\nYou are frugal.", encoding="utf-8")
    r = load_robot("frugal", config=load_config(env={}))
    assert r.max_cost == 0.5 and r.max_total_tokens == 10000 and r.settings["tool_choice"] == "auto"
    assert r.fallback_models == ["anthropic/claude-haiku-4-5", {"model": "openai/b", "api_base": "http://127.0.0.1:9/v1"}]


# --------------------------------------------------------------------------------------------
# Fallbacks


@kinds
@pytest.mark.parametrize("outage", [Reply.error(503, "overloaded"), Reply.error(429, retry_after=3600)])
async def test_a_fallback_model_answers_when_the_model_cannot(server: FakeLLMServer, kind: str,
                                                              outage: Reply) -> None:
    def reply(body: dict[str, Any]) -> Reply:
        return outage if body["model"].endswith("primary") else Reply.say("From the backup.")

    server.reply_fn = reply
    base = server.base_url + "/v1"
    r = robot(kind, server, model="openai/primary", fallback_models=[{"model": "openai/backup", "api_base": base}],
              llm={"max_retries": 0})
    events = await events_of(r.stream("Hi"))
    finished = of(events, ev.RunFinished)
    assert finished and finished[0].result.last_text_content == "From the backup."
    switch = [s for s in of(events, ev.RunStatus) if s.state == "fallback"]
    assert len(switch) == 1 and switch[0].model == "openai/backup" and "openai/primary" in switch[0].detail
    assert of(events, ev.Usage)[0].model == "openai/backup"


@kinds
async def test_no_fallback_for_a_request_that_cannot_succeed(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply.error(400, "bad tools"))
    r = robot(kind, server, fallback_models=["openai/backup"])
    events = await events_of(r.stream("Hi"))
    assert of(events, ev.RunFailed) and not [s for s in of(events, ev.RunStatus) if s.state == "fallback"]


# --------------------------------------------------------------------------------------------
# Waits people see


@kinds
async def test_retries_are_events_and_stop_ends_the_wait(server: FakeLLMServer, kind: str) -> None:
    server.enqueue(Reply.error(429, times=5, retry_after=30))
    run = robot(kind, server).stream("Hi")
    seen: list[ev.Event] = []

    async def consume() -> None:
        async for event in run:
            seen.append(event)
            if isinstance(event, ev.RunStatus) and event.state == "retrying":
                stopped_at[0] = time.monotonic()
                run.cancel()

    stopped_at = [0.0]
    await asyncio.wait_for(consume(), timeout=60)
    # at once: long before the 30 s the retry waits for (a generous bound for a loaded machine)
    assert isinstance(seen[-1], ev.RunCancelled) and time.monotonic() - stopped_at[0] < 30 / 2
    retry = next(s for s in of(seen, ev.RunStatus) if s.state == "retrying")
    assert retry.retry_in == 30 and retry.attempt == 1 and "Retry-After" in retry.detail
    assert [s.state for s in of(seen, ev.RunStatus)][:1] in (["connecting"], ["loading"])


@kinds
async def test_two_robots_on_one_local_server_take_turns(kind: str) -> None:
    with FakeLLMServer(interrupt_on_new_request=True) as server:
        server.enqueue(Reply.say("one two three four", chunk_delay=0.05, times=2))
        a, b = robot(kind, server, tools=[]), robot(kind, server, tools=[])
        first, second = await asyncio.gather(a.arun("x"), b.arun("y"))
        assert first.last_text_content == second.last_text_content == "one two three four"
        assert server.interrupted_streams == 0


# --------------------------------------------------------------------------------------------
# Keys and addresses per robot


@kinds
async def test_a_robot_has_its_own_key_that_is_never_shown(server: FakeLLMServer, kind: str) -> None:
    key = "sk-robot-own-key-0123456789"
    r = robot(kind, server, api_key=key)
    events = await events_of(r.stream("Hi"))
    assert server.request_log[-1].headers["authorization"] == f"Bearer {key}"
    assert r.api_key == "***" and key not in repr(r) and key not in json.dumps(r.to_dict())
    assert key not in repr(r.provider) and all(key not in ev.to_json(e) for e in events)
    server.enqueue(Reply.error(401, echo_key=True))
    with pytest.raises(RunFailedError) as info:
        await r.arun("again")
    assert key not in str(info.value) and "401" in str(info.value)


async def test_a_robot_files_api_base_is_used(server: FakeLLMServer, robotlab_home: Path, tmp_path: Path) -> None:
    path = robotlab_home / "config" / "robots" / "local.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nmodel: openai/fake\napi_base: {server.base_url}/v1\ntools: []\n---\nYou are local.",
                    encoding="utf-8")
    server.enqueue("Hello from the robot's own server.")
    ws = Workspace(db_path=tmp_path / "w.db")
    try:
        session = ws.new_thread("local")
        done = await asyncio.wait_for(session.send("Hi").wait(), timeout=30)
        assert isinstance(done, ev.RunFinished), done
        assert done.result.last_text_content == "Hello from the robot's own server."
    finally:
        await ws.aclose()


# --------------------------------------------------------------------------------------------
# The library's rough edges


class _Servers:
    """Tools of an MCP server named "calc" (a stand-in for the MCP manager: no process needed here)."""

    async def tools_for(self, servers: list[Any], config: Any) -> list[Tool]:
        assert servers == ["calc"]

        def add(args: dict[str, Any]) -> int:
            return int(args["a"]) + int(args["b"])

        return [Tool("calc__add", "Add two numbers.", {"type": "object", "properties": {
            "a": {"type": "integer"}, "b": {"type": "integer"}}}, add, mcp="calc")]


async def test_tools_given_as_functions_keep_the_mcp_servers_tools() -> None:
    r = Robot("r", system_prompt="x", tools=[get_weather], mcp=["calc"], mcp_manager=_Servers(),
              config=load_config(env={}))
    names = (await r.resolve_tools()).names
    assert names == ["get_weather", "calc__add"]
    only_named = Robot("r", system_prompt="x", tools=["calc__add"], mcp=["calc"], mcp_manager=_Servers(),
                       config=load_config(env={}))
    assert (await only_named.resolve_tools()).names == ["calc__add"]  # a list of names is still a whitelist


async def test_tool_call_returns_the_value_of_an_async_handler() -> None:
    async def slow_add(args: dict[str, Any]) -> int:
        await asyncio.sleep(0)
        return int(args["a"]) + int(args["b"])

    t = Tool("add", handler=slow_add)
    assert t.call({"a": 2, "b": 3}) == 5  # from inside a running loop too


def test_tool_call_of_an_async_handler_without_a_loop() -> None:
    @tool
    async def double(x: int) -> int:
        """Twice x."""
        return 2 * x

    assert double.call({"x": 21}) == 42


def test_a_failed_run_raises_without_a_chained_event_loop_error(server: FakeLLMServer) -> None:
    server.enqueue(Reply.error(400, "the request is malformed"))
    r = robot("lean", server)
    with pytest.raises(RunFailedError) as info:
        r.run("Hi")
    assert info.value.__context__ is None and info.value.__cause__ is None
    text = "".join(traceback.format_exception(info.value))
    assert "no running event loop" not in text and "the request is malformed" in text


def test_a_workspace_warms_up_what_the_first_message_needs(server: FakeLLMServer, tmp_path: Path,
                                                           robotlab_home: Path) -> None:
    from workspace import templates

    path = robotlab_home / "config" / "robots" / "local.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nmodel: openai/fake\napi_base: {server.base_url}/v1\n---\nYou are {{{{ name }}}}.",
                    encoding="utf-8")
    ws = Workspace(db_path=tmp_path / "w.db")
    try:
        assert ws.warm_up("local") == "openai"
        assert "You are {{ name }}." in templates._compiled  # compiled once, for the first message
    finally:
        ws.close()


@kinds
async def test_a_networks_parallel_tasks_queue_at_a_local_server(kind: str) -> None:
    from workspace.network import Network

    with FakeLLMServer(interrupt_on_new_request=True) as server:
        server.enqueue(Reply.say("a long answer in many words", chunk_delay=0.03, times=3))
        net = Network("parallel")
        with net.parallel("both") as group:
            for name in ("x", "y", "z"):
                group.task(name, Robot(name, system_prompt="You help.", model="openai/fake", tools="none", mcp="none",
                                       api_base=server.base_url + "/v1", config=config(kind)))
        events = await events_of(net.stream("go"))
        assert isinstance(events[-1], ev.RunFinished), events[-1]
        result = events[-1].result
        assert {n: r.last_text_content for n, r in result.results.items()} == dict.fromkeys(
            "xyz", "a long answer in many words")
        assert server.interrupted_streams == 0 and server.max_concurrent == 1
        assert any(s.state == "queued" for s in of(events, ev.RunStatus))
