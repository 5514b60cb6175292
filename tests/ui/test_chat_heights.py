"""The chat's column is as tall as its messages laid out at its width: a long
pasted message no longer makes the column several times taller than its content (the chat went
blank, and a reopened thread scrolled into empty space)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication, QWidget

from tests.fakes.app_window import wait_until
from ui.chat.view.chat import ChatView
from ui.chat.view.messages import UserMessage
from workspace import events as ev


def _text(n: int) -> str:
    words = "lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt "
    out, i = [], 0
    while sum(map(len, out)) < n:
        line = (words * 4)[: 60 + (i * 37) % 300]
        out.append(line + ("\n\n" if i % 4 == 0 else "\n"))
        i += 1
    return "".join(out)[:n]


def _settle(app: Any, rounds: int = 6) -> None:
    for _ in range(rounds):
        app.processEvents()


def _content_height(chat: ChatView) -> int:
    items: list[QWidget] = chat.items()
    spacing = chat._layout.spacing()
    return sum(w.height() for w in items) + spacing * max(0, len(items) - 1)


def _last_shown(chat: ChatView) -> bool:
    last = chat.items()[-1]
    bottom = last.mapTo(chat.viewport(), last.rect().bottomLeft()).y()
    top = last.mapTo(chat.viewport(), last.rect().topLeft()).y()
    return 0 <= bottom <= chat.viewport().height() + 1 and top < chat.viewport().height()


@pytest.mark.parametrize("size", [10, 1000, 50_000])
def test_the_column_is_as_tall_as_its_messages(qapp_instance: Any, size: int) -> None:
    chat = ChatView()
    chat.resize(900, 700)
    chat.show()
    text = _text(size)
    chat.presenter.add_user(text)
    chat.presenter.feed(ev.RunStarted(run_id="r1", robot="assistant", seq=1, message=text, model="m"))
    chat.presenter.feed(ev.TextDelta(run_id="r1", robot="assistant", seq=2, text="The answer. " + _text(2000)))
    chat.presenter.feed(ev.RunFinished(run_id="r1", robot="assistant", seq=3))
    _settle(qapp_instance)
    message = next(w for w in chat.items() if isinstance(w, UserMessage))
    # the bubble asks for its height at its width, not the height of every word on its own line
    assert message.minimumSizeHint().height() <= message.height() + 2
    content = _content_height(chat)
    margins = chat.widget().layout().contentsMargins()
    canvas = chat.widget().height()
    if content + margins.top() + margins.bottom() > chat.viewport().height():
        assert abs(chat.column.height() - content) <= 8, (chat.column.height(), content)
        assert canvas <= content + margins.top() + margins.bottom() + 8
    else:
        assert canvas == chat.viewport().height()
    chat.scroll_to_bottom()
    _settle(qapp_instance)
    assert _last_shown(chat)
    # narrower: the heights follow the width
    chat.resize(600, 700)
    _settle(qapp_instance)
    content = _content_height(chat)
    if content > chat.viewport().height():
        assert abs(chat.column.height() - content) <= 8
    chat.close()
    chat.deleteLater()
    _settle(qapp_instance)


async def test_a_reopened_thread_with_a_long_message_ends_at_its_last_message(desktop: Any, provider: Any) -> None:
    w = desktop.window
    long = _text(50_000)
    provider.enqueue("A short answer to a long message.", "Second answer.")
    w.runs.send(long)
    await wait_until(lambda: desktop.controller.idle, what="the run")
    w.runs.send("and one more")
    await wait_until(lambda: desktop.controller.idle, what="the run")
    thread = desktop.controller.thread_id
    w.threads.new()
    await asyncio.sleep(0.05)
    w.threads.open(thread)
    for _ in range(30):
        await asyncio.sleep(0.02)
    chat = w.chat
    content = _content_height(chat)
    assert abs(chat.column.height() - content) <= 8, (chat.column.height(), content)
    bar = chat.verticalScrollBar()
    assert bar.value() == bar.maximum()
    assert _last_shown(chat)
    QApplication.processEvents()
