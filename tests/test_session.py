"""Workspace / ThreadSession / RecordedRun: recorded runs, forks, branches, stop, quit and crash."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from workspace import events as ev
from workspace.approval import ApprovalDecision, ApprovalGate, ApprovalPolicy, ApprovalRequest, CallbackGate
from workspace.errors import ConfigurationError
from workspace.messages import ToolCallMessage, ToolResultMessage
from workspace.persistence import Store
from workspace.providers.testing import Fail, Pause, ScriptedProvider, ToolCall
from workspace.session import RecordedRun, ThreadSession, Workspace, title_from
from workspace.session.recording import NOT_SAVED

ROOT = Path(__file__).resolve().parent.parent

ROBOT = """\
---
name: helper
description: A robot for the tests
tools: [remember, recall]
---
You help.
"""


@pytest.fixture(autouse=True)
def helper_robot(robotlab_home: Path) -> Path:
    path = robotlab_home / "config" / "robots" / "helper.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(ROBOT, encoding="utf-8")
    return path


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "workspace.db"


@pytest.fixture
def provider() -> ScriptedProvider:
    return ScriptedProvider()


@pytest.fixture
async def ws(db: Path, provider: ScriptedProvider) -> Any:
    workspace = Workspace(db_path=db, provider=provider)
    yield workspace
    await workspace.aclose()


async def drain(run: RecordedRun) -> list[ev.Event]:
    return [e async for e in run]


def valid_conversation(messages: list[Any]) -> bool:
    open_ids: set[str] = set()
    for m in messages:
        if isinstance(m, ToolCallMessage):
            if open_ids:
                return False
            open_ids = {t.id or "" for t in m.tools}
        elif isinstance(m, ToolResultMessage):
            open_ids.discard(m.tool.id or "")
        elif open_ids:
            return False
    return not open_ids


async def wait_for(predicate: Any, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        if loop.time() > end:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.01)


# -- sending ----------------------------------------------------------------------------------------


async def test_send_records_every_event_before_it_is_seen(ws: Workspace, provider: ScriptedProvider) -> None:
    provider.enqueue(["Let me note that. ", ToolCall("remember", {"key": "city", "value": "Lisbon"}, id="c1")],
                     "Noted: Lisbon.")
    session = ws.new_thread("helper")
    assert session.thread.title is None
    run = session.send("Please remember that my favourite city is Lisbon, and then tell me about it at length")
    assert session.running
    stored_before_seen = []
    async for event in run:
        stored = ws.store.turn_events(run.turn_id)
        stored_before_seen.append(any(e.kind == event.kind and e.seq == event.seq for e in stored)
                                  or event.kind == "text_delta")
    assert all(stored_before_seen)
    assert not session.running and run.status == "finished" and run.recording_errors == []
    assert run.result is not None and run.result.last_text_content == "Noted: Lisbon."
    turn = ws.store.get_turn(run.turn_id)
    assert turn.status == "finished" and turn.run_id == run.run_id
    assert [e.kind for e in ws.store.turn_events(run.turn_id)] == [
        "run_started", "model_request", "text_delta", "usage", "text", "tool_use", "memory_changed", "tool_result",
        "model_request", "text_delta", "usage", "text", "run_finished",
    ]
    thread = session.thread
    assert thread.title == title_from("Please remember that my favourite city is Lisbon, and then tell me")
    assert thread.title is not None and len(thread.title) <= 61 and thread.title.endswith("…")
    assert thread.input_tokens > 0 and thread.output_tokens > 0 and thread.cost == 0.0
    assert session.usage().total_tokens == thread.input_tokens + thread.output_tokens
    assert thread.model == provider.label


async def test_second_run_gets_the_first_runs_tool_call_and_result(ws: Workspace, provider: ScriptedProvider,
                                                                   db: Path) -> None:
    provider.enqueue([ToolCall("remember", {"key": "k", "value": 1}, id="c1")], "Stored.", "Second.")
    session = ws.new_thread("helper", title="Keep")
    await drain(session.send("store k"))
    await drain(session.send("what did you store?"))
    sent = provider.history[-1].messages
    assert valid_conversation(sent)
    assert [(m.type, m.role) for m in sent] == [
        ("text", "user"), ("tool_call", "assistant"), ("tool_result", "tool_result"), ("text", "assistant"),
        ("text", "user"),
    ]
    assert sent[1].tools[0].name == "remember" and sent[2].content == {"data": {"key": "k", "stored": True}}
    assert session.thread.title == "Keep"  # titled threads keep their title

    # After a restart, a resumed thread gives the model the same conversation.
    await ws.aclose()
    again = ScriptedProvider(["Third."])
    ws2 = Workspace(db_path=db, provider=again)
    try:
        resumed = ws2.open_thread(session.thread_id)
        assert ws2.open_thread(session.thread_id) is resumed
        await drain(resumed.send("and now?"))
        resent = again.history[-1].messages
        assert [m.to_dict() for m in resent[:-1]] == [m.to_dict() for m in provider.history[-1].messages] + [
            {"type": "text", "role": "assistant", "content": "Second.", "stop_reason": "stop"}]
        assert resent[-1].content == "and now?"
    finally:
        await ws2.aclose()


async def test_a_send_does_not_reread_the_thread(ws: Workspace, provider: ScriptedProvider, db: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The session keeps the conversation: after the first send (or a reopened thread's load), a send reads
    no branch of the thread from the database, and the model gets exactly what the store rebuilds."""
    provider.enqueue([ToolCall("remember", {"key": "k", "value": 1}, id="c1")], "Stored.", "Two.", "Three.")
    session = ws.new_thread("helper")
    reads: list[str] = []
    names = ("path", "path_events", "history_messages", "thread_events")
    reals = {name: getattr(ws.store, name) for name in names}

    def counting(name: str) -> None:
        real = reals[name]

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            reads.append(name)
            return real(*args, **kwargs)
        monkeypatch.setattr(ws.store, name, wrapper)

    for name in names:
        counting(name)
    firsts: list[int] = []  # each run's first request to the model
    turns: list[str] = []
    for text in ("store k", "second", "third"):
        firsts.append(len(provider.history))
        run = session.send(text)
        await drain(run)
        await wait_for(lambda run=run: run.done)
        turns.append(run.turn_id)
    assert reads == []  # three sends, not one read of the thread's history
    for name, real in reals.items():
        monkeypatch.setattr(ws.store, name, real)
    for index, parent in zip(firsts[1:], turns, strict=False):
        sent = [m.to_dict() for m in provider.history[index].messages]
        assert sent[:-1] == [m.to_dict() for m in ws.store.history_messages(session.thread_id, parent)]
    assert len(provider.history[firsts[-1]].messages) == 7  # store k, call, result, Stored., second, Two., third
    truth = [m.to_dict() for m in ws.store.history_messages(session.thread_id, turns[-1])]

    # A reopened thread reads its conversation once, off the event loop; its sends read nothing more.
    await ws.aclose()
    again = ScriptedProvider(["Four."])
    ws2 = Workspace(db_path=db, provider=again)
    try:
        resumed = ws2.open_thread(session.thread_id)
        await resumed.load_conversation()
        monkeypatch.setattr(ws2.store, "path", lambda *a, **k: pytest.fail("the send read the thread's path"))
        await drain(resumed.send("fourth"))
        assert [m.to_dict() for m in again.history[-1].messages[:-1]] == truth
    finally:
        await ws2.aclose()


async def test_edit_and_resend_and_regenerate_fork(ws: Workspace, provider: ScriptedProvider) -> None:
    provider.enqueue("One.", "Two.", "Two, edited.", "Two, regenerated.", "Three.")
    session = ws.new_thread("helper")
    await drain(session.send("first"))
    second = session.send("second")
    await drain(second)
    edited = session.edit_and_resend(second.turn_id, "second, edited")
    await drain(edited)
    # The edited branch does not see the original second message.
    assert [m.content for m in provider.history[-1].messages] == ["first", "One.", "second, edited"]
    views = session.transcript()
    assert [v.user_text for v in views] == ["first", "second, edited"]
    assert (views[1].sibling_index, views[1].sibling_count) == (1, 2)
    assert views[1].sibling_ids == (second.turn_id, edited.turn_id)
    assert views[1].previous_sibling == second.turn_id and views[1].next_sibling is None
    assert views[1].text == "Two, edited."

    regen = session.regenerate(edited.turn_id)
    await drain(regen)
    assert [m.content for m in provider.history[-1].messages] == ["first", "One.", "second, edited"]
    views = session.transcript()
    assert views[1].user_text == "second, edited" and views[1].text == "Two, regenerated."
    assert (views[1].sibling_index, views[1].sibling_count) == (2, 3)

    # Back to the original branch; continue it.
    session.switch_branch(second.turn_id)
    views = session.transcript()
    assert [v.text for v in views] == ["One.", "Two."]
    await drain(session.send("third"))
    assert [m.content for m in provider.history[-1].messages] == ["first", "One.", "second", "Two.", "third"]
    assert [v.user_text for v in session.transcript()] == ["first", "second", "third"]
    # Switching to a turn selects its latest continuation.
    session.switch_branch(edited.turn_id)
    assert [v.text for v in session.transcript()] == ["One.", "Two, edited."]
    session.switch_branch(regen.turn_id)
    assert [v.text for v in session.transcript()] == ["One.", "Two, regenerated."]
    session.switch_branch(views[0].id)  # "first": its most recent continuation is "third"
    assert [v.user_text for v in session.transcript()] == ["first", "second", "third"]
    assert ws.store.get_thread(session.thread_id).turn_count == 5


async def test_stop_mid_stream_keeps_the_partial_text(ws: Workspace, provider: ScriptedProvider) -> None:
    never = asyncio.Event()
    provider.enqueue(["Once upon a time ", Pause(event=never), "never shown"])
    session = ws.new_thread("helper")
    run = session.send("tell me a story")
    seen: list[ev.Event] = []
    async for event in run:
        seen.append(event)
        if sum(1 for e in seen if e.kind == "text_delta") == 4:
            session.stop()
    assert seen[-1].kind == "run_cancelled"
    assert "".join(e.text for e in seen if isinstance(e, ev.TextDelta)) == "Once upon a time "
    turn = ws.store.get_turn(run.turn_id)
    assert turn.status == "cancelled" and run.status == "cancelled"
    views = session.transcript()
    assert views[0].status == "cancelled"
    assert [e.kind for e in views[0].events] == ["run_started", "model_request", "text", "run_cancelled"]
    assert views[0].text == "Once upon a time "
    assert [m.content for m in session.history()] == ["tell me a story", "Once upon a time "]
    assert ws.store.search("upon")[0].turn_id == run.turn_id


async def test_stop_right_after_send(ws: Workspace, provider: ScriptedProvider) -> None:
    provider.enqueue("never streamed")
    session = ws.new_thread("helper")
    run = session.send("hi")
    session.stop()
    terminal = await asyncio.wait_for(run.wait(), 10)
    assert terminal is not None and terminal.kind == "run_cancelled"
    assert ws.store.get_turn(run.turn_id).status == "cancelled"
    assert [v.user_text for v in session.transcript()] == ["hi"]


async def test_consumer_stopping_does_not_stop_recording(ws: Workspace, provider: ScriptedProvider) -> None:
    provider.enqueue(["A long answer with many words"])
    session = ws.new_thread("helper")
    run = session.send("go")
    async for _ in run:
        break  # the view went away
    terminal = await run.wait()
    assert terminal is not None and terminal.kind == "run_finished"
    assert ws.store.get_turn(run.turn_id).status == "finished"
    assert ws.store.turn_events(run.turn_id)[-1].kind == "run_finished"
    # Iterating late (or twice) replays the whole run.
    first, second = await asyncio.gather(drain(run), drain(run))
    assert first == second == run.events and first[0].kind == "run_started"


async def test_failed_run_is_recorded(ws: Workspace, provider: ScriptedProvider) -> None:
    provider.enqueue(["Partial ", Fail("the server hung up")], "Recovered.")
    session = ws.new_thread("helper")
    run = session.send("try")
    events = await drain(run)
    assert events[-1].kind == "run_failed" and run.status == "failed"
    assert ws.store.get_turn(run.turn_id).status == "failed"
    await drain(session.send("again"))
    assert [m.content for m in provider.history[-1].messages] == ["try", "Partial ", "again"]


async def test_approvals_are_recorded_and_denials_reach_the_model(db: Path, provider: ScriptedProvider) -> None:
    policy = ApprovalPolicy()
    policy.set_rule("ask", tool="remember")
    asked: list[ApprovalRequest] = []

    async def ask(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(approved=False, reason="not today")

    workspace = Workspace(db_path=db, provider=provider, approval=ApprovalGate(policy))
    workspace.approval.ask_fn = ask  # the front end plugs in its way of asking later
    try:
        provider.enqueue([ToolCall("remember", {"key": "k", "value": 1}, id="c1")], "OK, I won't.")
        session = workspace.new_thread("helper")
        run = session.send("remember k")
        await drain(run)
        assert asked and asked[0].thread_id == session.thread_id
        kinds = [e.kind for e in workspace.store.turn_events(run.turn_id)]
        assert kinds.index("approval_requested") < kinds.index("approval_decided") < kinds.index("tool_error")
        result_msg = provider.history[-1].messages[-1]
        assert result_msg.content == {"error": "Denied by the user: not today"}
    finally:
        await workspace.aclose()


async def test_a_thread_grant_holds_with_a_gate_written_as_a_function(db: Path, provider: ScriptedProvider) -> None:
    """A function gate that says "ask": "approve for this thread" is not asked again in that thread."""
    asked: list[ApprovalRequest] = []

    async def ask(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(approved=True, scope="thread")

    workspace = Workspace(db_path=db, provider=provider, approval=CallbackGate(lambda request: "ask", ask))
    try:
        provider.enqueue([ToolCall("remember", {"key": "k", "value": 1}, id="c1")], "noted",
                         [ToolCall("remember", {"key": "k", "value": 2}, id="c2")], "noted again")
        session = workspace.new_thread("helper")
        await drain(session.send("remember 1"))
        second = await drain(session.send("remember 2"))
        assert len(asked) == 1
        assert [e.kind for e in second if e.kind in ("approval_requested", "tool_result")] == ["tool_result"]
    finally:
        await workspace.aclose()


async def test_errors_name_the_problem(ws: Workspace, provider: ScriptedProvider) -> None:
    with pytest.raises(ConfigurationError, match="Unknown robot 'nobody'"):
        ws.new_thread("nobody")
    session = ws.new_thread("helper")
    with pytest.raises(ValueError, match="empty"):
        session.send("   ")
    provider.enqueue([Pause(seconds=5), "late"])
    run = session.send("slow")
    with pytest.raises(RuntimeError, match="stop the run"):
        session.send("another")
    with pytest.raises(RuntimeError, match="stop the run"):
        session.switch_branch(run.turn_id)
    session.stop()
    await run.wait()
    assert run.status == "cancelled"
    assert "helper" in [r.name for r in ws.robots()]


# -- recording failures, quitting, crashing ---------------------------------------------------------


async def test_recording_failure_does_not_kill_the_run(db: Path, provider: ScriptedProvider,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    store = Store(db, write_timeout=0.05, retry_after=0.0)
    workspace = Workspace(store=store, provider=provider)
    provider.enqueue(["Hello ", "there"])
    session = workspace.new_thread("helper")
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another program locks the database mid-run
    try:
        with caplog.at_level(logging.WARNING, logger="workspace.session"):
            run = session.send("hi")
            events = await drain(run)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert events[-1].kind == "run_finished"
    assert run.recording_errors and "locked" in run.recording_errors[0]
    # One warning for the failed writes (later ones are not logged again), one error for the run's end.
    assert len([r for r in caplog.records if r.message.startswith("could not record")]) == 1
    assert [r.levelname for r in caplog.records if "end of the run could not be saved" in r.message] == ["ERROR"]
    store.flush()  # the next write (here: an explicit flush) writes what was kept
    stored = store.turn_events(run.turn_id)
    # The notice that the end could not be saved is said live only (it is saved after all, now).
    assert [e.kind for e in stored if e.kind != "text_delta"] == [
        e.kind for e in run.events if e.kind != "text_delta" and not (
            isinstance(e, ev.RunStatus) and e.detail.startswith(NOT_SAVED))]
    assert "".join(e.text for e in stored if isinstance(e, ev.TextDelta)) == "Hello there"
    assert store.get_turn(run.turn_id).status == "finished"
    await workspace.aclose()
    store.close()


async def test_quit_mid_run_keeps_what_was_shown(db: Path, provider: ScriptedProvider) -> None:
    never = asyncio.Event()
    provider.enqueue([ToolCall("remember", {"key": "k", "value": 1}, id="c1")],
                     ["Half of the answer ", Pause(event=never), "the rest"])
    workspace = Workspace(db_path=db, provider=provider)
    session = workspace.new_thread("helper")
    run = session.send("do it")
    await wait_for(lambda: sum(1 for e in run.events if e.kind == "text_delta") >= 4)
    workspace.close()  # the window closes while the robot is still talking
    await asyncio.sleep(0.05)

    reopened = Workspace(db_path=db, provider=ScriptedProvider(["Back."]))
    try:
        thread = reopened.open_thread(session.thread_id)
        views = thread.transcript()
        assert views[0].status == "interrupted"
        kinds = [e.kind for e in views[0].events]
        assert kinds[:6] == ["run_started", "model_request", "usage", "tool_use", "memory_changed", "tool_result"]
        assert views[0].text == "Half of the answer "
        await drain(thread.send("continue"))
        assert valid_conversation(reopened.provider.history[-1].messages)  # type: ignore[union-attr]
    finally:
        await reopened.aclose()


async def test_aclose_lets_running_runs_record_their_end(db: Path, provider: ScriptedProvider) -> None:
    provider.enqueue(["Talking ", Pause(event=asyncio.Event())])
    workspace = Workspace(db_path=db, provider=provider)
    session = workspace.new_thread("helper")
    run = session.send("go")
    await wait_for(lambda: any(e.kind == "text_delta" for e in run.events))
    await workspace.aclose()
    assert run.done and run.status == "cancelled"
    with Store(db) as store:
        turn = store.get_turn(run.turn_id)
        assert turn.status == "cancelled"
        assert store.turn_events(run.turn_id)[-1].kind == "run_cancelled"


async def test_crash_mid_run_keeps_what_was_shown(db: Path, robotlab_home: Path) -> None:
    script = textwrap.dedent(f"""
        import asyncio, os
        from workspace.session import Workspace
        from workspace.providers.testing import Pause, ScriptedProvider

        async def main():
            never = asyncio.Event()
            provider = ScriptedProvider([["Streaming before the crash ", Pause(event=never)]])
            ws = Workspace(db_path={str(db)!r}, provider=provider)
            session = ws.new_thread("helper")
            run = session.send("crash please")
            async for event in run:
                if event.kind == "text_delta" and event.text.startswith("crash"):
                    await asyncio.sleep(0.8)  # longer than the flush interval (250 ms)
                    print(session.thread_id, run.turn_id, flush=True)
                    os._exit(3)

        asyncio.run(main())
    """)
    env = {**__import__("os").environ, "ROBOTLAB_HOME": str(robotlab_home)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, env=env,
                         timeout=60)
    assert out.returncode == 3, out.stderr
    thread_id, turn_id = out.stdout.split()
    workspace = Workspace(db_path=db, provider=ScriptedProvider())
    try:
        assert workspace.store.interrupted_turns == [turn_id]
        views = workspace.open_thread(thread_id).transcript()
        assert views[0].status == "interrupted"
        assert views[0].text == "Streaming before the crash "
    finally:
        await workspace.aclose()


def test_title_from() -> None:
    assert title_from("  hello\nworld ") == "hello"
    assert title_from("") is None
    long = "word " * 30
    title = title_from(long)
    assert title is not None and title.endswith("…") and len(title) <= 61
    assert title_from("x" * 100) == "x" * 60 + "…"


def test_workspace_defaults_use_the_data_dir(robotlab_home: Path) -> None:
    workspace = Workspace()
    try:
        assert workspace.store.db_path == robotlab_home / "data" / "workspace.db"
        assert isinstance(workspace.open_thread(workspace.store.create_thread(robot="helper").id), ThreadSession)
    finally:
        workspace.close()
