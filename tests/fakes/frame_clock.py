"""A view with a frame clock, as a comparison's column has: the renders a ``MarkdownStream`` in it leaves for later
wait here until the test runs them (its next turn)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication, QVBoxLayout, QWidget

from ui import markdown
from ui.chat.view.stream import MarkdownStream

#: A flush of the bridge (16 ms) at 300 KB/s.
FLUSH = 4800


class FrameClock(QWidget):
    """A render a stream leaves for later waits in ``waiting`` until the test's next turn."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting: list[Callable[[], None]] = []
        self.resize(800, 600)
        QVBoxLayout(self)

    def defer_render(self, render: Callable[[], None]) -> bool:
        self.waiting.append(render)
        return True


def clock_turn(clock: FrameClock, stream: MarkdownStream, pieces: list[str]) -> None:
    """One turn of the clock: the renders left for it run, then the next flush (the first of ``pieces``) comes."""
    waiting, clock.waiting = clock.waiting, []
    for render in waiting:
        render()
    if pieces:
        stream.append(pieces.pop(0))


def stream_in_flushes(qtbot: Any, monkeypatch: pytest.MonkeyPatch, clock: FrameClock,
                      text: str) -> tuple[MarkdownStream, list[int]]:
    """``text`` streamed in flushes of ``FLUSH`` characters, a flush a turn, in a stream in ``clock``: the stream,
    and the characters of Markdown rendered in each turn."""
    qtbot.addWidget(clock)
    stream = MarkdownStream(parent=clock)
    clock.layout().addWidget(stream)
    clock.show()
    chars: list[int] = []
    real_part = markdown.render_part

    def render_part(part: str, **kwargs: Any) -> tuple[str, int]:
        chars.append(len(part))
        return real_part(part, **kwargs)

    monkeypatch.setattr(markdown, "render_part", render_part)
    pieces = [text[at:at + FLUSH] for at in range(0, len(text), FLUSH)]
    per_turn: list[int] = []
    while pieces or clock.waiting:
        chars.clear()
        clock_turn(clock, stream, pieces)
        per_turn.append(sum(chars))
        QApplication.processEvents()
        assert len(per_turn) < 200, "the stream never caught up"
    monkeypatch.setattr(markdown, "render_part", real_part)
    assert not stream.pending and stream.text == text
    return stream, per_turn
