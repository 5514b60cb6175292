"""A robot's tool delegates a task to another robot in the background, and the person presses Stop in the window:
the delegation stops with the run (the Thread menu's Stop, Esc's action), or, when the run already ended, the message
box's button — Stop while that work runs and the box is empty — stops it, and its lane in the chat says it was
stopped, not that it was not followed. Switching to another thread stops nothing. The delegate is a robot on the
loopback OpenAI-compatible server whose model takes its time: stopped, its request is cut off (the server sees the
client go) and no other request follows. The window is the whole app; the store a SQLite file; the scene is
``tests/ui``'s ``scene`` fixture (``fakes.delegating_manager``)."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.fakes.app_window import wait_until
from tests.fakes.delegating_manager import (
    Scene,
    assert_stopped,
    lane_of_the_call,
    run_ends_while_it_delegates,
)
from workspace.providers.testing import Pause, ScriptedProvider, ToolCall


def button_stops(composer: Any) -> bool:
    """The message box's button is Stop (what its tooltip says), not Send."""
    return bool(composer.button.toolTip().startswith("Stop"))


async def test_stop_while_the_run_goes_on_stops_what_it_delegated(scene: Scene, provider: ScriptedProvider) -> None:
    hold = asyncio.Event()
    provider.enqueue([ToolCall("start_helper", {}, id="c1")], [Pause(event=hold), "Started it."])
    window, controller = scene.root.window, scene.root.controller
    window.runs.send("get the helper going")
    await wait_until(lambda: scene.futures and scene.server.requests and len(provider.history) == 2,
                     what="the caller's second model call and the delegation, both waiting")
    await wait_until(lambda: window.chat.presenter.call("c1") is not None, what="the call's card")
    assert controller.running and not scene.futures[0].done()

    window.commands.by_name["stop"].trigger()  # the Thread menu's Stop, Esc's action
    await assert_stopped(scene)
    await wait_until(lambda: controller.idle, what="the run to stop")
    lane = lane_of_the_call(window)
    assert lane.status == "cancelled" and "stopped" in (lane.reason or "")
    assert not button_stops(window.composer)  # nothing of the thread runs any more: the button sends
    hold.set()


async def test_the_button_stops_what_went_on_after_the_run_and_switching_stops_nothing(
        scene: Scene, provider: ScriptedProvider) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from ui.chat.model.runs import BACKGROUND_NOT_FOLLOWED

    hold = asyncio.Event()  # the caller's run ends once its delegate's model was asked (its lane is in the card)
    provider.enqueue([ToolCall("start_helper", {}, id="c1")], [Pause(event=hold), "Started it."])
    window, controller = scene.root.window, scene.root.controller
    composer = window.composer
    window.runs.send("get the helper going")
    await wait_until(lambda: scene.server.requests and len(provider.history) == 2, what="the delegate's model call")
    hold.set()
    await wait_until(lambda: scene.futures and controller.idle and scene.server.requests,
                     what="the caller's run to end while its delegation waits")
    thread_id = controller.thread_id
    await wait_until(lambda: lane_of_the_call(window).reason == BACKGROUND_NOT_FOLLOWED, what="the lane to end")
    await wait_until(lambda: button_stops(composer), what="the button to stop the background work")
    assert "delegated in the background" in composer.button.toolTip()
    composer.edit.setPlainText("a next message")  # typing: the button sends
    assert not button_stops(composer) and composer.button.isEnabled()
    composer.edit.clear()
    assert button_stops(composer) and composer.button.isEnabled()

    window.threads.new()  # another thread: the work goes on (runs in the background are a feature)
    await wait_until(lambda: controller.thread_id != thread_id and not button_stops(composer),
                     what="the new thread's button to send")
    await asyncio.sleep(0.3)
    assert not scene.futures[0].done() and scene.server.disconnects == 0
    window.threads.open(thread_id)
    await wait_until(lambda: controller.thread_id == thread_id and button_stops(composer),
                     what="the thread's button to stop its background work again")
    await wait_until(lambda: window.chat.presenter.call("c1") is not None, what="the thread's turns")

    QTest.mouseClick(composer.button, Qt.MouseButton.LeftButton)
    await assert_stopped(scene)
    lane = lane_of_the_call(window)  # it says it was stopped, not that it was not followed
    assert lane.status == "cancelled" and (lane.reason or "").startswith("you pressed Stop")
    await wait_until(lambda: not button_stops(composer), what="the button to send again")
    assert not composer.button.isEnabled()  # (the box is empty)


def sidebar_state(window: Any, thread_id: str) -> tuple[Any, str]:
    """The thread's row in the sidebar: its run state (what its icon is drawn from) and its accessible text."""
    from PySide6.QtCore import Qt

    model = window.thread_model
    index = model.index(model.row_of(thread_id))
    return index.data(model.RunStateRole), str(index.data(Qt.ItemDataRole.AccessibleTextRole))


async def test_the_sidebar_shows_a_thread_working_in_the_background_until_its_delegations_end(
        scene: Scene, provider: ScriptedProvider) -> None:
    from ui.threads.sidebar import RUN_STATE_ICONS

    window = scene.root.window
    thread_id = await run_ends_while_it_delegates(scene, provider)
    window.threads.new()  # the thread out of sight: its row says it still works, with the running icon
    await wait_until(lambda: sidebar_state(window, thread_id)[0] == "background",
                     what="the row to show the background work")
    assert RUN_STATE_ICONS["background"] == RUN_STATE_ICONS["streaming"]
    assert "working in the background" in sidebar_state(window, thread_id)[1]

    scene.futures[0].cancel()  # the delegation ends (here, stopped from its own future)
    await wait_until(lambda: sidebar_state(window, thread_id)[0] != "background", what="the row to go back")
    state, words = sidebar_state(window, thread_id)
    assert state is None and "background" not in words


async def test_the_sidebar_row_goes_back_when_stop_stops_what_the_thread_delegated(
        scene: Scene, provider: ScriptedProvider) -> None:
    window, controller = scene.root.window, scene.root.controller
    thread_id = await run_ends_while_it_delegates(scene, provider)
    await wait_until(lambda: sidebar_state(window, thread_id)[0] == "background",
                     what="the open thread's row to show the background work")
    controller.stop_thread(thread_id)
    await assert_stopped(scene)
    assert sidebar_state(window, thread_id)[0] is None


async def test_quitting_counts_delegated_work_still_running_and_stops_it(
        scene: Scene, provider: ScriptedProvider) -> None:
    from PySide6.QtWidgets import QMessageBox

    window, controller = scene.root.window, scene.root.controller
    thread_id = await run_ends_while_it_delegates(scene, provider)
    assert controller.runs_going() == []  # no run goes: only what it delegated
    title = next(i.title for i in window.thread_model.items if i.thread_id == thread_id)
    assert not window.close()  # asked first
    box = window.quit_box
    assert box is not None and box.isVisible()
    assert box.text() == f"‘{title}’: 1 delegated task still running. Quit and stop it?"
    box.button(QMessageBox.StandardButton.Cancel).click()
    await asyncio.sleep(0.3)
    assert window.isVisible() and not scene.futures[0].done()  # Cancel: it goes on

    assert not window.close()
    quit_button = next(b for b in box.buttons() if b.text() == "Quit and stop them")
    quit_button.click()
    await wait_until(lambda: not window.isVisible(), what="the window to close")
    await assert_stopped(scene)


async def test_a_stopped_lane_stays_stopped_when_the_thread_is_reopened(
        scene: Scene, provider: ScriptedProvider) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from ui.chat.model.runs import BACKGROUND_STOPPED
    from workspace import events as ev

    window, controller = scene.root.window, scene.root.controller
    thread_id = await run_ends_while_it_delegates(scene, provider)
    await wait_until(lambda: button_stops(window.composer), what="the button to stop the background work")
    QTest.mouseClick(window.composer.button, Qt.MouseButton.LeftButton)
    await assert_stopped(scene)
    assert lane_of_the_call(window).reason == BACKGROUND_STOPPED

    window.threads.new()
    await wait_until(lambda: controller.thread_id != thread_id, what="another thread")
    window.threads.open(thread_id)
    await wait_until(lambda: controller.thread_id == thread_id and window.chat.presenter.call("c1") is not None,
                     what="the thread's turns again")
    lane = lane_of_the_call(window)  # read back from the store: stopped, not "not followed"
    assert lane.status == "cancelled" and lane.reason == BACKGROUND_STOPPED

    # What is stored: the delegate's run ends once, cancelled with that reason, inside the call that started it.
    store = controller.require_store()
    events = [e for _turn, e in store.thread_events(thread_id) if e.run_id == lane.run_id]
    ends = [e for e in events if e.terminal]
    assert len(ends) == 1 and isinstance(ends[0], ev.RunCancelled) and ends[0].reason == BACKGROUND_STOPPED
    assert ends[0].nested and ends[0].parent_tool_id == "c1"
    assert ends[0].seq > max(e.seq for e in events if not e.terminal)
