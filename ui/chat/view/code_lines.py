"""A code block's highlighting grown line by line while it streams (no Qt).

:func:`leading_fence` finds the code block a text starts with; :class:`CodeLines` highlights its
finished lines once, carrying the pygments lexer's state from line to line, and gives the HTML of
each line (what :func:`ui.markdown.highlight` gives for the whole code, line for line: pygments'
HTML formatter closes its spans at every line's end). A line longer than :data:`LONG_LINE_CHARS`
(a minified document on one line) is cut while it streams (:meth:`CodeLines.cut`): its beginning is
highlighted a piece at a time, so a flush lexes what arrived, not the whole line. :func:`whole_lines`
is the one-shot highlight of a closed block, a step at a time, to check the lines shown against it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from ui import markdown
from ui.code_lex import lex_from

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


def _lines(html_text: str) -> list[str]:
    """Formatted code (ending with a newline) as one HTML string per line."""
    out = markdown.no_background(html_text).split("\n")
    return out[:-1] if out and out[-1] == "" else out


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
        self.resumable = lexer is not None and (
            isinstance(lexer, RegexLexer) and not lexer.filters
            and type(lexer).get_tokens_unprocessed is RegexLexer.get_tokens_unprocessed)
        #: Finished lines not highlighted for good yet, and the lexer's state where they start.
        self.pending = ""
        self.stack: tuple[str, ...] = ("root",)
        #: Characters the lexer was given, in all (what a test counts).
        self.lexed = 0
        #: The HTML of the beginning of the line being written, cut off it (:meth:`cut`).
        self.head: list[str] = []
        #: How much of the first line's HTML the last :meth:`finished` or :meth:`take_pending` gave was
        #: that beginning (shown already, while the line was written).
        self.head_html = 0

    def finished(self, lines: str) -> list[str]:
        """Add finished lines (``lines`` ends with a newline; the first one without the part :meth:`cut`
        already took); the HTML of the lines now highlighted for good, one string a line (none while a
        string or comment is still open over them). A cut line's HTML is its pieces' then its rest's."""
        self.pending += lines
        self.head_html = 0
        if self.lexer is None:
            done, self.pending = self.pending, ""
            return self._headed(html.escape(done, quote=False).split("\n")[:-1])
        result, stack = self._html(self.pending)
        if stack != ("root",) and len(self.pending) < PENDING_CHARS:
            return []
        self.pending, self.stack = "", stack if self.resumable else ("root",)
        return self._headed(result)

    def take_pending(self) -> list[str]:
        """The pending lines' HTML, as they are now (before a long line is cut after them)."""
        self.head_html = 0
        if not self.pending:
            return []
        if self.lexer is None:
            done, self.pending = self.pending, ""
            return self._headed(html.escape(done, quote=False).split("\n")[:-1])
        result, stack = self._html(self.pending)
        self.pending, self.stack = "", stack if self.resumable else ("root",)
        return self._headed(result)

    def _headed(self, result: list[str]) -> list[str]:
        self.head_html = 0
        if self.head and result:
            head = "".join(self.head)
            result[0] = head + result[0]
            self.head, self.head_html = [], len(head)
        return result

    def cut(self, text: str) -> tuple[int, str]:
        """Cut the beginning off the line being written (no pending lines before it): ``text`` is the
        rest of the line (at least ``LONG_LINE_CHARS + LOOKAHEAD_CHARS`` long; only that much is looked
        at). Returns how many characters were cut (at a token's end, or inside a token longer than the
        cut) and their HTML; the lexer's state carries on from there."""
        window = text[:LONG_LINE_CHARS + LOOKAHEAD_CHARS]
        if self.lexer is None:
            part = window[:LONG_LINE_CHARS]
            self.head.append(html.escape(part, quote=False))
            return len(part), self.head[-1]
        from pygments import format as _format

        tokens = self._tokens(window)
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
            _tokens, self.stack = lex_from(self.lexer, window[:size], self.stack)
        part_html = "".join(_lines(_format(taken, markdown.code_formatter()) + "\n"))
        self.head.append(part_html)
        return size, part_html

    def _tokens(self, text: str) -> list[tuple[Any, str]]:
        self.lexed += len(text)
        if self.resumable:
            return lex_from(self.lexer, text, self.stack)[0]
        return list(self.lexer.get_tokens(text))

    def live(self, line: str) -> list[str]:
        """The HTML of the pending lines and of ``line`` (the line being written, no newline)."""
        text = self.pending + line
        if not text:
            return []
        if self.lexer is None:
            return html.escape(text, quote=False).split("\n")
        result, _stack = self._html(text + "\n")
        return result

    def _html(self, text: str) -> tuple[list[str], tuple[str, ...]]:
        from pygments import format as _format

        self.lexed += len(text)
        if self.resumable:
            tokens, stack = lex_from(self.lexer, text, self.stack)
        else:
            tokens, stack = list(self.lexer.get_tokens(text)), ("root",)
        return _lines(_format(tokens, markdown.code_formatter())), stack


def whole_lines(code: str, language: str | None) -> Iterator[list[str] | None]:
    """:func:`ui.markdown.highlight` of ``code`` a step at a time: yields None after each slice of work
    (so a caller can spread it over turns of the event loop), then the HTML of each line."""
    from pygments import format as _format

    lexer = markdown.code_lexer(language)
    if lexer is None or len(code) > markdown.MAX_HIGHLIGHT:
        yield html.escape(code, quote=False).split("\n")
        return
    formatter = markdown.code_formatter()
    out: list[str] = []
    batch: list[tuple[Any, str]] = []
    partial = ""  # the HTML of a line longer than a slice, so far
    for kind, value in lexer.get_tokens(code):
        batch.append((kind, value))
        if len(batch) >= 200:  # a slice ends at a line's end, or inside a long line (a minified document)
            done = _lines(_format(batch, formatter))
            done[0] = _joined(partial, done[0])
            partial = "" if value.endswith("\n") else done.pop()
            out += done
            batch = []
            yield None
    if batch:
        done = _lines(_format(batch, formatter))
        done[0] = _joined(partial, done[0])
        out += done
    elif partial:
        out.append(partial)
    yield out


#: A line's highlighted HTML (pygments' spans, never nested): a span and its text, or text.
_SPAN = re.compile(r'<span style="([^"]*)">([^<]*)</span>|([^<]+)')


def runs(line: str) -> list[tuple[str, str]]:
    """(style, text) of each span or text of a line's HTML, the text as shown."""
    return [(m.group(1) or "", html.unescape(m.group(2) if m.group(1) is not None else m.group(3)))
            for m in _SPAN.finditer(line)]


#: A tag of a line's HTML (its text has ``<`` escaped).
_TAG = re.compile(r"<[^>]*>")


def text_length(line: str) -> int:
    """How many characters a line's HTML shows (one pass in C: a minified document's line is 50 KB)."""
    return len(html.unescape(_TAG.sub("", line)))


def same_colours(parts: list[str], line: str) -> bool:
    """Whether a line's HTML cut in ``parts`` (formatted a part at a time) shows ``line``'s colours. Most
    often the parts joined as formatting them at once joins them are ``line`` itself: a comparison of
    strings, not of every span's runs (~100 ms over a 50 KB line, in one turn of the event loop)."""
    joined = parts[0] if parts else ""
    for part in parts[1:]:
        joined = _joined(joined, part)
    return joined == line or colours("".join(parts)) == colours(line)


def colours(line: str) -> list[tuple[str, str]]:
    """A line's HTML as runs of one style (neighbouring spans of one style merged): two lines with
    equal runs look the same."""
    out: list[tuple[str, str]] = []
    for style, text in runs(line):
        if not text:
            continue
        if out and out[-1][0] == style:
            out[-1] = (style, out[-1][1] + text)
        else:
            out.append((style, text))
    return out


def split_html(line: str, sizes: list[int]) -> list[str]:
    """A line's HTML cut in parts showing ``sizes`` characters each (the last one takes the rest)."""
    parts: list[str] = []
    current: list[str] = []
    room = sizes[0] if sizes else 0
    for style, text in runs(line):
        while len(parts) < len(sizes) - 1 and len(text) >= room:
            head, text = text[:room], text[room:]
            if head:
                current.append(_span(style, head))
            parts.append("".join(current))
            current = []
            room = sizes[len(parts)]
        if text:
            current.append(_span(style, text))
            room -= len(text)
    parts.append("".join(current))
    return parts


def _span(style: str, text: str) -> str:
    escaped = html.escape(text, quote=False)
    return f'<span style="{style}">{escaped}</span>' if style else escaped


def _joined(head: str, rest: str) -> str:
    """A line's HTML formatted in two slices, as formatting it at once gives it (a span of one style
    over the cut is one span)."""
    if head.endswith("</span>") and rest.startswith("<span "):
        opener = rest[:rest.index(">") + 1]
        if head.rfind(opener) > head.rfind("</span>", 0, len(head) - 7):
            return head[:-7] + rest[len(opener):]
    return head + rest
