"""Switching a thread's model mid-thread: the next runs use it, the thread records it (its
metadata and a ``model_changed`` event after the turn it follows), reopened threads keep it, the chat
shows where it changed; the command line does the same."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer

from workspace import events as ev
from workspace.config import load_config
from workspace.exports import export_markdown
from workspace.session import Workspace


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(models=["fake", "other"]) as srv:
        yield srv


def _config(server: FakeLLMServer) -> Any:
    return load_config(env={}, overrides={"llm": {"model": "openai/fake", "api_base": server.base_url + "/v1",
                                                  "max_retries": 1}})


async def _send(session: Any, text: str) -> ev.Event | None:
    return await asyncio.wait_for(session.send(text).wait(), timeout=30)


async def test_a_switch_mid_thread_is_used_recorded_and_kept(server: FakeLLMServer, tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    ws = Workspace(config=_config(server), db_path=db)
    try:
        session = ws.new_thread("assistant")
        assert session.robot.model == "openai/fake" and session.chosen_model is None
        assert isinstance(await _send(session, "first"), ev.RunFinished)
        changed = session.set_model("openai/other")
        assert isinstance(changed, ev.ModelChanged)
        assert (changed.model, changed.previous, changed.robot_default) == ("openai/other", "openai/fake", False)
        assert changed.describe() == "Model changed to openai/other"
        assert session.thread.metadata["model"] == "openai/other"
        assert isinstance(await _send(session, "second"), ev.RunFinished)
        assert [r["model"] for r in server.requests] == ["fake", "other"]
        assert session.set_model("openai/other") is None  # no change: nothing recorded
        thread_id = session.thread_id
    finally:
        await ws.aclose()

    ws = Workspace(config=_config(server), db_path=db)  # reopened: the thread keeps its model
    try:
        session = ws.open_thread(thread_id)
        assert session.robot.model == "openai/other"
        assert isinstance(await _send(session, "third"), ev.RunFinished)
        assert server.requests[-1]["model"] == "other"
        # The switch sits after the turn it follows, in the stored events and the export.
        first_turn = ws.store.path(thread_id)[0]
        kinds = [type(e).__name__ for e in ws.store.turn_events(first_turn.id)]
        assert kinds[-1] == "ModelChanged"
        assert "*Model changed to openai/other*" in export_markdown(ws.store, thread_id)
        # Back to the robot's own: the metadata forgets the choice, the event says "robot default".
        back = session.set_model(None)
        assert back is not None and back.robot_default and back.describe() == "Model changed to openai/fake (robot default)"
        assert "model" not in session.thread.metadata
        assert session.robot.model == "openai/fake"
    finally:
        await ws.aclose()


async def test_a_local_servers_model_keeps_its_address(server: FakeLLMServer, tmp_path: Path) -> None:
    ws = Workspace(config=load_config(env={}, overrides={"llm": {"model": "openai/fake", "max_retries": 1}}),
                   db_path=tmp_path / "w.db")
    try:
        session = ws.new_thread("assistant")
        assert session.set_model("openai/other", api_base=server.base_url + "/v1") is None  # no turn yet
        assert session.thread.metadata["api_base"] == server.base_url + "/v1"
        assert isinstance(await _send(session, "hi"), ev.RunFinished)
        assert server.requests[-1]["model"] == "other"
    finally:
        await ws.aclose()


def test_a_hosted_model_is_not_sent_to_the_local_server(server: FakeLLMServer, tmp_path: Path) -> None:
    ws = Workspace(config=_config(server), db_path=tmp_path / "w.db")
    try:
        robot = ws.load_robot_with_model("assistant", "anthropic/claude-sonnet-4-5")
        assert getattr(robot.provider, "api_base", None) in (None, "")
        local = ws.load_robot_with_model("assistant", "openai/other")  # a name litellm does not know: the server's
        assert str(getattr(local.provider, "api_base", "") or getattr(local.provider, "base_url", "")).startswith(
            server.base_url)
    finally:
        ws.close()


def test_the_chat_shows_the_switch_live_and_reopened() -> None:
    from tests.ui.chat_dump import dump_state
    from ui.chat.model.presenter import ChatPresenter

    run = "r1"
    events: list[ev.Event] = [ev.RunStarted(run_id=run, robot="assistant", seq=1, model="openai/fake"),
                              ev.Text(run_id=run, robot="assistant", seq=2, text="hello"),
                              ev.RunFinished(run_id=run, robot="assistant", seq=3)]
    switch = ev.ModelChanged(run_id=run, robot="assistant", model="openai/other", previous="openai/fake")
    live = ChatPresenter()
    live.add_user("hi")
    live.feed_all(events)
    live.feed(switch)
    replayed = ChatPresenter()
    replayed.add_user("hi")
    replayed.feed_all([*events, switch])
    shown = dump_state(live.state)
    assert "notice [info] 'Model changed to openai/other'" in shown
    assert shown == dump_state(replayed.state)
    assert ev.event_from_dict(json.loads(ev.to_json(switch))) == switch


def test_run_thread_keeps_the_threads_model_unless_model_is_given(server: FakeLLMServer, robotlab_home: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from workspace.cli import main
    from workspace.persistence import Store

    base = ["--api-base", server.base_url + "/v1", "--plain"]
    assert main(["run", "assistant", "one", "--model", "openai/fake", *base]) == 0
    assert main(["run", "--continue", "two", *base]) == 0  # the thread's model
    assert main(["run", "--continue", "three", "--model", "openai/other", *base]) == 0  # switched, and recorded
    assert main(["run", "--continue", "four", *base]) == 0  # keeps the switch
    capsys.readouterr()
    assert [r["model"] for r in server.requests] == ["fake", "fake", "other", "other"]
    with Store(robotlab_home / "data" / "workspace.db") as store:
        (thread,) = store.list_threads()
        assert thread.metadata["model"] == "openai/other"
        turns = store.path(thread.id)
        switches = [e for e in store.turn_events(turns[1].id) if isinstance(e, ev.ModelChanged)]
        assert [(e.model, e.previous) for e in switches] == [("openai/other", "openai/fake")]


def test_chat_model_lists_numbered_and_records_the_switch(server: FakeLLMServer, robotlab_home: Path) -> None:
    import os
    import subprocess
    import sys

    from workspace.persistence import Store

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    script = "hello\n/model\n/model 2\nagain\n/model default\n/exit\n"
    result = subprocess.run([sys.executable, "-m", "workspace", "chat", "--model", "openai/fake", "--api-base",
                             server.base_url + "/v1"], input=script, capture_output=True, text=True, cwd=root,
                            env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"Local server at {server.base_url}/v1:" in out
    assert "*   1  openai/fake" in out and "    2  openai/other" in out
    assert "Model: openai/other from your next message on." in out
    assert "⇄" not in out  # the switch is recorded in the thread; the terminal says it in its own words
    assert "(the robot's own) from your next message on." in out
    assert [r["model"] for r in server.requests if isinstance(r, dict)] == ["fake", "other"]
    with Store(robotlab_home / "data" / "workspace.db") as store:
        (thread,) = store.list_threads()
        assert "model" not in thread.metadata  # /model default: no choice of the thread's any more
        switches = [e for t in store.path(thread.id) for e in store.turn_events(t.id) if isinstance(e, ev.ModelChanged)]
        assert [(e.model, e.previous, e.robot_default) for e in switches] == [
            ("openai/other", "openai/fake", False), ("openai/fake", "openai/other", True)]
