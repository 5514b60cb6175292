"""A big tool result opened in its card comes in steps: the click shows its first lines (one piece), the rest
is added a bounded piece a turn of the event loop (a text under a key too: it is in a frame with its bar, not a
table's cell, which Qt lays out whole on each change), and once all is in, the text is the one the whole result
makes: the same lines, colours, blocks and height (a text under a key: as tall as the whole HTML's table)."""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest

#: A result at the size a model is given at most (``MAX_TOOL_RESULT_CHARS``), as text with empty lines where the
#: pieces meet, at the start and at the end (Qt drops a newline just inside a ``<pre>``'s ends).
TEXT = "\n" + "".join("\n" if i % 100 in (0, 99) else f"line {i} of a long file, with some words in it\n"
                      for i in range(1, 1200)) + "\n\n"
LISTING = {"data": [{"id": i, "value": "a value of the row " * 2} for i in range(1000)]}
#: A file read (text under a key, shown in a table with a bar), and texts under several keys after JSON.
SOURCE = {"data": {"path": "a.py", "content": "def f():\n\n    pass\n" * 300}}
TEXTS = {"data": {"rows": list(range(150)), "a": "x\ny\n" * 120, "b": "p\nq\n" * 20, "c": "r\ns"}}


def _card(result: Any) -> Any:
    from ui.chat.model.state import TurnState
    from ui.chat.model.tool_calls import ToolCallItem
    from ui.chat.view.cards import ToolCard

    card = ToolCard(call_id="c1", tool="read_file", robot="assistant", server=None, arguments={"path": "a"})
    card.apply(ToolCallItem(parent=TurnState(), call_id="c1", tool="read_file", robot="assistant",
                            arguments={"path": "a"}, status="ok", result=result, duration=0.1))
    card.resize(700, 400)
    card.show()
    return card


def _whole(value: Any) -> Any:
    """The whole result's HTML in one view (as the card showed it before it came in steps)."""
    from ui.markdown import value_html
    from ui.widgets.common import AutoHeightText

    return AutoHeightText(value_html(value))


def _whole_framed(value: Any) -> Any:
    """The whole result shown at once, an element a piece (a text under a key in its frame, whole)."""
    from PySide6.QtWidgets import QApplication

    from ui.markdown import value_pieces
    from ui.widgets.common import AutoHeightText, PieceFeeder

    view = AutoHeightText()
    feeder = PieceFeeder(view)
    feeder.start(value_pieces(value))
    deadline = time.monotonic() + 60  # bounds a hang only
    while feeder.pending and time.monotonic() < deadline:
        QApplication.processEvents()
    return view


def _blocks(document: Any) -> list[tuple[str, float, float]]:
    out = []
    block = document.begin()
    while block.isValid():
        fmt = block.blockFormat()
        out.append((block.text(), fmt.topMargin(), fmt.bottomMargin()))
        block = block.next()
    return out


@pytest.mark.parametrize(("result", "value", "framed"), [
    (TEXT, TEXT, False), (LISTING, LISTING["data"], False), (SOURCE, SOURCE["data"], True),
    (TEXTS, TEXTS["data"], True)], ids=["text", "JSON", "file", "texts"])
def test_a_big_result_comes_in_bounded_steps_and_ends_as_the_whole(qapp_instance: Any, result: Any, value: Any,
                                                                  framed: bool) -> None:
    from PySide6.QtWidgets import QApplication

    from ui.markdown import PIECE_LINES

    # a step's lines: a piece, and more while less than half of PIECE_LINES came (and a few blocks a text under a
    # key brings: its label, its table's cells, the block after it)
    step_blocks = PIECE_LINES * 3 // 2 + 8
    card = _card(result)
    try:
        QApplication.processEvents()
        card.set_result_expanded(True)
        view = card._result_view
        # the click's step: the first piece's lines only, the rest still to come
        assert view is not None and card.result_pending
        assert view.document().blockCount() <= step_blocks
        steps = [view.document().blockCount()]
        deadline = time.monotonic() + 60  # bounds a hang only
        while card.result_pending and time.monotonic() < deadline:
            QApplication.processEvents()
            steps.append(view.document().blockCount())
        assert not card.result_pending
        # each later turn of the loop added a piece at most
        assert all(0 <= after - before <= step_blocks for before, after in itertools.pairwise(steps))
        assert len(set(steps)) > 3  # it came in several steps
        if framed:  # as tall as the whole HTML (its text in a table's cell, with the bar) once all is in
            table = _whole(value)
            table.document().setDefaultFont(view.document().defaultFont())
            table.resize(view.width(), 100)
            table.document().setTextWidth(view.document().textWidth())
            assert view.document().size().height() == table.document().size().height()
        whole = _whole_framed(value) if framed else _whole(value)
        whole.document().setDefaultFont(view.document().defaultFont())  # (the card's, from the style sheet)
        assert view.toPlainText() == whole.toPlainText()
        assert _blocks(view.document()) == _blocks(whole.document())
        assert view.document().toHtml() == whole.document().toHtml()  # the colours: the same spans
        whole.resize(view.width(), 100)
        whole.document().setTextWidth(view.document().size().width())
        assert view.document().size() == whole.document().size()  # the size the card takes
    finally:
        card.close()
        card.deleteLater()


def test_the_inspector_shows_a_big_result_in_bounded_steps(qapp_instance: Any) -> None:
    from PySide6.QtWidgets import QApplication

    from tests.fakes.result_panes import tool_calls_pane
    from ui.markdown import PIECE_LINES

    pane = tool_calls_pane([("c0", {"data": "small"}), ("c1", LISTING)])
    try:
        pane.select_call("c0")
        view = pane.result_view
        for _ in range(3):
            QApplication.processEvents()
        assert "small" in view.toPlainText() and not pane.result_pending
        pane.select_call("c1")
        # the selection's step: the head and the first piece's lines only
        assert pane.result_pending and view.document().blockCount() <= PIECE_LINES * 3 // 2 + 1
        deadline = time.monotonic() + 60  # bounds a hang only
        while pane.result_pending and time.monotonic() < deadline:
            QApplication.processEvents()
        head, shown = view.toPlainText().split("\n", 1)
        assert "read_file" in head and shown == _whole(LISTING["data"]).toPlainText()
        pane.select_call("c0")  # another call selected while one comes in: only its result shows
        pane.select_call("c1")
        pane.select_call("c0")
        for _ in range(5):
            QApplication.processEvents()
        assert "small" in view.toPlainText() and "a value of the row" not in view.toPlainText()
    finally:
        pane.close()
        pane.deleteLater()


def test_a_text_under_a_key_looks_as_in_the_whole_html(qapp_instance: Any) -> None:
    """Its frame (the bar down its left, the text past it, the space under it) draws as the whole HTML's table."""
    from PySide6.QtGui import QTextTable
    from PySide6.QtWidgets import QApplication

    from ui.markdown import value_html

    value = {"path": "a.py", "content": "def f():\n    return 1  # a comment long enough to wrap in a narrow view\n" * 3,
             "b": "p\nq", "lines": 6}
    table = _whole(value)
    framed = _whole_framed(value)
    try:
        for view in (table, framed):
            view.resize(300, 100)
            view.show()
        QApplication.processEvents()
        frames = framed.document().rootFrame().childFrames()
        assert "<table" in value_html(value) and frames and not any(isinstance(f, QTextTable) for f in frames)
        assert framed.height() == table.height()
        assert framed.grab().toImage() == table.grab().toImage()
    finally:
        for view in (table, framed):
            view.close()
            view.deleteLater()


@pytest.fixture
def encoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Characters of JSON text encoded so far (``json``'s encoder, whichever way it is called)."""
    import json

    count = [0]
    iterencode = json.JSONEncoder.iterencode

    def counted(self: json.JSONEncoder, o: Any, _one_shot: bool = False) -> Any:
        for fragment in iterencode(self, o, _one_shot):
            count[0] += len(fragment)
            yield fragment

    monkeypatch.setattr(json.JSONEncoder, "iterencode", counted)
    return count


#: A JSON result of 200 KB (the click encoded it whole before its first piece: 15 ms of the window's thread).
BIG_LISTING = {"data": [{"id": i, "value": "a value of the row " * 2} for i in range(4000)]}


def test_a_big_json_result_is_encoded_only_as_far_as_its_first_piece_at_the_click(
        qapp_instance: Any, encoded: list[int]) -> None:
    from PySide6.QtWidgets import QApplication

    from ui.markdown import COUNT_CHARS, PIECE_LINES

    card = _card(BIG_LISTING)
    try:
        QApplication.processEvents()
        encoded[0] = 0
        card.set_result_expanded(True)
        view = card._result_view
        assert view is not None and card.result_pending
        shown = view.toPlainText()
        assert shown.count("\n") + 1 >= PIECE_LINES // 2
        # the click encoded the lines it shows (and a few read ahead), not the value whole (~200,000 characters)
        assert encoded[0] <= len(shown) + 200
        # each later step encodes its piece's lines, or a bounded portion of the rest (counted for the note)
        steps = []
        deadline = time.monotonic() + 60  # bounds a hang only
        while card.result_pending and time.monotonic() < deadline:
            before = encoded[0], len(view.toPlainText())
            QApplication.processEvents()
            steps.append((encoded[0] - before[0], len(view.toPlainText()) - before[1]))
        assert all(made <= max(added * 2, COUNT_CHARS) + 200 for made, added in steps), max(steps)
        assert view.toPlainText() == _whole(BIG_LISTING["data"]).toPlainText()
    finally:
        card.close()
        card.deleteLater()


def test_the_inspector_encodes_a_big_json_result_only_as_far_as_its_first_piece(
        qapp_instance: Any, encoded: list[int]) -> None:
    from tests.fakes.result_panes import tool_calls_pane

    pane = tool_calls_pane([("c1", BIG_LISTING)])
    try:
        pane.tabs.setCurrentIndex(1)  # the Result tab
        encoded[0] = 0
        pane.select_call("c1")
        assert pane.result_pending
        assert 0 < encoded[0] <= len(pane.result_view.toPlainText()) + 200
    finally:
        pane.close()
        pane.deleteLater()
