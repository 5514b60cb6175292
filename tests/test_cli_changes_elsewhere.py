"""``robotlab changes list/apply/undo/verify --thread ID`` run from another directory work on the folder the thread
recorded (the hints the command line prints name only the thread), and a ``robotlab run --folder`` whose stdin is
not a terminal keeps its proposals pending in the thread, verified, with the command that applies them. In
subprocesses, against the loopback model server, with a real folder and the real threads database."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.candidates import BASE, edited, project
from fakes.llm_server import FakeLLMServer, Reply

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.timeout(240)  # bounds a hang: a handful of Python start-ups on a loaded machine


def answer(body: dict[str, Any]) -> Reply:
    if body["messages"][-1].get("role") == "tool":
        return Reply.say("edited app.py")
    if "Edit app.py" not in str(body["messages"][-1].get("content")):
        return Reply.say("heard you")
    return Reply.tool("write_file", {"path": "app.py", "content": edited(body["model"])})


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(reply_fn=answer) as srv:
        yield srv


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return project(tmp_path)


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A directory that is not the project: where the commands are run from."""
    path = tmp_path / "elsewhere"
    path.mkdir()
    return path


def robotlab(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROBOT_LAB_DEMO__DELAY": "0", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "workspace", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=120, stdin=subprocess.DEVNULL)


def thread_ids(cwd: Path) -> list[str]:
    listed = robotlab("threads", "list", "--json", cwd=cwd)
    assert listed.returncode == 0, listed.stderr
    return [t["id"] for t in json.loads(listed.stdout)]


def test_changes_with_a_thread_work_on_its_folder_from_anywhere(server: FakeLLMServer, folder: Path,
                                                                elsewhere: Path) -> None:
    ran = robotlab("--folder", str(folder), "run", "file-helper", "Edit app.py", "--model", "openai/model-a",
                   "--api-base", server.base_url + "/v1", "--compare", "openai/model-b", cwd=elsewhere)
    assert ran.returncode == 0, ran.stderr
    first = thread_ids(elsewhere)[-1][:8]

    listed = robotlab("changes", "list", "--thread", first, "--json", cwd=elsewhere)
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    assert data["folder"] == str(folder)
    assert {h["id"] for h in data["hunks"]} == {"c0.f1.h1", "c0.f1.h2", "c1.f1.h1", "c1.f1.h2"}

    applied = robotlab("changes", "apply", "--thread", first, "--take", "c0.f1.h1", "c1.f1.h2", cwd=elsewhere)
    assert applied.returncode == 0, applied.stderr
    assert (folder / "app.py").read_text() == BASE.replace("line 2\n", "A two\n").replace("line 9\n", "B nine\n")
    hint = re.search(r"`robotlab (changes undo --thread \w+)`", applied.stdout)
    assert hint is not None, applied.stdout
    undone = robotlab(*hint.group(1).split(), cwd=elsewhere)  # the printed hint, as printed, from elsewhere
    assert undone.returncode == 0, undone.stderr
    assert (folder / "app.py").read_text() == BASE


def test_a_thread_without_a_folder_is_said_to_have_none(server: FakeLLMServer, elsewhere: Path) -> None:
    ran = robotlab("run", "assistant", "hello", "--model", "openai/model-a", "--api-base", server.base_url + "/v1",
                   cwd=elsewhere)
    assert ran.returncode == 0, ran.stderr
    thread = thread_ids(elsewhere)[-1][:8]
    for action in (["list"], ["undo"], ["verify"]):
        result = robotlab("changes", *action, "--thread", thread, cwd=elsewhere)
        assert result.returncode == 2, result.stdout
        assert f"Thread {thread} recorded no folder; give --folder DIR" in result.stderr, result.stderr


def test_a_run_without_a_terminal_keeps_its_proposal_pending_and_says_how_to_apply_it(
        server: FakeLLMServer, folder: Path, elsewhere: Path) -> None:
    from workspace import trust
    from workspace.isolation import SandboxUnavailable, sandbox_for_platform

    try:
        sandbox_for_platform()
    except SandboxUnavailable as exc:  # pragma: no cover - the suite's machine has bubblewrap
        pytest.skip(f"no sandbox on this machine: {exc}")
    (folder / ".robotlab").mkdir()
    (folder / ".robotlab" / "config.yaml").write_text("review:\n  verify: \"grep -q '^A two$' app.py\"\n")
    trust.trust(folder)
    ran = robotlab("run", "file-helper", "Edit app.py", "--folder", str(folder), "--model", "openai/model-a",
                   "--api-base", server.base_url + "/v1", cwd=elsewhere)
    assert ran.returncode == 0, ran.stderr
    out = ran.stdout + ran.stderr
    assert "--apply never" not in out  # not an option the person gave
    assert "✓ verify passed on the proposed changes" in out, out  # the verify ran, as in the interactive review
    assert (folder / "app.py").read_text() == BASE  # nothing written
    thread = thread_ids(elsewhere)[-1][:8]
    assert f"kept pending in thread {thread}" in out, out
    command = re.search(r"`robotlab (changes apply --thread \w+ --take [^`]+)`", out)
    assert command is not None, out

    listed = robotlab("changes", "list", "--thread", thread, "--json", cwd=elsewhere)
    assert listed.returncode == 0, listed.stderr
    assert [h["id"] for h in json.loads(listed.stdout)["hunks"]] == ["c0.f1.h1", "c0.f1.h2"]
    applied = robotlab(*command.group(1).split(), cwd=elsewhere)  # the command as printed
    assert applied.returncode == 0, applied.stderr
    assert (folder / "app.py").read_text() == edited("model-a")


def test_apply_never_given_still_discards(server: FakeLLMServer, folder: Path, elsewhere: Path) -> None:
    ran = robotlab("run", "file-helper", "Edit app.py", "--folder", str(folder), "--model", "openai/model-a",
                   "--api-base", server.base_url + "/v1", "--apply", "never", cwd=elsewhere)
    assert ran.returncode == 0, ran.stderr
    assert "NOT applied (--apply never)" in ran.stdout
    listed = robotlab("changes", "list", "--folder", str(folder), cwd=elsewhere)
    assert listed.returncode == 2 and "No thread has pending changes" in listed.stderr


def test_rerun_runs_a_recorded_call_in_the_threads_folder(folder: Path, elsewhere: Path) -> None:
    """`threads rerun ID CALL` without --folder, from another directory: the call runs in the folder the thread
    recorded (it said "No folder is open")."""
    with FakeLLMServer() as server:
        server.enqueue(Reply.tool("read_file", {"path": "app.py"}), "It has ten lines.")
        ran = robotlab("run", "file-helper", "Read app.py", "--folder", str(folder), "--model", "openai/model-a",
                       "--api-base", server.base_url + "/v1", "--json", cwd=elsewhere)
        assert ran.returncode == 0, ran.stderr
        events = [json.loads(line) for line in ran.stdout.splitlines() if line.startswith("{")]
        call_id = next(e["id"] for e in events if e["kind"] == "tool_use")
        (folder / "app.py").write_text("line 1 changed\n")
        thread = thread_ids(elsewhere)[-1][:8]
        rerun = robotlab("threads", "rerun", thread, call_id, "--json", cwd=elsewhere)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    data = json.loads(rerun.stdout)
    assert "line 1 changed" in json.dumps(data["new"]) and data["changed"]
