"""A robot file's ``bus: name``: robots whose files name one bus share it in a process, ``robotlab run`` starts
the others so the robot it runs can talk to them (``send_message``), and the messages are shown as the lanes of a
network are ("alice → bob"), in the terminal and in ``--json``; a bad name is refused naming the key and the fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from workspace import Robot
from workspace.bus import named_bus
from workspace.errors import ConfigurationError
from workspace.templates import Template

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROBOT_LAB_DEMO__DELAY": "0"}
    return subprocess.run([sys.executable, "-m", "workspace", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120)


def _robots(folder: Path, **files: str) -> None:
    robots = folder / ".robotlab" / "robots"
    robots.mkdir(parents=True)
    for name, text in files.items():
        (robots / f"{name}.md").write_text(text)


ALICE = "---\nname: alice\nbus: comedy\ntools: none\n---\nYou ask Bob for jokes.\n"
BOB = "---\nname: bob\nbus: comedy\ntools: none\n---\nYou tell jokes.\n"
CAROL = "---\nname: carol\nbus: other\ntools: none\n---\nYou are elsewhere.\n"


def test_robots_naming_one_bus_share_it(tmp_path: Path) -> None:
    a = tmp_path / "alice.md"
    a.write_text(ALICE)
    b = tmp_path / "bob.md"
    b.write_text(BOB)
    c = tmp_path / "carol.md"
    c.write_text(CAROL)
    alice = Robot("alice", template=Template.load(a))
    bob = Robot("bob", template=Template.load(b))
    carol = Robot("carol", template=Template.load(c))
    assert alice.bus is bob.bus is named_bus("comedy")
    assert carol.bus is not alice.bus and carol.bus is named_bus("other")
    assert named_bus("comedy").channels == []  # building a robot leaves the bus as it was
    bob.serve()  # listening joins the channel
    alice.send_message(to="bob", content="hi")  # so does sending
    assert sorted(named_bus("comedy").channels) == ["alice", "bob"]
    # Built again from its file (a second thread of the robot) and run: the new robot takes the channel of the
    # earlier build, which does not listen, over.
    again = Robot("alice", template=Template.load(a))
    assert named_bus("comedy").subscriber("alice") == alice._receive
    again._join_bus()
    assert again.bus is alice.bus and named_bus("comedy").subscriber("alice") == again._receive


async def test_a_listening_robot_keeps_its_channel_when_its_file_is_loaded_again(tmp_path: Path) -> None:
    path = tmp_path / "bob.md"
    path.write_text(BOB.replace("bus: comedy", "bus: keepers"))
    heard: list[str] = []
    bob = Robot("bob", template=Template.load(path)).on_message(lambda message: heard.append(str(message.content)))
    sender = Robot("sender", system_prompt="You send.").with_bus(named_bus("keepers"))
    sender.send_message(to="bob", content="first")
    await named_bus("keepers").drain(timeout=10)
    # a throwaway load of the same file (the window reading its model, a second thread) ...
    again = Robot("bob", template=Template.load(path))
    assert again.bus is bob.bus and again.to_dict()["bus"] is True
    sender.send_message(to="bob", content="second")
    await named_bus("keepers").drain(timeout=10)
    # ... and even its joining (a run of it) leave the live robot its channel
    again._join_bus()
    sender.send_message(to="bob", content="third")
    await named_bus("keepers").drain(timeout=10)
    assert heard == ["first", "second", "third"]
    again.disconnect()  # never held the channel: leaves the live robot on it
    sender.send_message(to="bob", content="fourth")
    await named_bus("keepers").drain(timeout=10)
    assert heard[-1] == "fourth"


@pytest.mark.parametrize("value", ["true", "two words", "'-dash'"])
def test_a_bad_bus_is_refused_naming_the_key_and_the_fix(tmp_path: Path, value: str) -> None:
    path = tmp_path / "r.md"
    path.write_text(f"---\nname: r\nbus: {value}\n---\nHi\n")
    with pytest.raises(ConfigurationError) as caught:
        Template.load(path)
    message = str(caught.value)
    assert "'bus' must be a bus name like 'team'" in message and "r.md:3:" in message


def test_run_on_a_robot_file_with_a_bus_talks_to_its_peers(robotlab_home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    _robots(folder, alice=ALICE, bob=BOB, carol=CAROL)
    with FakeLLMServer() as server:
        server.enqueue(Reply.tool("send_message", {"to": "bob", "content": "Tell me a robot joke"}))
        server.enqueue("Why did the robot cross the road? It was programmed to.")  # bob's run
        server.enqueue("Bob says it was programmed to.")
        result = _run("run", "alice", "Get a joke from Bob", "--model", "openai/fake", "--api-base",
                      server.base_url + "/v1", "--folder", str(folder), "--no-record")
        assert result.returncode == 0, result.stderr
        assert "✉ alice → bob: Tell me a robot joke" in result.stdout
        assert "✉ bob → alice: Why did the robot cross the road?" in result.stdout
        assert "Bob says it was programmed to." in result.stdout
        # Alice was offered send_message; Bob answered through his own prompt; Carol (another bus) never ran.
        tools = [t["function"]["name"] for t in server.requests[0].get("tools", [])]
        assert "send_message" in tools
        assert server.requests[1]["messages"][0]["content"].startswith("You tell jokes.")
        assert server.requests[1]["messages"][-1]["content"] == "Tell me a robot joke"
        assert server.requests[2]["messages"][-1]["content"].startswith("Why did the robot cross the road?")
        assert len(server.requests) == 3

        server.enqueue(Reply.tool("send_message", {"to": "bob", "content": "Another"}))
        server.enqueue("Beep.")
        server.enqueue("Done.")
        result = _run("run", "alice", "Again", "--model", "openai/fake", "--api-base", server.base_url + "/v1",
                      "--folder", str(folder), "--json", "--no-record")
        assert result.returncode == 0, result.stderr
        events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
        bus = [(e["sender"], e["to"], e["content"]) for e in events if e["kind"] == "bus_message"]
        assert bus == [("alice", "bob", "Another"), ("bob", "alice", "Beep.")]


async def test_a_thread_of_a_robot_with_a_bus_shows_its_messages(tmp_path: Path) -> None:
    from workspace import ScriptedProvider
    from workspace import events as ev
    from workspace.config import load_config
    from workspace.providers.testing import ToolCall
    from workspace.session import Workspace

    folder = tmp_path / "project"
    folder.mkdir()
    _robots(folder, alice=ALICE, bob=BOB)
    provider = ScriptedProvider()  # one model for every robot of the window, as a workspace's provider is
    provider.enqueue([ToolCall("send_message", {"to": "bob", "content": "A joke, please"}, id="s1")],
                     "Beep boop.", "Bob says: beep boop.")
    workspace = Workspace(db_path=tmp_path / "db.sqlite", provider=provider, folder=folder,
                          config=load_config(folder, env={}))
    try:
        run = workspace.new_thread("alice").send("Ask Bob for a joke")
        events = [e async for e in run]
    finally:
        await workspace.aclose()
    lanes = [(e.sender, e.to, e.content) for e in events if isinstance(e, ev.BusMessage)]
    assert lanes == [("alice", "bob", "A joke, please"), ("bob", "alice", "Beep boop.")]
    assert provider.history[1].system.startswith("You tell jokes.")
    assert isinstance(events[-1], ev.RunFinished) and events[-1].result.last_text_content == "Bob says: beep boop."


def test_the_peers_a_run_starts_replace_the_ones_started_before(tmp_path: Path) -> None:
    from workspace.catalog import bus_peers

    folder = tmp_path / "project"
    folder.mkdir()
    _robots(folder, dana=ALICE.replace("alice", "dana").replace("comedy", "relay"),
            eve=BOB.replace("bob", "eve").replace("comedy", "relay"))
    dana = Robot("dana", template=folder / ".robotlab" / "robots" / "dana.md")
    [first] = bus_peers(dana, folder=folder)
    assert named_bus("relay").subscriber("eve") == first._receive
    [second] = bus_peers(dana, folder=folder)  # the next message of the thread: its peers, with its settings
    assert second is not first and named_bus("relay").subscriber("eve") == second._receive
