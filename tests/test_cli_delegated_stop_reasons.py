"""The command line stops what a robot delegated in the background, and the thread it records says why, so its lane
in the window says it when the thread is opened there, not "not followed": ``robotlab run`` whose run ended while
its delegation still worked ("robotlab run ended while it went on…"); ``robotlab chat`` whose earlier answer's
delegation still works when Ctrl-C stops the next answer ("robotlab was interrupted (Ctrl-C) while it went on…"),
and when the chat ends ("the chat ended while it went on…"); ``robotlab run --compare`` whose candidate's run
ended while its delegation still worked, when Ctrl-C stops the comparison ("robotlab was interrupted (Ctrl-C) while
it went on…") and when the comparison ends ("robotlab run ended while it went on…"). Real processes
(``fakes.delegating_launcher``, which registers the manager's tool before the command line starts), the loopback
OpenAI-compatible server (one for the manager, one for the helper), the thread read back from the SQLite file the
commands wrote."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from tests.fakes.delegating_launcher import ROOT, ended, helper_requests, start, write_launcher

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="signals")

HANG = 60.0  # bounds a hang only


@dataclass
class Servers:
    """The manager's model (the command's ``--api-base``) and the helper's, on a loopback server each, so the
    manager's answer can wait for the helper's request (requests to one server on this machine go one at a time)."""

    manager: FakeLLMServer
    helper: FakeLLMServer
    script: Path


@pytest.fixture
def servers(robotlab_home: Path, tmp_path: Path) -> Iterator[Servers]:
    """The launcher (``fakes.delegating_launcher``: the manager's tool registered before the command line starts),
    its helper on a server of its own: the helper's model answers after two minutes."""
    with FakeLLMServer() as manager, FakeLLMServer() as helper:
        helper.reply_fn = lambda _body: Reply.say("Late answer.", stall_before=120)
        yield Servers(manager, helper, write_launcher(robotlab_home, tmp_path / "launch.py", helper.base_url + "/v1"))


def replies(helper: FakeLLMServer, *, stall_after: str | None = None) -> Any:
    """The manager's model: it calls its tool, then answers once the helper's model was asked (so the helper's run
    is in the answer, and goes on after it); a message containing ``stall_after`` gets an answer that waits two
    minutes."""

    def reply(body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        if messages[-1]["role"] == "tool":
            deadline = time.monotonic() + HANG
            while not helper_requests(helper) and time.monotonic() < deadline:
                time.sleep(0.05)
            return Reply.say("Started it.")
        if stall_after is not None and stall_after in str(messages[-1]["content"]):
            return Reply.say("Slow answer.", stall_before=120)
        return Reply.tool("start_helper", {})

    return reply


def helper_lane(home: Path, *, candidate: int | None = None) -> Any:
    """The helper's lane as the window shows the command's thread: the database the command wrote (its only thread;
    of a comparison, the thread of ``candidate``) opened by a workspace of its own, the turns fed to the chat's
    presenter."""
    from ui.chat.model.presenter import ChatPresenter
    from workspace.config import load_config
    from workspace.paths import database_path
    from workspace.session import Workspace

    assert str(database_path()).startswith(str(home))
    workspace = Workspace(config=load_config(env={}), db_path=database_path())
    try:
        (thread,) = [t for t in workspace.threads() if candidate is None or t.metadata.get("candidate") == candidate]
        presenter = ChatPresenter()
        for view in workspace.open_thread(thread.id).transcript():
            presenter.load_turn(view)
        lanes = [call.inner for call in presenter.calls() if call.inner is not None]
        assert lanes, "no delegate's lane in the thread"
        return lanes[0]
    finally:
        workspace.close()


def test_a_run_that_ended_before_its_delegation_stores_that_the_command_ended(
        servers: Servers, robotlab_home: Path) -> None:
    servers.manager.reply_fn = replies(servers.helper)
    proc = start(servers.script, servers.manager)
    try:
        status, err = ended(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert status == 0 and "Traceback" not in err, err
    assert helper_requests(servers.helper) == 1 and servers.helper.wait_for_disconnects(1, timeout=30)  # cut off
    lane = helper_lane(robotlab_home)
    assert lane.status == "cancelled"
    assert lane.reason == "robotlab run ended while it went on in the background after the run that started it ended"


@pytest.fixture
def chat(servers: Servers) -> Any:
    """``robotlab chat manager`` in a terminal (pexpect), and ``expect(text)``, which answers the cursor position
    prompt_toolkit asks for as a terminal would."""
    pexpect = pytest.importorskip("pexpect")
    script, server = servers.script, servers.manager
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "TERM": "xterm"}
    child = pexpect.spawn(sys.executable, [str(script), "chat", "manager", "--model", "openai/fake", "--api-base",
                                           server.base_url + "/v1"], env=env, cwd=str(ROOT), encoding="utf-8",
                          timeout=HANG, dimensions=(30, 160))

    def expect(text: str) -> None:
        while child.expect([re.escape(text), re.escape("\x1b[6n")]) != 0:
            child.send("\x1b[1;1R")

    def until(predicate: Any, what: str) -> None:
        deadline = time.monotonic() + HANG
        while not predicate():
            assert time.monotonic() < deadline and child.isalive(), f"never saw {what}"
            with contextlib.suppress(pexpect.TIMEOUT):
                child.expect(re.escape("\x1b[6n"), timeout=0.1)
                child.send("\x1b[1;1R")

    try:
        yield child, expect, until, servers
    finally:
        child.close(force=True)


def first_answer_delegates(chat: Any) -> None:
    """The first answer starts the helper's work and ends while the helper's model still thinks."""
    child, expect, _until, servers = chat
    expect("Alt+Enter or Esc Enter: new line")
    child.send("get the helper going\r")
    expect("Started it.")
    assert helper_requests(servers.helper) == 1 and servers.helper.disconnects == 0  # the helper still works


def quit_chat(child: Any, expect: Any) -> None:
    child.send("/quit\r")
    expect("Bye.")
    child.expect(__import__("pexpect").EOF)
    child.close()
    assert child.exitstatus == 0


def test_ctrl_c_in_a_chat_stores_that_it_stopped_an_earlier_answers_delegation(
        chat: Any, robotlab_home: Path) -> None:
    child, expect, until, servers = chat
    servers.manager.reply_fn = replies(servers.helper, stall_after="and now slowly")
    first_answer_delegates(chat)
    child.send("and now slowly\r")
    until(lambda: len(servers.manager.requests) == 3, "the second answer's model call")
    time.sleep(0.3)
    child.sendintr()  # stops the second answer, and the first answer's delegation with it
    expect("Stopping the answer")
    expect("Alt+Enter or Esc Enter: new line")
    assert servers.manager.wait_for_disconnects(1, timeout=30)  # the second answer's request was cut off
    assert servers.helper.wait_for_disconnects(1, timeout=30)  # and the helper's
    quit_chat(child, expect)
    lane = helper_lane(robotlab_home)
    assert lane.status == "cancelled"
    assert lane.reason == ("robotlab was interrupted (Ctrl-C) while it went on in the background after the run "
                           "that started it ended")


def test_ending_a_chat_stores_that_it_stopped_what_an_answer_delegated(chat: Any, robotlab_home: Path) -> None:
    child, expect, _until, servers = chat
    servers.manager.reply_fn = replies(servers.helper)
    first_answer_delegates(chat)
    quit_chat(child, expect)
    assert servers.helper.wait_for_disconnects(1, timeout=30)
    lane = helper_lane(robotlab_home)
    assert lane.status == "cancelled"
    assert lane.reason == "the chat ended while it went on in the background after the run that started it ended"


def compare(servers: Servers) -> subprocess.Popen[str]:
    """``robotlab run manager ... --compare openai/slow`` (``--json``): candidate 0's model (``fake``) answers as
    :func:`replies` says, candidate 1's (``slow``) after two minutes; the two candidates' requests go at the same
    time (the server takes them so)."""
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "ROBOT_LAB_LLM__MAX_CONCURRENT_REQUESTS": "4"}
    return subprocess.Popen([sys.executable, str(servers.script), "run", "manager", "get the helper going", "--json",
                             "--model", "openai/fake", "--api-base", servers.manager.base_url + "/v1", "--compare",
                             "openai/slow"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT, env=env)


def candidates(helper: FakeLLMServer, *, slow: bool) -> Any:
    """The manager's model for each candidate: ``fake`` delegates (:func:`replies`), ``slow`` answers after two
    minutes when ``slow``, else at once."""
    first = replies(helper)

    def reply(body: dict[str, Any]) -> Reply:
        if body["model"] == "slow":
            return Reply.say("Slow answer.", stall_before=120 if slow else 0)
        return first(body)

    return reply


def test_ctrl_c_in_a_comparison_stores_that_it_stopped_a_finished_candidates_delegation(
        servers: Servers, robotlab_home: Path) -> None:
    servers.manager.reply_fn = candidates(servers.helper, slow=True)
    proc = compare(servers)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # candidate 0's run ended (its delegation still works), candidate 1's goes on
            event = json.loads(line)
            if event["kind"] == "run_finished" and event["candidate"] == 0 and not event.get("parent_run_id"):
                break
        assert helper_requests(servers.helper) == 1 and servers.helper.disconnects == 0
        assert any(body["model"] == "slow" for body in servers.manager.requests)
        proc.send_signal(signal.SIGINT)
        _rest, err = proc.communicate(timeout=HANG)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert servers.helper.wait_for_disconnects(1, timeout=30)  # the helper's request was cut off
    lane = helper_lane(robotlab_home, candidate=0)
    assert lane.status == "cancelled"
    assert lane.reason == ("robotlab was interrupted (Ctrl-C) while it went on in the background after the run "
                           "that started it ended")


def test_a_comparison_that_ended_before_a_candidates_delegation_stores_that_the_command_ended(
        servers: Servers, robotlab_home: Path) -> None:
    servers.manager.reply_fn = candidates(servers.helper, slow=False)
    proc = compare(servers)
    try:
        _out, err = proc.communicate(timeout=HANG)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert helper_requests(servers.helper) == 1 and servers.helper.wait_for_disconnects(1, timeout=30)  # cut off
    lane = helper_lane(robotlab_home, candidate=0)
    assert lane.status == "cancelled"
    assert lane.reason == "robotlab run ended while it went on in the background after the run that started it ended"
