"""How a run is going, in the chat: a failed run's error is a
card across the column with the fix its message names and Retry (the same when reopened); what a
running robot waits for shows under the last message with the time it has waited; a running tool call's
card shows the time so far."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.fakes.app_window import turns_made, wait_until
from tests.ui.chat_dump import dump_state, dump_widgets
from ui.chat.model.presenter import WAITING, ChatPresenter
from ui.chat.model.state import ErrorItem, split_fix
from ui.chat.view.chat import ChatView
from ui.chat.view.run_state import ErrorCard
from workspace import events as ev
from workspace.providers.testing import Fail, Pause


@pytest.mark.parametrize(("message", "what", "fix"), [
    ("AuthenticationError: Incorrect API key provided. Set OPENAI_API_KEY or open Settings (Ctrl+,).",
     "AuthenticationError: Incorrect API key provided.", "Set OPENAI_API_KEY or open Settings (Ctrl+,)."),
    ("Could not reach http://localhost:11434: start Ollama (ollama serve) and try again",
     "Could not reach http://localhost:11434.", "Start Ollama (ollama serve) and try again"),
    ("the billing system is down", "the billing system is down", ""),
])
def test_an_error_message_is_split_into_what_and_the_fix(message: str, what: str, fix: str) -> None:
    assert split_fix(message) == (what, fix)


def test_a_failed_run_gets_an_error_item_and_activity_follows_the_run() -> None:
    presenter = ChatPresenter()
    presenter.add_user("go")
    presenter.feed(ev.RunStarted(run_id="r1", robot="assistant", seq=1, ts=100.0))
    run = presenter.run("r1")
    assert run is not None and run.activity == WAITING and run.activity_since == 100.0
    presenter.feed(ev.TextDelta(run_id="r1", robot="assistant", seq=2, text="Let me look."))
    assert run.activity is None
    presenter.feed(ev.ToolUse(run_id="r1", robot="assistant", seq=3, id="c1", name="recall", input={}, ts=101.0))
    call = presenter.call("c1")
    assert call is not None and call.started == 101.0 and run.activity is None
    presenter.feed(ev.ToolResult(run_id="r1", robot="assistant", seq=4, id="c1", name="recall", payload={"data": 1},
                                 ts=102.0))
    assert run.activity == WAITING and run.activity_since == 102.0  # the model's next turn
    presenter.feed(ev.RunFailed(run_id="r1", robot="assistant", seq=5, error="Rate limited. Wait a minute.",
                                error_type="RateLimitError"))
    assert run.activity is None
    errors = [i for i in presenter.state.turns[0].items if isinstance(i, ErrorItem)]
    assert len(errors) == 1 and errors[0].message == "Rate limited." and errors[0].fix == "Wait a minute."
    assert "error 'Rate limited.' fix='Wait a minute.' type=RateLimitError" in dump_state(presenter.state)
    assert run.end is not None and run.end.status_text == "Failed — Rate limited. Wait a minute."


async def test_a_failed_run_shows_a_card_across_the_column_with_retry_and_reopened(desktop: Any,
                                                                                   provider: Any) -> None:
    w = desktop.window
    provider.enqueue(["Trying", Fail("The API key was refused. Set OPENAI_API_KEY, or open Settings.")],
                     "It worked this time.")
    w.runs.send("hello")
    await wait_until(lambda: desktop.controller.idle, what="the run")
    await asyncio.sleep(0.05)
    cards = [x for x in w.chat.items() if isinstance(x, ErrorCard)]
    assert len(cards) == 1
    card = cards[0]
    assert card.text.text() == "The API key was refused."
    assert card.fix_label is not None and "Set OPENAI_API_KEY, or open Settings." in card.fix_label.text()
    assert card.settings_button is not None and card.retry_button.isVisible()
    assert card.width() >= w.chat.column.width() - 2  # across the column, not a narrow red line
    live = dump_widgets(w.chat)
    thread = desktop.controller.thread_id
    w.threads.new()
    await asyncio.sleep(0.05)
    w.threads.open(thread)
    await turns_made(w.chat)  # (a thread shown makes its turns' widgets in the steps after it)
    assert dump_widgets(w.chat) == live  # reopened: the same card
    card = next(x for x in w.chat.items() if isinstance(x, ErrorCard))
    card.retry_button.click()  # Retry: the message again, as a new branch
    await wait_until(lambda: desktop.controller.idle and "It worked" in dump_widgets(w.chat), what="the retry")
    users = w.chat.user_messages()
    assert users[-1].sibling_count == 2


async def test_the_activity_line_says_what_the_run_waits_for(desktop: Any, provider: Any) -> None:
    w = desktop.window
    shown: list[str] = []
    w.chat.activity_changed.connect(shown.append)
    provider.enqueue([Pause(0.6), "Here it is."])
    w.runs.send("slow one")
    await wait_until(lambda: w.chat.activity.isVisible(), what="the activity line")
    assert w.chat.activity.label.text().startswith(WAITING)
    assert WAITING in w.status.connection.text()  # the status bar says it too
    assert w.chat.activity not in w.chat.items()
    await wait_until(lambda: desktop.controller.idle, what="the run")
    await asyncio.sleep(0.05)
    assert not w.chat.activity.isVisible()
    assert shown[0] == WAITING and shown[-1] == ""
    assert "Running" not in w.status.connection.text()


def test_a_running_call_shows_the_time_so_far(qapp_instance: Any) -> None:
    chat = ChatView()
    chat.resize(800, 600)
    chat.show()
    now = time.time()
    chat.presenter.add_user("go")
    chat.presenter.feed(ev.RunStarted(run_id="r1", robot="assistant", seq=1, ts=now - 5))
    chat.presenter.feed(ev.ToolUse(run_id="r1", robot="assistant", seq=2, id="c1", name="slow_tool", input={},
                                   ts=now - 3.2))
    card = chat.card("c1")
    assert card is not None and chat.clock.timer.isActive()
    chat.clock.tick()
    assert card._duration.text() == "3 s…"
    chat.presenter.feed(ev.ToolResult(run_id="r1", robot="assistant", seq=3, id="c1", name="slow_tool",
                                      payload={"data": "ok"}, duration=3.4))
    assert card._duration.text() == "3.4 s"
    chat.presenter.feed(ev.RunFinished(run_id="r1", robot="assistant", seq=4))
    chat.clock.tick()
    assert not chat.clock.timer.isActive() and not chat.activity.isVisible()
    chat.close()
    chat.deleteLater()
