"""Work a robot delegated in the background goes on after the run that started it ended, and the person quits the
window or deletes the thread: the work stops, and the delegate's run ends in the store with why — "you quit RobotLab
Workspace…" or "you deleted the thread…", not "you pressed Stop…" — so its lane says so when the thread is opened
again (after a restart, or after Undo), instead of "not followed". The scene is ``tests/ui``'s ``scene`` fixture
(``fakes.delegating_manager``): the app with the robot ``manager``, whose tool delegates to ``helper`` on the
loopback OpenAI-compatible server (its model takes its time); the store a SQLite file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes.app_window import wait_until
from tests.fakes.delegating_manager import (
    Scene,
    assert_stopped,
    lane_of_the_call,
    run_ends_while_it_delegates,
)
from workspace.providers.testing import ScriptedProvider


def delegate_ends(db_path: Path, thread_id: str, run_id: str) -> list[Any]:
    """The stored terminal events of the delegate's run ``run_id``, read through a connection of their own."""
    from workspace.persistence import Store

    store = Store(db_path)
    try:
        return [e for _turn, e in store.thread_events(thread_id) if e.run_id == run_id and e.terminal]
    finally:
        store.close()


def lane_after_restart(db_path: Path, thread_id: str) -> Any:
    """The delegate's lane as the chat shows it when the thread is opened by a new start of the app: the stored turns
    read by a workspace of its own on the same database, fed to the chat's presenter."""
    from ui.chat.model.presenter import ChatPresenter
    from workspace.config import load_config
    from workspace.session import Workspace

    workspace = Workspace(config=load_config(env={}), db_path=db_path)
    try:
        presenter = ChatPresenter()
        for view in workspace.open_thread(thread_id).transcript():
            presenter.load_turn(view)
        call = presenter.call("c1")
        assert call is not None and call.inner is not None
        return call.inner
    finally:
        workspace.close()


async def test_quitting_stores_that_the_delegated_work_stopped_because_you_quit(
        scene: Scene, provider: ScriptedProvider, db_path: Path) -> None:
    from PySide6.QtWidgets import QMessageBox

    from ui.chat.model.runs import BACKGROUND_NOT_FOLLOWED
    from workspace import events as ev
    from workspace.delegation import STOPPED_AT_QUIT

    window = scene.root.window
    thread_id = await run_ends_while_it_delegates(scene, provider)
    run_id = lane_of_the_call(window).run_id
    assert lane_after_restart(db_path, thread_id).reason == BACKGROUND_NOT_FOLLOWED  # as it was before quitting

    assert not window.close()  # asked first; Quit stops it
    box = window.quit_box
    assert box is not None
    next(b for b in box.buttons() if box.buttonRole(b) == QMessageBox.ButtonRole.AcceptRole).click()
    await wait_until(lambda: not window.isVisible(), what="the window to close")
    await assert_stopped(scene)

    (end,) = delegate_ends(db_path, thread_id, run_id)
    assert isinstance(end, ev.RunCancelled) and end.reason == STOPPED_AT_QUIT and end.parent_tool_id == "c1"
    lane = lane_after_restart(db_path, thread_id)
    assert lane.status == "cancelled" and lane.reason == STOPPED_AT_QUIT
    assert lane.reason.startswith("you quit RobotLab Workspace")


async def test_deleting_the_thread_stores_that_the_delegated_work_stopped_because_it_was_deleted(
        scene: Scene, provider: ScriptedProvider, db_path: Path) -> None:
    from workspace import events as ev
    from workspace.delegation import STOPPED_IN_BACKGROUND, STOPPED_WITH_THREAD

    window, controller = scene.root.window, scene.root.controller
    thread_id = await run_ends_while_it_delegates(scene, provider)
    run_id = lane_of_the_call(window).run_id
    lanes_told: list[tuple[str, list[str], str]] = []
    controller.delegations_stopped.connect(lambda *told: lanes_told.append(told))

    window.threads.delete(thread_id)
    await assert_stopped(scene)
    assert "stopped the work it had delegated to helper" in window.toast.label.text()
    assert lanes_told == [(thread_id, [run_id], STOPPED_WITH_THREAD)]  # the open thread's lane said why, too

    # The thread is deleted softly (Undo brings it back), so its rows stay: the delegate's end is stored with it.
    (end,) = delegate_ends(db_path, thread_id, run_id)
    assert isinstance(end, ev.RunCancelled) and end.reason == STOPPED_WITH_THREAD != STOPPED_IN_BACKGROUND
    assert end.reason.startswith("you deleted the thread")

    window.threads.undo_delete(thread_id)  # the toast's Undo: the thread opens again, its lane says why it stopped
    await wait_until(lambda: controller.thread_id == thread_id and window.chat.presenter.call("c1") is not None,
                     what="the thread's turns again")
    lane = lane_of_the_call(window)
    assert lane.status == "cancelled" and lane.reason == STOPPED_WITH_THREAD
    assert len(delegate_ends(db_path, thread_id, run_id)) == 1
