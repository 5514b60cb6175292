"""``robotlab chat`` with ``run_command``, in a pseudo-terminal and the real sandbox, the offline demo
answering: the command is asked about with what it runs, its output appears as indented lines while it
runs, and Ctrl-C stops it and everything it started; the chat goes on."""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

import pytest
from fakes.chat_terminal import Terminal

from workspace.isolation import SandboxUnavailable, sandbox_for_platform

pytest.importorskip("pexpect")
pytestmark = [pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX"),
              pytest.mark.timeout(180)]

try:
    sandbox_for_platform()
except SandboxUnavailable as exc:  # pragma: no cover - the suite's machine has bubblewrap
    pytest.skip(f"no sandbox on this machine: {exc}", allow_module_level=True)


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


def test_ctrl_c_in_the_chat_stops_the_command(tmp_path: Path, robotlab_home: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "a.txt").write_text("hello\n", encoding="utf-8")
    marker = f"{300 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    chat = Terminal("file-helper", "--folder", str(folder))
    try:
        chat.say(f'run "sleep {marker} & sleep {marker} & echo started; wait"')
        asked = chat.expect("Approve? [y]es / [n]o / [t]his thread / [a]lways:")
        assert "running the command" in asked and f"sleep {marker}" in asked
        chat.child.send("y\r")
        chat.expect("│ started")
        deadline = time.monotonic() + 30
        while len(_processes_with(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_processes_with(marker)) >= 2
        chat.child.sendintr()
        out = chat.expect("■ stopped: interrupted (Ctrl-C)")
        assert "[stopped: the command and everything it started were killed]" in out
        deadline = time.monotonic() + 10  # bounds a hang: the sandbox kills the tree at once
        while _processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _processes_with(marker) == []
        chat.say("run cat a.txt")  # the chat goes on
        chat.expect("Approve?")
        chat.child.send("y\r")
        assert "│ hello" in chat.expect("✓ done")
        chat.say("/exit")
        chat.exit_status()
    finally:
        chat.child.close(force=True)
