"""Robots that talk: RobotLab's RobotMessage and bus coordination tests, ported, against scripted models."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import FrozenInstanceError
from typing import Any

import pytest

from workspace import BusError, MessageBus, Robot, RobotMessage
from workspace.bus import Delivery
from workspace.providers.testing import FunctionProvider, Pause, ScriptedProvider
from workspace.robot_tools import to_tool

# Every wait below only bounds a hang (a delivery that never comes); none measures time.
HANG = 10.0


def robot(name: str, provider: Any = None, **options: Any) -> Robot:
    return Robot(name, system_prompt=f"You are {name}.", provider=provider or ScriptedProvider(), **options)


# -- RobotMessage (RobotLab's robot_message_test.rb) --------------------------------------------------------
def test_build_makes_a_message_and_its_key() -> None:
    msg = RobotMessage.build(id=3, from_="alice", content="Hello")
    assert (msg.id, msg.from_, msg.content, msg.in_reply_to) == (3, "alice", "Hello", None)
    assert msg.key == "alice:3"
    assert not msg.reply


def test_a_reply_names_what_it_answers() -> None:
    msg = RobotMessage.build(id=2, from_="bob", content="Got it", in_reply_to="alice:1")
    assert msg.in_reply_to == "alice:1"
    assert msg.reply


def test_messages_are_immutable_values() -> None:
    msg = RobotMessage.build(id=1, from_="alice", content="hi")
    with pytest.raises(FrozenInstanceError):
        msg.content = "changed"  # type: ignore[misc]
    assert msg == RobotMessage.build(id=1, from_="alice", content="hi")
    assert msg != RobotMessage.build(id=2, from_="alice", content="hi")


def test_the_wire_form_says_from_and_reads_back() -> None:
    msg = RobotMessage.build(id=1, from_="alice", content={"task": "summarize", "data": [1, 2, 3]})
    wire = msg.to_dict()
    assert wire == {"id": 1, "from": "alice", "content": {"task": "summarize", "data": [1, 2, 3]},
                    "in_reply_to": None}
    assert RobotMessage.from_dict(wire) == msg
    with pytest.raises(ValueError, match="needs 'id', 'from' and 'content'"):
        RobotMessage.from_dict({"id": 1, "content": "x"})


# -- the bus (RobotLab's bus_coordination_test.rb) -------------------------------------------------------------
async def test_a_message_reaches_its_recipient() -> None:
    bus = MessageBus()
    alice, bob = robot("alice").with_bus(bus), robot("bob").with_bus(bus)
    received: list[Any] = []
    bob.on_message(lambda msg: received.append(msg.content))
    sent = alice.send_message(to="bob", content="ping")
    await bus.drain(timeout=HANG)
    assert received == ["ping"]
    assert sent.key == "alice:1" and alice.outbox["alice:1"].status == "sent"


async def test_a_reply_correlates_with_the_message_it_answers() -> None:
    bus = MessageBus()
    alice, bob = robot("alice").with_bus(bus), robot("bob").with_bus(bus)
    alice_received: list[RobotMessage] = []
    alice.on_message(alice_received.append)
    bob.on_message(lambda msg: bob.send_reply(to="alice", content="pong", in_reply_to=msg.key))
    sent = alice.send_message(to=bob, content="ping")
    await bus.drain(timeout=HANG)
    assert [m.content for m in alice_received] == ["pong"]
    assert alice_received[0].in_reply_to == sent.key
    entry = alice.outbox[sent.key]
    assert entry.status == "replied" and entry.replies == alice_received
    assert "bob:1" not in bob.outbox  # a reply is not kept in the sender's outbox


async def test_the_default_handler_asks_no_model() -> None:
    bus = MessageBus()
    alice = robot("alice").with_bus(bus)
    provider = ScriptedProvider()
    robot("bob", provider).with_bus(bus)
    delivery = bus.publish("bob", RobotMessage.build(id=1, from_="alice", content="hello"))
    alice.send_message(to="bob", content="hello again")
    await bus.drain(timeout=HANG)
    assert provider.history == []
    assert delivery.status == "acked"


async def test_without_a_bus_or_a_recipient_the_error_says_what_to_do() -> None:
    alice = robot("alice")
    assert alice.bus is None
    with pytest.raises(BusError, match=r"No bus configured on robot 'alice'.*with_bus"):
        alice.send_message(to="bob", content="hi")
    alice.with_bus()
    with pytest.raises(BusError, match=r"No robot named 'bob' is on this bus \(on it: alice\)"):
        alice.send_message(to="bob", content="hi")


async def test_with_bus_returns_the_robot_moves_it_and_keeps_a_bus() -> None:
    first, second = MessageBus(), MessageBus()
    alice = robot("alice")
    assert alice.with_bus(first) is alice and alice.bus is first
    assert alice.with_bus() is alice and alice.bus is first  # keeps its bus
    alice.with_bus(second)
    assert alice.bus is second
    assert first.channels == [] and second.channels == ["alice"]


async def test_deliveries_to_one_robot_come_one_at_a_time_and_the_sender_does_not_wait() -> None:
    bus = MessageBus()
    alice, bob = robot("alice").with_bus(bus), robot("bob").with_bus(bus)
    gate = asyncio.Event()
    active: list[int] = []
    overlap: list[int] = []
    order: list[Any] = []

    async def slow(msg: RobotMessage) -> None:
        active.append(1)
        if len(active) > 1:
            overlap.append(len(active))
        await gate.wait()
        order.append(msg.content)
        active.pop()

    bob.on_message(slow)
    for n in range(5):
        alice.send_message(to="bob", content=n)  # type: ignore[arg-type]
    # All five were sent while the first is still being handled: sending did not wait for bob.
    assert bus.busy and order == []
    gate.set()
    await bus.drain(timeout=HANG)
    assert order == [0, 1, 2, 3, 4]
    assert overlap == []


async def test_a_failing_handler_is_logged_never_reaches_the_sender_and_the_next_message_comes(
        caplog: pytest.LogCaptureFixture) -> None:
    bus = MessageBus()
    alice, bob = robot("alice").with_bus(bus), robot("bob").with_bus(bus)
    seen: list[Any] = []

    def broken(msg: RobotMessage) -> None:
        seen.append(msg.content)
        raise RuntimeError("disk full")

    bob.on_message(broken)
    with caplog.at_level(logging.WARNING, logger="workspace.bus"):
        alice.send_message(to="bob", content="one")
        alice.send_message(to="bob", content="two")
        await bus.drain(timeout=HANG)
    assert seen == ["one", "two"]
    # Acknowledged before the call (RobotLab's automatic mode), so a failure does not refuse it.
    assert bus.dead_letters == []
    assert caplog.text.count("Error handling bus message on robot 'bob': disk full") == 2


async def test_a_handler_of_two_parameters_acknowledges_itself() -> None:
    bus = MessageBus()
    alice, bob = robot("alice").with_bus(bus), robot("bob").with_bus(bus)
    seen: list[Delivery] = []

    def manual(delivery: Delivery, message: RobotMessage) -> None:
        seen.append(delivery)
        assert delivery.pending  # not acknowledged for it
        if message.content == "bad":
            delivery.nack()
        elif message.content == "good":
            delivery.ack()

    bob.on_message(manual)
    for content in ("good", "bad", "ignored"):
        alice.send_message(to="bob", content=content)
    await bus.drain(timeout=HANG)
    assert [d.status for d in seen] == ["acked", "nacked", "pending"]
    assert bus.dead_letters == [seen[1]]


async def test_on_message_works_as_a_decorator() -> None:
    bus = MessageBus()
    alice, bob = robot("alice").with_bus(bus), robot("bob").with_bus(bus)
    got: list[Any] = []

    @bob.on_message()
    async def handle(message: RobotMessage) -> None:
        got.append(message.from_)

    alice.send_message(to="bob", content="hi")
    await bus.drain(timeout=HANG)
    assert got == ["alice"]


async def test_respond_to_tasks_answers_tasks_not_replies() -> None:
    bus = MessageBus()
    alice, bob = robot("alice").with_bus(bus), robot("bob").with_bus(bus)
    asked: list[Any] = []

    def upper(message: RobotMessage) -> str | None:
        asked.append(message.content)
        return None if message.content == "quiet" else str(message.content).upper()

    bob.respond_to_tasks(upper)
    first = alice.send_message(to="bob", content="shout")
    second = alice.send_message(to="bob", content="quiet")
    bus.publish("bob", RobotMessage.build(id=9, from_="alice", content="a reply", in_reply_to="bob:1"))
    await bus.drain(timeout=HANG)
    assert asked == ["shout", "quiet"]  # the reply was not a task
    assert [m.content for m in alice.outbox[first.key].replies] == ["SHOUT"]
    assert alice.outbox[second.key].status == "sent"


async def test_serve_runs_each_task_through_the_robots_model_and_replies() -> None:
    bus = MessageBus()
    alice = robot("alice").with_bus(bus)
    bob = robot("bob", FunctionProvider(lambda messages, info: f"answer to: {messages[-1].content}"))
    bob.with_bus(bus).serve()
    plain = alice.send_message(to="bob", content="What is 2+2?")
    mapping = alice.send_message(to="bob", content={"task": "sum", "numbers": "1 2"})
    await bus.drain(timeout=HANG)
    assert [m.content for m in alice.outbox[plain.key].replies] == ["answer to: What is 2+2?"]
    assert [m.content for m in alice.outbox[mapping.key].replies] == ["answer to: task: sum\nnumbers: 1 2"]


async def test_spawn_makes_a_child_on_the_same_bus_with_the_parents_model() -> None:
    provider = ScriptedProvider(["The capital of France is Paris."])
    dispatcher = robot("dispatcher", provider)
    answers: list[Any] = []
    dispatcher.on_message(lambda m: answers.append((m.from_, m.content)))
    child = dispatcher.spawn(name="geographer", system_prompt="You know places.")
    assert dispatcher.bus is not None and child.bus is dispatcher.bus  # made a bus for the parent
    assert child.provider is provider and child.model == dispatcher.model
    assert dispatcher.children == {"geographer": child}
    result = await child.arun("Capital of France?")
    child.send_message(to="dispatcher", content=result.last_text_content)
    await dispatcher.bus.drain(timeout=HANG)
    assert answers == [("geographer", "The capital of France is Paris.")]
    assert provider.history[0].system == "You know places."


async def test_spawn_options_override_what_the_child_inherits() -> None:
    parent = robot("parent", ScriptedProvider(model_id="parent-model"))
    own = ScriptedProvider(model_id="child-model")
    child = parent.spawn(name="kid", system_prompt="x", provider=own, max_turns=3)
    assert child.provider is own and child.max_turns == 3
    with pytest.raises(ValueError, match="Must provide either template or system_prompt"):
        parent.spawn(name="empty")


async def test_a_run_inside_a_handler_does_not_hold_the_sender() -> None:
    """RobotLab runs a delivery inline in the sender; here the sender goes on while bob's model thinks."""
    release = asyncio.Event()
    bus = MessageBus()
    alice = robot("alice").with_bus(bus)
    bob = robot("bob", ScriptedProvider([[Pause(event=release), "done thinking"]])).with_bus(bus).serve()
    sent = alice.send_message(to="bob", content="think hard")
    await asyncio.sleep(0)
    assert alice.outbox[sent.key].status == "sent"  # we are back before bob answered
    release.set()
    await bus.drain(timeout=HANG)
    assert [m.content for m in alice.outbox[sent.key].replies] == ["done thinking"]
    assert bob.bus is bus


def test_a_message_sent_outside_an_event_loop_waits_for_drain() -> None:
    bus = MessageBus()
    alice, bob = robot("alice").with_bus(bus), robot("bob").with_bus(bus)
    got: list[Any] = []
    bob.on_message(lambda m: got.append(m.content))
    alice.send_message(to="bob", content="queued")
    assert got == [] and bus.busy
    asyncio.run(bus.drain(timeout=HANG))
    assert got == ["queued"] and not bus.busy


async def test_a_robots_tool_sends_from_a_worker_thread() -> None:
    """Plain tools run in worker threads: a message sent there is handed to the bus's event loop."""
    import threading

    from workspace.providers.testing import ToolCall

    bus = MessageBus()
    threads: list[str] = []
    alice = robot("alice", ScriptedProvider([[ToolCall("tell", {"to": "bob", "text": "meet at noon"})], "Told him."]))

    def tell(to: str, text: str) -> str:
        """Send a message to another robot."""
        threads.append(threading.current_thread().name)
        return alice.send_message(to=to, content=text).key

    alice.local_tools.append(to_tool(tell))
    alice.with_bus(bus)
    bob = robot("bob").with_bus(bus)
    got: list[Any] = []
    bob.on_message(lambda m: got.append((m.from_, m.content)))
    result = await alice.arun("Tell bob about the meeting")
    assert result.last_text_content == "Told him."
    async with asyncio.timeout(HANG):  # delivered by the loop itself, with nobody draining the bus
        while not got:
            await asyncio.sleep(0.01)
    assert threads and threads[0] != threading.main_thread().name  # it did run in a worker thread
    assert got == [("alice", "meet at noon")]


async def test_leaving_a_bus_refuses_what_was_still_queued() -> None:
    bus = MessageBus()
    alice, bob = robot("alice").with_bus(bus), robot("bob").with_bus(bus)
    gate = asyncio.Event()

    async def slow(msg: RobotMessage) -> None:
        await gate.wait()

    bob.on_message(slow)
    for n in range(3):
        alice.send_message(to="bob", content=f"m{n}")
    await asyncio.sleep(0)  # bob is on the first
    bob.with_bus(MessageBus())
    await bus.drain(timeout=HANG)  # nothing left waiting on the old bus
    assert [d.message.content for d in bus.dead_letters] == ["m1", "m2"]
    assert "bob" not in bus.channels


async def test_disconnect_leaves_the_channel_refuses_what_waited_and_with_bus_joins_again() -> None:
    bus = MessageBus()
    alice, bob = robot("alice").with_bus(bus), robot("bob").with_bus(bus)
    gate = asyncio.Event()
    got: list[Any] = []

    async def slow(msg: RobotMessage) -> None:
        got.append(msg.content)
        await gate.wait()

    bob.on_message(slow)
    alice.send_message(to="bob", content="m0")
    alice.send_message(to="bob", content="m1")
    await asyncio.sleep(0)  # bob is on the first
    assert bob.disconnect() is bob
    await bus.drain(timeout=HANG)
    assert [d.message.content for d in bus.dead_letters] == ["m1"] and got == ["m0"]
    assert "bob" not in bus.channels and bob.bus is bus  # as RobotLab's: it left the channel, it knows its bus
    assert bob.to_dict()["bus"] is True
    with pytest.raises(BusError, match=r"No robot named 'bob' is on this bus \(on it: alice\).*with_bus"):
        alice.send_message(to="bob", content="m2")
    bob.send_message(to="alice", content="still sending")  # it may still send on it
    bob.with_bus()  # joins its bus again
    bob.on_message(lambda msg: got.append(msg.content))
    alice.send_message(to="bob", content="m3")
    await bus.drain(timeout=HANG)
    assert got == ["m0", "m3"]
    assert robot("carol").disconnect().bus is None  # not on a bus: nothing happens


def test_to_dict_says_whether_the_robot_has_a_bus() -> None:
    loner = robot("loner")
    assert "bus" not in loner.to_dict()  # RobotLab's nil, left out
    assert loner.with_bus().to_dict()["bus"] is True
    assert list(loner.to_dict())[-1] == "bus"


async def test_a_robots_bus_messages_outside_a_network_are_events_of_its_run() -> None:
    from workspace import events as ev
    from workspace.providers.testing import ToolCall

    bus = MessageBus()
    alice = robot("alice", ScriptedProvider([[ToolCall("ask", {"to": "bob", "text": "ping"}, id="c1")], "Asked.",
                                             "Nothing to send."]))

    async def ask(to: str, text: str) -> str:
        """Send a message to another robot and wait until it is answered."""
        sent = alice.send_message(to=to, content=text)
        await bus.drain(timeout=HANG)
        return str(alice.outbox[sent.key].replies[0].content)

    alice.local_tools.append(to_tool(ask))
    alice.with_bus(bus)
    bob = robot("bob").with_bus(bus)
    bob.respond_to_tasks(lambda m: f"pong to {m.content}")
    carol = robot("carol").with_bus(bus)
    events = [e async for e in alice.stream("Ask bob")]
    shown = [(e.sender, e.to, e.content, e.message_id, e.in_reply_to, e.run_id) for e in events
             if isinstance(e, ev.BusMessage)]
    run_id = events[0].run_id
    assert shown == [("alice", "bob", "ping", "alice:1", None, run_id),
                     ("bob", "alice", "pong to ping", "bob:1", "alice:1", run_id)]
    [result] = [e for e in events if isinstance(e, ev.ToolResult)]
    assert result.payload["data"] == "pong to ping"
    bob.send_message(to="carol", content="not alice's")  # neither from nor to the running robot
    later = [e async for e in alice.stream("Anything?")]
    await bus.drain(timeout=HANG)
    carol.send_message(to="alice", content="after the run")  # the run is over: nothing watches any more
    await bus.drain(timeout=HANG)
    assert not any(isinstance(e, ev.BusMessage) for e in later)


async def test_a_message_between_two_running_robots_is_shown_once_in_the_senders_run() -> None:
    from workspace import events as ev
    from workspace.providers.testing import ToolCall

    bus = MessageBus()
    released = asyncio.Event()
    bob = robot("bob", ScriptedProvider([[Pause(event=released), "I read it."]])).with_bus(bus)
    received = asyncio.Event()
    bob.on_message(lambda m: received.set())
    alice = robot("alice", ScriptedProvider([[ToolCall("tell", {"text": "hi"}, id="c1")], "Told."])).with_bus(bus)

    async def tell(text: str) -> str:
        """Tell bob something while bob runs."""
        alice.send_message(to="bob", content=text)
        await asyncio.wait_for(received.wait(), HANG)
        return "sent"

    alice.local_tools.append(to_tool(tell))
    bob_run = bob.stream("Wait for alice", max_turns=1)
    bob_events: list[Any] = []

    async def follow() -> None:
        async for event in bob_run:
            bob_events.append(event)
            if isinstance(event, ev.RunStarted):
                alice_events.extend([e async for e in alice.stream("Tell bob")])  # while bob's run waits
                released.set()

    alice_events: list[Any] = []
    await asyncio.wait_for(follow(), HANG)
    assert [(e.sender, e.to) for e in alice_events if isinstance(e, ev.BusMessage)] == [("alice", "bob")]
    assert not any(isinstance(e, ev.BusMessage) for e in bob_events)  # the sender's run shows it, once
    assert isinstance(bob_events[-1], ev.RunFinished)  # bob's run went on past the message


def test_the_new_names_are_exported_lazily() -> None:
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys, workspace\n"
            "new = ['workspace.bus', 'workspace.delegation', 'workspace.agent_skills', 'workspace.ledger']\n"
            "assert not [m for m in new if m in sys.modules], 'import workspace loaded them'\n"
            "from workspace import (RobotMessage, DelegationFuture, DelegationTimeout, AgentSkill, AgentSkillCatalog,\n"
            "                       Ledger, MessageBus, BusError, BudgetExceeded)\n"
            "assert RobotMessage.__module__ == 'workspace.bus' and Ledger.__module__ == 'workspace.ledger'\n"
            "print('ok')\n")
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


async def test_two_robots_of_one_name_cannot_share_a_bus() -> None:
    bus = MessageBus()
    first = robot("bob").with_bus(bus)
    with pytest.raises(BusError, match="Another robot named 'bob' is already on this bus"):
        robot("bob").with_bus(bus)
    with pytest.raises(BusError, match="Another robot named 'bob'"):
        robot("alice").with_bus(bus).spawn(name="bob", system_prompt="x")
    got: list[Any] = []
    first.on_message(lambda m: got.append(m.content))
    bus.publish("bob", RobotMessage.build(id=1, from_="x", content="still mine"))
    await bus.drain(timeout=HANG)
    assert got == ["still mine"]


async def test_a_robot_joins_a_bus_when_made_with_one() -> None:
    bus = MessageBus()
    alice = robot("alice", bus=bus)
    bob = robot("bob", bus=bus)
    got: list[Any] = []
    bob.on_message(lambda m: got.append(m.content))
    alice.send_message(to="bob", content="hello")
    await bus.drain(timeout=HANG)
    assert alice.bus is bus and got == ["hello"]


def test_one_bus_serves_one_event_loop_after_another() -> None:
    """A script may call asyncio.run more than once with the same robots."""
    bus = MessageBus()
    alice, bob = robot("alice").with_bus(bus), robot("bob").with_bus(bus)
    got: list[Any] = []
    bob.on_message(lambda m: got.append(m.content))

    async def send(text: str) -> None:
        alice.send_message(to="bob", content=text)
        await bus.drain(timeout=HANG)

    asyncio.run(send("first"))
    asyncio.run(send("second"))
    assert got == ["first", "second"]
