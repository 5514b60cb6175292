"""The Narrator: RobotLab's console lines for a real robot's run against the loopback model server, with a
tool call that works and one that fails; registered globally, on a robot and on a network."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply

import workspace
from workspace import Narrator, Network, Robot, secrets
from workspace.config import load_config
from workspace.narrator import MAX
from workspace.tools import tool

ROOT = Path(__file__).resolve().parent.parent

@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    workspace.clear_hooks()
    Narrator.output = None
    yield
    workspace.clear_hooks()
    Narrator.output = None


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


@tool
def read_notes(path: str, lines: int = 10) -> str:
    """Read a notes file."""
    if path != "notes.md":
        raise FileNotFoundError(f"no such file: {path}\n(looked in the folder)")
    return "remember the milk"


def writer(server: FakeLLMServer, name: str = "writer") -> Robot:
    return Robot(name, system_prompt="You write.", model="openai/fake", api_base=server.base_url + "/v1",
                 tools=[read_notes], config=load_config(env={}, overrides={"llm": {"max_retries": 1}}))


def script_two_tool_calls(server: FakeLLMServer) -> None:
    server.enqueue(Reply.tool("read_notes", {"path": "notes.md", "lines": 3}),
                   Reply.tool("read_notes", {"path": "missing.md"}),
                   "Done.")


async def test_enabled_globally_it_narrates_the_model_calls_a_tool_and_a_tool_error(server: FakeLLMServer) -> None:
    lines: list[str] = []
    assert Narrator.enable(output=lines.append) is Narrator
    script_two_tool_calls(server)
    result = await writer(server).arun("Summarise my notes")
    assert result.last_text_content == "Done."
    assert lines == [
        "  · writer: thinking…",
        '  · → read_notes path="notes.md"',
        "  · writer: thinking…",
        '  · → read_notes path="missing.md"',
        "  ·   ✗ Error (read_notes): no such file: missing.md",
        "  · writer: thinking…",
    ]


async def test_on_one_robot_it_writes_to_a_text_stream_and_leaves_other_robots_silent(server: FakeLLMServer) -> None:
    out = io.StringIO()
    Narrator.output = out
    narrated, quiet = writer(server).on(Narrator), writer(server, "quiet")
    server.enqueue(Reply.tool("read_notes", {"path": "notes.md"}), "Done.", "Also done.")
    await narrated.arun("one")
    await quiet.arun("two")
    assert out.getvalue() == ('  · writer: thinking…\n  · → read_notes path="notes.md"\n'
                              "  · writer: thinking…\n")


async def test_on_a_network_it_narrates_the_robots_of_that_network(server: FakeLLMServer,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    network = Network("team").on(Narrator)
    network.task("draft", writer(server, "drafter"))
    server.enqueue("A draft.")
    await network.arun("Write")
    assert capsys.readouterr().err == "  · drafter: thinking…\n"  # the default output: stderr


async def test_arguments_are_clipped_to_their_first_line_and_a_broken_output_never_breaks_the_run(
        server: FakeLLMServer) -> None:
    def broken(line: str) -> Any:
        raise OSError("the terminal went away")

    long = "x" * (MAX + 5) + "\nsecond line"
    lines: list[str] = []
    Narrator.enable(output=lines.append)
    server.enqueue(Reply.tool("read_notes", {"path": long}), "Done.")
    await writer(server).arun("read")
    assert lines[1] == f'  · → read_notes path="{"x" * MAX}…"'
    assert lines[2] == f"  ·   ✗ Error (read_notes): no such file: {'x' * (MAX - len('Error (read_notes): no such file: '))}…"

    Narrator.output = broken
    server.enqueue(Reply.tool("read_notes", {"path": "nowhere"}), "Still done.")
    result = await writer(server).arun("again")
    assert result.last_text_content == "Still done."


async def test_enabling_twice_narrates_once_and_secrets_in_arguments_are_masked(server: FakeLLMServer) -> None:
    secret = "sk-narrator-test-0123456789abcdef"
    secrets.register_secret(secret, name="NOTES_TOKEN")
    try:
        lines: list[str] = []
        Narrator.enable(output=io.StringIO())
        Narrator.enable(output=lines.append)
        server.enqueue(Reply.tool("read_notes", {"path": f"notes.md?token={secret}"}), "Done.")
        await writer(server).arun("read")
    finally:
        secrets.forget_secrets([secret])
    assert lines[:2] == ["  · writer: thinking…", '  · → read_notes path="notes.md?token=<NOTES_TOKEN>"']
    assert secret not in "".join(lines)


def test_the_default_output_is_stderr_as_it_is_when_a_line_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    replaced = io.StringIO()
    monkeypatch.setattr(sys, "stderr", replaced)
    Narrator._say("hello")
    assert replaced.getvalue() == "  · hello\n"
    assert Narrator.namespace == "narrator"


def test_robotlab_run_narrate_writes_the_lines_on_stderr_beside_the_plain_answer(robotlab_home: Path,
                                                                                 tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.md").write_text("The answer is 42.\n")
    with FakeLLMServer() as llm:
        llm.enqueue(Reply.tool("read_file", {"path": "notes.md"}), Reply.tool("read_file", {"path": "gone.md"}),
                    "It says 42.")
        result = subprocess.run(
            [sys.executable, "-m", "workspace", "run", "assistant", "What do my notes say?", "--plain", "--narrate",
             "--no-record", "--model", "openai/fake", "--api-base", llm.base_url + "/v1", "--folder", str(folder)],
            capture_output=True, text=True, cwd=ROOT, timeout=120,
            env={**os.environ, "ROBOT_LAB_DEMO__DELAY": "0"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "It says 42."
    narrated = [line for line in result.stderr.splitlines() if line.startswith("  · ")]
    assert narrated[:3] == ["  · assistant: thinking…", '  · → read_file path="notes.md"',
                            "  · assistant: thinking…"]
    assert narrated[3] == '  · → read_file path="gone.md"'
    assert narrated[4].startswith("  ·   ✗ ") and "gone.md" in narrated[4]
    assert narrated[5:] == ["  · assistant: thinking…"]


def test_robotlab_network_run_narrate_names_each_robot(robotlab_home: Path, tmp_path: Path) -> None:
    network = tmp_path / "pair.yaml"
    network.write_text("name: pair\nmcp: none\nrobots:\n  first: {system_prompt: You go first., tools: none}\n"
                       "  second: {system_prompt: You go second., tools: none}\n"
                       "tasks:\n  one: {robot: first}\n  two: {robot: second, depends_on: [one]}\n")
    with FakeLLMServer() as llm:
        result = subprocess.run(
            [sys.executable, "-m", "workspace", "network", "run", str(network), "Go", "--plain", "--narrate",
             "--no-record", "--model", "openai/fake", "--api-base", llm.base_url + "/v1"],
            capture_output=True, text=True, cwd=ROOT, timeout=120, env={**os.environ, "ROBOT_LAB_DEMO__DELAY": "0"})
    assert result.returncode == 0, result.stderr
    narrated = [line for line in result.stderr.splitlines() if line.startswith("  · ")]
    assert narrated == ["  · first: thinking…", "  · second: thinking…"]
