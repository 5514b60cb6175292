"""The agent loop's work per run and per model call, counted: what a turn does once is not done again."""

from __future__ import annotations

from typing import Any

import pytest

from workspace.agent import turn
from workspace.providers.testing import ScriptedProvider, ToolCall
from workspace.robot import Robot
from workspace.tools import tool


@tool
def get_weather(city: str) -> dict[str, str]:
    """Current weather for a city."""
    return {"city": city, "sky": "sunny"}


class _Model(ScriptedProvider):
    """A scripted model that counts as a language model (its answers are read for calls written as text)."""

    is_language_model = True


async def test_a_prose_answer_is_not_searched_for_calls_written_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    searched: list[str] = []
    real = turn.find_text_calls

    def counting(text: str, *args: Any, **kwargs: Any) -> Any:
        searched.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(turn, "find_text_calls", counting)
    model = _Model([[ToolCall("get_weather", {"city": "Oslo"})], "It is sunny in Oslo today, twenty degrees."])
    robot = Robot("bot", system_prompt="You help.", tools=[get_weather], provider=model)
    result = await robot.arun("Weather in Oslo?")
    assert str(result.last_text_content).startswith("It is sunny")
    assert searched == []  # no tag, marker, JSON or fence in it: nothing to look for
    # An answer with a call written as text is still searched, and the call run.
    model.enqueue('<tool_call>{"name": "get_weather", "arguments": {"city": "Bergen"}}</tool_call>', "Rain.")
    result = await robot.arun("And in Bergen?")
    assert len(searched) == 1 and [c.tool.input for c in result.tool_calls] == [{"city": "Bergen"}]

