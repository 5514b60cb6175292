"""Robots as tools (workspace/robots_as_tools.py): a robot calls another in the same process; the inner
run's events are nested under the outer tool call (parent ids), it ends with its own terminal event,
its usage rolls up, stopping the outer run stops it, and the store, the exports, the terminal and the
chat's presenter keep the nesting."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest

from workspace import Robot, ScriptedProvider, ToolCall
from workspace import events as ev
from workspace.approval import ApprovalDecision
from workspace.cli.render import EventPrinter, PlainPrinter
from workspace.exports import export_events_jsonl, export_markdown
from workspace.providers.testing import Pause
from workspace.session import Workspace


def helper(*replies: Any, name: str = "helper") -> Robot:
    return Robot(name, system_prompt="You help.", description="Answers questions about the weather",
                 provider=ScriptedProvider(list(replies)))


def boss(*replies: Any, robots: list[Any]) -> Robot:
    return Robot("boss", system_prompt="You delegate.", provider=ScriptedProvider(list(replies)), robots=robots)


async def collect(run: Any) -> list[ev.Event]:
    return [e async for e in run]


def check_tree(events: list[ev.Event]) -> dict[str, list[ev.Event]]:
    """One shared, increasing sequence; the stream's own run ends once, last; every inner run ends once,
    with its parent ids, before the call that started it has its result. Events by run id."""
    seqs = [e.seq for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    top = events[0].run_id
    assert [e for e in events if e.terminal and e.run_id == top] == [events[-1]]
    runs: dict[str, list[ev.Event]] = {}
    for e in events:
        runs.setdefault(e.run_id, []).append(e)
    for run_id, own in runs.items():
        if run_id == top:
            assert all(e.parent_run_id is None and e.parent_tool_id is None for e in own)
            continue
        assert isinstance(own[0], ev.RunStarted) and own[-1].terminal
        assert sum(1 for e in own if e.terminal) == 1
        parent, call = own[0].parent_run_id, own[0].parent_tool_id
        assert parent in runs and call and all(e.parent_run_id == parent and e.parent_tool_id == call for e in own)
        use = next(i for i, e in enumerate(events) if isinstance(e, ev.ToolUse) and e.id == call and e.run_id == parent)
        done = next(i for i, e in enumerate(events) if isinstance(e, ev.ToolResult | ev.ToolError) and e.id == call
                    and e.run_id == parent)
        assert use < events.index(own[0]) and events.index(own[-1]) < done
    return runs


async def test_a_robot_as_a_tool_nests_its_run_and_rolls_up_usage() -> None:
    inner = helper("It is sunny in Oslo.")
    outer = boss(ToolCall("helper", {"message": "Weather in Oslo?"}, id="c1"), "Oslo is sunny.", robots=[inner])
    run = outer.stream("What about Oslo?")
    events = await collect(run)
    runs = check_tree(events)
    assert len(runs) == 2
    inner_id = next(r for r in runs if r != run.run_id)
    assert [type(e).__name__ for e in runs[inner_id]] == ["RunStarted", "ModelRequest", "TextDelta", "TextDelta",
                                                           "TextDelta", "TextDelta", "TextDelta", "Usage", "Text",
                                                           "RunFinished"]
    result = next(e for e in events if isinstance(e, ev.ToolResult))
    assert result.payload == {"data": "It is sunny in Oslo."}
    # The tool the model saw: named after the robot, described by it, taking a message.
    [spec] = outer.provider.history[0].tools
    assert spec.name == "helper" and "weather" in spec.description and spec.parameters["required"] == ["message"]
    # Usage: each model call reported once; the outer run's totals and result include the inner run's.
    calls = [e for e in events if isinstance(e, ev.Usage)]
    assert len(calls) == 3
    per_call = sum(e.input_tokens + e.output_tokens for e in calls)
    assert run.result.usage.total_tokens == per_call
    assert calls[-1].total_input_tokens + calls[-1].total_output_tokens == per_call
    # The inner robot ran in a conversation of its own.
    assert inner.history == [] and [m.role for m in outer.history] == ["user", "assistant", "tool_result",
                                                                        "assistant"]


async def test_as_tool_names_and_describes_and_runs_in_parallel() -> None:
    inner = Robot("helper", system_prompt="s", provider=ScriptedProvider(default="an answer"))
    tool = inner.as_tool(name="ask weather!", description="Ask about the weather.")
    assert tool.name == "ask_weather_" and tool.description == "Ask about the weather."
    outer = Robot("boss", system_prompt="s", tools=[tool], provider=ScriptedProvider([
        [ToolCall("ask_weather_", {"message": "Oslo"}), ToolCall("ask_weather_", {"message": "Rome"})], "Both."]))
    events = await collect(outer.stream("Oslo and Rome?"))
    runs = check_tree(events)
    assert len(runs) == 3 and isinstance(events[-1], ev.RunFinished)
    assert [e.payload for e in events if isinstance(e, ev.ToolResult)] == [{"data": "an answer"}] * 2


async def test_a_failing_inner_robot_is_the_calls_error() -> None:
    from workspace.providers.testing import Fail

    inner = helper(Fail("the model is down"))
    outer = boss(ToolCall("helper", {"message": "hi"}), "Sorry.", robots=[inner])
    events = await collect(outer.stream("go"))
    check_tree(events)
    failed = next(e for e in events if isinstance(e, ev.RunFailed))
    assert failed.robot == "helper" and failed.parent_tool_id
    error = next(e for e in events if isinstance(e, ev.ToolError))
    assert "helper" in str(error.error) and "the model is down" in str(error.error)
    assert isinstance(events[-1], ev.RunFinished) and events[-1].robot == "boss"


async def test_stopping_the_outer_run_stops_the_inner_one_first() -> None:
    gate = asyncio.Event()
    inner = helper(["Thinking", Pause(event=gate), " more"])
    outer = boss(ToolCall("helper", {"message": "hi"}), "never", robots=[inner])
    run = outer.stream("go")
    seen: list[ev.Event] = []
    async for event in run:
        seen.append(event)
        if isinstance(event, ev.TextDelta) and event.robot == "helper":
            run.cancel("stopped by the user")
    check_tree(seen)
    inner_end = next(e for e in seen if e.terminal and e.robot == "helper")
    assert isinstance(inner_end, ev.RunCancelled) and inner_end.reason == "stopped by the user"
    assert isinstance(inner_end.partial, type(run.result)) and inner_end.partial.last_text_content == "Thinking"
    assert isinstance(seen[-1], ev.RunCancelled) and seen[-1].robot == "boss"
    stopped = next(e for e in seen if isinstance(e, ev.ToolError))
    assert "stopped" in str(stopped.error)
    assert not inner._active or inner._active.done


async def test_the_inner_robot_asks_the_outer_runs_approval_gate() -> None:
    asked: list[tuple[str, str]] = []

    def policy(request: Any) -> Any:
        asked.append((request.robot, request.tool))
        if request.tool == "delete_everything":
            return ApprovalDecision(approved=False, reason="not today")
        return "allow"

    def delete_everything() -> str:
        """Delete everything."""
        return "deleted"

    inner = Robot("janitor", system_prompt="s", tools=[delete_everything],
                  provider=ScriptedProvider([ToolCall("delete_everything", {}), "I could not."]))
    outer = boss(ToolCall("janitor", {"message": "clean up"}), "Done.", robots=[inner])
    events = await collect(outer.stream("clean", approval=policy))
    check_tree(events)
    assert asked == [("boss", "janitor"), ("janitor", "delete_everything")]
    decided = next(e for e in events if isinstance(e, ev.ApprovalDecided))
    assert decided.robot == "janitor" and decided.decision == "deny" and decided.parent_tool_id


async def test_front_matter_robots_become_tools(robotlab_home: Path) -> None:
    robots = robotlab_home / "config" / "robots"
    robots.mkdir(parents=True, exist_ok=True)
    (robots / "scout.md").write_text("---\ndescription: Finds things\n---\nYou find things.\n", encoding="utf-8")
    (robots / "lead.md").write_text("---\nrobots: [scout]\n---\nYou lead.\n", encoding="utf-8")
    from workspace.catalog import load_robot

    lead = load_robot("lead", provider=ScriptedProvider([ToolCall("scout", {"message": "find the key"}), "Found."]))
    assert lead.robots == ["scout"]
    events = await collect(lead.stream("go"))
    runs = check_tree(events)
    assert len(runs) == 2
    inner_started = next(e for e in events if isinstance(e, ev.RunStarted) and e.robot == "scout")
    assert inner_started.is_language_model is False  # the scout has no model configured: the offline demo
    from workspace.robots_as_tools import named_robot_tools

    with pytest.raises(Exception, match="cannot be its own tool"):
        named_robot_tools(Robot("loop", system_prompt="s", robots=["loop"], provider=ScriptedProvider(["x"])))


# -- the store, the exports, the terminal ------------------------------------------------------------
async def test_the_store_keeps_one_tree_and_the_exports_show_it(tmp_path: Path) -> None:
    inner = helper("It is sunny in Oslo.")
    outer = boss(["Asking. ", ToolCall("helper", {"message": "Weather in Oslo?"}, id="c1")], "Oslo is sunny.",
                 robots=[inner])
    ws = Workspace(db_path=tmp_path / "w.db", provider=outer.provider)
    try:
        session = ws.new_thread("boss", robot=outer)
        recorded = session.send("What about Oslo?")
        live = [e async for e in recorded]
        await recorded.wait()
        assert recorded.status == "finished" and isinstance(live[-1], ev.RunFinished) and live[-1].robot == "boss"
        stored = ws.store.turn_events(recorded.turn_id)
        runs = check_tree(stored)
        assert len(runs) == 2
        turn = ws.store.get_turn(recorded.turn_id)
        assert turn.status == "finished" and turn.run_id == recorded.run_id
        thread = ws.store.get_thread(session.thread_id)
        assert thread.model == outer.provider.label
        # The turn's usage counts every model call once, the inner robot's too.
        assert thread.input_tokens + thread.output_tokens == recorded.result.usage.total_tokens
        # The outer conversation is rebuilt without the inner robot's messages.
        history = ws.store.history_messages(session.thread_id)
        assert [m.role for m in history] == ["user", "assistant", "assistant", "tool_result", "assistant"]
        jsonl = [json.loads(line) for line in export_events_jsonl(ws.store, session.thread_id).splitlines()]
        nested = [e for e in jsonl if e.get("parent_run_id")]
        assert nested and all(e["parent_tool_id"] == "c1" and e["robot"] == "helper" for e in nested)
        assert all("parent_run_id" not in e for e in jsonl if e["robot"] == "boss")
        markdown = export_markdown(ws.store, session.thread_id)
        assert "> ### helper" in markdown and "> It is sunny in Oslo." in markdown
        assert "> *`helper` runs as the tool call `c1`*" in markdown
        assert "### boss" in markdown and "\nOslo is sunny." in markdown
    finally:
        await ws.aclose()


async def test_the_terminal_indents_the_inner_run() -> None:
    inner = helper("It is sunny.")
    outer = boss(ToolCall("helper", {"message": "Weather?"}), "Sunny.", robots=[inner])
    out = io.StringIO()
    printer = EventPrinter(out)
    plain_out, plain_err = io.StringIO(), io.StringIO()
    plain = PlainPrinter(plain_out, plain_err)
    for event in await collect(outer.stream("go")):
        printer(event)
        plain(event)
    printer.finish()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("● boss")
    assert lines[1].startswith("→ helper")
    assert lines[2].startswith("    ↳ helper")
    assert lines[3] == "    It is sunny."
    assert lines[4].startswith("    ✓ helper done")
    assert lines[5].startswith("← helper")
    assert lines[-1].startswith("✓ done")
    assert plain_out.getvalue() == "Sunny.\n"
