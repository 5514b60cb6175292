"""An MCP server's sampling and elicitation requests on the command line: ``robotlab run``,
``network run`` and ``mcp call`` ask in the terminal (a pseudo-terminal here), approve sampling with
``--yes``, and otherwise deny with a message that names ``--yes``. The real reference server
(server-everything) asks; the model is the loopback LLM server."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.fakes.mcp_servers import EVERYTHING, require_servers

pexpect = pytest.importorskip("pexpect")
pytestmark = [pytest.mark.timeout(180), pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals")]

ROOT = Path(__file__).resolve().parent.parent
NETWORK = """\
name: askers
description: one task whose robot calls the server
robots:
  caller: {system_prompt: "You call tools.", tools: ["everything__*"], mcp: [everything]}
tasks:
  call: {robot: caller}
"""


@pytest.fixture
def home(robotlab_home: Path) -> Path:
    require_servers()
    config = robotlab_home / "config"
    (config / "robots").mkdir(parents=True, exist_ok=True)
    (config / "networks").mkdir(parents=True, exist_ok=True)
    (config / "config.yaml").write_text(
        f"mcpServers:\n  everything:\n    command: {EVERYTHING}\n"
        "    autoApprove: [trigger-sampling-request, trigger-elicitation-request]\n", encoding="utf-8")
    (config / "robots" / "caller.md").write_text(
        "---\ntools: [\"everything__*\"]\nmcp: [everything]\n---\nYou call tools.", encoding="utf-8")
    (config / "networks" / "askers.yaml").write_text(NETWORK, encoding="utf-8")
    return robotlab_home


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def _env() -> dict[str, str]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "NO_COLOR": "1", "ROBOT_LAB_DEMO__DELAY": "0"}
    env.pop("PYTHONUNBUFFERED", None)
    return env


def _model(llm: FakeLLMServer) -> list[str]:
    return ["--model", "openai/fake", "--api-base", llm.base_url + "/v1"]


def spawn(*args: str) -> Any:
    child = pexpect.spawn(sys.executable, ["-m", "workspace", *args], env=_env(), cwd=str(ROOT), encoding="utf-8",
                          timeout=60, dimensions=(50, 200))
    return child


def run(*args: str, stdin: str = "") -> Any:
    import subprocess

    return subprocess.run([sys.executable, "-m", "workspace", *args], input=stdin, capture_output=True, text=True,
                          cwd=ROOT, env=_env(), timeout=150)


def _sampling_script(llm: FakeLLMServer) -> None:
    llm.enqueue(Reply.tool("everything__trigger-sampling-request", {"prompt": "what is 2+2?", "maxTokens": 40}))
    llm.enqueue("Four, said the model.")  # the sampled completion
    llm.enqueue("The server heard back.")


# -- robotlab run ----------------------------------------------------------------------------------------
def test_run_asks_for_sampling_in_the_terminal_and_the_edit_reaches_the_model(home: Path,
                                                                               llm: FakeLLMServer) -> None:
    _sampling_script(llm)
    child = spawn("run", "caller", "ask the server", *_model(llm))
    child.expect("everything asks for a completion from")
    child.expect(r"\[user\] Resource trigger-sampling-request context: what is 2\+2\?")
    child.expect(r"an answer of at most 40 tokens")
    child.expect(r"\[e\]dit")
    child.sendline("e")
    child.expect(r"Message 1 \[user\]")
    child.sendline("What is 3+3? One word.")
    child.expect(r"Max tokens \[40\]")
    child.sendline("12")
    child.expect(r"\[e\]dit")
    child.sendline("y")
    child.expect(r"The server heard back\.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    sampled = llm.requests[1]
    assert sampled["messages"][-1]["content"] in ("What is 3+3? One word.",
                                                  [{"type": "text", "text": "What is 3+3? One word."}])
    assert sampled.get("max_tokens") == 12 or sampled.get("max_completion_tokens") == 12
    assert "Four, said the model." in json.dumps(llm.requests[2]["messages"])  # the tool result the model saw


def test_run_without_a_terminal_denies_sampling_naming_yes_and_approves_with_it(home: Path,
                                                                                 llm: FakeLLMServer) -> None:
    llm.enqueue(Reply.tool("everything__trigger-sampling-request", {"prompt": "x"}))
    llm.enqueue("Understood, it was denied.")
    result = run("run", "caller", "ask the server", *_model(llm))
    assert result.returncode == 0, result.stderr
    assert "sampling/createMessage denied" in result.stdout and "rerun with --yes" in result.stdout
    assert "mcpServers.everything.sampling: allow" in result.stdout
    assert len(llm.requests) == 2  # no completion was asked for the server

    _sampling_script(llm)
    result = run("run", "caller", "ask the server", *_model(llm), "--yes", "--json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    decided = [e for e in events if e["kind"] == "approval_decided" and e["name"] == "sampling/createMessage"]
    assert decided and decided[0]["decision"] == "approve" and decided[0]["reason"] == "--yes"
    answered = [e for e in events if e["kind"] == "tool_result" and e["name"] == "sampling/createMessage"]
    assert answered and "Four, said the model." in json.dumps(answered[0]["payload"])


def test_run_asks_each_field_of_an_elicitation(home: Path, llm: FakeLLMServer) -> None:
    llm.enqueue(Reply.tool("everything__trigger-elicitation-request", {}))
    llm.enqueue("Thanks.")
    child = spawn("run", "caller", "ask me", *_model(llm))
    child.expect("everything asks for input: Please provide inputs")
    child.expect(r"\[d\]ecline")
    child.sendline("y")
    child.expect(r"String \(required\) — Your full, legal name: ")
    child.sendline("")
    child.expect("This field is required.")
    child.sendline("Grace Hopper")
    child.expect(r"\[y/N\]")
    child.sendline("yes")
    answers = {"String with default": "", "String with email format": "grace@example.com",
               "String with uri format": "", "String with date format": "1906-12-09", "Integer": "7",
               "Number in range": "", "Untitled Single Select Enum": "3", "Untitled Multiple Select Enum": "2, 4",
               "Titled Single Select Enum": "Green Lantern", "Titled Multiple Select Enum": "",
               "Legacy Titled Single Select Enum": "Dogs"}
    for prompt, answer in answers.items():
        child.expect(prompt)
        child.expect(r": $")
        child.sendline(answer)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    seen = json.dumps(llm.requests[1]["messages"])
    for value in ("Grace Hopper", "grace@example.com", "1906-12-09", "Joey", "Piano", "Drums", "hero-2", "pet-2"):
        assert value in seen, value


def test_run_without_a_terminal_declines_an_elicitation_and_says_how_to_answer(home: Path,
                                                                                llm: FakeLLMServer) -> None:
    llm.enqueue(Reply.tool("everything__trigger-elicitation-request", {}))
    llm.enqueue("Declined, fine.")
    result = run("run", "caller", "ask me", *_model(llm), "--yes")
    assert result.returncode == 0, result.stderr
    assert "elicitation/create denied" in result.stdout
    assert "String has none" in result.stdout and "Run it in a terminal" in result.stdout
    assert "declined" in json.dumps(llm.requests[1]["messages"]).lower()


# -- robotlab network run --------------------------------------------------------------------------------
def test_network_run_asks_in_the_terminal_and_approves_with_yes(home: Path, llm: FakeLLMServer) -> None:
    _sampling_script(llm)
    child = spawn("network", "run", "askers", "ask the server", *_model(llm))
    child.expect("everything asks for a completion from")
    child.expect(r"\[a\]lways for this server")
    child.sendline("a")
    child.expect(r"The server heard back\.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    assert "sampling: allow" in (home / "config" / "config.yaml").read_text(encoding="utf-8")  # always: saved

    (home / "config" / "config.yaml").write_text(
        f"mcpServers:\n  everything:\n    command: {EVERYTHING}\n    autoApprove: [trigger-sampling-request]\n",
        encoding="utf-8")
    llm.requests.clear()
    llm.enqueue(Reply.tool("everything__trigger-sampling-request", {"prompt": "x"}))
    llm.enqueue("Denied then.")
    result = run("network", "run", "askers", "ask the server", *_model(llm))
    assert result.returncode == 0, result.stderr
    assert "rerun with --yes" in result.stdout
    _sampling_script(llm)
    result = run("network", "run", "askers", "ask the server", *_model(llm), "--yes")
    assert result.returncode == 0, result.stderr
    assert "The server heard back." in result.stdout and "approved" in result.stdout


# -- robotlab mcp call -----------------------------------------------------------------------------------
def test_mcp_call_answers_sampling_with_yes_and_names_it_without(home: Path, llm: FakeLLMServer) -> None:
    result = run("mcp", "call", "everything", "trigger-sampling-request", '{"prompt": "hi"}')
    assert result.returncode == 1
    assert "nobody is at a terminal to approve it; rerun with --yes" in result.stderr
    config = home / "config" / "config.yaml"  # the configured model answers
    config.write_text(config.read_text(encoding="utf-8") + f"llm:\n  model: openai/fake\n  api_base: {llm.base_url}/v1\n",
                      encoding="utf-8")
    llm.enqueue("Hi from the configured model.")
    result = run("mcp", "call", "everything", "trigger-sampling-request", '{"prompt": "hi"}', "--yes")
    assert result.returncode == 0, result.stderr
    assert "Hi from the configured model." in result.stdout


def test_mcp_call_asks_for_an_elicitation_in_the_terminal(home: Path) -> None:
    child = spawn("mcp", "call", "everything", "trigger-elicitation-request")
    child.expect(r"\[d\]ecline / \[c\]ancel: ")
    child.sendline("c")
    child.expect("User cancelled")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
