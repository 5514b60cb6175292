"""Highlighted code lines written into a document with a cursor, as setting their HTML would show them.

A streamed code block's pieces (:mod:`ui.chat.view.code_stream`) hold lines as runs of one style (the
inline CSS pygments' HTML formatter gives a token's type, :data:`ui.chat.view.code_lines.Line`), made
from the lexer's tokens straight. Setting a piece's HTML, or inserting HTML, parses it and lays the
piece out again; here each line's runs are inserted as text with a character format instead (one format
per style, made once), a paragraph a line. The formats and the paragraphs' format are those Qt's HTML
import gives :func:`ui.markdown.code_lines_html` (read off a one-character document), so a piece drawn
here looks as one set from the block's highlighted HTML does.
"""

from __future__ import annotations

from functools import lru_cache

from PySide6.QtGui import QTextBlockFormat, QTextCharFormat, QTextCursor, QTextDocument

from ui import markdown, theme
from ui.chat.view.code_lines import Line


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


def _write_runs(cursor: QTextCursor, line: Line, family: str, *, skip: int = 0) -> None:
    """Insert a line's runs at ``cursor``, less its first ``skip`` characters (shown already). A paragraph
    separator (U+2029) is inserted as a line separator: a line stays one paragraph of the document."""
    formats = _FORMATS.setdefault(family, {})
    insert = cursor.insertText
    for style, text in line:
        if skip:
            if skip >= len(text):
                skip -= len(text)
                continue
            text, skip = text[skip:], 0
        char_format = formats.get(style)
        if char_format is None:
            char_format = formats[style] = _char_format(style, family)
        if "\u2029" in text:
            text = text.replace("\u2029", "\u2028")
        insert(text, char_format)


def write_lines(doc: QTextDocument, lines: list[Line], *, wrap: bool, after: int) -> None:
    """Write ``lines`` at the end of ``doc``, which shows ``after`` lines already
    (0: it is empty, the first line goes in its one paragraph); a paragraph a line."""
    if not lines:
        return
    family = _mono_family()
    block_format, block_chars = _block_formats(wrap, family)
    cursor = QTextCursor(doc)
    cursor.setPosition(doc.characterCount() - 1)  # the end (moving there lays out the block it starts in)
    cursor.beginEditBlock()
    for i, line in enumerate(lines):
        if i or after:
            cursor.insertBlock(block_format, block_chars)
        else:
            cursor.setBlockFormat(block_format)
            cursor.setBlockCharFormat(block_chars)
        _write_runs(cursor, line, family)
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
        cursor.setPosition(doc.findBlockByNumber(keep).position() + same)
        cursor.setPosition(doc.characterCount() - 1, QTextCursor.MoveMode.KeepAnchor)
        if cursor.hasSelection():
            cursor.removeSelectedText()
        _write_runs(cursor, lines[keep], _mono_family(), skip=same)
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
