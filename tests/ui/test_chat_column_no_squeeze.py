"""A reply added to a full chat leaves the messages above it where they are: the column never squeezes them.

Showing a widget in the column (a reply's header, the activity line) makes Qt run the column's layout at once, at
the column's height of before, which the new widget no longer fits in. The layout squeezed every message a few
pixels to make room, moving every widget under them, and gave the pixels back when the scroll area grew the canvas
a moment later: each part a reply adds moved every widget of the column twice, and in a chat full to its screen
each move repainted all of it. Send at turn 100 cost twice the window's CPU of turn 1 (whose column fits its
screen). The column's layout (:class:`ui.chat.view.chat.ColumnLayout`) lays its widgets out at the height they
take: what does not fit yet runs below the column's bottom until the canvas grows, and nothing above it moves.
"""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication, QWidget
from shiboken6 import isValid

from ui.chat.view.chat import ChatView
from workspace import events as ev


class _Moves(QObject):
    """Counts the moves and resizes of the widgets it watches."""

    def __init__(self, widgets: list[QWidget]) -> None:
        super().__init__()
        self.watched = {id(w) for w in widgets}
        self.events: list[str] = []

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if id(watched) in self.watched and event.type() in (QEvent.Type.Move, QEvent.Type.Resize):
            self.events.append(f"{type(watched).__name__} {event.type().name}")
        return False


def _settle(rounds: int = 6, chat: ChatView | None = None) -> None:
    """A few passes of the event loop; with ``chat``, then until its turn window has nothing left to do (turns far
    from the screen released: on a busy machine that comes later)."""
    for _ in range(rounds):
        QApplication.processEvents()
        time.sleep(0.002)
    passes = 0
    while chat is not None and chat.turn_window.busy and passes < 2000:
        QApplication.processEvents()
        time.sleep(0.001)
        passes += 1


def _turn(chat: ChatView, i: int) -> None:
    run = f"r{i}"
    chat.presenter.add_user(f"question {i}")
    chat.presenter.feed(ev.RunStarted(run_id=run, robot="assistant", seq=1, message=f"question {i}"))
    chat.presenter.feed(ev.TextDelta(run_id=run, robot="assistant", seq=2, text=f"answer {i} " * 20))
    chat.presenter.feed(ev.RunFinished(run_id=run, robot="assistant", seq=3))


def test_a_reply_added_to_a_full_chat_moves_none_of_the_widgets_above_it(qapp_instance: Any) -> None:
    chat = ChatView()
    chat.resize(700, 500)
    chat.show()
    moves: _Moves | None = None
    try:
        for i in range(12):
            _turn(chat, i)
            _settle(2)
        _settle(chat=chat)
        bar = chat.verticalScrollBar()
        assert bar.maximum() > 0 and bar.value() == bar.maximum()  # a column taller than the screen, at its end
        before = [w for w in chat.items() if w is not chat.activity]
        places = [w.geometry() for w in before]
        top, bottom = bar.value(), bar.value() + chat.viewport().height()
        on_screen = [w for w, place in zip(before, places, strict=True) if place.bottom() >= top and place.top() <= bottom]
        assert on_screen
        moves = _Moves(before)
        QApplication.instance().installEventFilter(moves)
        _turn(chat, 12)
        _settle(chat=chat)
        assert bar.value() == bar.maximum() > 0  # the new turn is on screen
        # (a turn far above the screen may be released meanwhile, its widgets deleted: what stays must not move)
        assert all(isValid(w) for w in on_screen)
        kept = [(w, place) for w, place in zip(before, places, strict=True) if isValid(w)]
        assert [w.geometry() for w, _place in kept] == [place for _w, place in kept]
        assert not moves.events, f"{len(moves.events)} moves and resizes of the widgets above, e.g. {moves.events[:4]}"
    finally:
        if moves is not None:
            QApplication.instance().removeEventFilter(moves)
        chat.close()
        chat.deleteLater()
