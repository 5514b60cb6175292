"""``robotlab threads replay`` and ``robotlab threads rerun`` in a subprocess, against the loopback model server
and a real MCP server (server-everything) whose start writes a marker file: a replay that matches exits 0 and
starts no server (the recorded results are served); a changed prompt makes the scripted model make another call,
named at its turn, exit 1; ``--run-new-calls`` runs it; ``rerun`` runs the tool and never asks the model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply
from fakes.mcp_servers import EVERYTHING, require_servers

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parent.parent
MESSAGES = ["Say hi through echo", "Thanks"]
RECORD: list[Any] = [Reply.tool("everything__echo", {"message": "hi"}), "It said hi.", "Bye."]


@pytest.fixture
def home(robotlab_home: Path) -> Path:
    require_servers()
    config = robotlab_home / "config"
    (config / "robots").mkdir(parents=True, exist_ok=True)
    marker = robotlab_home / "started.txt"
    # The server's command writes a line to the marker file each time the server starts.
    (config / "config.yaml").write_text(
        "mcpServers:\n  everything:\n    command: /bin/sh\n"
        f"    args: ['-c', 'echo started >> {marker}; exec {EVERYTHING}']\n"
        "    autoApprove: [echo]\n", encoding="utf-8")
    (config / "robots" / "caller.md").write_text(
        "---\ntools: [\"everything__*\"]\nmcp: [everything]\n---\nYou call tools.", encoding="utf-8")
    return robotlab_home


def robotlab(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "ROBOT_LAB_DEMO__DELAY": "0"}
    return subprocess.run([sys.executable, "-m", "workspace", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=150)


def model(server: FakeLLMServer) -> list[str]:
    return ["--model", "openai/fake", "--api-base", server.base_url + "/v1"]


def record(home: Path, server: FakeLLMServer) -> tuple[str, str]:
    """Record the thread (two turns, one echo call); the thread id and the call's id."""
    server.enqueue(*RECORD)
    first = robotlab("run", "caller", MESSAGES[0], *model(server), "--yes", "--json")
    assert first.returncode == 0, first.stderr
    second = robotlab("run", "--continue", MESSAGES[1], *model(server), "--yes", "--json")
    assert second.returncode == 0, second.stderr
    events = [json.loads(line) for line in first.stdout.splitlines() if line.startswith("{")]
    assert any(e["kind"] == "tool_result" and "hi" in json.dumps(e) for e in events), first.stdout
    call_id = next(e["id"] for e in events if e["kind"] == "tool_use")
    listed = robotlab("threads", "list", "--json")
    thread_id = json.loads(listed.stdout)[0]["id"]
    marker = home / "started.txt"
    assert marker.read_text().count("started") == 2  # the server started for each run of the recording
    marker.unlink()
    return thread_id, call_id


def test_a_replay_that_matches_exits_0_serves_the_record_and_starts_no_server(home: Path) -> None:
    with FakeLLMServer() as server:
        thread_id, _call = record(home, server)
        server.enqueue(*RECORD)
        result = robotlab("threads", "replay", thread_id[:8], *model(server))
        as_json = None
        if result.returncode == 0:
            server.enqueue(*RECORD)
            as_json = robotlab("threads", "replay", thread_id, *model(server), "--json")
        server.enqueue(*RECORD)
        own_model = robotlab("threads", "replay", thread_id)  # the thread's own model and server
        # Another answer: past the exact tolerance; within the judged one when the judge says it means the same.
        other = [RECORD[0], "The server said hi.", RECORD[2]]
        server.enqueue(*other)
        exact = robotlab("threads", "replay", thread_id, *model(server))
        server.enqueue(other[0], other[1], "SAME", other[2])  # the judge is asked once turn 1 ended
        judged = robotlab("threads", "replay", thread_id, *model(server), "--tolerance", "judged",
                          "--judge", "openai/fake")
        lone_judge = robotlab("threads", "replay", thread_id, *model(server), "--judge", "openai/fake")
        no_prompt = robotlab("threads", "replay", thread_id, *model(server), "--prompt", str(home / "missing.md"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No divergence." in result.stdout
    assert "1 call(s) answered from the record, 0 tool(s) run" in result.stdout
    assert not (home / "started.txt").exists()  # no MCP server was started
    assert as_json is not None and as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    assert (data["diverged"], data["served"], data["executed"]) == (False, 1, 0)
    assert data["original_thread_id"] == thread_id and data["thread_id"] != thread_id
    shown = json.loads(robotlab("threads", "show", data["thread_id"], "--json").stdout)
    assert shown["thread"]["metadata"]["replay_of"] == thread_id
    assert own_model.returncode == 0 and "No divergence." in own_model.stdout, own_model.stdout + own_model.stderr
    assert exact.returncode == 1 and "✗ answer: the answer differs" in exact.stdout, exact.stdout + exact.stderr
    assert "+The server said hi." in exact.stdout
    assert judged.returncode == 0, judged.stdout + judged.stderr
    assert "the judge says it means the same (within the tolerance)" in judged.stdout
    assert lone_judge.returncode == 2 and "--tolerance judged" in lone_judge.stderr
    assert no_prompt.returncode == 2 and "Cannot read the prompt file" in no_prompt.stderr
    assert not (home / "started.txt").exists()


def test_a_changed_prompt_diverges_at_its_turn_and_exits_1(home: Path, tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.md"
    prompt.write_text("Echo the weather whenever you are thanked.", encoding="utf-8")

    def scripted(body: dict[str, Any]) -> Reply | None:
        system = str(body["messages"][0]["content"])
        last = body["messages"][-1]
        if "weather" in system and last["role"] == "user" and "Thanks" in str(last["content"]):
            return Reply.tool("everything__echo", {"message": "weather"})
        return None

    with FakeLLMServer(reply_fn=scripted) as server:
        thread_id, _call = record(home, server)
        server.enqueue(*RECORD[:2])
        result = robotlab("threads", "replay", thread_id, *model(server), "--prompt", str(prompt),
                          "--tolerance", "tools")
        server.enqueue(*RECORD[:2])
        ran = robotlab("threads", "replay", thread_id, *model(server), "--prompt", str(prompt), "--run-new-calls",
                       "--yes", "--json")
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "Turn 2: Thanks" in out and "Turn 1" not in out
    assert "✗ tool: call 1: the replay called everything__echo" in out
    assert 'new call everything__echo({"message": "weather"}): not run' in out
    assert "Diverged at turn 2 (tool)." in out
    # --run-new-calls: the new call ran on the server (which started for it), the recorded one was served.
    assert ran.returncode == 1, ran.stderr
    data = json.loads(ran.stdout)
    assert (data["served"], data["executed"]) == (1, 1)
    assert [(c["turn"], c["name"], c["ran"]) for c in data["new_calls"]] == [(2, "everything__echo", True)]
    assert (home / "started.txt").exists()


def test_rerun_runs_the_tool_not_the_model(home: Path) -> None:
    with FakeLLMServer() as server:
        thread_id, call_id = record(home, server)
        before = len(server.requests)
        same = robotlab("threads", "rerun", thread_id, call_id, "--yes")
        edited = robotlab("threads", "rerun", thread_id, call_id, "--args", '{"message": "bye"}', "--yes", "--json")
        bad = robotlab("threads", "rerun", thread_id, call_id, "--args", "[1]")
        missing = robotlab("threads", "rerun", thread_id, "nope")
        after = len(server.requests)
    assert after == before  # the model was never asked
    assert same.returncode == 0, same.stdout + same.stderr
    assert "Ran everything__echo" in same.stdout and "The same result as recorded." in same.stdout
    assert edited.returncode == 0, edited.stderr
    data = json.loads(edited.stdout)
    assert data["changed"] and data["arguments"] == {"message": "bye"} and "bye" in json.dumps(data["new"])
    assert "-" in data["diff"] and "+" in data["diff"]
    assert (home / "started.txt").read_text().count("started") == 2  # the server ran the tool each time
    assert bad.returncode == 2 and "--args must be a JSON object" in bad.stderr
    assert missing.returncode == 2 and "no tool call 'nope'" in missing.stderr
