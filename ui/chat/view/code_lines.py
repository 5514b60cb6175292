"""A code block's highlighting grown line by line while it streams (no Qt).

:func:`leading_fence` finds the code block a text starts with; :class:`CodeLines` highlights its
finished lines once, carrying the pygments lexer's state from line to line, and gives each line as
its runs of one style (:data:`Line`: what :func:`ui.markdown.highlight` shows for the whole code, line
for line, made from the lexer's tokens straight, not formatted to HTML and read back). A line longer than :data:`LONG_LINE_CHARS`
(a minified document on one line) is cut while it streams (:meth:`CodeLines.cut`): its beginning is
highlighted a piece at a time, so a flush lexes what arrived, not the whole line. :func:`whole_lines`
is the one-shot highlight of a closed block, a step at a time, to check the lines shown against it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from ui import code_lex, markdown
from ui.code_lex import lex_from
from ui.markdown import json_tokens

#: A code fence's opening line at the start of a text (at the margin: an answer's own block).
_OPENER = re.compile(r"(`{3,})([^`\n]*)\n|(~{3,})([^\n]*)\n")
#: Finished lines kept open (a string or comment spanning them) before they are taken as they are.
PENDING_CHARS = 4000
#: A line being written is cut once it is this long (:meth:`CodeLines.cut`): its beginning is shown for
#: good, a piece of about this many characters at a time.
LONG_LINE_CHARS = 1500
#: What follows a cut is lexed with it (a rule that looks ahead, such as a JSON key before its colon).
LOOKAHEAD_CHARS = 64


class OpenFence(NamedTuple):
    """A code block at the start of a text (:func:`leading_fence`)."""

    #: Where its code starts (just past the opening line).
    start: int
    #: Its language (the info string's first word; None: plain text).
    language: str | None
    #: Where its closing line starts, and just past it; None while it is open.
    close: int | None
    end: int | None

    def code(self, text: str) -> str:
        """The block's code as :func:`ui.markdown.render` shows it (no closing line, no trailing newlines)."""
        return text[self.start:self.close].rstrip("\n")


def leading_fence(text: str, since: int = 0) -> OpenFence | None:
    """The code block ``text`` starts with, when its fence opens at the margin and its info string is
    plain (no escapes or entities, which markdown-it would decode); None otherwise. ``since``: a line
    start in its code before which no line closes it (known from a look at a shorter text)."""
    m = _OPENER.match(text)
    if m is None or "\r" in text or "\0" in text:
        return None  # carriage returns and NULs: markdown-it rewrites them
    fence, info = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    if "\\" in info or "&" in info:
        return None
    words = info.split(maxsplit=1)
    language = words[0] if words else None
    pos = max(m.end(), since)
    while pos < len(text):
        nl = text.find("\n", pos)
        if nl < 0:
            break
        line = text[pos:nl]
        stripped = line.lstrip(" ")
        if (len(line) - len(stripped) <= 3 and stripped.startswith(fence[0] * len(fence))
                and not stripped.strip(fence[0]).strip(" \t")):
            return OpenFence(m.end(), language, pos, nl + 1)
        pos = nl + 1
    return OpenFence(m.end(), language, None, None)


#: A line as shown: its runs of one style, each (the inline CSS pygments' HTML formatter gives the
#: token's type, less any background; "" for none) and its text; neighbours of one style are one run, and spaces
#: join the run before them when both styles are a colour alone (:func:`ui.markdown.spaces_joined`).
Line = tuple[tuple[str, str], ...]


def _split(tokens: list[tuple[Any, str]], partial: Line = ()) -> tuple[list[Line], Line]:
    """Tokens as the lines a newline ends, and the line after the last newline (open: more may follow).
    ``partial``: the first line's runs so far (lexed before, a slice of a long line). Spaces after a run
    join it when both styles are a colour alone, as :func:`ui.markdown.spaces_joined` has them shown."""
    styles = markdown.token_styles()
    plain = markdown.PLAIN_COLOURS
    lines: list[Line] = []
    line = list(partial)
    last = line[-1][0] if line else None
    for kind, value in tokens:
        style = styles.get(kind)
        if style is None:
            style = markdown.token_style(kind, styles)
        if "\n" not in value:  # most tokens: a run, or more of the last one
            if not value:
                continue
            if style == last:
                line[-1] = (style, line[-1][1] + value)
            elif value[0] == " " and last in plain and style in plain and not value.strip(" "):
                line[-1] = (last, line[-1][1] + value)  # (spaces: the run before's colour shows them the same)
            else:
                line.append((style, value))
                last = style
            continue
        first = True
        for part in value.split("\n"):
            if not first:
                lines.append(tuple(line))
                line, last = [], None
            first = False
            if part:
                if style == last:
                    line[-1] = (style, line[-1][1] + part)
                else:
                    line.append((style, part))
                    last = style
    return lines, tuple(line)


def _lines(tokens: list[tuple[Any, str]]) -> list[Line]:
    """Tokens as lines; a last line without a newline is one when it shows something (as splitting
    formatted text that ends with a newline gives no empty line after it)."""
    lines, last = _split(tokens)
    return [*lines, last] if last else lines


def _get_tokens(lexer: Any, text: str) -> Iterator[tuple[Any, str]]:
    """pygments' ``lexer.get_tokens(text)``: through :func:`ui.code_lex.tokens`, or JSON's through
    :func:`ui.markdown.json_tokens.tokens`, when that gives the same (a lexer it handles, no filters, and a text
    pygments would not change first: no byte-order mark, no carriage return, no stripping, tabs kept)."""
    if not text.startswith("\ufeff") and "\r" not in text and not (
            lexer.stripall or lexer.stripnl or lexer.ensurenl or lexer.tabsize):
        if code_lex.handles(lexer):
            return code_lex.tokens(lexer, text)
        if json_tokens.handles(lexer) and not lexer.filters:
            return json_tokens.tokens(text)
    return iter(lexer.get_tokens(text))


def _plain(text: str) -> list[Line]:
    """Text without a lexer as lines (one run each, no style)."""
    return [((("", line),) if line else ()) for line in text.split("\n")]


class CodeLines:
    """Highlighting grown a line at a time. Finished lines are lexed once, the lexer's state carried
    from one to the next; lines that end inside a string or comment (the lexer not back in its first
    state) stay ``pending`` and are lexed again with the next ones, so a rule that matches over them
    sees them together. Lexers that cannot resume (not a plain pygments ``RegexLexer``) lex each batch
    of finished lines on its own: the check against the whole block (:func:`whole_lines`) mends them."""

    def __init__(self, language: str | None) -> None:
        from pygments.lexer import RegexLexer

        self.lexer = markdown.code_lexer(language)
        lexer = self.lexer
        # (C's and C++'s lexers could be: their state is in a function's braces most of the time, so lines
        # would be pending most of the time.)
        self.resumable = lexer is not None and code_lex.handles(lexer) and (
            type(lexer).get_tokens_unprocessed is RegexLexer.get_tokens_unprocessed)
        #: Finished lines not highlighted for good yet, and the lexer's state where they start.
        self.pending = ""
        self.stack: tuple[str, ...] = ("root",)
        #: Characters the lexer was given, in all (what a test counts).
        self.lexed = 0
        #: The runs of the beginning of the line being written, cut off it (:meth:`cut`).
        self.head: list[Line] = []
        #: How many of the first line's runs the last :meth:`finished` or :meth:`take_pending` gave were
        #: that beginning (shown already, while the line was written).
        self.head_runs = 0

    def finished(self, lines: str) -> list[Line]:
        """Add finished lines (``lines`` ends with a newline; the first one without the part :meth:`cut`
        already took); the lines now highlighted for good (none while a string or comment is still open
        over them). A cut line's runs are its pieces' then its rest's."""
        self.pending += lines
        self.head_runs = 0
        if self.lexer is None:
            done, self.pending = self.pending, ""
            return self._headed(_plain(done)[:-1])
        result, stack = self._lex(self.pending)
        if stack != ("root",) and len(self.pending) < PENDING_CHARS:
            return []
        self.pending, self.stack = "", stack if self.resumable else ("root",)
        return self._headed(result)

    def take_pending(self) -> list[Line]:
        """The pending lines, as they are now (before a long line is cut after them)."""
        self.head_runs = 0
        if not self.pending:
            return []
        if self.lexer is None:
            done, self.pending = self.pending, ""
            return self._headed(_plain(done)[:-1])
        result, stack = self._lex(self.pending)
        self.pending, self.stack = "", stack if self.resumable else ("root",)
        return self._headed(result)

    def _headed(self, result: list[Line]) -> list[Line]:
        self.head_runs = 0
        if self.head and result:
            head = tuple(run for part in self.head for run in part)
            result[0] = head + result[0]  # not merged: the runs past ``head_runs`` are the rest's
            self.head, self.head_runs = [], len(head)
        return result

    def cut(self, text: str) -> tuple[int, Line]:
        """Cut the beginning off the line being written (no pending lines before it): ``text`` is the
        rest of the line (at least ``LONG_LINE_CHARS + LOOKAHEAD_CHARS`` long; only that much is looked
        at). Returns how many characters were cut (at a token's end, or inside a token longer than the
        cut) and their runs; the lexer's state carries on from there."""
        window = text[:LONG_LINE_CHARS + LOOKAHEAD_CHARS]
        if self.lexer is None:
            text = window[:LONG_LINE_CHARS]
            self.head.append((("", text),))
            return len(text), self.head[-1]
        stops: dict[int, tuple[str, ...]] = {}  # the lexer's state where each match of the window ends
        tokens = self._tokens(window, stops)
        taken: list[tuple[Any, str]] = []
        size = 0
        for kind, value in tokens:
            if size + len(value) > LONG_LINE_CHARS:
                if not taken:  # one token longer than the cut: cut inside it
                    taken.append((kind, value[:LONG_LINE_CHARS - size]))
                    size = LONG_LINE_CHARS
                break
            taken.append((kind, value))
            size += len(value)
        if self.resumable:
            # Where the cut ends a match of the window, its state there (the window is not lexed again up to it).
            stack = stops.get(size)
            self.stack = stack if stack is not None else lex_from(self.lexer, window[:size], self.stack)[1]
        part = tuple(run for line in _lines(taken) for run in line)
        self.head.append(part)
        return size, part

    def _tokens(self, text: str, stops: dict[int, tuple[str, ...]] | None = None) -> list[tuple[Any, str]]:
        self.lexed += len(text)
        if self.resumable:
            return lex_from(self.lexer, text, self.stack, stops=stops)[0]
        return list(_get_tokens(self.lexer, text))

    def live(self, line: str) -> list[Line]:
        """The pending lines and ``line`` (the line being written, no newline)."""
        text = self.pending + line
        if not text:
            return []
        if self.lexer is None:
            return _plain(text)
        result, _stack = self._lex(text + "\n")
        return result

    def _lex(self, text: str) -> tuple[list[Line], tuple[str, ...]]:
        self.lexed += len(text)
        if self.resumable:
            tokens, stack = lex_from(self.lexer, text, self.stack)
        else:
            tokens, stack = list(_get_tokens(self.lexer, text)), ("root",)
        return _lines(tokens), stack


def whole_lines(code: str, language: str | None) -> Iterator[list[Line] | None]:
    """:func:`ui.markdown.highlight` of ``code`` a step at a time: yields None after each slice of work
    (so a caller can spread it over turns of the event loop), then each line."""
    lexer = markdown.code_lexer(language)
    if lexer is None or len(code) > markdown.MAX_HIGHLIGHT:
        yield _plain(code)
        return
    out: list[Line] = []
    batch: list[tuple[Any, str]] = []
    partial: Line = ()  # the runs of a line longer than a slice, so far
    for kind, value in _get_tokens(lexer, code):
        batch.append((kind, value))
        if len(batch) >= 200:  # a slice ends at a line's end, or inside a long line (a minified document)
            done, partial = _split(batch, partial)
            out += done
            batch = []
            yield None
    done, partial = _split(batch, partial)
    out += [*done, partial] if partial else done
    yield out


def text_length(line: Line) -> int:
    """How many characters a line shows."""
    return sum(len(text) for _style, text in line)


def same_colours(parts: list[Line], line: Line) -> bool:
    """Whether a line cut in ``parts`` (lexed a part at a time) shows ``line``'s colours."""
    return colours(tuple(run for part in parts for run in part)) == colours(line)


def colours(line: Line) -> list[tuple[str, str]]:
    """A line's runs with neighbours of one style merged, and the spaces a run starts with given to the run before
    when both styles are a colour alone (where :func:`_split` joins them; a line cut in parts has a part start
    with them): two lines with equal runs look the same."""
    plain = markdown.PLAIN_COLOURS
    out: list[tuple[str, str]] = []
    for style, text in line:
        if text[:1] == " " and out and style in plain and out[-1][0] in plain:
            spaces = len(text) - len(text.lstrip(" "))
            out[-1] = (out[-1][0], out[-1][1] + text[:spaces])
            text = text[spaces:]
        if not text:
            continue
        if out and out[-1][0] == style:
            out[-1] = (style, out[-1][1] + text)
        else:
            out.append((style, text))
    return out


def split_line(line: Line, sizes: list[int]) -> list[Line]:
    """A line cut in parts showing ``sizes`` characters each (the last one takes the rest)."""
    parts: list[Line] = []
    current: list[tuple[str, str]] = []
    room = sizes[0] if sizes else 0
    for style, text in line:
        while len(parts) < len(sizes) - 1 and len(text) >= room:
            head, text = text[:room], text[room:]
            if head:
                current.append((style, head))
            parts.append(tuple(current))
            current = []
            room = sizes[len(parts)]
        if text:
            current.append((style, text))
            room -= len(text)
    parts.append(tuple(current))
    return parts
