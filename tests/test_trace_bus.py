"""Messages between robots in the trace tree: the question under the ``send_message`` call that sent it, the
reply (the network's run carries it: the robot that answered has no task) beside it, both searchable and in
the JSON export."""

from __future__ import annotations

import json
from typing import Any

from ui.inspector.trace_tree import build_tree
from workspace import Network, Robot
from workspace import events as ev
from workspace.providers.testing import ScriptedProvider, ToolCall


async def bus_events() -> list[ev.Event]:
    alice = Robot("alice", system_prompt="s", knowledge_store=False, tools="none", mcp="none",
                  provider=ScriptedProvider([[ToolCall("send_message", {"to": "bob", "content": "What is 2 + 2?"},
                                                       id="s1")], "Bob says 4."]))
    bob = Robot("bob", system_prompt="s", knowledge_store=False, provider=ScriptedProvider(["4"]))
    network = Network("pair").with_bus(serve=[bob])
    network.task("ask", alice)
    return [e async for e in network.stream("Ask bob")]


async def test_messages_are_nodes_under_the_call_that_sent_them() -> None:
    tree = build_tree(await bus_events())
    [network] = tree.roots
    [alice_run] = [n for n in network.children if n.kind == "run"]
    [call] = [n for n in alice_run.walk() if n.kind == "tool_call" and n.tool == "send_message"]
    messages = [n for n in call.children if n.kind == "message"]
    assert [m.label for m in messages] == ["alice → bob: What is 2 + 2?", "bob → alice: 4"]
    assert messages[1].data["in_reply_to"] == "alice:1" and messages[1].data["sender"] == "bob"
    assert [n.kind for n in call.children] == ["request", "message", "run", "message", "response"]
    [served] = [n for n in call.children if n.kind == "run"]
    assert served.label == "Run bob / ask: What is 2 + 2?"  # bob's answer, a run inside the call
    assert not [n for n in tree.walk() if n.kind == "event" and n.label == "bus_message"]
    found = tree.matching("bob → alice")
    assert id(messages[1]) in found and id(network) in found
    exported = json.loads(tree.to_json())
    kinds = [n["kind"] for n in _walk(exported["trace"][0])]
    assert kinds.count("message") == 2


def test_a_message_outside_a_call_is_under_its_run() -> None:
    event = ev.BusMessage(run_id="r1", robot="alice", seq=1, sender="alice", to="bob", content={"n": 1},
                          message_id="alice:1")
    tree = build_tree([event])
    [run] = tree.roots
    [message] = run.children
    assert (message.kind, message.label) == ("message", "alice → bob: n: 1")


def _walk(node: dict[str, Any]) -> list[dict[str, Any]]:
    out = [node]
    for child in node.get("children", []):
        out += _walk(child)
    return out

