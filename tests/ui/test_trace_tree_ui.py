"""The Trace dock's tree over a recorded thread (a real SQLite store, the loopback model server): the tree
shows the run, its model calls and the tool call with its usage; "Run again" on the tool call runs the
tool with the edited arguments through approval — and the model is not asked (the loopback server gets
no request) — and shows the new result beside the old with their diff; "Export trace" writes JSON; a
search keeps the matching call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer, Reply

from tests.fakes.app_window import wait_until
from workspace import events as ev
from workspace.approval import ApprovalGate, ApprovalPolicy
from workspace.persistence import Store
from workspace.providers.openai_provider import OpenAICompatibleProvider
from workspace.robot import Robot
from workspace.session import Workspace

pytestmark = pytest.mark.timeout(120)


class Tools:
    def __init__(self) -> None:
        self.ran: list[dict[str, Any]] = []

    def all(self) -> list[Any]:
        def lookup(query: str) -> str:
            """Look something up."""
            self.ran.append({"query": query})
            return f"{query} is number {len(self.ran)}"

        return [lookup]


class Session:
    """What the pane's "Run again" reads of the window's session: the open thread and the workspace."""

    def __init__(self, workspace: Workspace, thread: Any) -> None:
        self.workspace, self.session = workspace, thread

    def require_workspace(self) -> Workspace:
        return self.workspace


async def recorded(tmp_path: Path, server: FakeLLMServer, tools: Tools) -> tuple[Workspace, Any]:
    store = Store(tmp_path / "threads.db")
    server.enqueue(Reply.tool("lookup", {"query": "tea"}, usage=(50, 6)), Reply.say("Tea is number 1.", usage=(70, 4)))
    provider = OpenAICompatibleProvider("openai/fake", api_base=server.base_url + "/v1", api_key="sk-test",
                                        timeout=10.0, backoff=0.01, max_retries=0)
    robot = Robot("helper", system_prompt="You help.", provider=provider, tools=tools.all())
    workspace = Workspace(store=store, config=None,
                          approval=ApprovalGate(ApprovalPolicy.from_list([{"tool": "*", "action": "allow"}])))
    thread = workspace.new_thread("helper", robot=robot)
    await thread.send("What is tea?").wait()
    return workspace, thread


async def test_run_again_runs_the_tool_not_the_model_and_shows_the_diff(qapp_instance: Any, tmp_path: Path) -> None:
    from ui.inspector.trace import TraceModel
    from ui.inspector.trace_pane import TracePane, thread_rerun

    tools = Tools()
    with FakeLLMServer() as server:
        workspace, thread = await recorded(tmp_path, server, tools)
        assert tools.ran == [{"query": "tea"}] and len(server.requests) == 2
        events = [e for _turn, e in workspace.store.thread_events(thread.thread_id)]
        model = TraceModel()
        pane = TracePane(model, rerun=thread_rerun(Session(workspace, thread)))
        pane.resize(600, 500)
        pane.show()
        model.set_events(events)
        # The tree: one run, two model calls with the usage the server reported, the call under the first.
        run = pane.tree_model.tree.roots[0]
        assert [c.kind for c in run.children] == ["model_call", "model_call"]
        assert (run.input_tokens, run.output_tokens) == (120, 10)
        view = pane.tree.model()
        assert view.rowCount() == 1 and pane.tree.isExpanded(view.index(0, 0))
        [call] = pane.find_nodes("tool_call")
        assert call.tool == "lookup" and call.result == {"data": "tea is number 1"}
        pane.select_node(call)
        assert '"query": "tea"' in pane.detail.toPlainText()
        # Run again, with other arguments.
        dialog = pane.run_again(call)
        assert dialog is not None and json.loads(dialog.arguments.toPlainText()) == {"query": "tea"}
        dialog.arguments.setPlainText('{"query": "coffee"}')
        task = dialog.start()
        assert task is not None
        await task
        requests_after = len(server.requests)
    assert tools.ran[-1] == {"query": "coffee"}  # the tool ran, with the edited arguments
    assert requests_after == 2  # ... and the model was not asked
    assert "coffee is number 2" in dialog.new_view.toPlainText()
    assert "tea is number 1" in dialog.old_view.toPlainText()
    diff = dialog.diff_view.toPlainText()
    assert "-" in diff and "+" in diff and "coffee is number 2" in diff
    assert dialog.status.text() == "The result changed."
    dialog.close()


async def test_bad_arguments_are_refused_with_the_fix_and_nothing_runs(qapp_instance: Any, tmp_path: Path) -> None:
    from ui.inspector.trace import TraceModel
    from ui.inspector.trace_pane import TracePane, thread_rerun

    tools = Tools()
    with FakeLLMServer() as server:
        workspace, thread = await recorded(tmp_path, server, tools)
    model = TraceModel()
    pane = TracePane(model, rerun=thread_rerun(Session(workspace, thread)))
    model.set_events([e for _turn, e in workspace.store.thread_events(thread.thread_id)])
    dialog = pane.run_again(pane.find_nodes("tool_call")[0])
    assert dialog is not None
    dialog.arguments.setPlainText('{"query": ')
    assert dialog.start() is None
    assert "not JSON" in dialog.status.text() and "line 1" in dialog.status.text()
    dialog.arguments.setPlainText('["tea"]')
    assert dialog.start() is None and "JSON object" in dialog.status.text()
    assert tools.ran == [{"query": "tea"}]
    dialog.close()


async def test_search_export_and_live_events(qapp_instance: Any, tmp_path: Path) -> None:
    from ui.inspector.trace import TraceModel
    from ui.inspector.trace_pane import TracePane

    tools = Tools()
    with FakeLLMServer() as server:
        workspace, thread = await recorded(tmp_path, server, tools)
    events = [e for _turn, e in workspace.store.thread_events(thread.thread_id)]
    model = TraceModel()
    pane = TracePane(model)
    # Live: the events come in batches; the tree follows once they settle.
    half = next(i for i, e in enumerate(events) if e.kind == "tool_result") + 1  # the call and its result in
    model.append_events(events[:half])
    await wait_until(lambda: pane.tree_model.tree.events == half, what="the first batch in the tree")
    [call] = pane.find_nodes("tool_call")
    pane.select_node(call)
    pane.tree.expand(pane.tree.currentIndex())
    model.append_events(events[half:])
    await wait_until(lambda: pane.tree_model.tree.events == len(events), what="the live events in the tree")
    # What was open and selected stays so as the run goes on.
    assert pane.node_at(pane.tree.currentIndex()) is call and pane.tree.isExpanded(pane.tree.currentIndex())
    assert len(pane.tree_model.tree.roots[0].children) == 2
    run = pane.tree_model.tree.roots[0]
    assert (run.input_tokens, run.output_tokens) == (120, 10)
    assert pane.run_again(pane.find_nodes("tool_call")[0]) is None  # a pane without a thread runs nothing
    pane.filter.setText("lookup")
    assert pane.tree_proxy.rowCount() == 1
    run_index = pane.tree_proxy.index(0, 0)
    # The model call that asked for it, and the next, whose request sent the call and its result back.
    assert pane.tree_proxy.rowCount(run_index) == 2
    pane.filter.setText("no such thing anywhere")
    assert pane.tree_proxy.rowCount() == 0
    # A search on while events come: what they add and matches shows.
    pane.filter.setText("run_finished of later")
    model.append_events([ev.RunStatus(run_id=run.run_id, robot="helper", seq=999, ts=events[-1].ts,
                                      state="notice", detail="nothing"),
                         ev.MemoryChanged(run_id=run.run_id, robot="helper", seq=1000, ts=events[-1].ts,
                                          key="run_finished of later", value=1)])
    pane.flush_tree()
    assert pane.tree_proxy.rowCount() == 1
    pane.filter.clear()
    path = pane.export_trace(str(tmp_path / "trace.json"))
    assert path is not None
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    assert data["trace"][0]["input_tokens"] == 120 and data["trace"][0]["children"][0]["kind"] == "model_call"
    assert pane.export_trace(str(tmp_path / "missing" / "trace.json")) is None
    assert "choose another place" in pane.detail.toPlainText()


async def test_a_long_threads_tree_is_built_in_slices_with_the_events_that_come_meanwhile(
        qapp_instance: Any) -> None:
    from ui.inspector.trace import TraceModel
    from ui.inspector.trace_pane import TracePane

    def run(run_id: str, calls: int, start: float) -> list[ev.Event]:
        out: list[ev.Event] = [ev.RunStarted(run_id=run_id, robot="boss", seq=0, ts=start, message="go")]
        for i in range(calls):
            ts = start + i
            out += [ev.Usage(run_id=run_id, robot="boss", seq=3 * i + 1, ts=ts, input_tokens=10, output_tokens=1),
                    ev.ToolUse(run_id=run_id, robot="boss", seq=3 * i + 2, ts=ts, id=f"{run_id}{i}", name="lookup",
                               input={"i": i}),
                    ev.ToolResult(run_id=run_id, robot="boss", seq=3 * i + 3, ts=ts, id=f"{run_id}{i}", name="lookup",
                                  payload={"data": i})]
        return out

    stored = run("a", 200, 1000.0)
    model = TraceModel()
    pane = TracePane(model)
    assert len(stored) > pane.SYNC_TREE_EVENTS
    model.set_events(stored)
    assert pane.building and pane.tree_model.tree.roots == []  # the window goes on meanwhile
    model.append_events(run("b", 2, 5000.0))  # a new run's first events, live
    pane.flush_tree()
    await wait_until(lambda: not pane.building, what="the tree built in slices")
    roots = pane.tree_model.tree.roots
    assert [r.run_id for r in roots] == ["a", "b"]
    assert roots[0].input_tokens == 2000 and len(pane.find_nodes("tool_call")) == 202
    assert pane.tree.isExpanded(pane.tree.model().index(1, 0))  # the last run open


async def test_fork_this_turn_with_another_model_starts_a_branch_from_its_message(desktop: Any, provider: Any) -> None:
    c = desktop.controller
    provider.enqueue("First answer.", "Second answer.")
    for text in ("one", "two"):
        desktop.window.runs.send(text)
        await wait_until(lambda: c.idle, what="the run to end")
    pane = desktop.window.docks.trace_pane
    pane.flush_tree()
    first_run = pane.tree_model.tree.roots[0]
    call = first_run.children[0]
    assert call.kind == "model_call" and pane.can_fork(call)
    assert not pane.can_fork(first_run)
    store = c.require_store()
    first_turn = store.path(c.thread_id)[0]
    provider.enqueue("A forked answer.")
    from PySide6.QtWidgets import QInputDialog

    assert not pane.fork_from(call)  # it asks which model first (the one that answered, to change)
    ask = next(d for d in pane.findChildren(QInputDialog) if d.isVisible())
    assert ask.textValue() == call.label.split(" · ")[1] != ""
    ask.setTextValue("openai/other-model")
    ask.accept()
    await wait_until(lambda: c.idle, what="the forked run to end")
    siblings = store.siblings(first_turn.id)
    assert len(siblings) == 2 and siblings[1].user_text == "one"
    path = store.path(c.thread_id)
    assert [t.user_text for t in path] == ["one"] and path[0].id == siblings[1].id  # the new branch is shown
    assert store.get_thread(c.thread_id).metadata["model"] == "openai/other-model"


async def test_run_again_in_the_window_asks_for_approval_in_the_chat_and_not_the_model(
        desktop: Any, provider: Any) -> None:
    from workspace.providers.testing import ToolCall

    c = desktop.controller
    provider.enqueue([ToolCall("remember", {"key": "k", "value": 1}, id="c1")], "Stored.")
    desktop.window.runs.send("store k")
    await wait_until(lambda: c.idle, what="the run to end")
    asked = len(provider.history)
    pane = desktop.window.docks.trace_pane
    pane.flush_tree()
    [call] = pane.find_nodes("tool_call")
    c.workspace.approval.policy.set_rule("ask", tool="remember")
    dialog = pane.run_again(call)
    assert dialog is not None
    dialog.arguments.setPlainText('{"key": "k2", "value": 7}')
    task = dialog.start()
    assert task is not None
    await wait_until(lambda: desktop.window.chat.pending_approval() is not None, what="the approval card")
    panel = desktop.window.chat.pending_approval()
    assert panel.request.tool == "remember" and panel.request.input == {"key": "k2", "value": 7}
    panel.approve()
    await task
    assert len(provider.history) == asked  # the model was not asked
    # It ran with the approved arguments, on the robot's memory, and its answer is beside the recorded one with
    # the diff.
    assert dialog.rerun_result.arguments == {"key": "k2", "value": 7}
    assert '"k2"' in dialog.new_view.toPlainText() and "no memory" not in dialog.new_view.toPlainText()
    assert dialog.status.text() == "The result changed." and dialog.diff_view.toPlainText().startswith("--- recorded")
    dialog.close()


async def test_a_model_call_shows_its_request_and_the_trace_exports_as_opentelemetry(
        qapp_instance: Any, tmp_path: Path) -> None:
    from fakes.otlp_receiver import Receiver

    from ui.inspector.trace import TraceModel
    from ui.inspector.trace_pane import TracePane

    with FakeLLMServer() as server:
        workspace, thread = await recorded(tmp_path, server, Tools())
        events = [e for _turn, e in workspace.store.thread_events(thread.thread_id)]
        received = list(server.requests)
    model = TraceModel()
    model.set_events(events)
    endpoint: list[str | None] = [None]
    pane = TracePane(model, otlp_endpoint=lambda: endpoint[0])
    pane.resize(480, 600)
    pane.show()
    calls = pane.find_nodes("model_call")
    assert len(calls) == 2
    pane.select_node(calls[1])
    shown = pane.detail.toPlainText()
    # The second call's request as the server received it (every message), and its answer.
    assert '"request"' in shown and "Tea is number 1." in shown and "sk-test" not in shown
    assert calls[1].request is not None and calls[1].request["messages"] == received[1]["messages"]
    pane.select_node(calls[1].children[0])
    assert pane.detail.toPlainText().count('"role"') >= len(received[1]["messages"])

    path = pane.export_otlp(str(tmp_path / "trace.otlp.json"))
    assert path is not None
    spans = [s for rs in json.loads(Path(path).read_text())["resourceSpans"] for ss in rs["scopeSpans"]
             for s in ss["spans"]]
    assert sorted(s["name"] for s in spans) == ["chat openai/fake", "chat openai/fake", "execute_tool lookup",
                                                "invoke_agent helper"]
    assert pane.send_otlp() is None  # not configured: nothing is sent
    assert "nothing was sent" in pane.detail.toPlainText()
    with Receiver() as receiver:
        endpoint[0] = receiver.url + "/v1/traces"
        task = pane.send_otlp()
        assert task is not None
        await task
    assert pane.detail.toPlainText() == f"Sent 4 spans to {receiver.url}/v1/traces."
    assert len(receiver.posts) == 1 and b"sk-test" not in receiver.posts[0][2]
    workspace.close()
