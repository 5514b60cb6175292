"""Highlighted code lines written into a document with a cursor, as setting their HTML would show them.

A streamed code block's pieces (:mod:`ui.chat.view.code_stream`) hold lines as runs of one style (the
inline CSS pygments' HTML formatter gives a token's type, :data:`ui.chat.view.code_lines.Line`), made
from the lexer's tokens straight. Setting a piece's HTML, or inserting HTML, parses it and lays the
piece out again; here a turn's lines are inserted as ONE plain text (a paragraph a line, in the code's plain
format), and each line's colours are its paragraph's layout's formats (``QTextLayout.setFormats``, as a
``QSyntaxHighlighter`` colours a document: a list of ranges a line, no fragment of the document a run, nothing
inserted a run). The formats and the paragraphs' format are those Qt's HTML import gives
:func:`ui.markdown.code_lines_html` (read off a one-character document), so a piece drawn here looks as one set
from the block's highlighted HTML does (a character's format as drawn: its fragment's, the plain one, merged with
the range over it). The text a piece holds is the code's, so selecting and copying it copies
the code (as plain text: a copy's rich text has no colours).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from PySide6.QtGui import (
    QFont,
    QTextBlock,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextLayout,
)

from ui import markdown, theme
from ui.chat.view.code_lines import Line, split_line, text_length


@lru_cache(maxsize=1024)
def _char_format(style: str, family: str) -> QTextCharFormat:
    """The format Qt gives a span of ``style`` in a code block's ``<pre>`` (``family``: its fonts)."""
    span = f'<span style="{style}">x</span>' if style else "x"
    doc = QTextDocument()
    doc.setHtml(markdown.code_lines_html(span))
    cursor = QTextCursor(doc)
    cursor.setPosition(1)  # the format of the character before the cursor
    return cursor.charFormat()


@lru_cache(maxsize=8)
def _block_formats(wrap: bool, family: str) -> tuple[QTextBlockFormat, QTextCharFormat]:
    """The paragraph format (and its own character format) of a line of a code block's ``<pre>``."""
    doc = QTextDocument()
    doc.setHtml(markdown.code_lines_html("x\ny", wrap=wrap))
    block = doc.lastBlock()
    return block.blockFormat(), block.charFormat()


@lru_cache(maxsize=1)
def _mono_family() -> str:
    """The code font's families (asking Qt for the system's fixed font on every flush costs ~0.3 ms)."""
    return theme.mono_family()


#: The character format of each style (:func:`_char_format`), for the code font's families it was made with.
_FORMATS: dict[str, dict[str, QTextCharFormat]] = {}


def _format(style: str, family: str) -> QTextCharFormat:
    formats = _FORMATS.setdefault(family, {})
    char_format = formats.get(style)
    if char_format is None:
        char_format = formats[style] = _char_format(style, family)
    return char_format


def _units(text: str) -> int:
    """How many UTF-16 code units ``text`` is (a document's positions; a character beyond the BMP is two, a lone
    surrogate, as ``json.loads`` gives for half an escaped pair, one)."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2


#: What a document's insertText takes for the end of a paragraph, besides a line feed (which a line has none of): a
#: carriage return and the paragraph separator are shown as a line separator, Qt's marks of a frame's start and end
#: (noncharacters) as the replacement character; each is one code unit, as what replaces it (the colours' ranges
#: stay where they were), and a line stays one paragraph of the document.
_PARAGRAPH_ENDS = str.maketrans({"\r": "\u2028", "\u2029": "\u2028", "\ufdd0": "\ufffd", "\ufdd1": "\ufffd"})
_ENDS = re.compile("[\r\u2029\ufdd0\ufdd1]")


def line_text(line: Line) -> str:
    """A line's text as its paragraph holds it (:data:`_PARAGRAPH_ENDS`)."""
    text = "".join([text for _style, text in line])
    return text.translate(_PARAGRAPH_ENDS) if _ENDS.search(text) else text


#: Ranges made (a run's style, start and length: a FormatRange made and set costs ~0.6 us, a look-up here ~0.1;
#: setFormats copies them), for the code font's families they were made with; at most RANGES_KEPT.
_RANGES: dict[str, dict[tuple[str, int, int], QTextLayout.FormatRange]] = {}
RANGES_KEPT = 8192


def _colour(block: QTextBlock, line: Line, family: str, *, ascii_text: bool) -> None:
    """Give ``block`` (the paragraph showing ``line``) its runs' formats: a range for each run in a style (a run in
    none is the paragraph's own plain format)."""
    ranges: list[QTextLayout.FormatRange] = []
    made = _RANGES.setdefault(family, {})
    pos = 0
    for style, text in line:
        size = len(text) if ascii_text else _units(text)
        if style:
            span = made.get((style, pos, size))
            if span is None:
                if len(made) >= RANGES_KEPT:
                    made.clear()
                span = made[style, pos, size] = QTextLayout.FormatRange()
                span.start, span.length, span.format = pos, size, _format(style, family)
            ranges.append(span)
        pos += size
    layout = block.layout()
    if ranges or layout.formats():  # (a paragraph written again, the first, may have had some)
        layout.setFormats(ranges)  # (Qt takes the paragraph as changed: laid out with the edit)


def write_lines(doc: QTextDocument, lines: list[Line], *, wrap: bool, after: int) -> None:
    """Write ``lines`` at the end of ``doc``, which shows ``after`` lines already
    (0: it is empty, the first line goes in its one paragraph); a paragraph a line: their text inserted at once,
    each paragraph then given its line's colours (before the edit ends: the paragraphs are laid out once, in them)."""
    if not lines:
        return
    family = _mono_family()
    block_format, block_chars = _block_formats(wrap, family)
    cursor = QTextCursor(doc)
    cursor.setPosition(doc.characterCount() - 1)  # the end (moving there lays out the block it starts in)
    cursor.beginEditBlock()
    if after:
        cursor.insertBlock(block_format, block_chars)
    else:
        cursor.setBlockFormat(block_format)
        cursor.setBlockCharFormat(block_chars)
    block = cursor.block()
    texts = [line_text(line) for line in lines]
    # (Each paragraph separator makes a paragraph with the format of the one it splits, its characters' format
    # the text's: the plain format, which is a code paragraph's own.)
    cursor.insertText("\u2029".join(texts), _format("", family))
    for line, text in zip(lines, texts, strict=True):
        _colour(block, line, family, ascii_text=text.isascii())
        block = block.next()
    cursor.endEditBlock()


def _same_start(old: Line, new: Line) -> int:
    """How many characters two lines start with in the same style (a line being written grows: its
    beginning stays, the last token or two change)."""
    same = 0
    for (old_style, old_text), (new_style, new_text) in zip(old, new, strict=False):
        if old_style != new_style:
            break
        if old_text != new_text:
            return same + next((i for i, (a, b) in enumerate(zip(old_text, new_text, strict=False)) if a != b),
                               min(len(old_text), len(new_text)))
        same += len(old_text)
    return same


def replace_lines(doc: QTextDocument, shown: list[Line], lines: list[Line], *, wrap: bool) -> None:
    """Show ``lines`` in ``doc``, which shows ``shown``: the lines both start with stay as they are, and
    the beginning of the first line that differs when it is in the same style (the line being written);
    what follows is removed and the rest of ``lines`` written in its place."""
    keep = 0
    for old, new in zip(shown, lines, strict=False):
        if old is not new and old != new:
            break
        keep += 1
    if keep == len(shown) == len(lines):
        return
    cursor = QTextCursor(doc)
    # One edit: the document is laid out once, at its end (a paragraph changed, then a paragraph added
    # after it in an edit of its own, would lay the first one out twice).
    cursor.beginEditBlock()
    if keep < len(shown) and keep < len(lines):  # the line that changed keeps its beginning
        same = _same_start(shown[keep], lines[keep])
        text = line_text(lines[keep])
        family = _mono_family()
        cursor.setPosition(doc.findBlockByNumber(keep).position() + _units(text[:same]))
        cursor.setPosition(doc.characterCount() - 1, QTextCursor.MoveMode.KeepAnchor)
        if cursor.hasSelection():
            cursor.removeSelectedText()
        cursor.insertText(text[same:], _format("", family))
        # (The paragraph as it is now: removing from a paragraph's start to the end keeps the last paragraph's
        # layout, and its formats, for it.)
        block = cursor.block()
        _colour(block, lines[keep], family, ascii_text=text.isascii())  # (the whole line's: its ranges start at 0)
        write_lines(doc, lines[keep + 1:], wrap=wrap, after=keep + 1)
    else:
        if keep:
            block = doc.findBlockByNumber(keep - 1)
            cursor.setPosition(block.position() + block.length() - 1)  # the end of the last line kept
        cursor.setPosition(doc.characterCount() - 1, QTextCursor.MoveMode.KeepAnchor)
        if cursor.hasSelection():
            cursor.removeSelectedText()
        write_lines(doc, lines[keep:], wrap=wrap, after=keep)
    cursor.endEditBlock()


#: A long line's rows are found a window of about this many characters at a time (:func:`wrap_starts`).
WRAP_WINDOW_CHARS = 2400


def wrap_starts(line: Line, width: float, font: QFont) -> Iterator[list[int] | None]:
    """Where the rows of ``line`` start (0 first, in characters) when one paragraph shows it wrapped at ``width``, as a
    piece (default font ``font``, no margin) lays it out: the line is written a window at a time into a document of
    its own, with its colours, and laid out; None after each window (so a caller spreads the work over turns of the
    event loop), then the starts. Wrapping decides a row from where it starts and what fits in it, so a window's rows
    are the whole line's but its last two (which the window's end may have cut short): the next window starts at the
    last of them."""
    doc = _row_document(width, font)
    size = text_length(line)
    starts, pos, window = [0], 0, WRAP_WINDOW_CHARS
    while True:
        end = min(size, pos + window)
        rows = _rows(doc, split_line(line, [pos, end - pos, size - end])[1])
        if end >= size:
            yield starts + [pos + row for row in rows[1:]]
            return
        if len(rows) < 3:  # (rows longer than a window: a wider one)
            window *= 2
            continue
        starts += [pos + row for row in rows[1:-1]]
        pos += rows[-2]
        yield None


def row_starts(line: Line, width: float, font: QFont) -> list[int]:
    """Where the rows of ``line`` start (0 first, in characters) when one paragraph shows it wrapped at ``width`` as a
    piece (default font ``font``, no margin) lays it out: :func:`wrap_starts` in one go, for a line of a few thousand
    characters at most (a streamed line's part about to be cut, with what follows it)."""
    return _rows(_row_document(width, font), line)


def _row_document(width: float, font: QFont) -> QTextDocument:
    """A document that lays a line out as a piece of ``width`` with default font ``font`` does."""
    doc = QTextDocument()
    doc.setUndoRedoEnabled(False)
    doc.setDefaultFont(font)
    doc.setDocumentMargin(0)
    doc.setTextWidth(width)
    return doc


def _rows(doc: QTextDocument, line: Line) -> list[int]:
    """The starts of the rows ``line`` is laid out in, written alone in ``doc`` (its text before)."""
    doc.clear()
    write_lines(doc, [line], wrap=True, after=0)
    block = doc.firstBlock()
    doc.documentLayout().blockBoundingRect(block)  # (laid out)
    layout = block.layout()
    text = block.text()
    return [chars(text, layout.lineAt(i).textStart()) for i in range(layout.lineCount())]


def chars(text: str, units: int) -> int:
    """How many characters of ``text`` its first ``units`` UTF-16 code units are."""
    if text.isascii():
        return units
    return len(text.encode("utf-16-le", "surrogatepass")[:2 * units].decode("utf-16-le", "surrogatepass"))
