"""A run's model call waits for the first token in the run's own task: a slow first token is said by a timer
(``workspace.providers.base.status_sink``) instead of a task per call that waits for the stream's first output.
The slow-start status still comes while the wait lasts, before the answer, once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from workspace import events as ev
from workspace.providers.openai_provider import OpenAICompatibleProvider
from workspace.robot import Robot


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


def make(server: FakeLLMServer, **options: Any) -> OpenAICompatibleProvider:
    options.setdefault("timeout", 20.0)
    return OpenAICompatibleProvider("openai/fake", api_base=server.base_url + "/v1", api_key="sk-test", **options)


async def run_events(robot: Robot, text: str) -> list[ev.Event]:
    async with asyncio.timeout(60):  # bounds a hang only
        return [event async for event in robot.stream(text)]


async def test_a_run_s_model_calls_make_no_task_to_wait_for_the_first_token(server: FakeLLMServer) -> None:
    server.enqueue(Reply.say("warm"), Reply.say("one two three"), Reply.say("four five six"))
    robot = Robot("bot", system_prompt="You help.", provider=make(server))
    await run_events(robot, "warm up")  # the SDK loaded and the connection open
    loop = asyncio.get_running_loop()
    made: list[str] = []
    previous = loop.get_task_factory()

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        made.append(getattr(coro, "__qualname__", type(coro).__name__))
        return asyncio.Task(coro, loop=loop, **kwargs)

    loop.set_task_factory(factory)  # type: ignore[arg-type]
    try:
        events = await run_events(robot, "count")
        events += await run_events(robot, "count on")
    finally:
        loop.set_task_factory(previous)
    text = "".join(e.text for e in events if isinstance(e, ev.TextDelta))
    assert text == "one two threefour five six"
    states = [e.state for e in events if isinstance(e, ev.RunStatus)]
    assert states.count("waiting") == 2 and states.count("streaming") == 2, states  # the statuses as before
    # On main, each call made a task (_until_output) to wait for its first output in.
    assert "_until_output" not in made, made


async def test_a_slow_first_token_is_said_while_the_run_waits(server: FakeLLMServer) -> None:
    server.enqueue(Reply.say("warm"), Reply.say("late answer", stall_after=1, stall_seconds=1.0))
    robot = Robot("bot", system_prompt="You help.", provider=make(server, slow_notice=0.2, first_token_timeout=20))
    await run_events(robot, "warm up")
    events = await run_events(robot, "answer late")
    first_text = next(i for i, e in enumerate(events) if isinstance(e, ev.TextDelta))
    slow = [e for e in events[:first_text] if isinstance(e, ev.RunStatus) and "no token yet" in e.detail]
    assert len(slow) == 1, [type(e).__name__ for e in events]
    assert slow[0].state == "loading" and "llm.first_token_timeout" in slow[0].detail  # a local server
    assert "".join(e.text for e in events if isinstance(e, ev.TextDelta)) == "late answer"
    assert len([e for e in events if isinstance(e, ev.RunStatus) and "no token yet" in e.detail]) == 1


async def test_a_first_token_later_than_its_limit_still_fails_the_run_clearly(server: FakeLLMServer) -> None:
    server.enqueue(Reply.say("warm"), Reply.say("late", stall_after=1, stall_seconds=30))
    robot = Robot("bot", system_prompt="You help.",
                  provider=make(server, slow_notice=0.2, first_token_timeout=1.5, max_retries=0))
    await run_events(robot, "warm up")
    events = await run_events(robot, "too late")
    failed = [e for e in events if isinstance(e, ev.RunFailed)]
    assert len(failed) == 1 and "within 1.5 s (timeout, llm.first_token_timeout)" in failed[0].error, failed
    assert len([e for e in events if isinstance(e, ev.RunStatus) and "no token yet" in e.detail]) == 1
