"""A delegation started by a robot's tool is a run inside that tool call (like a robot used as a tool): its
events in the caller's stream with ``parent_tool_id``, in the background too, its usage in the caller's
totals, and in the trace under the call; outside a tool call it runs on its own as before."""

from __future__ import annotations

from typing import Any

from fakes.delegating_robots import background_events

from ui.inspector.trace_tree import build_tree
from workspace import Robot, RunFailedError
from workspace import events as ev
from workspace.providers.testing import Fail, ScriptedProvider, ToolCall
from workspace.tools.base import Tool


async def test_a_background_delegation_runs_inside_the_call_that_started_it() -> None:
    events = await background_events()
    inner = [e for e in events if e.robot == "summarizer"]
    assert inner and {e.parent_tool_id for e in inner} == {"c1"}
    assert {e.parent_run_id for e in inner} == {events[0].run_id}
    assert isinstance(inner[0], ev.RunStarted) and inner[0].message == "Q4: revenue up 18%"
    assert isinstance(inner[-1], ev.RunFinished)
    assert any(isinstance(e, ev.Text) and e.text == "Revenue grew 18%." for e in inner)
    collected = next(e for e in events if isinstance(e, ev.ToolResult) and e.id == "c2")
    assert collected.payload == {"data": "Revenue grew 18%."}
    final = events[-1]
    assert isinstance(final, ev.RunFinished) and final.result is not None
    inner_tokens = sum(e.input_tokens + e.output_tokens for e in inner if isinstance(e, ev.Usage))
    own_tokens = sum(e.input_tokens + e.output_tokens for e in events
                     if isinstance(e, ev.Usage) and e.robot == "manager" and e.run_id == events[0].run_id)
    assert inner_tokens > 0 and final.result.usage.total_tokens >= inner_tokens  # the delegate's usage counted
    assert own_tokens > 0


async def test_the_trace_puts_the_delegated_run_under_the_call() -> None:
    tree = build_tree(await background_events())
    [root] = tree.roots
    [call] = [n for n in root.walk() if n.kind == "tool_call" and n.call_id == "c1"]
    runs = [n for n in call.children if n.kind == "run"]
    assert [n.label for n in runs] == ["Run summarizer: Q4: revenue up 18%"]


async def test_a_delegation_outside_a_tool_call_is_a_run_of_its_own() -> None:
    summarizer = Robot("summarizer", system_prompt="s", knowledge_store=False, provider=ScriptedProvider(["ok"]))
    manager = Robot("manager", system_prompt="s", knowledge_store=False, provider=ScriptedProvider())
    result = await manager.delegate(to=summarizer, task="go")
    assert result.last_text_content == "ok" and result.delegated_by == "manager"


async def test_a_failed_delegate_inside_a_call_raises_as_arun_does() -> None:
    failing = Robot("failing", system_prompt="s", knowledge_store=False,
                    provider=ScriptedProvider([Fail("the model is down")]))
    errors: list[str] = []

    async def start(arguments: dict[str, Any]) -> str:
        try:
            await manager.delegate(to=failing, task="go")
        except RunFailedError as exc:
            errors.append(str(exc))
            raise
        return "no"

    manager = Robot("manager", system_prompt="s", knowledge_store=False, local_tools=[
        Tool("hand_off", "Hand off", {"type": "object", "properties": {}}, start)],
        provider=ScriptedProvider([[ToolCall("hand_off", {}, id="h1")], "It failed."]))
    events = [e async for e in manager.stream("go")]
    assert errors and "the model is down" in errors[0]
    error = next(e for e in events if isinstance(e, ev.ToolError) and e.id == "h1")
    assert "the model is down" in str(error.error)
    assert any(isinstance(e, ev.RunFailed) and e.robot == "failing" and e.parent_tool_id == "h1" for e in events)
