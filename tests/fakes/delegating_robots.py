"""Robots that delegate work in the background, scripted, in one process: ``manager`` starting ``summarizer`` and
collecting its summary (the events of a nested run), and ``manager`` starting ``helper`` on a loopback server whose
model takes its time (the scene of the tests of stopping delegated work), with what those tests check it with."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from fakes.bus_robots import robot
from fakes.llm_server import FakeLLMServer
from workspace import DelegationFuture, Robot
from workspace import events as ev
from workspace.providers.testing import Pause, ScriptedProvider, ToolCall
from workspace.tools.base import Tool

# Bounds a hang only; no test measures time.
HANG = 30.0


def background_pair() -> tuple[Robot, Robot]:
    """manager starts summarizer in the background (start_summary), then collects it (collect_summary)."""
    summarizer = Robot("summarizer", system_prompt="You summarise.", knowledge_store=False,
                       provider=ScriptedProvider(["Revenue grew 18%."]))
    futures: list[DelegationFuture] = []

    async def start(arguments: dict[str, Any]) -> str:
        futures.append(await manager.delegate(to=summarizer, task=str(arguments["text"]), background=True))
        return "started"

    async def collect(arguments: dict[str, Any]) -> str:
        result = await futures[0].value(timeout=HANG)
        return str(result.last_text_content)

    manager = Robot("manager", system_prompt="You manage.", knowledge_store=False, local_tools=[
        Tool("start_summary", "Start a summary in the background", {"type": "object", "properties": {
            "text": {"type": "string"}}, "required": ["text"]}, start),
        Tool("collect_summary", "Wait for the summary", {"type": "object", "properties": {}}, collect),
    ], provider=ScriptedProvider([[ToolCall("start_summary", {"text": "Q4: revenue up 18%"}, id="c1")],
                                  [ToolCall("collect_summary", {}, id="c2")], "The summary: revenue grew 18%."]))
    return manager, summarizer


async def background_events() -> list[ev.Event]:
    """The events of :func:`background_pair`'s manager asked to summarise Q4."""
    manager, _ = background_pair()
    return [e async for e in manager.stream("Summarise Q4")]


def manager_and_helper(server: FakeLLMServer, *, hold: asyncio.Event | None = None) -> tuple[Robot, list[Any]]:
    """``manager`` (a scripted model) whose tool ``start`` delegates to ``helper`` (on ``server``) in the background;
    its model's second answer waits for ``hold`` when given (the run goes on while the delegate works)."""
    helper = robot("helper", server, "You help.")
    futures: list[Any] = []

    async def start(arguments: dict[str, Any]) -> str:
        futures.append(await manager.delegate(to=helper, task="work slowly", background=True))
        return "started"

    second: list[Any] = [Pause(event=hold), "Started it."] if hold is not None else ["Started it."]
    manager = Robot("manager", system_prompt="You manage.", knowledge_store=False,
                    local_tools=[Tool("start", "Start the helper", {"type": "object", "properties": {}}, start)],
                    provider=ScriptedProvider([[ToolCall("start", {}, id="c1")], second]))
    return manager, futures


async def until(predicate: Any, what: str) -> None:
    """Poll ``predicate`` until it is true; past :data:`HANG` fail naming ``what``."""
    for _ in range(int(HANG / 0.05)):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def assert_stopped(server: FakeLLMServer, future: Any) -> None:
    """The delegation ended cancelled, its model request was cut off and nothing more was asked."""
    await until(future.done, "the delegation to stop")
    with pytest.raises(asyncio.CancelledError):
        await future.value(timeout=HANG)
    await until(lambda: server.disconnects >= 1, "the delegate's request to be cut off")
    await asyncio.sleep(0.3)
    assert len(server.requests) == 1
