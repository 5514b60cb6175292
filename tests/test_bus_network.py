"""A network's robots on one message bus: ``send_message`` for models, ``bus_message`` events in the network's
stream (the sender's task run carries it), a robot that answers messages, the JSON and the terminal's line."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from workspace import Network, Robot
from workspace import events as ev
from workspace.cli.render import EventPrinter
from workspace.providers.testing import ScriptedProvider, ToolCall


def robot(name: str, *replies: Any) -> Robot:
    return Robot(name, system_prompt=f"You are {name}.", provider=ScriptedProvider(list(replies)),
                 knowledge_store=False, tools="none", mcp="none")


def chat_network() -> tuple[Network, Robot]:
    alice = robot("alice", [ToolCall("send_message", {"to": "bob", "content": "What is 2 + 2?"}, id="s1")],
                  "Bob says 4.")
    bob = robot("bob", "4")
    network = Network("pair").with_bus(serve=[bob])
    network.task("ask", alice)
    return network, bob


async def run_events(network: Network, message: str) -> list[ev.Event]:
    return [event async for event in network.stream(message)]


async def test_a_question_and_its_reply_are_bus_messages_in_the_senders_task() -> None:
    network, _ = chat_network()
    events = await run_events(network, "Ask bob")
    messages = [e for e in events if isinstance(e, ev.BusMessage)]
    assert [(m.sender, m.to, m.content, m.in_reply_to) for m in messages] == [
        ("alice", "bob", "What is 2 + 2?", None), ("bob", "alice", "4", "alice:1")]
    question, reply = messages
    assert question.message_id == "alice:1" and reply.message_id == "bob:1"
    assert question.task == "ask" and question.robot == "alice"  # in alice's task run, with its tool calls
    served = [e for e in events if e.robot == "bob" and not isinstance(e, ev.BusMessage)]
    assert served and {e.parent_tool_id for e in served} == {"s1"}  # bob's answer runs inside alice's call
    assert isinstance(served[0], ev.RunStarted) and served[0].message == "What is 2 + 2?"
    assert isinstance(served[-1], ev.RunFinished)
    result = next(e for e in events if isinstance(e, ev.ToolResult) and e.name == "send_message")
    assert "4" in json.dumps(result.payload)  # the model got bob's reply as the tool's result
    assert isinstance(events[-1], ev.RunFinished)
    assert events[-1].result is not None
    assert events[-1].result.results["ask"].last_text_content == "Bob says 4."


async def test_the_json_shape_and_the_terminal_line() -> None:
    network, _ = chat_network()
    events = await run_events(network, "Ask bob")
    question = next(e for e in events if isinstance(e, ev.BusMessage))
    data = json.loads(ev.to_json(question))
    assert {k: data[k] for k in ("kind", "sender", "to", "content", "message_id", "in_reply_to")} == {
        "kind": "bus_message", "sender": "alice", "to": "bob", "content": "What is 2 + 2?",
        "message_id": "alice:1", "in_reply_to": None}
    assert ev.event_from_json(ev.to_json(question)) == question
    out = io.StringIO()
    printer = EventPrinter(out)
    for event in events:
        printer(event)
    printer.finish()
    assert "alice → bob: What is 2 + 2?" in out.getvalue()
    assert "bob → alice: 4" in out.getvalue()


async def test_sending_to_a_robot_not_on_the_bus_names_the_ones_that_are() -> None:
    alice = robot("alice", [ToolCall("send_message", {"to": "carol", "content": "hi"}, id="s1")], "ok")
    network = Network("pair").with_bus(serve=[robot("bob", "4")])
    network.task("ask", alice)
    events = await run_events(network, "go")
    error = next(e for e in events if isinstance(e, ev.ToolError) and e.name == "send_message")
    assert "No robot named 'carol'" in json.dumps(error.error) and "bob" in json.dumps(error.error)
    assert not [e for e in events if isinstance(e, ev.BusMessage)]


async def test_a_robot_that_does_not_answer_is_said_to_have_received_it() -> None:
    alice = robot("alice", [ToolCall("send_message", {"to": "bob", "content": "FYI"}, id="s1")], "ok")
    bob = robot("bob")
    network = Network("pair").with_bus()
    network.task("ask", alice)
    network.task("listen", bob, depends_on=["ask"])
    bob_seen: list[str] = []
    bob.on_message(lambda message: bob_seen.append(str(message.content)))
    events = await run_events(network, "go")
    result = next(e for e in events if isinstance(e, ev.ToolResult) and e.name == "send_message")
    assert "bob received it and sent no reply" in json.dumps(result.payload)
    assert bob_seen == ["FYI"]


def test_a_bad_reply_timeout_names_the_fix() -> None:
    with pytest.raises(ValueError, match="reply_timeout must be a positive number"):
        Network("pair").with_bus(reply_timeout=0)


async def test_only_robots_on_the_networks_bus_get_the_message_tool() -> None:
    network, _ = chat_network()
    alice = network.tasks["ask"].robot
    await network.arun("Ask bob")
    assert "send_message" in alice.provider.history[0].tool_names  # type: ignore[attr-defined]
    plain = Network("plain")
    solo = robot("solo", "done")
    plain.task("one", solo)
    await plain.arun("go")
    assert "send_message" not in solo.provider.history[0].tool_names  # type: ignore[attr-defined]


async def test_the_answering_robots_usage_counts_in_the_asking_tasks_totals() -> None:
    network, bob = chat_network()
    events = await run_events(network, "Ask bob")
    own = sum(e.input_tokens + e.output_tokens for e in events if isinstance(e, ev.Usage) and e.robot == "alice")
    assert [m.content for m in bob.history if m.role == "assistant"] == ["4"]  # bob's served run
    final = events[-1]
    assert isinstance(final, ev.RunFinished) and final.result is not None
    ask = final.result.results["ask"]
    assert own > 0 and ask.usage.total_tokens > own  # bob's tokens are in alice's task's totals
    assert final.result.usage.total_tokens == ask.usage.total_tokens


async def test_a_robot_that_fails_to_answer_is_said_to_have_failed() -> None:
    from workspace.providers.testing import Fail

    alice = robot("alice", [ToolCall("send_message", {"to": "bob", "content": "2 + 2?"}, id="s1")], "ok")
    network = Network("pair").with_bus(serve=[robot("bob", [Fail("the model is down")])])
    network.task("ask", alice)
    events = await run_events(network, "go")
    result = next(e for e in events if isinstance(e, ev.ToolResult) and e.name == "send_message")
    assert "bob failed to answer it: " in json.dumps(result.payload) and "the model is down" in json.dumps(result.payload)
    assert isinstance(events[-1], ev.RunFinished)  # the sender's network goes on
