"""The library's half of storing why delegated work stopped (``Workspace.stop_delegated``): a delegation still
working after the run that started it ended is stopped by ``ThreadSession.stop`` or by closing the workspace, and the
delegate's run ends in that run's turn with the reason ("you pressed Stop…", "the workspace was closed…" or the one
the caller gives), once; a delegation stopped while its caller's run still goes ends in that run's recording; a
thread purged from the store gets no rows. The delegate is a robot on the loopback OpenAI-compatible server whose
model takes its time (``fakes.delegating_robots``' scene, ``slow_server``); the store a SQLite file."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fakes.delegating_robots import HANG, assert_stopped, manager_and_helper, until
from fakes.llm_server import FakeLLMServer

from workspace import events as ev


async def ended_while_delegating(server: FakeLLMServer, tmp_path: Path) -> tuple[Any, Any, list[Any]]:
    """A workspace on a SQLite file whose thread's run started a delegation and ended while the delegate's model
    still thinks (its run is in the turn): (the workspace, the thread's session, the delegations)."""
    from workspace.config import load_config
    from workspace.session import Workspace

    hold = asyncio.Event()
    manager, futures = manager_and_helper(server, hold=hold)
    workspace = Workspace(config=load_config(env={}), db_path=tmp_path / "t.db")
    session = workspace.new_thread("manager", robot=manager)
    run = session.send("get the helper going")
    await until(lambda: futures and server.requests, "the delegate's model call")
    hold.set()
    assert type(await asyncio.wait_for(run.wait(), HANG)).__name__ == "RunFinished"
    await until(lambda: not session.running, "the run's recording to end")
    assert not futures[0].done()
    return workspace, session, futures


def delegate_ends(db: Path, thread_id: str) -> list[ev.Event]:
    """The stored ends of the helper's runs in the thread (read through a connection of their own)."""
    from workspace.persistence import Store

    store = Store(db)
    try:
        return [e for _turn, e in store.thread_events(thread_id) if e.robot == "helper" and e.terminal]
    finally:
        store.close()


async def test_stop_after_the_run_ended_stores_that_you_pressed_stop(slow_server: FakeLLMServer,
                                                                     tmp_path: Path) -> None:
    from workspace.delegation import STOPPED_IN_BACKGROUND

    workspace, session, futures = await ended_while_delegating(slow_server, tmp_path)
    try:
        stopped = session.stop()
        await assert_stopped(slow_server, futures[0])
        assert [f.robot_name for f in stopped] == ["helper"]
        (end,) = delegate_ends(tmp_path / "t.db", session.thread_id)
        assert isinstance(end, ev.RunCancelled) and end.reason == STOPPED_IN_BACKGROUND
        assert end.run_id == futures[0].run_id and end.parent_tool_id == "c1"
        assert session.stop() == []  # nothing more runs, nothing more is stored
        assert len(delegate_ends(tmp_path / "t.db", session.thread_id)) == 1
    finally:
        workspace.close()


async def test_closing_the_workspace_stops_it_and_stores_why(slow_server: FakeLLMServer, tmp_path: Path) -> None:
    from workspace.delegation import STOPPED_AT_CLOSE

    workspace, session, futures = await ended_while_delegating(slow_server, tmp_path)
    workspace.close()
    await assert_stopped(slow_server, futures[0])
    (end,) = delegate_ends(tmp_path / "t.db", session.thread_id)
    assert isinstance(end, ev.RunCancelled) and end.reason == STOPPED_AT_CLOSE
    assert end.reason.startswith("the workspace was closed while it went on in the background")


async def test_the_caller_gives_the_reason_when_it_closes(slow_server: FakeLLMServer, tmp_path: Path) -> None:
    workspace, session, futures = await ended_while_delegating(slow_server, tmp_path)
    await workspace.aclose(timeout=HANG, delegated="the demo ended while it went on")
    await assert_stopped(slow_server, futures[0])
    (end,) = delegate_ends(tmp_path / "t.db", session.thread_id)
    assert isinstance(end, ev.RunCancelled) and end.reason == "the demo ended while it went on"


async def test_a_delegation_stopped_while_its_callers_run_goes_on_ends_in_that_runs_recording(
        slow_server: FakeLLMServer, tmp_path: Path) -> None:
    """Its turn is the running one: nothing is written beside the recording, so the run still ends once."""
    from workspace.config import load_config
    from workspace.session import Workspace

    hold = asyncio.Event()
    manager, futures = manager_and_helper(slow_server, hold=hold)
    workspace = Workspace(config=load_config(env={}), db_path=tmp_path / "t.db")
    try:
        session = workspace.new_thread("manager", robot=manager)
        run = session.send("get the helper going")
        await until(lambda: futures and slow_server.requests, "the delegate's model call")
        session.stop()
        assert type(await asyncio.wait_for(run.wait(), HANG)).__name__ == "RunCancelled"
        await assert_stopped(slow_server, futures[0])
        ends = delegate_ends(tmp_path / "t.db", session.thread_id)
        assert len(ends) <= 1 and all("in the background" not in (getattr(e, "reason", "") or "") for e in ends)
    finally:
        hold.set()
        workspace.close()


async def test_a_purged_thread_gets_no_rows(slow_server: FakeLLMServer, tmp_path: Path) -> None:
    from workspace.delegation import STOPPED_WITH_THREAD

    workspace, session, futures = await ended_while_delegating(slow_server, tmp_path)
    try:
        workspace.store.purge_thread(session.thread_id)
        assert [f.robot_name for f in workspace.stop_delegated(session.thread_id, reason=STOPPED_WITH_THREAD)] == [
            "helper"]
        await assert_stopped(slow_server, futures[0])
        assert workspace.store.thread_events(session.thread_id) == []
    finally:
        workspace.close()
