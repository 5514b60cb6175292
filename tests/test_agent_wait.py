"""``AgentRun.wait()`` without a consumer (``Robot.arun``): the run's events are not queued for anyone,
yet the result, the terminal event, observers and stopping behave as when the events are iterated."""

from __future__ import annotations

import asyncio

import pytest

from workspace import events as ev
from workspace.providers.testing import Pause, ScriptedProvider, ToolCall
from workspace.robot import Robot
from workspace.tools import tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def scripted(*replies: object) -> ScriptedProvider:
    return ScriptedProvider(list(replies))  # type: ignore[arg-type]


async def test_wait_gives_the_same_result_and_terminal_as_iterating() -> None:
    script = [["Adding. ", ToolCall("add", {"a": 2, "b": 3})], "It is 5."]
    iterated = Robot("bot", system_prompt="You help.", tools=[add], provider=scripted(*script)).stream("sum")
    events = [e async for e in iterated]
    waited = Robot("bot", system_prompt="You help.", tools=[add], provider=scripted(*script)).stream("sum")
    terminal = await waited.wait()
    assert isinstance(terminal, ev.RunFinished) and terminal is waited.terminal
    assert terminal.seq == events[-1].seq  # the same events were emitted, in the same numbering
    assert waited.result is not None and iterated.result is not None
    assert waited.result.last_text_content == iterated.result.last_text_content == "It is 5."
    assert [r.content for r in waited.result.tool_calls] == [r.content for r in iterated.result.tool_calls]
    assert waited._queue.empty()  # nothing was kept for a consumer that does not exist
    with pytest.raises(RuntimeError, match="iterated only once"):
        [e async for e in waited]


async def test_an_observer_sees_every_event_in_order_when_the_run_is_only_waited_for() -> None:
    gate = asyncio.Event()
    run = Robot("bot", system_prompt="You help.", provider=scripted(["Hello ", Pause(event=gate), "world."])).stream("hi")
    before: list[ev.Event] = []
    run.add_observer(before.append)  # there before wait(): the events are iterated for it
    waiting = asyncio.create_task(run.wait())
    await asyncio.sleep(0.05)
    late: list[ev.Event] = []
    run.add_observer(late.append)  # added while the run goes on: it sees what comes from now on
    gate.set()
    terminal = await asyncio.wait_for(waiting, 10)
    assert [e.seq for e in before] == list(range(1, len(before) + 1)) and before[-1] is terminal
    assert late and late[-1] is terminal and late[0].seq > 1


async def test_a_late_observer_of_a_waited_run_is_called_on_the_loop_in_order() -> None:
    gate = asyncio.Event()
    run = Robot("bot", system_prompt="You help.", provider=scripted(["Hello ", Pause(event=gate), "world."])).stream("hi")
    waiting = asyncio.create_task(run.wait())
    await asyncio.sleep(0.05)
    seen: list[ev.Event] = []
    run.add_observer(seen.append)
    gate.set()
    terminal = await asyncio.wait_for(waiting, 10)
    assert seen[-1] is terminal and isinstance(terminal, ev.RunFinished)
    assert [e.seq for e in seen] == sorted(e.seq for e in seen)
    assert "".join(e.text for e in seen if isinstance(e, ev.TextDelta)) == "world."


async def test_cancelling_the_waiter_stops_the_run_with_its_terminal_event() -> None:
    gate = asyncio.Event()  # never set: the stream waits until the run is stopped
    robot = Robot("bot", system_prompt="You help.", provider=scripted(["Partial ", Pause(event=gate), "never"]))
    run = robot.stream("talk")
    waiting = asyncio.create_task(run.wait())
    await asyncio.sleep(0.05)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert isinstance(run.terminal, ev.RunCancelled)
    assert run.terminal.reason == "the consumer stopped listening"
    assert run.terminal.partial.last_text_content == "Partial "
    assert robot.history[-1].content == "Partial "
