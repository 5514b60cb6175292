"""Stop stops what a run's robots delegated in the background, not only the run: a thread's Stop
(``ThreadSession.stop``, what the window's Stop and Esc use) while its run goes on or after it ended, and a command
line's SIGTERM on a run of no thread (``robotlab run --no-record``'s path: ``print_events``). The delegate is a robot
on the loopback OpenAI-compatible server whose model takes its time: stopped, its request is cut off (the server
sees the client go) and no other request follows; not stopped, the request would stay open until the model answered
and the delegate went on."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.bus_robots import robot
from fakes.delegating_robots import HANG, assert_stopped, manager_and_helper, until
from fakes.llm_server import FakeLLMServer

from workspace import Robot
from workspace.delegation import running_delegations
from workspace.providers.testing import Pause, ScriptedProvider, ToolCall
from workspace.tools.base import Tool


@pytest.mark.parametrize("run_goes_on", [True, False], ids=["while_the_run_goes_on", "after_the_run_ended"])
async def test_stop_stops_what_the_run_delegated(slow_server: FakeLLMServer, tmp_path: Path, run_goes_on: bool) -> None:
    """A thread's Stop while its run goes on (the run ends cancelled) or after the run finished: either way the
    delegation it started stops and the thread has none running."""
    from workspace.config import load_config
    from workspace.session import Workspace

    hold = asyncio.Event()
    manager, futures = manager_and_helper(slow_server, hold=hold if run_goes_on else None)
    workspace = Workspace(config=load_config(env={}), db_path=tmp_path / "t.db")
    try:
        session = workspace.new_thread("manager", robot=manager)
        run = session.send("get the helper going")
        if not run_goes_on:
            assert type(await asyncio.wait_for(run.wait(), HANG)).__name__ == "RunFinished"
        await until(lambda: futures and slow_server.requests, "the delegate's model call")
        assert not futures[0].done() and session.running == run_goes_on
        stopped = session.stop()
        if run_goes_on:
            assert type(await asyncio.wait_for(run.wait(), HANG)).__name__ == "RunCancelled"
        await assert_stopped(slow_server, futures[0])
        assert [f.robot_name for f in stopped] == ["helper"] and running_delegations(session.thread_id) == []
    finally:
        hold.set()
        workspace.close()


@pytest.mark.skipif(sys.platform == "win32", reason="signals")
async def test_sigterm_on_a_run_of_no_thread_stops_what_it_delegated(slow_server: FakeLLMServer) -> None:
    """The command line's path (``print_events`` with its signal handlers): the run is cancelled and its background
    delegation with it, before the command goes on to its end (the delegation is kept by the run's id)."""
    from workspace.cli.runs import print_events

    hold = asyncio.Event()
    manager, futures = manager_and_helper(slow_server, hold=hold)
    printed: list[str] = []

    class Printer:
        def __call__(self, event: Any) -> None:
            printed.append(event.kind)

        def finish(self) -> None:
            pass

    run = manager.stream("get the helper going")

    async def terminate() -> None:
        await until(lambda: futures and slow_server.requests, "the delegate's model call")
        os.kill(os.getpid(), signal.SIGTERM)

    killer = asyncio.create_task(terminate())
    try:
        status, stopped = await asyncio.wait_for(print_events(run, Printer()), HANG)
        await killer
    finally:
        hold.set()
    assert (status, stopped.signal, printed[-1]) == (143, signal.SIGTERM, "run_cancelled")
    await assert_stopped(slow_server, futures[0])
    assert running_delegations(run.run_id) == []


async def test_what_a_delegate_delegates_in_turn_stops_with_the_run_of_no_thread(slow_server: FakeLLMServer) -> None:
    """A delegate's own background delegation belongs to the run that started the first one (the owner is carried
    into the delegation's task), so stopping that run's delegations stops both."""
    from workspace.delegation import owner_of, stop_delegations

    deep = robot("deep", slow_server, "You dig.")
    inner: list[Any] = []

    async def dig(arguments: dict[str, Any]) -> str:
        inner.append(await middle.delegate(to=deep, task="dig slowly", background=True))
        return "digging"

    middle = Robot("middle", system_prompt="You pass work on.", knowledge_store=False,
                   local_tools=[Tool("dig", "Start digging", {"type": "object", "properties": {}}, dig)],
                   provider=ScriptedProvider([[ToolCall("dig", {}, id="d1")], [Pause(HANG), "Dug."]]))
    outer: list[Any] = []

    async def start(arguments: dict[str, Any]) -> str:
        outer.append(await top.delegate(to=middle, task="pass it on", background=True))
        return "started"

    top = Robot("top", system_prompt="You start.", knowledge_store=False,
                local_tools=[Tool("start", "Start", {"type": "object", "properties": {}}, start)],
                provider=ScriptedProvider([[ToolCall("start", {}, id="c1")], "Started it."]))
    run = top.stream("go")
    async for _event in run:
        pass
    await until(lambda: inner and slow_server.requests, "the second delegate's model call")
    owner = owner_of(run)
    assert owner == run.run_id and {f.robot_name for f in running_delegations(owner)} == {"middle", "deep"}
    assert {f.robot_name for f in stop_delegations(owner)} == {"middle", "deep"}
    await assert_stopped(slow_server, inner[0])
    assert outer[0].done()


def test_the_end_of_a_delegate_stopped_after_its_caller_ended_is_stored_once(tmp_path: Path) -> None:
    """``record_stopped`` stores a ``run_cancelled`` with the reason for each delegate's run the turn started and
    never ended (nested as its ``run_started``, after its last event), and leaves alone a run that ended, a run
    of another turn and a run stored already. The store is a SQLite file."""
    from workspace import events as ev
    from workspace.delegation import STOPPED_IN_BACKGROUND, record_stopped
    from workspace.persistence import Store

    store = Store(tmp_path / "threads.db")
    try:
        thread = store.create_thread(robot="manager")
        turn = store.add_turn(thread.id, user_text="get the helpers going", parent_turn_id=None)
        nested = {"parent_run_id": "top", "parent_tool_id": "c1"}
        store.append_events(thread.id, turn.id, [
            ev.RunStarted(run_id="top", robot="manager", seq=1),
            ev.RunStarted(run_id="slow", robot="helper", seq=1, **nested),
            ev.Text(run_id="slow", robot="helper", seq=2, text="Working…", **nested),
            ev.RunStarted(run_id="quick", robot="helper", seq=1, **nested),
            ev.RunFinished(run_id="quick", robot="helper", seq=2, **nested),
            ev.RunFinished(run_id="top", robot="manager", seq=2),
        ])

        stored = record_stopped(store, thread.id, turn.id, ["slow", "quick", "elsewhere"])
        assert record_stopped(store, thread.id, turn.id, ["slow"]) == []  # stored already

        events = store.turn_events(turn.id)
        assert events[-1] == stored[0] and len(stored) == 1
        end = events[-1]
        assert isinstance(end, ev.RunCancelled) and end.run_id == "slow" and end.robot == "helper"
        assert end.reason == STOPPED_IN_BACKGROUND and end.seq == 3
        assert (end.parent_run_id, end.parent_tool_id) == ("top", "c1")
        assert store.get_turn(turn.id).status == "finished"  # the turn's own run finished: its status stays
    finally:
        store.close()
