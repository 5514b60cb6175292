"""A long table streamed is frozen between its rows, not rendered whole on every flush.

A table is one block until the blank line after it (:func:`ui.markdown.split_stable` finds nothing finished in
it), so the live segment held the whole table and each flush rendered all of it again: a 50 KB table streamed in
flushes of the bridge rendered up to 50,000 characters a turn. Now its finished rows are frozen into a segment of
their own once they are long enough, and the table goes on in the next segment: each piece is a table of its own
with the same column widths (fixed from the header and the first rows), the header in the first piece only, the
columns' alignment, inline code and links kept; copying gives the Markdown.
"""

from __future__ import annotations

from typing import Any

import pytest
from fakes.frame_clock import FrameClock, stream_in_flushes
from fakes.rendered_markdown import assert_shown_as_rendered
from PySide6.QtGui import QTextDocument, QTextLength, QTextTable

from ui import markdown
from ui.chat.view.stream import FREEZE_CHARS, MAX_RENDER_CHARS
from ui.widgets.common import AutoHeightText


def table(size: int, *, intro: str = "") -> str:
    """A paragraph (``intro``), then a table with aligned columns, inline code and links, ``size`` characters or
    more, then a paragraph after a blank line."""
    lines = [intro, "| # | test | result | time (ms) | note |\n|---:|---|:---:|---:|---|\n"]
    i = 0
    while sum(map(len, lines)) < size:
        lines.append(f"| {i} | `test_case_{i}` | {'**pass**' if i % 7 else '*fail*'} | {i * 3 % 997} | "
                     f"run {i}, see [the log](https://ci.example.org/{i}) |\n")
        i += 1
    return "".join(lines) + "\nAll runs are listed."


def tables_of(documents: list[QTextDocument]) -> list[QTextTable]:
    out: list[QTextTable] = []
    for document in documents:
        out.extend(f for f in document.rootFrame().childFrames() if isinstance(f, QTextTable))
    return out


def cells(tables: list[QTextTable]) -> list[tuple[str, object, str]]:
    """Each cell of ``tables`` in order: its text, its alignment, and the href of its links."""
    out: list[tuple[str, object, str]] = []
    for t in tables:
        for row in range(t.rows()):
            for col in range(t.columns()):
                cell = t.cellAt(row, col)
                block = cell.firstCursorPosition().block()
                it = block.begin()
                hrefs = []
                while not it.atEnd():
                    hrefs.append(it.fragment().charFormat().anchorHref())
                    it += 1
                out.append((block.text(), block.blockFormat().alignment(), "".join(hrefs)))
    return out


@pytest.mark.parametrize("text", [table(50_000), table(20_000, intro="The results:\n\n")], ids=["table", "after-text"])
def test_a_long_table_renders_a_bounded_part_a_turn_in_pieces_of_one_table(
        qtbot: Any, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    clock = FrameClock()
    clock.resize(2400, 600)  # no cell wraps, pieces or whole, whatever the font
    stream, per_turn = stream_in_flushes(qtbot, monkeypatch, clock, text)
    # A turn renders at most the budget: a piece frozen and the rows after it (before: the whole table, every turn).
    assert max(per_turn) <= MAX_RENDER_CHARS, per_turn
    # A table costs Qt about three times prose a character: its turns render about half the budget, but for the turn
    # the first flush comes in and the one the table ends in (with pieces of the whole budget: most turns ~3,450).
    assert sum(chars > 0.6 * MAX_RENDER_CHARS for chars in per_turn) <= 2, per_turn
    # A piece is frozen at its first row past FREEZE_CHARS (a turn of a backlog shows one, renders the next and paints
    # a screen of them): but for those two turns, none renders much more (with pieces of half the budget: ~1,700).
    assert sum(chars > 1.25 * FREEZE_CHARS for chars in per_turn) <= 2, per_turn
    views = [v for v in stream.findChildren(AutoHeightText) if v.markdown is not None]
    assert len(views) > 5, "the table was not cut in pieces"
    assert "".join(v.markdown or "" for v in views) == stream.markdown_source() == text  # the Markdown to copy
    assert_shown_as_rendered(stream)
    pieces = tables_of([v.document() for v in views])
    assert len(pieces) > 5 and all(len(tables_of([v.document()])) <= 1 for v in views)
    # Every piece has the same columns and the same widths (fixed, in percent of the width).
    widths = {tuple((w.type(), w.rawValue()) for w in t.format().columnWidthConstraints()) for t in pieces}
    assert len(widths) == 1 and len(next(iter(widths))) == 5, widths
    assert all(kind == QTextLength.Type.PercentageLength and value > 0 for kind, value in next(iter(widths)))
    # No margin where a piece goes on (but the pixel above and the two below that place the grid's rules where a
    # collapsed border has them): the pieces touch.
    assert [(t.format().topMargin(), t.format().bottomMargin()) for t in pieces] == (
        [(4 + 1, 0 + 2)] + [(0 + 1, 0 + 2)] * (len(pieces) - 2) + [(0 + 1, 10 + 2)])
    # The pieces' cells, in order, are the whole table's: one header, every row once, aligned, links kept.
    whole = QTextDocument()
    whole.setHtml(markdown.render(text))
    shown = cells(pieces)
    assert shown == cells(tables_of([whole]))
    assert [c[0] for c in shown].count("note") == 1
    # The pieces touch as the whole table's rows do: together they are as high as the whole text shown in one view
    # of their width (rows of one line either way), not a join's worth higher (Qt's outer borders: two rules with the
    # page between them).
    one = AutoHeightText(parent=clock)  # styled as the segments are
    one.setObjectName("MessageText")
    one.resize(views[0].width(), 100)
    one.show()
    one.set_markdown(text)
    assert sum(v.height() for v in views) == one.height()
    assert ("`" not in "".join(c[0] for c in shown)) and any(c[2].startswith("https://ci.example.org/") for c in shown)


def test_table_cuts_are_between_rows_of_the_table() -> None:
    head = "| a | b |\n|:-:|--:|\n"
    text = head + "| 1 | `x` |\n| 2 | y |\n> quote | z\n| 3 | w |\n"
    assert markdown.table_cuts(text) == (head, [len(head), len(head) + 12])  # the quote may end the table
    assert markdown.table_cuts("| 4 | v |\n| 5 | u |\n| 6", head=head) == (head, [10])  # the last row is open
    assert markdown.table_cuts("| a | b |\n| 1 | 2 |\n") is None  # no delimiter line: no table
    assert markdown.table_cuts("| a | b |\n|---|\n| 1 | 2 |\n") is None  # the delimiter's cells do not match
    widths = markdown.table_widths(head, "| 1 | a much longer [cell](https://example.org/a/long/link) |\n")
    assert len(widths) == 2 and widths[1] > 4 * widths[0] and sum(widths) <= 100
