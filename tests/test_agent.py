"""The agent loop: events, concurrency, turns, approvals, failures and stopping at any moment."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from workspace import events as ev
from workspace.approval import ApprovalDecision, ApprovalGate, ApprovalPolicy, ApprovalRequest
from workspace.errors import RunFailedError
from workspace.memory import Memory
from workspace.messages import Message, ToolCallMessage, ToolResultMessage
from workspace.providers.testing import Fail, FunctionProvider, Pause, ScriptedProvider, ToolCall
from workspace.robot import Robot
from workspace.tools import Tool, ToolContext, tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
async def slow(seconds: float) -> str:
    """Sleep a while."""
    await asyncio.sleep(seconds)
    return "slept"


def robot(provider: Any, **kw: Any) -> Robot:
    return Robot("bot", system_prompt="You help.", tools=kw.pop("tools", [add, slow]), provider=provider, **kw)


async def collect(run: Any) -> list[ev.Event]:
    return [e async for e in run]


def kinds(events: list[ev.Event]) -> list[str]:
    return [e.kind for e in events if e.kind != "text_delta"]


def assert_history_valid(history: list[Message]) -> None:
    """Every tool call is answered by a result before the conversation moves on."""
    open_ids: set[str] = set()
    for m in history:
        if isinstance(m, ToolCallMessage):
            assert not open_ids, f"tool calls left unanswered: {open_ids}"
            open_ids = {t.id or "" for t in m.tools}
        elif isinstance(m, ToolResultMessage):
            open_ids.discard(m.tool.id or "")
        else:
            assert not open_ids, f"conversation moved on with unanswered calls {open_ids}"
    assert not open_ids


def one_terminal(events: list[ev.Event]) -> ev.Event:
    terminals = [e for e in events if e.terminal]
    assert len(terminals) == 1, [e.kind for e in terminals]
    assert events[-1] is terminals[0]
    return terminals[0]


async def test_text_and_two_tool_calls_in_order() -> None:
    p = ScriptedProvider([["Adding. ", ToolCall("add", {"a": 2, "b": 3}), ToolCall("add", {"a": 1, "b": 1})],
                          "Results: 5 and 2."])
    r = robot(p)
    events = await collect(r.stream("sum things"))
    assert kinds(events)[:5] == ["run_started", "model_request", "usage", "text", "tool_use"]
    assert [e.kind for e in events if e.kind in ("tool_use", "tool_result")][:2] == ["tool_use", "tool_use"]
    results = {e.id: e.payload for e in events if isinstance(e, ev.ToolResult)}
    assert sorted(v["data"] for v in results.values()) == [2, 5]
    terminal = one_terminal(events)
    assert isinstance(terminal, ev.RunFinished)
    result = terminal.result
    assert result.last_text_content == "Results: 5 and 2." and result.is_stopped and result.has_tool_calls
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    # The second model call saw the tool results; the text deltas joined equal the text.
    second = p.history[1].messages
    assert [type(m).__name__ for m in second] == ["TextMessage", "TextMessage", "ToolCallMessage",
                                                   "ToolResultMessage", "ToolResultMessage"]
    deltas = "".join(e.text for e in events if isinstance(e, ev.TextDelta))
    assert deltas == "Adding. Results: 5 and 2."
    assert_history_valid(r.history)


async def test_tool_calls_of_one_turn_run_concurrently() -> None:
    both_running = asyncio.Event()
    started: list[str] = []

    async def handler(inp: dict[str, Any]) -> str:
        started.append(inp["name"])
        if len(started) == 2:
            both_running.set()
        await asyncio.wait_for(both_running.wait(), 2)
        return inp["name"]

    t = Tool("wait", parameters={"type": "object", "properties": {"name": {"type": "string"}}}, handler=handler)
    p = ScriptedProvider([[ToolCall("wait", {"name": "x"}), ToolCall("wait", {"name": "y"})], "done"])
    events = await collect(robot(p, tools=[t]).stream("go"))
    assert [e.payload["data"] for e in events if isinstance(e, ev.ToolResult)] == ["x", "y"] or \
        sorted(e.payload["data"] for e in events if isinstance(e, ev.ToolResult)) == ["x", "y"]
    assert not [e for e in events if isinstance(e, ev.ToolError)]


async def test_max_turns_stops_the_loop() -> None:
    p = ScriptedProvider(default=[ToolCall("add", {"a": 1, "b": 1})])
    r = robot(p, max_turns=3)
    events = await collect(r.stream("loop forever"))
    terminal = one_terminal(events)
    assert isinstance(terminal, ev.RunFinished) and terminal.result.stop_reason == "max_turns"
    assert len(p.history) == 3
    assert_history_valid(r.history)


async def test_stop_mid_stream_keeps_what_was_streamed() -> None:
    gate = asyncio.Event()
    p = ScriptedProvider([["Partial answer ", Pause(event=gate), "never sent"]])
    r = robot(p)
    run = r.stream("talk")
    seen: list[ev.Event] = []
    async for event in run:
        seen.append(event)
        if isinstance(event, ev.TextDelta) and "answer" in event.text:
            run.cancel()
    terminal = one_terminal(seen)
    assert isinstance(terminal, ev.RunCancelled)
    assert terminal.partial.last_text_content == "Partial answer "
    assert r.history[-1].content == "Partial answer "
    # The conversation goes on normally afterwards.
    p.enqueue("Fine.")
    result = await r.arun("again")
    assert result.last_text_content == "Fine."
    assert_history_valid(r.history)


async def test_stop_during_tool_calls_answers_every_call() -> None:
    p = ScriptedProvider([[ToolCall("slow", {"seconds": 30}), ToolCall("add", {"a": 1, "b": 2})]])
    r = robot(p)
    run = r.stream("slow please")
    events: list[ev.Event] = []
    async for event in run:
        events.append(event)
        if isinstance(event, ev.ToolResult):  # add finished; slow is still sleeping
            run.cancel()
    terminal = one_terminal(events)
    assert isinstance(terminal, ev.RunCancelled)
    errors = [e for e in events if isinstance(e, ev.ToolError)]
    assert [e.name for e in errors] == ["slow"] and "stopped" in errors[0].error
    assert_history_valid(r.history)
    assert len(terminal.partial.tool_calls) == 2


async def test_cancel_before_anything_happened() -> None:
    r = robot(ScriptedProvider(["never"]))
    run = r.stream("hi")
    run.cancel()
    events = await collect(run)
    assert isinstance(one_terminal(events), ev.RunCancelled)


@pytest.mark.parametrize("stop_after", range(0, 14))
async def test_stop_at_any_event_gives_exactly_one_terminal_and_valid_history(stop_after: int) -> None:
    p = ScriptedProvider([
        ["Let me check. ", ToolCall("add", {"a": 1, "b": 2}), ToolCall("slow", {"seconds": 0.01})],
        ["Now ", ToolCall("add", {"a": 3, "b": 4})],
        "All done here.",
    ])
    r = robot(p)
    run = r.stream("work")
    events: list[ev.Event] = []
    async for event in run:
        events.append(event)
        if len(events) == stop_after + 1:
            run.cancel()
    terminal = one_terminal(events)
    assert terminal.kind in ("run_cancelled", "run_finished")
    assert_history_valid(r.history)


async def test_provider_failure_is_run_failed_with_partial() -> None:
    p = ScriptedProvider([["Starting ", Fail("HTTP 500 from the server: overloaded", status_code=500)]])
    r = robot(p)
    events = await collect(r.stream("x"))
    terminal = one_terminal(events)
    assert isinstance(terminal, ev.RunFailed)
    assert "overloaded" in terminal.error and terminal.error_type == "ProviderError"
    assert terminal.partial.last_text_content == "Starting "
    with pytest.raises(RunFailedError, match="no reply queued"):
        await r.arun("again")


async def test_malformed_arguments_and_unknown_tool_are_errors_the_model_reads() -> None:
    p = ScriptedProvider([[ToolCall("add", '{"a": 1, "b": '), ToolCall("nope", {})], "ok"])
    r = robot(p)
    events = await collect(r.stream("x"))
    errors = {e.name: e.error for e in events if isinstance(e, ev.ToolError)}
    assert "not valid JSON" in errors["add"]
    assert "Unknown tool 'nope'" in errors["nope"] and "add" in errors["nope"]
    results = [m for m in p.history[1].messages if isinstance(m, ToolResultMessage)]
    assert all(m.is_error for m in results)
    assert isinstance(one_terminal(events), ev.RunFinished)


async def test_fragmented_tool_call_arguments_are_assembled() -> None:
    from workspace.providers.base import FinishChunk, ToolCallChunk

    async def stream(messages: list[Message], info: Any) -> Any:
        if info.call_number == 1:
            yield ToolCallChunk(index=0, id="c1", name="add", arguments='{"a": ')
            yield ToolCallChunk(index=0, arguments="40, ")
            yield ToolCallChunk(index=0, arguments='"b": 2}')
            yield FinishChunk("tool_calls")
        else:
            yield "42"

    events = await collect(robot(FunctionProvider(stream_fn=stream)).stream("x"))
    assert [e.payload for e in events if isinstance(e, ev.ToolResult)] == [{"data": 42}]


async def test_denied_approval_sends_the_reason_back_to_the_model() -> None:
    asked: list[ApprovalRequest] = []

    async def ask(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(approved=False, reason="not on a Friday")

    policy = ApprovalPolicy()
    policy.set_rule("ask", tool="add")
    p = ScriptedProvider([[ToolCall("add", {"a": 1, "b": 1})], "Understood."])
    events = await collect(robot(p, approval=ApprovalGate(policy, ask)).stream("x"))
    assert [e.kind for e in events if "approval" in e.kind] == ["approval_requested", "approval_decided"]
    assert asked[0].tool == "add" and asked[0].robot == "bot"
    result = next(m for m in p.history[1].messages if isinstance(m, ToolResultMessage))
    assert result.error == "Denied by the user: not on a Friday"


async def test_edited_approval_runs_with_the_edited_arguments() -> None:
    async def ask(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(approved=True, input={"a": 10, "b": 5}, scope="thread")

    gate = ApprovalGate(ApprovalPolicy([]), ask)
    gate.policy.set_rule("ask", tool="add")
    p = ScriptedProvider([[ToolCall("add", {"a": 1, "b": 1})], "ok", [ToolCall("add", {"a": 2, "b": 2})], "ok"])
    r = robot(p, approval=gate)
    events = await collect(r.stream("x"))
    assert [e.payload for e in events if isinstance(e, ev.ToolResult)] == [{"data": 15}]
    # "this thread" scope: asked once, then allowed without asking.
    events = await collect(r.stream("y"))
    assert not [e for e in events if e.kind == "approval_requested"]


async def test_a_tools_duration_leaves_out_the_wait_for_approval() -> None:
    """The card's and the inspector's duration is the tool's own time, not the person's."""
    async def ask(request: ApprovalRequest) -> ApprovalDecision:
        await asyncio.sleep(0.6)  # the person reads the call
        return ApprovalDecision(approved=True)

    policy = ApprovalPolicy()
    policy.set_rule("ask", tool="slow")
    p = ScriptedProvider([[ToolCall("slow", {"seconds": 0.2})], "ok"])
    events = await collect(robot(p, approval=ApprovalGate(policy, ask)).stream("x"))
    result = next(e for e in events if isinstance(e, ev.ToolResult))
    assert 0.15 <= result.duration < 0.5, result.duration


async def test_policy_deny_and_default_allow_without_asking() -> None:
    policy = ApprovalPolicy()
    policy.set_rule("deny", tool="slow")
    p = ScriptedProvider([[ToolCall("slow", {"seconds": 1}), ToolCall("add", {"a": 1, "b": 1})], "ok"])
    events = await collect(robot(p, approval=ApprovalGate(policy, None)).stream("x"))
    errors = [e for e in events if isinstance(e, ev.ToolError)]
    assert [e.name for e in errors] == ["slow"] and "policy denies" in errors[0].error
    assert [e.payload for e in events if isinstance(e, ev.ToolResult)] == [{"data": 2}]


async def test_stop_while_waiting_for_approval() -> None:
    waiting = asyncio.Event()

    async def ask(request: ApprovalRequest) -> ApprovalDecision:
        waiting.set()
        await asyncio.sleep(60)
        raise AssertionError("unreachable")

    gate = ApprovalGate(ApprovalPolicy(), ask)
    gate.policy.set_rule("ask")
    r = robot(ScriptedProvider([[ToolCall("add", {"a": 1, "b": 1})]]), approval=gate)
    run = r.stream("x")
    events: list[ev.Event] = []
    async for event in run:
        events.append(event)
        if event.kind == "approval_requested":
            run.cancel()
    assert isinstance(one_terminal(events), ev.RunCancelled)
    assert_history_valid(r.history)


async def test_consumer_leaving_early_stops_the_run() -> None:
    gate = asyncio.Event()
    p = ScriptedProvider([["a ", Pause(event=gate), "b"]])
    r = robot(p)
    run = r.stream("x")
    async for event in run:
        if event.kind == "text_delta":
            break
    # The abandoned iterator is closed by asyncio's async-generator finaliser, which stops the run.
    await asyncio.wait_for(run.wait(), 2)
    assert run.done and isinstance(run.terminal, ev.RunCancelled)


async def test_memory_changes_are_events_and_results_are_appended() -> None:
    from workspace.tools.memory_tools import remember

    memory = Memory()
    p = ScriptedProvider([[ToolCall("remember", {"key": "mood", "value": "happy"})], "noted"])
    r = robot(p, tools=[remember], memory=memory)
    events = await collect(r.stream("remember my mood"))
    changes = [e for e in events if isinstance(e, ev.MemoryChanged)]
    assert [(c.key, c.value) for c in changes] == [("mood", "happy")]
    assert memory.get("mood") == "happy"
    assert len(memory.results) == 1 and memory.results[0].last_text_content == "noted"


async def test_callbacks_fire_and_a_raising_callback_does_not_break_the_loop() -> None:
    calls: list[Any] = []

    def boom(_: Any) -> None:
        raise RuntimeError("callback bug")

    p = ScriptedProvider([[ToolCall("add", {"a": 1, "b": 2})], "3"])
    r = robot(p, on_tool_call=calls.append, on_tool_result=boom)
    result = await r.arun("x")
    assert result.last_text_content == "3" and calls[0].name == "add"


async def test_context_reaches_tools() -> None:
    seen: dict[str, Any] = {}

    @tool
    def inspect_ctx(ctx: ToolContext) -> str:
        """Look at the context."""
        seen.update(robot=ctx.robot, run_id=ctx.run_id, call_id=ctx.call_id)
        return "ok"

    p = ScriptedProvider([[ToolCall("inspect_ctx", {}, id="call-9")], "done"])
    run = robot(p, tools=[inspect_ctx]).stream("x")
    await run.wait()
    assert seen == {"robot": "bot", "run_id": run.run_id, "call_id": "call-9"}


def test_blocking_run_wrapper() -> None:
    r = robot(ScriptedProvider(["Hello!"]))
    assert r.run("hi").last_text_content == "Hello!"


async def test_a_grant_for_this_thread_holds_in_that_thread_only() -> None:
    """"Approve for this thread" allows the tool again in the same thread, and asks in another one."""
    asked: list[str | None] = []

    async def ask(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request.thread_id)
        return ApprovalDecision(approved=True, scope="thread")

    gate = ApprovalGate(ApprovalPolicy(), ask)
    first = ApprovalRequest(call_id="1", robot="r", tool="write_file", input={}, server="fs", thread_id="t1")
    assert gate.decide(first) == "ask"
    await gate.ask(first)
    assert gate.decide(ApprovalRequest(call_id="2", robot="r", tool="write_file", input={}, server="fs",
                                       thread_id="t1")) == "allow"
    other = ApprovalRequest(call_id="3", robot="r", tool="write_file", input={}, server="fs", thread_id="t2")
    assert gate.decide(other) == "ask"
    assert asked == ["t1"]


async def test_events_emitted_built_are_stamped_by_the_run_and_a_stamped_one_is_copied() -> None:
    """A tool emits an event built as its class; the run stamps its run id, robot, seq and task. An event
    emitted twice is a copy the second time: the first stays as it was published."""
    emitted: list[ev.Event] = []

    @tool
    def progress(context: ToolContext) -> str:
        """Say how far it is, twice with the same event."""
        assert context.emit is not None
        event = ev.ToolProgress(id=context.call_id, name="progress", progress=1.0, total=2.0, message="half")
        emitted.extend([event, event])
        context.emit(event)
        context.emit(event)  # already stamped: copied, not changed
        return "done"

    p = ScriptedProvider([[ToolCall("progress", {})], "Done."])
    events = await collect(robot(p, tools=[progress]).stream("go"))
    shown = [e for e in events if isinstance(e, ev.ToolProgress)]
    run_id = events[0].run_id
    assert len(shown) == 2 and all(e.run_id == run_id and e.robot == "bot" and e.message == "half" for e in shown)
    assert shown[0] is emitted[0] and shown[1] is not shown[0]  # the first stamped as built, the second a copy
    assert shown[0].seq < shown[1].seq and shown[0].ts == shown[1].ts
    assert [e.seq for e in events] == sorted(e.seq for e in events)  # numbered in the stream's order
    assert ev.stamp(ev.Text(text="hi"), run_id="r", robot="b", seq=3).to_dict()["seq"] == 3
