"""``run_command`` through ``robotlab run``, in a subprocess against the loopback model server and in the
real sandbox: the output printed as indented lines while it runs (``--json``: as events), a deny rule
holding against ``--yes``, the command's writes proposed and not on disk, and Ctrl-C stopping the command
and everything it started."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from workspace.isolation import SandboxUnavailable, sandbox_for_platform

try:
    sandbox_for_platform()
except SandboxUnavailable as exc:  # pragma: no cover - the suite's machine has bubblewrap
    pytest.skip(f"no sandbox on this machine: {exc}", allow_module_level=True)

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.timeout(180)


def command_line(folder: Path, server: FakeLLMServer, *extra: str) -> list[str]:
    return [sys.executable, "-m", "workspace", "--folder", str(folder), "run", "file-helper", "check it",
            "--model", "openai/fake", "--api-base", server.base_url + "/v1", *extra]


def robotlab(folder: Path, server: FakeLLMServer, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROBOT_LAB_DEMO__DELAY": "0"}
    return subprocess.run(command_line(folder, server, *extra), capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=120, stdin=subprocess.DEVNULL)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("old\n")
    return root


def policy(home: Path, text: str) -> None:
    path = home / "config" / "approval.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_the_output_prints_as_indented_lines_and_writes_are_only_proposed(robotlab_home: Path,
                                                                          folder: Path) -> None:
    policy(robotlab_home, "rules:\n  - {tool: run_command, command: 'printf *', action: allow}\n"
                          "  - {tool: run_command, command: sed, action: allow}\n")
    with FakeLLMServer() as server:
        server.enqueue(Reply.tool("run_command", {"command": "printf '\\033[32mgreen\\033[0m\\ntwo\\n'"}))
        server.enqueue(Reply.tool("run_command", {"command": "sed -i s/old/new/ a.txt"}))
        server.enqueue("It ran.")
        result = robotlab(folder, server, "--apply", "review")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "  │ green" in lines and "  │ two" in lines, result.stdout  # colours stripped, indented
    assert lines.index("  │ green") < lines.index("  │ two")
    assert any("proposed change: a.txt" in line for line in lines), result.stdout
    assert (folder / "a.txt").read_text() == "old\n"


def test_json_prints_the_output_as_events(robotlab_home: Path, folder: Path) -> None:
    with FakeLLMServer() as server:
        server.enqueue(Reply.tool("run_command", {"command": "echo from-the-sandbox"}))
        server.enqueue("It ran.")
        result = robotlab(folder, server, "--json", "--yes")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    kinds = [e["kind"] for e in events]
    assert kinds.index("tool_use") < kinds.index("tool_output") < kinds.index("tool_result")
    assert "".join(e["text"] for e in events if e["kind"] == "tool_output") == "from-the-sandbox\n"
    [done] = [e for e in events if e["kind"] == "tool_result"]
    assert done["payload"]["data"]["exit_code"] == 0


def test_a_deny_rule_holds_with_yes(robotlab_home: Path, folder: Path) -> None:
    policy(robotlab_home, "rules:\n  - {tool: run_command, action: allow}\n"
                          "  - {tool: run_command, command: 'rm *', action: deny}\n")
    with FakeLLMServer() as server:
        server.enqueue(Reply.tool("run_command", {"command": "ls && rm a.txt"}))
        server.enqueue("I could not.")
        result = robotlab(folder, server, "--json", "--yes")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    [error] = [e for e in events if e["kind"] == "tool_error"]
    assert "denies running `ls && rm a.txt`" in error["error"]
    assert not any(e["kind"] == "tool_output" for e in events)


def _processes_with(marker: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    if marker.encode() in fh.read():
                        found.append(int(pid))
            except OSError:
                continue
    return found


def test_ctrl_c_stops_the_command_and_everything_it_started(robotlab_home: Path, folder: Path) -> None:
    marker = f"{300 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    with FakeLLMServer() as server:
        server.enqueue(Reply.tool("run_command", {"command": f"sleep {marker} & sleep {marker} & echo started; wait"}))
        server.enqueue("Stopped.")
        env = {**os.environ, "ROBOT_LAB_DEMO__DELAY": "0", "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(command_line(folder, server, "--yes"), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env, stdin=subprocess.DEVNULL)
        try:
            assert proc.stdout is not None
            seen = []
            for line in proc.stdout:
                seen.append(line)
                if "│ started" in line:
                    break
            assert any("│ started" in line for line in seen), "".join(seen) + proc.stderr.read()  # type: ignore[union-attr]
            deadline = time.monotonic() + 30
            while len(_processes_with(marker)) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(_processes_with(marker)) >= 2
            proc.send_signal(signal.SIGINT)
            rest, _err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    deadline = time.monotonic() + 10  # bounds a hang: the sandbox kills the tree at once
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_with(marker) == []
    assert "[stopped: the command and everything it started were killed]" in rest
    assert "stopped" in rest.splitlines()[-1].lower() or "■" in rest, rest


def test_yes_does_not_answer_a_command_that_would_run_without_a_sandbox(robotlab_home: Path, folder: Path,
                                                                       tmp_path: Path) -> None:
    from workspace import trust

    trust.set_run_without_sandbox(folder, True)  # the user's own trust file (ROBOTLAB_HOME)
    policy(robotlab_home, "rules:\n  - {tool: run_command, action: allow}\n")
    empty = tmp_path / "bin"
    empty.mkdir()  # this machine without bubblewrap
    with FakeLLMServer() as server:
        server.enqueue(Reply.tool("run_command", {"command": "echo hi > out.txt"}))
        server.enqueue("It was not run.")
        env = {**os.environ, "ROBOT_LAB_DEMO__DELAY": "0", "PATH": str(empty)}
        result = subprocess.run(command_line(folder, server, "--yes"), capture_output=True, text=True, cwd=ROOT,
                                env=env, timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert not (folder / "out.txt").exists()  # neither the allow rule nor --yes ran it: nobody was asked
    assert "needs approval" in result.stdout + result.stderr
