""""Replay with…" in the window (the whole app on a scripted model and a fresh database): the thread's
messages are sent again; where the new answers call another tool, the comparison names the diverging
turn, marks it, shows both answers and the difference, and the summary says the exit status; a replay
that goes as recorded says so; a replay can be cancelled."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.fakes.app_window import wait_until
from ui.replay.dialog import ReplayChoice, ReplayDialog
from workspace.providers.testing import Pause, ToolCall

MESSAGES = ["hi", "and then?"]


async def record(desktop: Any, provider: Any) -> None:
    provider.enqueue("Hello there.", "Then we rest.")
    for text in MESSAGES:
        desktop.window.runs.send(text)
        await wait_until(lambda: desktop.controller.idle, what="the run to end")
    await asyncio.sleep(0.05)


def open_dialog(desktop: Any) -> ReplayDialog:
    desktop.window.commands.by_name["replay_with"].trigger()
    dialogs = [d for d in desktop.window.findChildren(ReplayDialog) if d.isVisible()]
    assert len(dialogs) == 1
    return dialogs[0]


async def test_replay_names_the_diverging_turn(desktop: Any, provider: Any) -> None:
    await record(desktop, provider)
    dialog = open_dialog(desktop)
    assert "2 turn(s)" in dialog.progress.text()
    # The replay: turn 1 as recorded; turn 2 calls a tool the record does not hold (not run), then answers.
    provider.enqueue("Hello there.", [ToolCall("remember", {"key": "k", "value": 1}, id="n1")], "Stored it.")
    task = dialog.start()
    assert task is not None and not dialog.start_button.isEnabled() and dialog.cancel_button.isEnabled()
    await task
    summary = dialog.summary.text()
    assert summary.startswith("Diverged at turn 2 (tool") and "exit status 1" in summary
    assert [dialog.turn_list.item(i).text()[:8] for i in range(dialog.turn_list.count())] == ["✓ Turn 1", "✗ Turn 2"]
    assert dialog.turn_list.currentRow() == 1  # the first diverging turn is shown
    assert "Then we rest." in dialog.recorded_view.toPlainText()
    assert "Stored it." in dialog.replayed_view.toPlainText()
    assert "remember" in dialog.diff_view.toPlainText()
    # The replay is a thread of its own, marked as the replay of the original.
    assert dialog.replay_result is not None
    store = desktop.controller.require_store()
    assert store.get_thread(dialog.replay_result.thread_id).metadata["replay_of"] == desktop.controller.thread_id
    dialog.close()


async def test_a_replay_as_recorded_exits_0_and_one_can_be_cancelled(desktop: Any, provider: Any) -> None:
    await record(desktop, provider)
    dialog = open_dialog(desktop)
    provider.enqueue("Hello there.", "Then we rest.")
    task = dialog.start()
    assert task is not None
    await task
    assert dialog.summary.text().startswith("No divergence — exit status 0.")
    assert dialog.diff_view.toPlainText() == "This turn went as recorded."
    # Cancelled while the model thinks.
    provider.enqueue(Pause(30.0))
    task = dialog.start()
    assert task is not None
    await asyncio.sleep(0.2)
    dialog.cancel_button.click()
    await wait_until(task.done, what="the replay to stop")
    assert task.cancelled() and "cancelled" in dialog.progress.text()
    assert dialog.start_button.isEnabled()
    dialog.close()


async def test_a_listed_model_is_replayed_on_its_own_server(qapp_instance: Any) -> None:
    async def never(_choice: Any) -> Any:
        raise AssertionError("not started")

    dialog = ReplayDialog("t", never, models=[("llama3", "http://127.0.0.1:11434"), ("openai/gpt-4o-mini", None)],
                          robots=["assistant"], turns=1)
    assert dialog.choice().model is None and dialog.choice().robot is None
    dialog.model.setCurrentText("llama3")
    assert (dialog.choice().model, dialog.choice().api_base) == ("llama3", "http://127.0.0.1:11434")
    dialog.model.setCurrentText("openai/gpt-4o-mini")
    assert (dialog.choice().model, dialog.choice().api_base) == ("openai/gpt-4o-mini", None)
    dialog.model.setCurrentText("typed/model")
    dialog.robot.setCurrentText("assistant")
    dialog.tolerance.setCurrentIndex(1)
    assert dialog.choice() == ReplayChoice("typed/model", "assistant", "tools", None)
    dialog.close()
