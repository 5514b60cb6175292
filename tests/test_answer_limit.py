"""An answer that streams past ``llm.max_answer_chars`` (its text and its thinking) is stopped: a server that streams
and never ends took the app's memory until it failed (an audit: 538 MiB to 2.2 GiB in 25 s, then MemoryError). Real
loopback server; the limit made small."""

from __future__ import annotations

from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from workspace import events as ev
from workspace.config import load_config
from workspace.providers import provider_for
from workspace.robot import Robot

pytestmark = pytest.mark.timeout(120)  # bounds a hang only


async def events_of(provider: Any, message: str) -> list[ev.Event]:
    robot = Robot("bot", system_prompt="You answer.", tools=[], provider=provider)
    return [event async for event in robot.stream(message)]


async def test_an_answer_past_the_limit_is_stopped_with_the_setting_named() -> None:
    with FakeLLMServer(reply_fn=lambda body: Reply.say("word " * 6_000)) as server:  # 30,000 characters
        config = load_config(env={}, overrides={"llm": {"max_answer_chars": 5_000}})
        provider = provider_for("openai/fake", api_base=f"{server.base_url}/v1", api_key="sk-test", config=config)
        assert provider.max_answer_chars == 5_000  # type: ignore[attr-defined]
        events = await events_of(provider, "talk")
    failed = [e for e in events if isinstance(e, ev.RunFailed)]
    assert len(failed) == 1, [e.kind for e in events]
    assert "passed 5,000 characters without ending" in failed[0].error
    assert "llm.max_answer_chars" in failed[0].error
    streamed = "".join(e.text for e in events if isinstance(e, ev.TextDelta))
    assert 0 < len(streamed) <= 5_000


async def test_thinking_counts_and_an_answer_within_the_limit_finishes() -> None:
    thinking = "<think>" + "hmm " * 2_000 + "</think>"  # 8,000 characters of thinking
    with FakeLLMServer(reply_fn=lambda body: Reply.say(thinking + "Short answer.")) as server:
        provider = provider_for("openai/fake", api_base=f"{server.base_url}/v1", api_key="sk-test")
        provider.max_answer_chars = 5_000  # type: ignore[attr-defined]
        stopped = await events_of(provider, "think")
        provider.max_answer_chars = 20_000  # type: ignore[attr-defined]
        finished = await events_of(provider, "think")
    assert any(isinstance(e, ev.RunFailed) and "5,000 characters" in e.error for e in stopped)
    assert isinstance(finished[-1], ev.RunFinished)
    assert "".join(e.text for e in finished if isinstance(e, ev.TextDelta)).endswith("Short answer.")


async def test_a_tool_calls_arguments_count_too() -> None:
    """A tool call whose arguments never end filled the memory as text did (a review's finding)."""
    with FakeLLMServer(reply_fn=lambda body: Reply.tool("get_weather", {"city": "x" * 60_000})) as server:
        provider = provider_for("openai/fake", api_base=f"{server.base_url}/v1", api_key="sk-test")
        provider.max_answer_chars = 5_000  # type: ignore[attr-defined]
        events = await events_of(provider, "weather")
    failed = [e for e in events if isinstance(e, ev.RunFailed)]
    assert len(failed) == 1 and "passed 5,000 characters without ending" in failed[0].error, [e.kind for e in events]
    assert not any(isinstance(e, ev.ToolUse) for e in events)
