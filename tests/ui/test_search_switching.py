"""Search results: what a hit row shows, opening one jumps to the matching message, and clicking results
and switching threads a few hundred times."""

from __future__ import annotations

import asyncio
from typing import Any

from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from tests.fakes.app_window import wait_until
from ui.chat.view.messages import UserMessage
from ui.chat.view.stream import MarkdownStream
from ui.threads.model import ThreadListModel, snippet_parts
from workspace.providers.testing import ToolCall


async def _idle(root: Any) -> None:
    await wait_until(lambda: root.controller.idle, what="the run to end")
    await asyncio.sleep(0.02)


async def _threads(root: Any, provider: Any, count: int) -> None:
    w = root.window
    for i in range(count):
        provider.enqueue([f"Looking at banana {i}.", ToolCall("remember", {"key": f"k{i}", "value": i}, id=f"c{i}")],
                         f"Banana number {i} is **stored**.\n\n```python\nprint({i})\n```")
        w.threads.new()
        w.runs.send(f"remember banana {i}")
        await _idle(root)


async def _search(root: Any, text: str, rows: int) -> None:
    w = root.window
    w.sidebar.search.setText(text)
    await wait_until(lambda: w.thread_model.searching and w.thread_model.rowCount() >= rows, what="search hits")


async def test_one_click_opens_a_result_once_after_the_click(desktop: Any, provider: Any) -> None:
    w = desktop.window
    await _threads(desktop, provider, 3)
    await _search(desktop, "banana", 3)
    opened: list[str] = []
    w.controller.thread_opened.connect(lambda s: opened.append(s.thread.id if s is not None else ""))
    view = w.sidebar.list
    target = w.thread_model.items[2].thread_id
    pos = view.visualRect(w.thread_model.index(2)).center()
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, pos)
    assert opened == []  # not inside the list's mouse event: after it
    # clicked and activated both fire on styles that activate on one click: still one switch
    view.activated.emit(w.thread_model.index(2))
    await wait_until(lambda: opened, what="the thread to open")
    await asyncio.sleep(0.05)
    assert opened == [target]
    assert w.controller.thread_id == target


async def test_a_hit_shows_title_robot_date_and_the_match_and_opens_at_the_message(desktop: Any,
                                                                                     provider: Any) -> None:
    w = desktop.window
    provider.enqueue("First answer.", "Second answer about a pelican.", *[f"Answer {i}." for i in range(14)])
    w.runs.send("hello there")
    await _idle(desktop)
    w.runs.send("tell me about birds")
    await _idle(desktop)
    for i in range(14):
        w.runs.send(f"filler message {i}")
        await _idle(desktop)
    thread_id = w.controller.thread_id
    w.threads.new()
    await _search(desktop, "pelican", 1)
    item = w.thread_model.items[0]
    assert item.thread_id == thread_id and item.kind == "assistant" and item.robot == "assistant"
    assert item.updated is not None
    assert ("pelican", True) in [(t.lower(), m) for t, m in snippet_parts(item.snippet)]
    text = w.thread_model.index(0).data(Qt.ItemDataRole.AccessibleTextRole)
    assert "assistant" in text and "in an answer" in text and "pelican" in text
    assert "\x02" not in w.thread_model.index(0).data(ThreadListModel.SubtitleRole)
    view = w.sidebar.list
    assert view.visualRect(w.thread_model.index(0)).height() >= 60  # three lines
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     view.visualRect(w.thread_model.index(0)).center())
    await wait_until(lambda: w.chat.found_flash is not None, what="the matching message")
    await asyncio.sleep(0.05)
    # the turn was among the earlier ones (not shown at first): loaded, scrolled to, outlined
    found = next(x for x in w.chat.items() if isinstance(x, MarkdownStream) and "pelican" in x.text)
    bar = w.chat.verticalScrollBar()
    top = found.mapTo(w.chat.widget(), found.rect().topLeft()).y()
    assert bar.value() <= top < bar.value() + w.chat.viewport().height()
    assert bar.value() < bar.maximum()  # not at the end of the thread
    assert w.thread_model.searching  # the results stay while their thread opens


async def test_clicking_search_results_and_switching_threads_many_times(desktop: Any, provider: Any) -> None:
    w = desktop.window
    await _threads(desktop, provider, 4)
    await _search(desktop, "banana", 4)
    view = w.sidebar.list
    opened: list[str] = []
    w.controller.thread_opened.connect(lambda s: opened.append(s.thread.id if s is not None else ""))
    for n in range(300):
        rows = w.thread_model.rowCount()
        assert rows >= 4
        row = (n * 7) % rows
        rect = view.visualRect(w.thread_model.index(row))
        pos = rect.center() if rect.isValid() else QPoint(10, 10)
        if n % 3 == 0:
            QTest.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, pos)
        elif n % 5 == 0:
            view.setFocus()
            view.setCurrentIndex(w.thread_model.index(row))
            QTest.keyClick(view, Qt.Key.Key_Return)
        else:
            QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, pos)
        if n % 10 == 0:
            w.threads.cycle(+1)
        if n % 2:
            await asyncio.sleep(0)  # sometimes the next click comes before the last one was carried out
    await asyncio.sleep(0.1)
    assert len(set(opened)) >= 4
    assert any(isinstance(x, UserMessage) for x in w.chat.items())
    assert w.controller.thread_id in {i.thread_id for i in w.thread_model.items}


def test_a_hits_match_stays_in_view_when_the_text_before_it_is_long(qapp_instance: Any) -> None:
    from PySide6.QtGui import QFont, QFontMetrics

    from ui.threads.model import fitted_parts

    fm = QFontMetrics(QFont())
    parts = snippet_parts('edit_file {"path":"calc.py","search":"def add(a, b): return a - b","replace":"x"} '
                          "and then \x02pelican\x03 after it")
    room = fm.horizontalAdvance("m" * 30)
    fitted = fitted_parts(parts, room, lambda text, match: fm.horizontalAdvance(text),
                          lambda text, pixels: fm.elidedText(text, Qt.TextElideMode.ElideLeft, pixels))
    before = fitted[0][0]
    assert before.startswith("…") and before.endswith("and then ")  # its start elided, its end kept
    assert ("pelican", True) in fitted
    # the match's start within the row
    assert fm.horizontalAdvance(before) + fm.horizontalAdvance("pelican") <= room
    # a short text before the match is kept whole
    short = snippet_parts("a \x02pelican\x03 b")
    assert fitted_parts(short, room, lambda text, match: fm.horizontalAdvance(text),
                        lambda text, pixels: "…") == short


async def test_a_hit_in_text_with_line_breaks_is_drawn_on_one_line(desktop: Any, provider: Any) -> None:
    from PySide6.QtCore import QRect
    from PySide6.QtGui import QFont, QImage, QPainter

    w = desktop.window
    provider.enqueue("first line\n\nthen the **pelican**\n\n```\nmore\n```")
    w.runs.send("tell me")
    await _idle(desktop)
    w.threads.new()
    await _search(desktop, "pelican", 1)
    item = w.thread_model.items[0]
    drawn: list[str] = []
    image = QImage(400, 40, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    real = painter.drawText

    class Recording:
        def __getattr__(self, name: str) -> Any:
            return getattr(painter, name)

        def drawText(self, *args: Any) -> None:
            drawn.append(str(args[-1]))
            real(*args)

    delegate = w.sidebar.list.itemDelegate()
    delegate._paint_snippet(Recording(), QRect(0, 0, 400, 20), item.snippet, QFont())  # type: ignore[arg-type]
    painter.end()
    assert drawn and not any("\n" in text for text in drawn), drawn
