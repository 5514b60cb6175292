"""Delegation: RobotLab's example 24 as tests, against scripted models (results, futures, timeouts)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from workspace import DelegationFuture, DelegationTimeout, Robot, RunFailedError
from workspace.providers.testing import Fail, FunctionProvider, Pause, ScriptedProvider

# Bounds a hang only (a future that never settles); no test measures time.
HANG = 10.0


def robot(name: str, provider: Any) -> Robot:
    return Robot(name, system_prompt=f"You are {name}.", provider=provider)


async def test_a_delegation_returns_the_delegates_result_signed_and_timed() -> None:
    manager = robot("manager", ScriptedProvider())
    summarizer = robot("summarizer", FunctionProvider(lambda messages, info: f"summary of: {messages[-1].content}"))
    result = await manager.delegate(to=summarizer, task="Q4 revenue up 18%")
    assert result.last_text_content == "summary of: Q4 revenue up 18%"
    assert result.robot_name == "summarizer" and result.delegated_by == "manager"
    assert result.duration is not None and result.duration >= 0
    assert result.to_dict()["delegated_by"] == "manager"
    assert manager.history == []  # the delegate keeps the conversation, not the manager
    assert [m.content for m in summarizer.history if m.role == "user"] == ["Q4 revenue up 18%"]


async def test_a_delegates_failure_reaches_the_delegator() -> None:
    manager = robot("manager", ScriptedProvider())
    broken = robot("broken", ScriptedProvider([Fail("model is down")]))
    with pytest.raises(RunFailedError, match="model is down"):
        await manager.delegate(to=broken, task="anything")


async def test_options_go_to_the_delegates_run() -> None:
    seen: list[str | None] = []

    def reply(messages: list[Any], info: Any) -> str:
        seen.append(info.system)
        return "ok"

    delegate_robot = Robot("templated", system_prompt="Be brief.", provider=FunctionProvider(reply))
    manager = robot("manager", ScriptedProvider())
    await manager.delegate(to=delegate_robot, task="go", max_turns=1)
    assert seen == ["Be brief."]
    with pytest.raises(TypeError, match="delegate\\(to=...\\) needs a robot"):
        await manager.delegate(to="summarizer", task="go")


async def test_background_delegations_fan_out_and_are_collected_later() -> None:
    gates = {"summarizer": asyncio.Event(), "analyst": asyncio.Event()}
    manager = robot("manager", ScriptedProvider())
    summarizer = robot("summarizer", ScriptedProvider([[Pause(event=gates["summarizer"]), "A short summary."]]))
    analyst = robot("analyst", ScriptedProvider([[Pause(event=gates["analyst"]), "NPS is the key metric."]]))
    f_summary = await manager.delegate(to=summarizer, task="Summarize", background=True)
    f_analysis = await manager.delegate(to=analyst, task="Key metric?", background=True)
    assert isinstance(f_summary, DelegationFuture)
    assert (f_summary.robot_name, f_summary.delegated_by) == ("summarizer", "manager")
    await asyncio.sleep(0)
    assert not f_summary.done() and not f_analysis.done()  # both are running at once
    gates["analyst"].set()  # the second finishes first
    analysis = await f_analysis.value(timeout=HANG)
    assert analysis.last_text_content == "NPS is the key metric." and analysis.delegated_by == "manager"
    assert not f_summary.done()
    gates["summarizer"].set()
    summary = await f_summary.wait(timeout=HANG)
    assert summary.last_text_content == "A short summary." and f_summary.done()


async def test_a_timeout_raises_delegation_timeout_and_the_work_goes_on() -> None:
    gate = asyncio.Event()
    manager = robot("manager", ScriptedProvider())
    slow = robot("slow", ScriptedProvider([[Pause(event=gate), "finally"]]))
    future = await manager.delegate(to=slow, task="take your time", background=True)
    with pytest.raises(DelegationTimeout, match=r"^Delegation to 'slow' timed out after 0\.05s$"):
        await future.value(timeout=0.05)
    assert not future.done()  # not cancelled by the timeout
    gate.set()
    result = await future.value(timeout=HANG)
    assert result.last_text_content == "finally"


async def test_a_background_failure_is_raised_by_value() -> None:
    manager = robot("manager", ScriptedProvider())
    broken = robot("broken", ScriptedProvider([Fail("quota exhausted")]))
    future = await manager.delegate(to=broken, task="x", background=True)
    with pytest.raises(RunFailedError, match="quota exhausted"):
        await future.value(timeout=HANG)
    assert future.done()


async def test_cancel_stops_a_background_delegation() -> None:
    manager = robot("manager", ScriptedProvider())
    stuck = robot("stuck", ScriptedProvider([[Pause(event=asyncio.Event()), "never"]]))
    future = await manager.delegate(to=stuck, task="x", background=True)
    await asyncio.sleep(0)
    assert future.cancel()
    with pytest.raises(asyncio.CancelledError):
        await future.value(timeout=HANG)
