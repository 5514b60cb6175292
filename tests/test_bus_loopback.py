"""Robots that talk over a real HTTP model: the loopback OpenAI-compatible server answers a spawned child
serving tasks on the bus, and two delegations running at once."""

from __future__ import annotations

import asyncio

from fakes.bus_robots import robot, system_and_question
from fakes.llm_server import FakeLLMServer

from workspace import MessageBus, RobotMessage

# Bounds a hang only; no test measures time.
HANG = 30.0


async def test_a_spawned_child_serves_tasks_through_its_parents_model(bus_server: FakeLLMServer) -> None:
    parent = robot("dispatcher", bus_server, "You dispatch.")
    got: list[RobotMessage] = []
    parent.with_bus(MessageBus()).on_message(got.append)
    child = parent.spawn(name="translator", system_prompt="You translate.")
    child.serve()
    assert child.provider is parent.provider  # the same server, with the parent's rules for keys
    first = parent.send_message(to="translator", content="bonjour")
    second = parent.send_message(to=child, content="merci")
    assert parent.bus is not None
    await parent.bus.drain(timeout=HANG)
    assert [(m.in_reply_to, m.content) for m in got] == [(first.key, "[You translate] BONJOUR"),
                                                         (second.key, "[You translate] MERCI")]
    # Two model calls, one after the other (one message at a time), both with the child's prompt.
    assert [system_and_question(body) for body in bus_server.requests] == [
        ("You translate.", "bonjour"), ("You translate.", "merci")]
    assert all(body["model"] == "fake" for body in bus_server.requests)


async def test_two_background_delegations_over_http(bus_server: FakeLLMServer) -> None:
    manager = robot("manager", bus_server, "You manage.")
    summarizer = robot("summarizer", bus_server, "You summarize.")
    analyst = robot("analyst", bus_server, "You analyse.")
    futures = [await manager.delegate(to=summarizer, task="sum it", background=True),
               await manager.delegate(to=analyst, task="find the metric", background=True)]
    results = await asyncio.gather(*(f.value(timeout=HANG) for f in futures))
    assert [(r.robot_name, r.last_text_content, r.delegated_by) for r in results] == [
        ("summarizer", "[You summarize] SUM IT", "manager"), ("analyst", "[You analyse] FIND THE METRIC", "manager")]
    assert all(f.done() for f in futures)
    assert sorted(system_and_question(b) for b in bus_server.requests) == [("You analyse.", "find the metric"),
                                                                           ("You summarize.", "sum it")]
