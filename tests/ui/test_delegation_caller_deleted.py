"""A robot's tool delegates a task to another robot in the background, and the person deletes the caller's thread
in the window while the delegation still runs (the caller's run over, or still going): nothing crashes, the
delegation is stopped before it does anything more (its model is not asked again, so its next tool call, a file
write, never reaches the deleted thread's changes), the thread's stored events stay as they were, and the toast
says that the delegated work was stopped. The window is the whole app on scripted models; the store a SQLite file."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.app_window import wait_until
from tests.fakes.delegating_manager import manager_app
from workspace.providers.testing import Pause, ScriptedProvider, ToolCall


@dataclass
class Scene:
    root: Any
    helper_model: ScriptedProvider
    release: asyncio.Event
    futures: list[Any] = field(default_factory=list)


@pytest.fixture
async def scene(robotlab_home: Path, db_path: Path, tmp_path: Path, provider: ScriptedProvider,
                monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Scene]:
    """The app with the robot ``manager``, whose tool ``start_helper`` delegates "write late.txt" to ``helper`` in
    the background; helper's model waits for ``release``, then calls write_file."""
    from workspace import Robot

    release = asyncio.Event()
    helper_model = ScriptedProvider([[Pause(event=release),
                                      ToolCall("write_file", {"path": "late.txt", "content": "late\n"}, id="w1")],
                                     "Wrote it."])
    helper = Robot("helper", system_prompt="You help.", knowledge_store=False, tools=["write_file"],
                   provider=helper_model)
    async with manager_app(helper, "write late.txt", provider=provider, robotlab_home=robotlab_home,
                           db_path=db_path, tmp_path=tmp_path, monkeypatch=monkeypatch) as (root, futures):
        yield Scene(root, helper_model, release, futures)
        release.set()  # (a delegation the test left running finishes)


async def settled_events(store: Any, thread_id: str) -> list[tuple[str, list[str]]]:
    """The thread's stored events by turn once they stop changing: the runs' events reach the store through the
    recorder's task, a moment after the models were asked (both runs are held, so the list settles)."""
    last: list[tuple[str, list[str]]] | None = None
    for _ in range(200):
        now = [(turn.id, [e.kind for e in events]) for turn, events in store.path_events(thread_id)]
        if now == last:
            return now
        last = now
        await asyncio.sleep(0.05)
    raise AssertionError(f"the stored events kept changing: {last}")


async def delete_while_delegated(scene: Scene, *, caller_running: bool) -> None:
    """Delete the open thread while its delegation runs; check that the delegation stopped and nothing more was
    written or asked (but the end of the caller's own run, when it was going: its turn is not left running)."""
    window, controller = scene.root.window, scene.root.controller
    thread_id = controller.thread_id
    assert thread_id is not None
    (future,) = scene.futures
    assert not future.done()
    assert controller.delegations_running(thread_id) == ["helper"]
    store = controller.store
    stored = await settled_events(store, thread_id)

    window.threads.delete(thread_id)
    await wait_until(future.done, what="the delegation to stop")
    assert controller.thread_id != thread_id
    with pytest.raises(asyncio.CancelledError):
        await future.value(timeout=5)
    assert "Deleted" in window.toast.label.text()
    assert "stopped the work it had delegated to helper" in window.toast.label.text()
    assert controller.delegations_running(thread_id) == []

    scene.release.set()  # were it still running, helper would now write late.txt
    await wait_until(lambda: controller.idle, what="the caller's run to stop")
    await asyncio.sleep(0.5)
    assert len(scene.helper_model.history) == 1  # its model was not asked again: no write_file result sent
    if caller_running:
        ((turn_id, kinds),) = stored
        stored = [(turn_id, [*kinds, "run_cancelled"])]
    assert [(turn.id, [e.kind for e in events]) for turn, events in store.path_events(thread_id)] == stored
    assert {turn.status for turn in store.turns(thread_id)} == {"cancelled" if caller_running else "finished"}
    assert not controller.waiting_approvals()
    assert window.isVisible()


async def test_deleting_the_thread_after_its_run_ended_stops_what_it_delegated(scene: Scene,
                                                                            provider: ScriptedProvider) -> None:
    provider.enqueue([ToolCall("start_helper", {}, id="c1")], "Started it.")
    scene.root.window.runs.send("get the helper going")
    await wait_until(lambda: scene.futures and scene.root.controller.idle and scene.helper_model.history,
                     what="the caller's run to end while its delegation waits")
    await delete_while_delegated(scene, caller_running=False)


async def test_deleting_the_thread_while_its_run_goes_on_stops_both(scene: Scene, provider: ScriptedProvider) -> None:
    hold = asyncio.Event()
    provider.enqueue([ToolCall("start_helper", {}, id="c1")], [Pause(event=hold), "Started it."])
    scene.root.window.runs.send("get the helper going")
    controller = scene.root.controller
    await wait_until(lambda: scene.futures and scene.helper_model.history and len(provider.history) == 2,
                     what="the caller's second model call and the delegation, both waiting")
    assert not controller.idle
    await delete_while_delegated(scene, caller_running=True)
    hold.set()
