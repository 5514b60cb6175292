"""Syntax colours for diff lines, by pygments, computed lazily in small blocks.

Lexing a whole 20,000-line Python file takes pygments about two seconds, so a view never
does it at once: lines are lexed in blocks of :data:`BLOCK` lines (a few milliseconds
each) when a block first becomes visible, and the blocks next to the viewport are lexed
ahead in idle time. A construct that spans a block boundary (a long docstring) may be
coloured as plain code on the far side of the boundary; that is the price of never
stalling the view.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from PySide6.QtGui import QColor

from workspace.diffing import strip_eol

BLOCK = 32
#: Longer lines are not lexed (minified files): they are drawn plain.
MAX_LINE = 2000

#: A line's colouring: ``length, style index, length, style index, ...`` runs from the line's start.
#: (One flat tuple of ints per line, which the garbage collector stops tracking: 20,000 lexed lines
#: must not add 250,000 small objects to every full collection.)
Runs = tuple[int, ...]
EMPTY: Runs = ()


@lru_cache(maxsize=256)
def lexer_for(name: str) -> Any:
    """The pygments lexer for a file name (None: plain text, or pygments is missing)."""
    try:
        from pygments.lexers import get_lexer_for_filename
        from pygments.util import ClassNotFound
    except ImportError:  # pragma: no cover - pygments is a dependency
        return None
    base = name.rsplit("/", 1)[-1]
    try:
        lexer = get_lexer_for_filename(base, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None
    except Exception:  # a broken plugin lexer must not break the view
        return None
    if lexer.name in ("Text only", "Text output"):
        return None
    return lexer


class StylePalette:
    """pygments token types to (colour, bold, italic), for one pygments style."""

    def __init__(self, style_name: str) -> None:
        from pygments.styles import get_style_by_name
        from pygments.util import ClassNotFound

        try:
            self.style = get_style_by_name(style_name)
        except ClassNotFound:
            self.style = get_style_by_name("default")
        self.formats: list[tuple[QColor | None, bool, bool]] = [(None, False, False)]
        self._index: dict[Any, int] = {}

    def index(self, ttype: Any) -> int:
        found = self._index.get(ttype)
        if found is not None:
            return found
        try:
            spec = self.style.style_for_token(ttype)
        except KeyError:
            spec = {}
        color = QColor(f"#{spec['color']}") if spec.get("color") else None
        fmt = (color, bool(spec.get("bold")), bool(spec.get("italic")))
        if fmt == (None, False, False):
            found = 0
        else:
            try:
                found = self.formats.index(fmt)
            except ValueError:
                self.formats.append(fmt)
                found = len(self.formats) - 1
        self._index[ttype] = found
        return found


@lru_cache(maxsize=4)
def palette(style_name: str) -> StylePalette:
    return StylePalette(style_name)


class LineColors:
    """Lazily lexed colour runs of one sequence of lines (one side of a diff)."""

    def __init__(self, lines: Sequence[str], lexer: Any, styles: StylePalette) -> None:
        self.lines = lines
        self.lexer = lexer
        self.styles = styles
        self._blocks: dict[int, list[Runs]] = {}

    def ready(self, line: int) -> bool:
        return self.lexer is None or line // BLOCK in self._blocks

    def runs(self, line: int, *, lex: bool = True) -> Runs | None:
        """The colour runs of ``line``, lexing its block now if needed — or, with ``lex=False``, None
        when the block is not lexed yet (the view draws it plain and lexes it on the next turn)."""
        if self.lexer is None or not 0 <= line < len(self.lines):
            return EMPTY
        block = self._blocks.get(line // BLOCK)
        if block is None:
            if not lex:
                return None
            block = self._lex(line // BLOCK)
        return block[line % BLOCK]

    def prefetch(self, line: int) -> bool:
        """Lex ``line``'s block if it is not done yet; True if work was done."""
        if self.lexer is None or not 0 <= line < len(self.lines) or line // BLOCK in self._blocks:
            return False
        self._lex(line // BLOCK)
        return True

    def _lex(self, block: int) -> list[Runs]:
        start = block * BLOCK
        chunk = [strip_eol(x) for x in self.lines[start:start + BLOCK]]
        out: list[list[int]] = [[] for _ in chunk]
        long_lines = {n for n, x in enumerate(chunk) if len(x) > MAX_LINE}
        text = "".join(("" if n in long_lines else x) + "\n" for n, x in enumerate(chunk))
        index = self.styles.index
        row = 0
        try:
            tokens = self.lexer.get_tokens(text)
            for ttype, value in tokens:
                style = index(ttype)
                if "\n" not in value:
                    if value and row < len(out):
                        out[row] += (len(value), style)
                    continue
                parts = value.split("\n")
                for k, part in enumerate(parts):
                    if k:
                        row += 1
                    if part and row < len(out):
                        out[row] += (len(part), style)
        except Exception:  # a lexer bug: draw the block plain
            out = [[] for _ in chunk]
        for n in long_lines:
            out[n] = []
        runs = [tuple(r) if r else EMPTY for r in out]
        self._blocks[block] = runs
        return runs


__all__ = ["BLOCK", "EMPTY", "LineColors", "Runs", "StylePalette", "lexer_for", "palette"]
