"""``robotlab run`` in a real process whose robot delegates work to another robot in the background: SIGTERM while
the run goes on stops the run and the delegation (the delegate's request to the loopback server is cut off, none
follows, the command exits 143); Ctrl-C in ``robotlab chat``, which goes on, stops the answer's delegation too (it
would otherwise go on); a run that ends while its delegation still works ends the command all the same,
the delegation stopped with it rather than left waiting for its model. The manager's tool is registered by a small
launcher script before the command line starts, as a program that adds tools would (``fakes.delegating_launcher``). (The end of ``asyncio.run``
cancels what is left, so a whole process never kept the delegation alive; these guard that. That the delegation
stops with the run itself, before the command goes on to its end, is ``test_stop_delegated_work``'s SIGTERM test.)"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from tests.fakes.delegating_launcher import ROOT, ended, helper_requests, start, write_launcher

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="signals")

def replies(*, manager_waits: bool) -> Any:
    """The model: the helper's call waits for ever (two minutes); the manager calls its tool, then answers (at once,
    or after the same wait when ``manager_waits``)."""

    def reply(body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        if "You help" in str(system):
            return Reply.say("Late answer.", stall_before=120)
        if messages[-1]["role"] == "tool":
            return Reply.say("Started it.", stall_before=120 if manager_waits else 0)
        return Reply.tool("start_helper", {})

    return reply


@pytest.fixture
def launcher(robotlab_home: Path, tmp_path: Path) -> Iterator[tuple[Path, FakeLLMServer]]:
    """The launcher (``fakes.delegating_launcher``), the manager's model and the helper's on one server."""
    with FakeLLMServer() as server:
        yield write_launcher(robotlab_home, tmp_path / "launch.py", server.base_url + "/v1"), server


def wait_for(predicate: Any, what: str, *, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60  # bounds a hang only
    while not predicate():
        if time.monotonic() > deadline or proc.poll() is not None:
            raise AssertionError(f"never saw {what} (exit status {proc.poll()})")
        time.sleep(0.05)


def test_sigterm_stops_the_run_and_what_it_delegated(launcher: tuple[Path, FakeLLMServer]) -> None:
    script, server = launcher
    server.reply_fn = replies(manager_waits=True)
    proc = start(script, server)
    try:
        # The manager's second call and the delegate's first: one goes out, the other waits its turn (a server on
        # this machine takes one request at a time).
        wait_for(lambda: len(server.requests) == 2, "the manager's second call or the delegate's first", proc=proc)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        status, err = ended(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert status == 128 + signal.SIGTERM and "Traceback" not in err
    assert server.wait_for_disconnects(1, timeout=30)  # the request going out was cut off
    time.sleep(0.3)
    assert len(server.requests) == 2 and helper_requests(server) <= 1  # and the one waiting never went


def test_a_run_that_ends_before_its_delegation_ends_the_command(launcher: tuple[Path, FakeLLMServer]) -> None:
    script, server = launcher
    server.reply_fn = replies(manager_waits=False)
    proc = start(script, server)
    try:
        status, err = ended(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert status == 0, err
    assert helper_requests(server) <= 1 and "Traceback" not in err
    if helper_requests(server):  # its model was asked before the run ended: that request was cut off
        assert server.wait_for_disconnects(1, timeout=30)


def test_ctrl_c_in_a_chat_stops_the_answer_and_what_it_delegated(launcher: tuple[Path, FakeLLMServer]) -> None:
    """``robotlab chat`` goes on after Ctrl-C, so what the stopped answer delegated would go on with it: it is
    stopped too (the request going out is cut off, the one waiting its turn never goes)."""
    import re

    pexpect = pytest.importorskip("pexpect")
    script, server = launcher
    server.reply_fn = replies(manager_waits=True)
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "TERM": "xterm"}
    child = pexpect.spawn(sys.executable, [str(script), "chat", "manager", "--model", "openai/fake", "--api-base",
                                           server.base_url + "/v1"], env=env, cwd=str(ROOT), encoding="utf-8",
                          timeout=60, dimensions=(30, 160))

    def expect(text: str) -> None:
        while child.expect([re.escape(text), re.escape("\x1b[6n")]) != 0:
            child.send("\x1b[1;1R")  # the cursor position prompt_toolkit asks for, answered as a terminal would

    try:
        expect("Alt+Enter or Esc Enter: new line")
        child.send("get the helper going\r")
        deadline = time.monotonic() + 60  # bounds a hang only
        while len(server.requests) < 2:
            assert time.monotonic() < deadline and child.isalive(), "the two model calls never came"
            with contextlib.suppress(pexpect.TIMEOUT):
                child.expect(re.escape("\x1b[6n"), timeout=0.1)
                child.send("\x1b[1;1R")
        time.sleep(0.5)
        child.sendintr()
        expect("Stopping the answer")
        expect("Alt+Enter or Esc Enter: new line")  # the chat goes on
        assert server.wait_for_disconnects(1, timeout=30)  # the request going out was cut off
        time.sleep(1.0)
        assert len(server.requests) == 2  # and the one waiting its turn never went
    finally:
        child.close(force=True)
