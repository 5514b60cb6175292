"""Background delegations are kept by the thread whose run's tool call started them, so that deleting the thread
(or Stop) can stop them (``workspace.delegation.stop_delegations``): a delegation of a run of no thread is kept by
that run's id, not by any thread (``tests/test_stop_delegated_work.py`` stops one), and one that ended is not kept;
a stopped one ends cancelled and its delegate's model is not asked again."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from workspace import Robot
from workspace.delegation import delegate, running_delegations, stop_delegations
from workspace.providers.testing import Pause, ScriptedProvider, ToolCall
from workspace.tools.base import Tool


def manager_and_helper(release: asyncio.Event) -> tuple[Robot, ScriptedProvider, list[Any]]:
    helper_model = ScriptedProvider([[Pause(event=release), ToolCall("nothing", {}, id="n1")], "Done."])
    helper = Robot("helper", system_prompt="You help.", knowledge_store=False, provider=helper_model)
    futures: list[Any] = []

    async def start(arguments: dict[str, Any]) -> str:
        futures.append(await delegate(helper, "work", delegated_by="manager", background=True))
        return "started"

    manager = Robot("manager", system_prompt="You manage.", knowledge_store=False,
                    local_tools=[Tool("start", "Start the helper", {"type": "object", "properties": {}}, start)],
                    provider=ScriptedProvider([[ToolCall("start", {}, id="c1")], "Started it."]))
    return manager, helper_model, futures


async def test_a_threads_background_delegation_is_stopped_with_it() -> None:
    release = asyncio.Event()
    manager, helper_model, futures = manager_and_helper(release)
    await manager.arun("go", thread_id="t1")
    (future,) = futures
    for _ in range(100):  # bounds a hang only: until the delegate waits in its first model call
        if helper_model.history:
            break
        await asyncio.sleep(0.05)
    assert running_delegations("t1") == [future] and running_delegations("t2") == []
    assert [f.robot_name for f in stop_delegations("t1")] == ["helper"]
    with pytest.raises(asyncio.CancelledError):
        await future.value(timeout=10)
    release.set()
    await asyncio.sleep(0.2)
    assert len(helper_model.history) == 1 and running_delegations("t1") == [] and stop_delegations("t1") == []


async def test_a_delegation_of_no_thread_or_that_ended_is_not_kept_by_a_thread() -> None:
    release = asyncio.Event()
    manager, _, futures = manager_and_helper(release)
    await manager.arun("go")  # a run of no thread
    assert not futures[0].done() and stop_delegations("") == []
    release.set()
    await futures[0].value(timeout=10)

    release = asyncio.Event()
    release.set()
    manager, _, futures = manager_and_helper(release)
    await manager.arun("go", thread_id="t3")
    await futures[0].value(timeout=10)
    assert running_delegations("t3") == [] and stop_delegations("t3") == []
