"""The tool loop's guards (RobotLab 0.2): tool errors sent to the model, raise_on_error,
max_tool_rounds, DoomLoopDetector (ported from RobotLab's doom_loop_detector tests), max_tools,
and the AskUser tool — against scripted models."""

from __future__ import annotations

import io
from typing import Any

import pytest

import workspace
from workspace import events as ev
from workspace.agent.guards import DoomLoopDetector
from workspace.ask_user import NOBODY, AskUser, resolve_answer, terminal_ask
from workspace.errors import ConfigurationError, RunFailedError, ToolLoopError
from workspace.messages import ToolResultMessage
from workspace.providers.testing import ScriptedProvider, ToolCall
from workspace.robot import Robot
from workspace.tools import Tool, tool


def bot(provider: Any, tools: list[Any], **kw: Any) -> Robot:
    return Robot("r", system_prompt="You are r.", provider=provider, tools=tools, mcp="none", **kw)


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


@tool
def pong() -> str:
    """Answer ping."""
    return "ping"


def results_sent(provider: ScriptedProvider, call: int) -> list[Any]:
    return [m.content for m in provider.history[call].messages if isinstance(m, ToolResultMessage)]


# -- DoomLoopDetector -----------------------------------------------------------------------------------
def test_repeated_calls_are_a_doom_loop_at_the_threshold() -> None:
    detector = DoomLoopDetector()
    for name in ("read", "read"):
        detector.track(name)
    assert not detector.doom_loop and detector.warning_message() is None
    detector.track("read")
    assert detector.doom_loop
    assert detector.warning_message() == (
        "Tool 'read' has been called 3+ times consecutively with no progress. You appear to be stuck in a loop. "
        "Try a fundamentally different approach, use a different tool, or ask for clarification.")
    detector.reset()
    assert not detector.doom_loop and detector.sequence == []


def test_different_calls_are_no_doom_loop() -> None:
    detector = DoomLoopDetector()
    for name in ("read", "read", "write", "read", "search"):
        detector.track(name)
    assert not detector.doom_loop
    assert detector.sequence == ["read", "read", "write", "read", "search"]


@pytest.mark.parametrize(("names", "pattern"), [
    (["a", "b", "c"] * 3, "a → b → c"),
    (["x", "a", "b"] * 3, "x → a → b"),
    (["a", "b"] * 3, "a → b"),
    (["q", "a", "b", "a", "b", "a", "b"], "a → b"),
])
def test_cyclic_calls_are_a_doom_loop(names: list[str], pattern: str) -> None:
    detector = DoomLoopDetector()
    for name in names:
        detector.track(name)
    assert detector.doom_loop
    assert detector.warning_message() == (
        f"Tool call pattern [{pattern}] has repeated 3+ times. You appear to be stuck in a loop. "
        "Try a fundamentally different approach, use a different tool, or ask for clarification.")


def test_a_cycle_repeated_fewer_times_than_the_threshold_is_not_a_loop() -> None:
    detector = DoomLoopDetector()
    for name in ["a", "b", "c"] * 2:
        detector.track(name)
    assert not detector.doom_loop
    lower = DoomLoopDetector(threshold=2)
    for name in ["a", "b", "c"] * 2:
        lower.track(name)
    assert lower.doom_loop
    with pytest.raises(ValueError, match="at least 2"):
        DoomLoopDetector(threshold=1)


async def test_the_run_appends_the_warning_to_the_third_result_and_goes_on() -> None:
    provider = ScriptedProvider([[ToolCall("ping")], [ToolCall("ping")], [ToolCall("ping")], "I stop."])
    run = bot(provider, [ping]).stream("go")
    notices = [e.detail async for e in run if isinstance(e, ev.RunStatus) and e.state == "notice"]
    assert isinstance(run.terminal, ev.RunFinished)
    last = results_sent(provider, 3)
    assert last[0] == {"data": "pong"} and last[1] == {"data": "pong"}
    assert last[2]["data"].startswith("pong\n\n⚠️ Tool 'ping' has been called 3+ times consecutively")
    assert len(notices) == 1 and "ping" in notices[0]


def test_a_loop_is_the_same_call_its_arguments_too() -> None:
    detector = DoomLoopDetector()
    for key in ("a", "b", "c"):
        detector.track("recall", {"key": key})
    assert not detector.doom_loop and detector.sequence == ["recall"] * 3
    for _ in range(3):
        detector.track("recall", {"key": "c", "n": 1})
    assert detector.doom_loop
    assert detector.warning_message() == (
        "Tool 'recall' has been called 3+ times consecutively with the same arguments with no progress. You appear "
        "to be stuck in a loop. Try a fundamentally different approach, use a different tool, or ask for "
        "clarification.")
    cycle = DoomLoopDetector()
    for i in range(3):
        cycle.track("read", {"path": "a"})
        cycle.track("write", {"path": "a", "text": str(i)})  # other text each time: not a repeated cycle
    assert not cycle.doom_loop


@tool
def recall(key: str) -> str:
    """What is remembered under key."""
    return f"{key}: nothing"


async def test_parallel_calls_of_one_tool_with_other_arguments_are_no_loop() -> None:
    """A network's synthesizer recalling three keys at once is not stuck; the same key three times is."""
    different = [ToolCall("recall", {"key": k}) for k in ("research", "analysis", "critique")]
    provider = ScriptedProvider([different, "Done."])
    run = bot(provider, [recall]).stream("go")
    notices = [e.detail async for e in run if isinstance(e, ev.RunStatus) and e.state == "notice"]
    assert isinstance(run.terminal, ev.RunFinished)
    sent = results_sent(provider, 1)
    assert [r["data"] for r in sent] == ["research: nothing", "analysis: nothing", "critique: nothing"]
    assert notices == []

    same = ScriptedProvider([[ToolCall("recall", {"key": "research"})] * 3, "Done."])
    await bot(same, [recall]).arun("go")
    assert "stuck in a loop" in results_sent(same, 1)[2]["data"]


async def test_doom_loop_threshold_zero_turns_the_warning_off() -> None:
    provider = ScriptedProvider([[ToolCall("ping")], [ToolCall("ping")], [ToolCall("ping")], "I stop."])
    await bot(provider, [ping], doom_loop_threshold=0).arun("go")
    assert results_sent(provider, 3)[2] == {"data": "pong"}


# -- max_tool_rounds -----------------------------------------------------------------------------------------
async def test_max_tool_rounds_is_a_hard_stop_with_tool_loop_error() -> None:
    provider = ScriptedProvider(default=[ToolCall("ping")])  # a model that never stops calling
    robot = bot(provider, [ping], max_tool_rounds=3, doom_loop_threshold=0)
    with pytest.raises(ToolLoopError, match=r"Circuit breaker triggered: 4 tool calls exceeded max_tool_rounds \(3\)"):
        await robot.arun("go")
    assert len(provider.history) == 4  # three tool rounds answered, the fourth refused
    run = robot.stream("again", max_tool_rounds=1)
    terminal = await run.wait()
    assert isinstance(terminal, ev.RunFailed) and terminal.error_type == "ToolLoopError"
    assert isinstance(workspace.ToolLoopError("x"), workspace.InferenceError)


def test_guard_settings_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="max_tool_rounds must be a whole number of at least 1"):
        bot(ScriptedProvider(), [], max_tool_rounds=0)
    with pytest.raises(ConfigurationError, match="max_tools must be a whole number"):
        bot(ScriptedProvider(), [], max_tools="lots")


# -- tool errors -------------------------------------------------------------------------------------------
async def test_a_tool_error_reaches_the_model_as_robotlabs_text() -> None:
    def fragile(_: dict[str, Any]) -> str:
        raise ValueError("the file is locked")

    provider = ScriptedProvider([[ToolCall("fragile")], "ok"])
    result = await bot(provider, [Tool("fragile", "Breaks.", handler=fragile)]).arun("go")
    assert results_sent(provider, 1) == [{"error": "Error (fragile): the file is locked"}]
    assert result.last_text_content == "ok"


async def test_raise_on_error_fails_the_run() -> None:
    def critical(_: dict[str, Any]) -> str:
        raise RuntimeError("the database is gone")

    provider = ScriptedProvider([[ToolCall("critical"), ToolCall("ping")], "never"])
    robot = bot(provider, [Tool("critical", "Must work.", handler=critical, raise_on_error=True), ping])
    with pytest.raises(RunFailedError, match="the database is gone"):
        await robot.arun("go")
    assert len(provider.history) == 1


# -- max_tools ----------------------------------------------------------------------------------------------
async def test_max_tools_caps_the_tools_offered_and_says_which_were_left_out() -> None:
    tools = [Tool(f"t{i}", f"Tool {i}.", handler=lambda _: "x") for i in range(5)]
    provider = ScriptedProvider(default="ok")
    run = bot(provider, tools, max_tools=2).stream("go")
    notices = [e.detail async for e in run if isinstance(e, ev.RunStatus) and e.state == "notice"]
    assert provider.history[0].tool_names == ["t0", "t1"]
    assert notices == ["The run offers the model at most 2 tools (max_tools); 3 were left out: t2, t3, t4"]


# -- AskUser --------------------------------------------------------------------------------------------
def test_answers_are_read_as_robotlab_reads_them() -> None:
    choices = ["red", "green"]
    assert resolve_answer("2", choices, None) == "green"
    assert resolve_answer("3", choices, None) == "3"  # out of range: as typed
    assert resolve_answer("  ", choices, "red") == "red"
    assert resolve_answer("", None, None) == ""
    assert resolve_answer("blue", choices, None) == "blue"


async def test_ask_user_asks_whoever_is_plugged_in() -> None:
    asked: list[tuple[str, Any, Any]] = []

    async def person(question: str, choices: list[str] | None, default: str | None) -> str:
        asked.append((question, choices, default))
        return "1"

    provider = ScriptedProvider([[ToolCall("ask_user", {"question": "Which colour?", "choices": ["red", "green"],
                                                         "default": "green"})], "Red it is."])
    result = await bot(provider, [AskUser(ask=person)]).arun("paint it")
    assert asked == [("Which colour?", ["red", "green"], "green")]
    assert results_sent(provider, 1) == [{"data": "red"}]
    assert result.last_text_content == "Red it is."


async def test_ask_user_with_nobody_to_ask_is_a_clear_error_result() -> None:
    provider = ScriptedProvider([[ToolCall("ask_user", {"question": "Sure?"})], "Going on."])
    result = await bot(provider, [AskUser()]).arun("go")  # pytest's stdin is not a terminal
    assert results_sent(provider, 1) == [{"error": NOBODY}]
    assert result.last_text_content == "Going on."


async def test_the_terminal_ask_writes_the_question_and_reads_a_line(monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("2\n"))
    answer = await terminal_ask("helper")("Which one?", ["a", "b"], "a")
    assert answer == "2"
    assert capsys.readouterr().out == "\n[helper] Which one?\n  1. a\n  2. b\n> [a] "
    assert resolve_answer(answer, ["a", "b"], "a") == "b"


def test_the_exports() -> None:
    from workspace.hooks import Hook

    assert workspace.Hook is Hook and workspace.AskUser is AskUser and workspace.DoomLoopDetector is DoomLoopDetector
    assert callable(workspace.on) and callable(workspace.clear_hooks) and workspace.ToolLoopError is ToolLoopError
