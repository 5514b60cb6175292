"""Memory writes proposed for review (``review.memory: ask``) are numbered in the order of the tool calls that made
them, as the model wrote them in its message: two ``remember`` calls of one message run at once and may finish in
either order, and ``/memory keep 1`` must name the same write whichever finishes first."""

from __future__ import annotations

import asyncio
from typing import Any

from fakes.llm_server import FakeLLMServer, Reply

from workspace import Robot
from workspace import events as ev
from workspace.approval import ApprovalRequest


async def test_two_writes_of_one_message_are_proposed_in_the_messages_order_not_as_they_finish() -> None:
    robot: Robot

    async def first_call_waits(request: ApprovalRequest) -> str:
        """The gate lets the second call through at once and holds the first until the second has written."""
        if isinstance(request.input, dict) and request.input.get("key") == "plan":
            async with asyncio.timeout(30):  # bounds a hang, not a time
                while not robot.memory.has("owner"):
                    await asyncio.sleep(0.01)
        return "allow"

    with FakeLLMServer() as server:
        server.enqueue(Reply.tools(("remember", {"key": "plan", "value": "ship friday"}),
                                   ("remember", {"key": "owner", "value": "ana"})))
        server.enqueue("Noted.")
        robot = Robot("keeper", system_prompt="You keep notes.", model="openai/fake",
                      api_base=server.base_url + "/v1", tools=["remember", "recall"], knowledge_store=False,
                      review_memory="ask", approval=first_call_waits)
        events: list[Any] = [e async for e in robot.stream("note the plan")]

    used = [e.input["key"] for e in events if isinstance(e, ev.ToolUse)]
    finished = [e.payload["data"]["key"] for e in events if isinstance(e, ev.ToolResult)]
    assert used == ["plan", "owner"]  # the model's message: plan, then owner ...
    assert finished == ["owner", "plan"]  # ... the calls finished the other way round
    assert isinstance(events[-1], ev.RunFinished)
    pending = robot.pending_memory_writes
    assert [(p.key, p.describe_change()) for p in pending] == [("plan", "unset → ship friday"),
                                                               ("owner", "unset → ana")]
    assert not robot.memory.has("plan") and not robot.memory.has("owner")  # put back until reviewed
    pending[0].accept()
    assert robot.memory.get("plan") == "ship friday" and not robot.memory.has("owner")
