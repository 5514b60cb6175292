"""What each tool's schema costs in tokens: one core function, the context manager's counter,
the context meter's figures, and tight built-in descriptions."""

from __future__ import annotations

from typing import Any

from workspace import events as ev
from workspace.context import TokenCounter, biggest_tools, tool_costs
from workspace.robot import Robot
from workspace.tools import registry, tool


@tool
def tiny(x: int) -> int:
    """Echo."""
    return x


@tool
def wordy(query: str, limit: int | None = None) -> str:
    """A tool with a long description that goes on and on, explaining everything it does in great detail,
    which every request then pays for in the model's window before the user says anything at all.

    Args:
        query: what to look for, in as many words as the author felt like writing down here
        limit: how many results at most
    """
    return query


def test_each_tools_cost_costliest_first_with_the_managers_counter() -> None:
    counter = TokenCounter()
    costs = tool_costs([tiny, wordy], counter)
    assert list(costs) == ["wordy", "tiny"]
    assert costs["wordy"] > costs["tiny"] > 0
    assert sum(costs.values()) == counter.tools([tiny.spec(), wordy.spec()])  # what a request's schemas count
    assert tool_costs([tiny.spec()]) == {"tiny": costs["tiny"]}  # specs too, and the estimate by default
    assert biggest_tools([tiny, wordy], count=1) == {"wordy": costs["wordy"]}
    doubled = TokenCounter(lambda text: 2 * len(text.split()))
    assert tool_costs([tiny], doubled) != tool_costs([tiny], counter)  # the model's tokenizer when it has one


def test_optional_parameters_are_compact_and_still_validated() -> None:
    schema: Any = wordy.parameters
    assert schema["properties"]["limit"] == {"description": "how many results at most", "type": ["integer", "null"]}
    assert wordy.validate({"query": "a", "limit": None}) == [] and wordy.validate({"query": "a"}) == []
    assert wordy.validate({"query": "a", "limit": "x"})


def test_built_in_descriptions_stay_tight() -> None:
    costs = tool_costs(registry.builtin_tools())
    files = ["read_file", "list_files", "search_files", "write_file", "edit_file", "apply_patch", "create_file",
             "delete_file", "rename_file"]
    # file-helper's nine tools: 2,053 estimated tokens before (50 % of a 4,096-token window), now under 1,600.
    assert sum(costs[name] for name in files) < 1600
    assert max(costs.values()) < 350


async def test_context_usage_names_the_costliest_tools() -> None:
    from workspace.providers.testing import ScriptedProvider

    provider = ScriptedProvider()
    provider.enqueue("done")
    robot = Robot("r", system_prompt="Hi.", tools=[tiny, wordy], provider=provider, context_window=4096)
    events = [e async for e in robot.stream("go")]
    usage = next(e for e in events if isinstance(e, ev.ContextUsage))
    assert list(usage.biggest_tools) == ["wordy", "tiny"]
    assert sum(usage.biggest_tools.values()) == usage.tools_tokens
