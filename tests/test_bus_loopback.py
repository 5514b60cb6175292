"""Robots that talk over a real HTTP model: the loopback OpenAI-compatible server answers a spawned child
serving tasks on the bus, and two delegations running at once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer

from workspace import MessageBus, Robot, RobotMessage
from workspace.config import load_config

# Bounds a hang only; no test measures time.
HANG = 30.0


def system_and_question(body: dict[str, Any]) -> tuple[str, str]:
    messages = body["messages"]
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    return str(system), str(messages[-1]["content"])


def answer(body: dict[str, Any]) -> str:
    system, question = system_and_question(body)
    return f"[{system.split('.')[0]}] {question.upper()}"


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(reply_fn=answer) as srv:
        yield srv


def robot(name: str, server: FakeLLMServer, prompt: str) -> Robot:
    return Robot(name, system_prompt=prompt, model="openai/fake", api_base=server.base_url + "/v1",
                 config=load_config(env={}, overrides={"llm": {"max_retries": 1}}))


async def test_a_spawned_child_serves_tasks_through_its_parents_model(server: FakeLLMServer) -> None:
    parent = robot("dispatcher", server, "You dispatch.")
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
    assert [system_and_question(body) for body in server.requests] == [
        ("You translate.", "bonjour"), ("You translate.", "merci")]
    assert all(body["model"] == "fake" for body in server.requests)


async def test_two_background_delegations_over_http(server: FakeLLMServer) -> None:
    manager = robot("manager", server, "You manage.")
    summarizer = robot("summarizer", server, "You summarize.")
    analyst = robot("analyst", server, "You analyse.")
    futures = [await manager.delegate(to=summarizer, task="sum it", background=True),
               await manager.delegate(to=analyst, task="find the metric", background=True)]
    results = await asyncio.gather(*(f.value(timeout=HANG) for f in futures))
    assert [(r.robot_name, r.last_text_content, r.delegated_by) for r in results] == [
        ("summarizer", "[You summarize] SUM IT", "manager"), ("analyst", "[You analyse] FIND THE METRIC", "manager")]
    assert all(f.done() for f in futures)
    assert sorted(system_and_question(b) for b in server.requests) == [("You analyse.", "find the metric"),
                                                                       ("You summarize.", "sum it")]
