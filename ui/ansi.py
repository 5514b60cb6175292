"""A command's ANSI colours as styled text: SGR codes read, every other escape sequence dropped (Qt-free).

A command's output (``tool_output`` chunks) carries the terminal's Select Graphic Rendition codes —
``ESC[31m`` red, ``ESC[1m`` bold, ``ESC[0m`` reset — and sometimes other sequences (cursor moves, window
titles) a card cannot honour. :class:`AnsiParser` turns the chunks into ``(text, Style)`` spans as they come:
the 8 and 16 colours (foreground and background, ``38;5;N`` / ``48;5;N`` below 16 too), bold, reset; other
sequences (and 256-colour or true-colour values) are dropped, and a sequence cut at a chunk's end waits for the
next chunk. The palettes are the colours the window paints the 16 indexes with, one per theme.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ui.formatting import split_partial_escape

#: One escape sequence: a CSI (``ESC[`` … final byte), an OSC (``ESC]`` … BEL or ST), a character set's
#: (``ESC(B``) or a two-byte escape.
_ESCAPE = re.compile(r"\x1b(?:\[([0-?]*)[ -/]*([@-~])|\][^\x07\x1b]*(?:\x07|\x1b\\)|[ -/]+[0-~]|[@-Z\\-_])")


class Style(NamedTuple):
    """How a span is painted: a colour index 0–15 (None: the view's own), bold. (A tuple: compared and hashed
    at C speed, once per span of a long output.)"""

    fg: int | None = None
    bg: int | None = None
    bold: bool = False

    @property
    def plain(self) -> bool:
        return self == PLAIN


PLAIN = Style()

#: The 16 colours on a light background (black … white, then the bright ones), readable on it.
LIGHT_PALETTE = ("#24292f", "#cf222e", "#116329", "#7d4e00", "#0550ae", "#8250df", "#1b7c83", "#6e7781",
                 "#57606a", "#a40e26", "#1a7f37", "#633c01", "#218bff", "#a475f9", "#3192aa", "#8c959f")
#: The 16 colours on a dark background.
DARK_PALETTE = ("#768390", "#f47067", "#57ab5a", "#c69026", "#539bf5", "#b083f0", "#39c5cf", "#c5d1de",
                "#909dab", "#ff938a", "#6bc46d", "#daaa3f", "#6cb6ff", "#dcbdfb", "#56d4dd", "#f0f6fc")


def palette(theme_name: str) -> tuple[str, ...]:
    """The 16 colours for the theme named ``theme_name`` ("dark" or else light)."""
    return DARK_PALETTE if theme_name == "dark" else LIGHT_PALETTE


#: apply_sgr's answers (a command repeats a few codes thousands of times).
_SGR_CACHE: dict[tuple[Style, str], Style] = {}


def apply_sgr(style: Style, params: str) -> Style:
    """``style`` after the SGR parameters ``params`` ("1;31", "" for a reset)."""
    key = (style, params)
    found = _SGR_CACHE.get(key)
    if found is None:
        if len(_SGR_CACHE) > 4096:
            _SGR_CACHE.clear()
        found = _SGR_CACHE[key] = _apply_sgr(style, params)
    return found


def _apply_sgr(style: Style, params: str) -> Style:
    codes = [int(p) if p.isdigit() else 0 for p in params.replace(":", ";").split(";")] if params else [0]
    i = 0
    while i < len(codes):
        code = codes[i]
        if code == 0:
            style = PLAIN
        elif code == 1:
            style = style._replace(bold=True)
        elif code in (21, 22):
            style = style._replace(bold=False)
        elif 30 <= code <= 37:
            style = style._replace(fg=code - 30)
        elif 90 <= code <= 97:
            style = style._replace(fg=code - 90 + 8)
        elif code == 39:
            style = style._replace(fg=None)
        elif 40 <= code <= 47:
            style = style._replace(bg=code - 40)
        elif 100 <= code <= 107:
            style = style._replace(bg=code - 100 + 8)
        elif code == 49:
            style = style._replace(bg=None)
        elif code in (38, 48):  # an extended colour: 5;N (256 colours) or 2;R;G;B (true colour)
            kind = codes[i + 1] if i + 1 < len(codes) else None
            if kind == 5 and i + 2 < len(codes):
                index = codes[i + 2]
                if index < 16:
                    style = style._replace(fg=index) if code == 38 else style._replace(bg=index)
                i += 2
            elif kind == 2:
                i += 4
            else:
                i += 1
        i += 1
    return style


class AnsiParser:
    """Chunks of a command's output in, styled spans out; the style and a cut sequence carry over."""

    def __init__(self) -> None:
        self.style = PLAIN
        #: The start of an escape sequence the last chunk ended in.
        self.pending = ""

    def feed(self, chunk: str) -> list[tuple[str, Style]]:
        """The spans of ``chunk`` (CR LF line ends as LF, escape sequences gone), in order, none empty."""
        text, self.pending = split_partial_escape(self.pending + chunk)
        text = text.replace("\r\n", "\n")
        style = self.style
        if "\x1b" not in text:
            return [(text, style)] if text else []
        spans: list[tuple[str, Style]] = []
        parts = _ESCAPE.split(text)  # text, (CSI parameters, CSI final byte), text, …: one pass in C
        if parts[0]:
            spans.append((parts[0], style))
        for i in range(1, len(parts), 3):
            if parts[i + 1] == "m":
                style = apply_sgr(style, parts[i] or "")
            piece = parts[i + 2]
            if piece:
                _add(spans, piece, style)
        self.style = style
        return spans

    def feed_runs(self, chunk: str, offset: int, starts: list[int], styles: list[Style]) -> str:
        """What :meth:`feed` gives, as the chunk's text whole, its style changes added to ``starts`` (``offset``
        + the position in the text) and ``styles`` (the style from there; the last of them, or plain, is the
        style before the chunk). No span per piece, no tuple per change: a command that colours every line makes
        few objects (long-lived ones would cost the garbage collector's full passes)."""
        text, self.pending = split_partial_escape(self.pending + chunk)
        text = text.replace("\r\n", "\n")
        style = self.style
        last = styles[-1] if styles else PLAIN
        if "\x1b" not in text:
            if text and style != last:
                starts.append(offset)
                styles.append(style)
            return text
        parts = _ESCAPE.split(text)  # text, (CSI parameters, CSI final byte), text, …: one pass in C
        pieces = parts[::3]
        position = offset
        if pieces[0]:
            if style != last:
                starts.append(position)
                styles.append(style)
                last = style
            position += len(pieces[0])
        for i in range(1, len(parts), 3):
            if parts[i + 1] == "m":
                style = apply_sgr(style, parts[i] or "")
            piece = parts[i + 2]
            if piece:
                if style != last:
                    starts.append(position)
                    styles.append(style)
                    last = style
                position += len(piece)
        self.style = style
        return "".join(pieces)

    def skip(self, chunk: str) -> None:
        """Read ``chunk`` for its effect on the style only (no spans made): a known state carried forward."""
        text, self.pending = split_partial_escape(self.pending + chunk)
        if "\x1b" not in text:
            return
        style = self.style
        # Only what follows the last plain reset counts (every escape sequence starts at its ESC, so that reset
        # is one whatever came before it): most commands end each coloured word with one.
        long_reset, short_reset = text.rfind("\x1b[0m"), text.rfind("\x1b[m")
        reset = max(long_reset + 4 if long_reset >= 0 else 0, short_reset + 3 if short_reset >= 0 else 0)
        if reset:
            style, text = PLAIN, text[reset:]
            if "\x1b" not in text:
                self.style = style
                return
        parts = _ESCAPE.split(text)
        for i in range(1, len(parts), 3):
            if parts[i + 1] == "m":
                style = apply_sgr(style, parts[i] or "")
        self.style = style


def _add(spans: list[tuple[str, Style]], text: str, style: Style) -> None:
    if spans and spans[-1][1] == style:  # an escape sequence that changed nothing between them
        spans[-1] = (spans[-1][0] + text, style)
    else:
        spans.append((text, style))


def styled(text: str) -> list[tuple[str, Style]]:
    """The spans of a whole output at once."""
    parser = AnsiParser()
    spans = parser.feed(text)
    return spans


__all__ = ["DARK_PALETTE", "LIGHT_PALETTE", "PLAIN", "AnsiParser", "Style", "apply_sgr", "palette", "styled"]
