"""RobotLab's pipeline API (workspace/pipeline.py; spec 1.5 ``Robot#call``, SimpleFlow's Result):
continue/halt semantics, what a robot receives from the result, ``memory.messages`` and
``memory.current_writer`` while a robot runs, and approval decided by a function."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from workspace import Memory, Robot, RobotResult, ScriptedProvider, ToolCall, tool
from workspace import events as ev
from workspace.approval import ApprovalDecision, CallbackGate
from workspace.messages import TextMessage
from workspace.pipeline import Pipeline, StepResult, extract_run_context
from workspace.templates import Template


def bot(name: str, *replies: Any, **options: Any) -> Robot:
    return Robot(name, template=Template(name=name, body="Customer: {{ customer }}."),
                 provider=ScriptedProvider(list(replies)), **options)


# -- the result ----------------------------------------------------------------------------------------
def test_step_result_is_simpleflows_result() -> None:
    start = StepResult.start("hello", customer="Ada")
    assert start.value == {"customer": "Ada", "message": "hello"} and start.continued and not start.halted
    assert start.context == {"run_params": {"customer": "Ada", "message": "hello"}}
    more = start.with_context("k", 1).with_error("k", "bad").activate("billing", "billing", "tech")
    assert more.context["k"] == 1 and more.errors == {"k": ["bad"]} and more.activated == ("billing", "tech")
    assert "k" not in start.context  # results are immutable
    halted = more.halt()
    assert halted.halted and halted.value == start.value  # halt keeps the value unless given one
    assert halted.halt("x").value == "x" and halted.continue_("y").continued


def test_extract_run_context_follows_robotlab() -> None:
    memory = Memory()
    params = {"customer": "Ada", "message": "first", "mcp": ["github"], "tools": ["read_file"], "memory": memory}
    base = StepResult(value=None, context={"run_params": params})
    # A dict value is merged in; the run options stay what the run params say.
    got = extract_run_context(base.continue_({"message": "from a dict", "tools": "none", "extra": 1}))
    assert got["message"] == "from a dict" and got["extra"] == 1 and got["tools"] == ["read_file"]
    assert got["memory"] is memory and got["mcp"] == ["github"] and got["customer"] == "Ada"
    # A RobotResult gives its last text; a string is the message; anything else its str.
    previous = RobotResult("up", [TextMessage(role="assistant", content="upstream says hi")])
    assert extract_run_context(base.continue_(previous))["message"] == "upstream says hi"
    assert extract_run_context(base.continue_("plain"))["message"] == "plain"
    assert extract_run_context(base.continue_(42))["message"] == "42"
    assert base.run_params == params  # untouched


# -- Robot#call ---------------------------------------------------------------------------------------
def test_robot_call_runs_on_the_result_and_continues_with_its_robot_result() -> None:
    classifier = bot("classifier", "billing")
    billing = bot("billing", "Refund issued.")
    result = classifier.call(StepResult.start("I was charged twice", customer="Ada"))
    assert result.continued and isinstance(result.value, RobotResult)
    assert result.context["classifier"] is result.value and result.value.last_text_content == "billing"
    call = classifier.provider.history[0]
    assert call.messages[-1].content == "I was charged twice" and call.system == "Customer: Ada."
    result = billing.call(result)  # downstream: the upstream robot's last text is the message
    assert billing.provider.history[0].messages[-1].content == "billing"
    assert billing.provider.history[0].system == "Customer: Ada."  # run params reach every robot
    assert set(result.context) == {"run_params", "classifier", "billing"}


async def test_a_pipeline_stops_at_a_halt() -> None:
    class Guard(Robot):
        def call(self, result: StepResult) -> StepResult:
            out = super().call(result)
            text = out.value.last_text_content or ""
            return out.halt() if "REFUSE" in text else out

    first = bot("first", "fine")
    guard = Guard("guard", system_prompt="g", provider=ScriptedProvider(["REFUSE: no"]))
    last = bot("last", "never")
    pipeline = Pipeline([first, guard, last])
    assert pipeline.names == ["first", "guard", "last"]
    result = await pipeline.acall(StepResult.start("go", customer="Bo"))
    assert result.halted and result.value.robot_name == "guard"
    assert list(result.context) == ["run_params", "first", "guard"]
    assert last.provider.history == []

    def shout(result: StepResult) -> StepResult:
        return result.continue_(str(result.value.last_text_content).upper())

    async def stop(result: StepResult) -> StepResult:
        return result.halt(result.value + "!")

    again = await Pipeline([bot("a", "quiet"), shout, stop, bot("b", "never")]).acall("hi")
    assert again.halted and again.value == "QUIET!"
    with pytest.raises(TypeError, match="StepResult"):
        await Pipeline([lambda r: "not a result"]).acall("hi")


def test_pipeline_call_blocks_outside_a_loop() -> None:
    result = Pipeline([bot("a", "one"), bot("b", "two")]).call("start")
    assert result.continued and result.value.last_text_content == "two"


# -- memory.messages and memory.current_writer ----------------------------------------------------------------
async def test_memory_messages_and_current_writer() -> None:
    writers: list[str | None] = []

    @tool
    def note(key: str, value: str, context: Any = None) -> str:
        """Note a value."""
        writers.append(context.memory.current_writer)
        context.memory.set(key, value)
        return "noted"

    memory = Memory()
    memory.current_writer = "someone before"
    robot = Robot("scribe", system_prompt="s", memory=memory, tools=[note],
                  provider=ScriptedProvider([ToolCall("note", {"key": "city", "value": "Oslo"}), "Noted."]))
    changes: list[Any] = []
    memory.subscribe("city", callback=changes.append)
    run = robot.stream("Note Oslo")
    events = [e async for e in run]
    assert writers == ["scribe"]  # set while the robot runs
    assert memory.current_writer == "someone before"  # and given back after
    await memory.flush()
    assert [c.writer for c in changes] == ["scribe"]
    assert next(e for e in events if isinstance(e, ev.MemoryChanged)).writer == "scribe"
    # The conversation is in memory.messages, as in the robot's history.
    assert [(m.type, m.role) for m in memory.messages] == [
        ("text", "user"), ("tool_call", "assistant"), ("tool_result", "tool_result"), ("text", "assistant")]
    assert memory.messages == robot.history
    assert memory.results[-1].last_text_content == "Noted."
    assert memory.format_history()[:4] == memory.messages


# -- approval decided by a function ---------------------------------------------------------------------------
def risky(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@pytest.mark.parametrize(("answer", "approved"), [
    ("allow", True), ("deny", False), (True, True), (False, False),
    (ApprovalDecision(approved=False, reason="not that one"), False),
    (ApprovalDecision(approved=True, input={"path": "safe.txt"}), True),
])
async def test_approval_by_a_function(answer: Any, approved: bool) -> None:
    requests: list[Any] = []

    async def policy(request: Any) -> Any:  # async works as well as sync
        requests.append(request)
        await asyncio.sleep(0)
        return answer

    robot = Robot("r", system_prompt="s", tools=[risky], approval=policy,
                  provider=ScriptedProvider([ToolCall("risky", {"path": "a.txt"}), "ok"]))
    assert isinstance(robot.approval, CallbackGate)
    events = [e async for e in robot.stream("delete a.txt")]
    assert [r.tool for r in requests] == ["risky"] and requests[0].input == {"path": "a.txt"}
    ok = [e for e in events if isinstance(e, ev.ToolResult)]
    if approved:
        expected = "safe.txt" if isinstance(answer, ApprovalDecision) and answer.input else "a.txt"
        assert ok and ok[0].payload == {"data": f"deleted {expected}"}
    else:
        error = next(e for e in events if isinstance(e, ev.ToolError))
        assert "Denied by the user" in str(error.error)
        if isinstance(answer, ApprovalDecision):
            assert "not that one" in str(error.error)
    decided = [e for e in events if isinstance(e, ev.ApprovalDecided)]
    assert bool(decided) == (not approved or isinstance(answer, ApprovalDecision))
    assert all(d.scope == "policy" for d in decided)


async def test_ask_goes_to_the_front_end_or_is_denied() -> None:
    robot = Robot("r", system_prompt="s", tools=[risky], approval=lambda request: "ask",
                  provider=ScriptedProvider([ToolCall("risky", {"path": "a.txt"}), "ok"]))
    events = [e async for e in robot.stream("go")]
    assert any(isinstance(e, ev.ApprovalRequested) for e in events)
    assert "nobody is there to approve it" in str(next(e for e in events if isinstance(e, ev.ToolError)).error)

    async def ask(request: Any) -> ApprovalDecision:
        return ApprovalDecision(approved=True)

    gate = CallbackGate(lambda request: "ask", ask)
    robot = Robot("r", system_prompt="s", tools=[risky], approval=gate,
                  provider=ScriptedProvider([ToolCall("risky", {"path": "b.txt"}), "ok"]))
    events = [e async for e in robot.stream("go")]
    assert next(e for e in events if isinstance(e, ev.ToolResult)).payload == {"data": "deleted b.txt"}
    with pytest.raises(Exception, match="must return"):
        await Robot("r", system_prompt="s", tools=[risky], approval=lambda request: "maybe",
                    provider=ScriptedProvider([ToolCall("risky", {"path": "c"}), "ok"])).arun("go")


async def test_a_workspace_with_a_function_gate_decides_in_every_thread(tmp_path: Any) -> None:
    from workspace.session import Workspace

    seen: list[str] = []

    def policy(request: Any) -> str:
        seen.append(request.tool)
        return "deny"

    robot = Robot("r", system_prompt="s", tools=[risky], provider=ScriptedProvider(
        [ToolCall("risky", {"path": "a.txt"}), "ok"]))
    ws = Workspace(db_path=tmp_path / "w.db", provider=robot.provider, approval=CallbackGate(policy))
    try:
        run = ws.new_thread("r", robot=robot).send("go")
        events = [e async for e in run]
        assert seen == ["risky"]
        assert "approval policy denies" in str(next(e for e in events if isinstance(e, ev.ToolError)).error)
    finally:
        await ws.aclose()
