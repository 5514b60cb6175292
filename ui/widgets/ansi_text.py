"""A command's output with its ANSI colours, in a text view: the spans of :mod:`ui.ansi` as character formats."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtGui import QColor, QFont, QTextCharFormat, QTextCursor, QTextDocument

from ui import theme
from ui.ansi import Style, palette


def char_format(style: Style, colors: tuple[str, ...] | None = None) -> QTextCharFormat:
    """The character format that paints ``style`` (the theme's own text colour where it names none)."""
    colors = colors or palette(theme.colors().name)
    fmt = QTextCharFormat()
    if style.fg is not None:
        fmt.setForeground(QColor(colors[style.fg]))
    if style.bg is not None:
        fmt.setBackground(QColor(colors[style.bg]))
    if style.bold:
        fmt.setFontWeight(QFont.Weight.Bold)
    return fmt


def insert_styled(cursor: QTextCursor, spans: Iterable[tuple[str, Style]]) -> None:
    """Insert the spans at ``cursor``, each in its colours (in one edit block: one layout for them all)."""
    colors = palette(theme.colors().name)
    formats: dict[Style, QTextCharFormat] = {}
    cursor.beginEditBlock()
    try:
        for text, style in spans:
            if not text:
                continue
            fmt = formats.get(style)
            if fmt is None:
                fmt = formats[style] = char_format(style, colors)
            cursor.insertText(text, fmt)
    finally:
        cursor.endEditBlock()


def show_styled(document: QTextDocument, spans: Iterable[tuple[str, Style]]) -> None:
    """The document's text replaced by the spans, in one edit block (one change, one layout: no empty document
    between; give the document no undo history, or the text it held goes there)."""
    cursor = QTextCursor(document)
    cursor.beginEditBlock()
    try:
        cursor.select(QTextCursor.SelectionType.Document)
        cursor.removeSelectedText()
        insert_styled(cursor, spans)
    finally:
        cursor.endEditBlock()


__all__ = ["char_format", "insert_styled", "show_styled"]
