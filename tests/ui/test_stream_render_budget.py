"""A burst of streamed prose costs the window one bounded render a turn of the event loop.

Text that comes faster than it renders (a flush of the bridge carries some 5,000 characters at 300 KB/s) is
caught up over later turns, each rendering about ``MAX_RENDER_CHARS`` of Markdown. Before, a flush that came while
such a render waited rendered too (two renders in a turn), armed a second timer beside the waiting one (each
timer then went on rendering and arming itself: the turns that lagged ran several renders back to back, more as
the answer went on), and a render that froze finished blocks went on to render the new tail in the same turn
(up to twice the budget). What is shown stays what rendering each segment's Markdown whole shows.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from fakes.frame_clock import FrameClock, clock_turn
from fakes.rendered_markdown import assert_shown_as_rendered
from PySide6.QtWidgets import QApplication

from ui import markdown
from ui.chat.view.stream import MAX_RENDER_CHARS, MarkdownStream

#: A flush of the bridge (16 ms) at 300 KB/s.
FLUSH = 4800


def prose(size: int) -> str:
    """Paragraphs with Markdown in them (so never appended as plain words), ``size`` characters or more."""
    sentence = "The robot **streams** text while `tools` run and the memory changes, "
    out: list[str] = []
    i = 0
    while sum(map(len, out)) < size:
        out.append(f"{sentence * 5}paragraph {i}.\n\n")
        i += 1
    return "".join(out)


def count_work(monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], list[int]]:
    """Renders of the stream (calls of its ``_render``) and characters of Markdown rendered, as they happen."""
    renders: list[int] = []
    chars: list[int] = []
    real_render = MarkdownStream._render
    real_part = markdown.render_part

    # Not named "render": PySide would take a timer's call of it for QWidget.render.
    def counted_render(self: MarkdownStream, *, freeze: bool = True) -> None:
        renders.append(1)
        real_render(self, freeze=freeze)

    def render_part(text: str, **kwargs: Any) -> tuple[str, int]:
        chars.append(len(text))
        return real_part(text, **kwargs)

    monkeypatch.setattr(MarkdownStream, "_render", counted_render)
    monkeypatch.setattr(markdown, "render_part", render_part)
    return renders, chars


def test_a_burst_renders_at_most_the_budget_a_turn(qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each turn runs the render left for it, then the flush's text comes: the flush adds its text to the
    render that waits (it does not render too), and no render goes over the budget (a freeze's render does not
    go on to render the new tail when that would)."""
    clock = FrameClock()
    qtbot.addWidget(clock)
    stream = MarkdownStream(parent=clock)
    clock.layout().addWidget(stream)
    clock.show()
    renders, chars = count_work(monkeypatch)
    text = prose(30_000)
    pieces = [text[at:at + FLUSH] for at in range(0, len(text), FLUSH)]
    turns = 0
    while pieces or clock.waiting:
        renders.clear()
        chars.clear()
        clock_turn(clock, stream, pieces)
        assert len(renders) <= 1, f"turn {turns}: {len(renders)} renders"
        assert sum(chars) <= MAX_RENDER_CHARS, f"turn {turns}: {sum(chars)} characters rendered"
        QApplication.processEvents()  # the loop turns between two ticks of the clock
        turns += 1
        assert turns < 100, "the stream never caught up"
    assert not stream.pending and stream.text == text
    assert_shown_as_rendered(stream)


def test_one_timer_waits_however_many_flushes_come(qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no frame clock a stream's render waits on a timer of its own: flushes that come meanwhile add their
    text to it (no render, no other timer), so when the loop turns, one render runs in it, not one per flush."""
    stream = MarkdownStream()
    qtbot.addWidget(stream)
    stream.resize(800, 600)
    stream.show()
    renders, chars = count_work(monkeypatch)
    text = prose(40_000)
    stream.append(text[:FLUSH])  # more than a render's budget: the rest waits for a later turn
    assert stream.pending
    for at in range(FLUSH, 5 * FLUSH, FLUSH):
        renders.clear()
        stream.append(text[at:at + FLUSH])
        assert not renders, "a flush rendered while a render waited"
    passes = 0
    while stream.pending:
        time.sleep(0.006)  # whatever the stream waits on (a timer of a few ms at most) is due in the next pass
        renders.clear()
        chars.clear()
        QApplication.processEvents()
        assert len(renders) <= 1, f"pass {passes}: {len(renders)} renders"
        assert sum(chars) <= MAX_RENDER_CHARS, f"pass {passes}: {sum(chars)} characters rendered"
        passes += 1
        assert passes < 100, "the stream never caught up"
    stream.append(text[5 * FLUSH:])
    qtbot.waitUntil(lambda: not stream.pending)
    assert stream.text == text
    assert_shown_as_rendered(stream)
