"""A network file's message bus (``bus: true`` or ``bus: {serve, reply_timeout}``): loaded, checked with a
fix for each problem, and run from the command line against the loopback model server, where each message
is a ``bus_message`` line of ``--json``, a "writer → editor: …" line of the default output, and a line of
the thread's Markdown export."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from workspace.network import NetworkFileError, load_network
from workspace.providers.testing import ScriptedProvider

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "networks" / "release-bus.yaml"

PAIR = """\
name: pair
robots:
  alice: {system_prompt: You ask.}
  bob: {system_prompt: You answer.}
tasks:
  ask: {robot: alice}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "net.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_bus_true_puts_the_task_robots_on_one_bus(tmp_path: Path) -> None:
    network = load_network(write(tmp_path, PAIR + "bus: true\n"), provider=ScriptedProvider(default="x"))
    assert network.bus is not None and network.bus.channels == ["alice"]
    assert network.bus_servers == {} and network.reply_timeout is None


def test_a_bus_section_names_the_robots_that_answer(tmp_path: Path) -> None:
    network = load_network(write(tmp_path, PAIR + "bus: {serve: [bob], reply_timeout: 30}\n"),
                           provider=ScriptedProvider(default="x"))
    assert network.bus is not None and sorted(network.bus.channels) == ["alice", "bob"]
    assert list(network.bus_servers) == ["bob"] and network.reply_timeout == 30


def test_no_bus_by_default(tmp_path: Path) -> None:
    assert load_network(write(tmp_path, PAIR), provider=ScriptedProvider(default="x")).bus is None


@pytest.mark.parametrize(("bus", "expected"), [
    ("bus: {serve: [bobb]}", "unknown robot 'bobb' in serve — did you mean 'bob'? (serve names robots under 'robots'"),
    ("bus: 3", "bus is true (the robots talk on one message bus) or a mapping"),
    ("bus: {serve: bob, reply_timeout: 0}", "reply_timeout"),
    ("bus: {answer: [bob]}", "answer"),
])
def test_a_bad_bus_is_reported_with_its_line(tmp_path: Path, bus: str, expected: str) -> None:
    with pytest.raises(NetworkFileError) as info:
        load_network(write(tmp_path, PAIR + bus + "\n"), provider=ScriptedProvider(default="x"))
    text = str(info.value)
    assert expected in text, text
    assert ":7" in text  # the line of the bus key


def answer(body: dict[str, Any]) -> Reply:
    """The example's three robots, told apart by their system prompts."""
    messages = body["messages"]
    system = str(messages[0]["content"]) if messages and messages[0]["role"] == "system" else ""
    if "You write release notes" in system:
        if messages[-1]["role"] == "tool":
            return Reply.say("v2.0 starts in 1.2 s instead of 2.4 s.")
        return Reply.tool("send_message", {"to": "editor", "content": "Check: v2.0 starts twice as fast."}, id="m1")
    if "You edit release notes" in system:
        return Reply.say("Give the numbers: 1.2 s instead of 2.4 s.")
    return Reply.say("Version 2.0 is out and starts in half the time.")


def robotlab(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROBOT_LAB_DEMO__DELAY": "0"}
    # The time limit bounds a hang only.
    return subprocess.run([sys.executable, "-m", "workspace", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120, stdin=subprocess.DEVNULL)


def test_the_example_runs_from_the_command_line(robotlab_home: Path) -> None:
    with FakeLLMServer(reply_fn=answer) as server:
        model = ["--model", "openai/fake", "--api-base", server.base_url + "/v1"]
        done = robotlab("network", "run", str(EXAMPLE), "Release notes for v2.0", *model, "--json")
        assert done.returncode == 0, done.stderr
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        messages = [(e["sender"], e["to"], e["content"], e["in_reply_to"], e["message_id"])
                     for e in lines if e["kind"] == "bus_message"]
        assert messages == [("writer", "editor", "Check: v2.0 starts twice as fast.", None, "writer:1"),
                            ("editor", "writer", "Give the numbers: 1.2 s instead of 2.4 s.", "writer:1", "editor:1")]
        printed = robotlab("network", "run", str(EXAMPLE), "Release notes for v2.0", *model)
        assert printed.returncode == 0, printed.stderr
        assert "writer → editor: Check: v2.0 starts twice as fast." in printed.stdout
        assert "editor → writer: Give the numbers: 1.2 s instead of 2.4 s." in printed.stdout
    listed = robotlab("threads", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    thread = json.loads(listed.stdout)[0]["id"]
    export = robotlab("threads", "export", thread)
    assert export.returncode == 0, export.stderr
    assert "**writer → editor**:" in export.stdout and "Check: v2.0 starts twice as fast." in export.stdout
    assert "**editor → writer** (reply to `writer:1`):" in export.stdout


def test_the_example_follows_the_shipped_json_schema() -> None:
    import jsonschema
    import yaml

    schema = json.loads((ROOT / "resources" / "schemas" / "network.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    assert not list(validator.iter_errors(yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))))
    assert list(validator.iter_errors({"tasks": {}, "bus": {"serve": ["a"], "answer": True}}))
