"""Hooks and the tool loop's guards (RobotLab 0.2.6's hooks guide and example 20).

An audit hook registered globally times every run and counts the tool calls; a robot's cache hook
answers a question it has seen without asking the model; a per-run hook keeps a tool from running
(a dry run). The same robot then loops on one tool: the doom-loop detector warns the model, and
``max_tool_rounds`` stops the run with ``ToolLoopError``. Runs offline (a scripted model). For a real
model, give the robots ``model="..."`` instead of ``provider=...``.

    python examples/hooks.py
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import workspace
from workspace import Hook, Robot, ToolLoopError, tool
from workspace.providers.testing import ScriptedProvider, ToolCall


@tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"Sunny in {city}, 21 °C"


class Audit(Hook):
    """Global: each run's tool calls as they happen, and how many a run made."""

    @classmethod
    def before_run(cls, ctx: Any) -> None:
        ctx.local.question = ctx.request  # ctx.local: this handler's own state in this run's context

    @classmethod
    def before_tool_call(cls, ctx: Any) -> None:
        print(f"audit: {ctx.robot.name} calls {ctx.tool_name}({ctx.tool_args})")

    @classmethod
    def after_run(cls, ctx: Any) -> None:
        print(f"audit: {ctx.robot.name} answered {ctx.local.question!r} with {len(ctx.response.tool_calls)} "
              "tool call(s)")


class Cache(Hook):
    """A robot's: the same question again is answered from the cache (the model is not asked)."""

    answers: ClassVar[dict[str, Any]] = {}

    @classmethod
    async def around_run(cls, ctx: Any, call_next: Any) -> Any:
        if ctx.request in cls.answers:
            print(f"cache: hit for {ctx.request!r}")
            return cls.answers[ctx.request]
        result = await call_next()
        cls.answers[ctx.request] = result
        return result


class DryRun(Hook):
    """One run's: tools are not run; the model is told what would have happened."""

    @classmethod
    async def around_tool_call(cls, ctx: Any, call_next: Any) -> Any:
        ctx.tool_result = f"(dry run: {ctx.tool_name} was not called)"


async def main() -> None:
    workspace.on(Audit)
    model = ScriptedProvider([
        [ToolCall("weather", {"city": "Lisbon"})], "Sunny, 21 °C in Lisbon.",  # the first question
        [ToolCall("weather", {"city": "Oslo"})], "I could not check Oslo.",  # the dry run
    ])
    robot = Robot("forecaster", system_prompt="You answer weather questions.", provider=model,
                  tools=[weather], mcp="none").on(Cache)

    first = await robot.arun("Weather in Lisbon?")
    print(f"reply: {first.last_text_content}")
    again = await robot.arun("Weather in Lisbon?")
    print(f"reply: {again.last_text_content} (model calls so far: {len(model.history)})")
    dry = await robot.arun("Weather in Oslo?", hooks=[DryRun])
    print(f"dry run: the model saw {dry.tool_calls[0].content['data']!r}")

    looping = ScriptedProvider(default=[ToolCall("weather", {"city": "Lisbon"})])  # never stops calling
    stuck = Robot("stuck", system_prompt="You answer weather questions.", provider=looping, tools=[weather],
                  mcp="none", max_tool_rounds=4)
    try:
        await stuck.arun("Weather in Lisbon?")
    except ToolLoopError as exc:
        print(f"stopped: {exc}")
    warned = [m.content["data"] for m in stuck.history if getattr(m, "type", "") == "tool_result"
              and "data" in m.content]
    print(f"warned: {warned[2].split('⚠️ ')[1][:60]}")
    workspace.clear_hooks()


if __name__ == "__main__":
    asyncio.run(main())
