"""Replaying a recorded thread (workspace.replay) against the loopback model server with scripted answers: a
replay that matches passes; a changed prompt makes the model call another tool and the divergence is named at
its turn; recorded results are served and nothing runs (a tool that writes a marker file never writes it);
``run_new_calls`` runs a new call through approval; ``judged`` asks a model; a recorded call run again runs the
tool, not the model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply
from fakes.replay_record import MESSAGES, RECORD, Tools, allow_all, provider, record, robot

from workspace.approval import ApprovalDecision, ApprovalGate, ApprovalPolicy, ApprovalRequest
from workspace.persistence import Store
from workspace.replay import NOT_RUN, ReplayError, model_judge, read_thread, replay, rerun_call, use_prompt
from workspace.robot import Robot
from workspace.session import Workspace

pytestmark = pytest.mark.timeout(120)


async def test_a_replay_that_matches_serves_the_record_and_runs_nothing(tmp_path: Path) -> None:
    tools = Tools(tmp_path / "marker.txt")
    store, thread_id = await record(tmp_path, tools)
    with FakeLLMServer() as server:
        server.enqueue(*RECORD)
        result = await replay(store, thread_id, robot(server, tools), tolerance="exact")
        requests = server.requests
    assert not result.diverged and result.divergences == []
    assert (result.served, result.executed) == (2, 0)
    assert tools.ran == [] and not tools.marker.exists()  # the marker tool never ran
    # The model was given the recorded results as the tools' answers.
    sent = json.dumps(requests[1]["messages"])
    assert "tea is number 1" in sent
    replayed = store.get_thread(result.thread_id)
    assert replayed.metadata["replay_of"] == thread_id
    assert [t.user_text for t in store.path(result.thread_id)] == MESSAGES
    assert store.turn_result(store.path(result.thread_id)[-1].id) is not None


async def test_a_changed_prompt_calls_another_tool_and_the_divergence_is_named_at_its_turn(tmp_path: Path) -> None:
    tools = Tools(tmp_path / "marker.txt")
    store, thread_id = await record(tmp_path, tools)
    changed = tmp_path / "prompt.md"
    changed.write_text("Always check the weather.", encoding="utf-8")

    def model(body: dict[str, Any]) -> Reply | None:
        system = body["messages"][0]["content"]
        last = body["messages"][-1]
        if "weather" in str(system) and last["role"] == "user" and "bye" in str(last["content"]):
            return Reply.tool("weather", {"city": "Oslo"})
        return None

    with FakeLLMServer(reply_fn=model) as server:
        server.enqueue(*RECORD[:3])  # turn 1 as recorded; turn 2 is the scripted model's
        bot = robot(server, tools)
        use_prompt(bot, changed.read_text(encoding="utf-8"))
        result = await replay(store, thread_id, bot, tolerance="tools")
        requests = server.requests
    assert result.diverged
    first = result.first_divergence()
    assert first is not None and (first.turn, first.kind) == (2, "tool")
    assert "weather" in first.detail
    assert not result.turns[0].diverged and result.turns[1].diverged
    assert [(c.turn, c.call.name, c.ran) for c in result.new_calls] == [(2, "weather", False)]
    assert tools.ran == []  # the new call was not run ...
    told = json.dumps(requests[-1]["messages"])  # ... and the model was told so
    assert "was not run" in told and NOT_RUN.split("{")[0] in told


async def test_run_new_calls_runs_the_new_call_through_approval(tmp_path: Path) -> None:
    tools = Tools(tmp_path / "marker.txt")
    store, thread_id = await record(tmp_path, tools)
    asked: list[str] = []

    async def ask(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request.tool)
        return ApprovalDecision(approved=True)

    gate = ApprovalGate(ApprovalPolicy.from_list([{"tool": "*", "action": "ask"}]), ask)
    with FakeLLMServer() as server:
        server.enqueue(*RECORD[:3], Reply.tool("weather", {"city": "Oslo"}), "Sunny, goodbye.")
        result = await replay(store, thread_id, robot(server, tools), run_new_calls=True, approval=gate)
    assert asked == ["weather"]  # recorded calls are served without asking; the new one is asked
    assert tools.ran == ["weather"] and result.executed == 1 and result.served == 2
    assert [(c.call.name, c.ran) for c in result.new_calls] == [("weather", True)]
    kinds = {(d.turn, d.kind) for d in result.divergences}
    assert (2, "tool") in kinds and (2, "answer") in kinds


async def test_other_arguments_and_another_answer_are_diffed(tmp_path: Path) -> None:
    tools = Tools(tmp_path / "marker.txt")
    store, thread_id = await record(tmp_path, tools)
    with FakeLLMServer() as server:
        server.enqueue(Reply.tool("lookup", {"query": "coffee"}), Reply.tool("mark", {"note": "tea"}),
                       "Coffee is number 1.", "Goodbye.")
        result = await replay(store, thread_id, robot(server, tools), tolerance="exact")
    assert tools.ran == []
    args = next(d for d in result.divergences if d.kind == "arguments")
    assert args.turn == 1 and '-  "query": "tea"' in args.diff and '+  "query": "coffee"' in args.diff
    answer = next(d for d in result.divergences if d.kind == "answer")
    assert answer.counts and "-Tea is number 1." in answer.diff and "+Coffee is number 1." in answer.diff


async def test_tools_tolerance_lets_the_answer_differ_and_judged_asks_a_model(tmp_path: Path) -> None:
    tools = Tools(tmp_path / "marker.txt")
    store, thread_id = await record(tmp_path, tools)
    other = [*RECORD[:2], "Tea: number one.", "Goodbye."]
    with FakeLLMServer() as server:
        server.enqueue(*other)
        loose = await replay(store, thread_id, robot(server, tools), tolerance="tools")
        assert not loose.diverged and [d.kind for d in loose.divergences] == ["answer"]
        with FakeLLMServer() as judge_server:
            judge_server.enqueue("SAME")
            server.enqueue(*other)
            judged = await replay(store, thread_id, robot(server, tools), tolerance="judged",
                                  judge=model_judge(provider(judge_server)))
            judge_server.enqueue("DIFFERENT")
            server.enqueue(*other)
            refused = await replay(store, thread_id, robot(server, tools), tolerance="judged",
                                   judge=model_judge(provider(judge_server)))
            asked = json.dumps(judge_server.requests[0]["messages"])
    assert not judged.diverged and "means the same" in judged.divergences[0].detail
    assert refused.diverged and "something else" in refused.divergences[0].detail
    assert "Tea is number 1." in asked and "Tea: number one." in asked
    with pytest.raises(ReplayError, match="--judge"):
        await replay(store, thread_id, Robot("helper", system_prompt="You help."), tolerance="judged")


async def test_rerun_runs_the_tool_not_the_model(tmp_path: Path) -> None:
    tools = Tools(tmp_path / "marker.txt")
    store, thread_id = await record(tmp_path, tools)
    call_id = next(c.id for c in read_thread(store, thread_id)[0][0].calls if c.name == "lookup")
    with FakeLLMServer() as server:
        again = await rerun_call(store, thread_id, call_id, robot(server, tools), approval=allow_all())
        edited = await rerun_call(store, thread_id, call_id, robot(server, tools), approval=allow_all(),
                                  arguments={"query": "milk"})
        assert server.requests == []  # the model was not asked
    assert tools.ran == ["lookup", "lookup"]
    assert again.old == {"data": "tea is number 1"} and again.new == {"data": "tea is number 2"}
    assert again.changed and '-  "data": "tea is number 1"' in again.diff and '+  "data": "tea is number 2"' in again.diff
    assert edited.arguments == {"query": "milk"} and edited.new == {"data": "milk is number 3"}
    with pytest.raises(ReplayError, match="no tool call"):
        await rerun_call(store, thread_id, "nope", Robot("helper", system_prompt="You help."))


async def test_a_denied_rerun_does_not_run(tmp_path: Path) -> None:
    tools = Tools(tmp_path / "marker.txt")
    store, thread_id = await record(tmp_path, tools)
    call_id = next(c.id for c in read_thread(store, thread_id)[0][0].calls if c.name == "mark")
    gate = ApprovalGate(ApprovalPolicy.from_list([{"tool": "mark", "action": "deny"}]))
    with FakeLLMServer() as server:
        result = await rerun_call(store, thread_id, call_id, robot(server, tools), approval=gate)
    assert tools.ran == [] and not tools.marker.exists()
    assert "Denied" in str(result.new["error"])


async def test_a_different_change_proposed_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.md").write_text("old\n", encoding="utf-8")
    store = Store(tmp_path / "threads.db")
    write = Reply.tool("write_file", {"path": "notes.md", "content": "new\n"})
    with FakeLLMServer() as server:
        server.enqueue(write, "Written.")
        workspace = Workspace(store=store, approval=allow_all(), folder=project)
        bot = Robot("writer", system_prompt="You write.", provider=provider(server), tools=["write_file"])
        session = workspace.new_thread("writer", robot=bot)
        await session.send("Update the notes").wait()

        def writer() -> Robot:
            return Robot("writer", system_prompt="You write.", provider=provider(server), tools=["write_file"])

        server.enqueue(write, "Written.")
        same = await replay(store, session.thread_id, writer(), folder=project)
        server.enqueue(Reply.tool("write_file", {"path": "notes.md", "content": "new\nand more\nlines\n"}),
                       "Written.")
        other = await replay(store, session.thread_id, writer(), folder=project, run_new_calls=True,
                             approval=allow_all(), tolerance="tools")
    assert (project / "notes.md").read_text() == "old\n"  # proposed in review, never written
    assert not same.diverged and same.turns[0].replayed.changes == same.turns[0].recorded.changes != []
    kinds = [d.kind for d in other.divergences]
    assert other.diverged and "arguments" in kinds and "change" in kinds
    change = next(d for d in other.divergences if d.kind == "change")
    assert '"added": 1' in change.diff and '"added": 3' in change.diff


async def test_a_messages_attachments_are_sent_again(tmp_path: Path) -> None:
    from workspace.attachments import Attachment

    tools = Tools(tmp_path / "marker.txt")
    store = Store(tmp_path / "threads.db")
    notes = Attachment.from_bytes(b"The secret word is teapot.\n", name="notes.md", mime="text/markdown")
    with FakeLLMServer() as server:
        server.enqueue("It says teapot.")
        session = Workspace(store=store, approval=allow_all()).new_thread("helper", robot=robot(server, tools))
        await session.send("What do the notes say?", attachments=[notes]).wait()
        server.enqueue("It says teapot.")
        result = await replay(store, session.thread_id, robot(server, tools))
        sent = [json.dumps(r["messages"]) for r in server.requests]
    assert not result.diverged
    assert len(sent) == 2 and "teapot" in sent[0] and "teapot" in sent[1]


async def test_rerun_of_a_file_tool_proposes_and_the_policy_decides_by_what_it_does(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.md").write_text("old\n", encoding="utf-8")
    store = Store(tmp_path / "threads.db")

    def writer(server: FakeLLMServer) -> Robot:
        return Robot("writer", system_prompt="You write.", provider=provider(server), tools=["write_file"])

    with FakeLLMServer() as server:
        server.enqueue(Reply.tool("write_file", {"path": "notes.md", "content": "new\n"}), "Written.")
        session = Workspace(store=store, approval=allow_all(), folder=project).new_thread("writer",
                                                                                          robot=writer(server))
        await session.send("Update the notes").wait()
        call_id = next(c.id for c in read_thread(store, session.thread_id)[0][0].calls)
        asked = len(server.requests)
        # Emptying a file is deleting it, and deleting is denied: the policy sees what the call does.
        gate = ApprovalGate(ApprovalPolicy.from_list([{"tool": "delete_file", "action": "deny"},
                                                      {"tool": "*", "action": "allow"}], empty_write_is_delete=True))
        again = await rerun_call(store, session.thread_id, call_id, writer(server), approval=gate, folder=project)
        emptied = await rerun_call(store, session.thread_id, call_id, writer(server), approval=gate, folder=project,
                                   arguments={"path": "notes.md", "content": ""})
        assert len(server.requests) == asked  # the model was not asked
    assert "error" not in again.new and "notes.md" in json.dumps(again.new)
    assert "Denied" in str(emptied.new["error"]) and "delet" in str(emptied.new["error"]).lower()
    assert (project / "notes.md").read_text() == "old\n"  # proposed for review, never written
