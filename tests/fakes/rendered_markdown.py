"""What a streaming answer shows checked against rendering its Markdown afresh: the chat's live segments
(``ui.chat.view.stream.MarkdownStream``) must show what a new view given the same text shows."""

from __future__ import annotations

import itertools
from typing import Any

from PySide6.QtGui import QTextBlock, QTextCharFormat, QTextDocument
from PySide6.QtWidgets import QApplication

from ui.chat.view.stream import MarkdownStream
from ui.widgets.common import AutoHeightText


def streamed_view(qtbot: Any, text: str, chunk: int) -> MarkdownStream:
    """``text`` appended to a new view ``chunk`` characters at a time, Qt's events run after each, until the view
    has shown it all and checked what it closed."""
    view = MarkdownStream()
    qtbot.addWidget(view)
    view.resize(700, 100)
    for start in range(0, len(text), chunk):
        view.append(text[start:start + chunk])
        QApplication.processEvents()
    qtbot.waitUntil(lambda: not view.pending and not view.checking, timeout=60_000)  # bounds a hang
    return view


def rendered(source: str, like: AutoHeightText | None = None) -> str:
    """``source`` rendered whole in a fresh view (with ``like``'s font: a view polished by the application's
    style sheet has its own)."""
    fresh = AutoHeightText()
    if like is not None:
        fresh.document().setDefaultFont(like.document().defaultFont())
        fresh.list_start, fresh.list_goes_on = like.list_start, like.list_goes_on  # a part of a list cut in parts
        fresh.table_from, fresh.table_goes_on = like.table_from, like.table_goes_on  # a piece of a table
    fresh.set_markdown(source)
    html = fresh.toHtml()
    fresh.deleteLater()
    return html


def assert_shown_as_rendered(stream: MarkdownStream) -> None:
    """Each segment of ``stream`` shows what rendering its Markdown whole in a fresh view shows, and together they
    hold the stream's text."""
    views = [v for v in stream.findChildren(AutoHeightText) if v.markdown is not None]
    assert views, "nothing shown"
    assert "".join(v.markdown or "" for v in views) == stream.text
    for view in views:
        assert view.toHtml() == rendered(view.markdown or "", view), f"shown differs from rendering {view.markdown!r}"


def shown_blocks(documents: list[QTextDocument]) -> list[tuple[object, ...]]:
    """What each block of ``documents`` (one after the other) shows: its text, its list item's marker ("12.") and
    list format (indent, style), its margins and indent, and the format of each run of its text (weight,
    italics, font): a text cut in segments shows what it shows whole when these are the same."""
    out: list[tuple[object, ...]] = []
    for document in documents:
        block = document.begin()
        while block.isValid():
            fmt = block.blockFormat()
            listed = block.textList()
            runs = []
            it = block.begin()
            while not it.atEnd():
                fragment = it.fragment()
                char = fragment.charFormat()
                runs.append((fragment.text(), char.fontWeight(), char.fontItalic(), tuple(char.fontFamilies() or ())))
                it += 1
            out.append((block.text(), listed.itemText(block) if listed is not None else None,
                        (listed.format().indent(), listed.format().style()) if listed is not None else None,
                        fmt.topMargin(), fmt.bottomMargin(), fmt.leftMargin(), fmt.indent(), tuple(runs)))
            block = block.next()
    return out


def drawn_runs(block: QTextBlock) -> list[tuple[str, QTextCharFormat]]:
    """A paragraph's text cut where the format it is drawn in changes: each fragment's format merged with its
    layout's formats over it (a streamed code block's colours: ``QTextLayout.setFormats``), as Qt merges them when
    it lays the paragraph out; neighbours in equal formats are one run."""
    fragments: list[tuple[int, str, QTextCharFormat]] = []
    it = block.begin()
    while not it.atEnd():
        fragment = it.fragment()
        fragments.append((fragment.position() - block.position(), fragment.text(), fragment.charFormat()))
        it += 1
    ranges = block.layout().formats()
    runs: list[tuple[str, QTextCharFormat]] = []
    for start, text, char_format in fragments:
        units = text.encode("utf-16-le")  # (positions are UTF-16 units: a character beyond the BMP is two)
        size = len(units) // 2
        cuts = sorted({0, size} | {min(max(at - start, 0), size) for r in ranges for at in (r.start, r.start + r.length)})
        for a, b in itertools.pairwise(cuts):
            if a == b:
                continue
            drawn = QTextCharFormat(char_format)
            for r in ranges:
                if r.start <= start + a < r.start + r.length:
                    drawn.merge(r.format)
            part = units[2 * a:2 * b].decode("utf-16-le", errors="surrogatepass")
            if runs and runs[-1][1] == drawn:
                runs[-1] = (runs[-1][0] + part, drawn)
            else:
                runs.append((part, drawn))
    return runs
