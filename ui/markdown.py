"""Markdown (CommonMark and GitHub's extensions) to the HTML subset Qt's rich text understands.

markdown-it-py parses (CommonMark, GFM tables, strikethrough, task lists, bare-URL autolinks
from mdit-py-plugins); :class:`_QtWriter` turns its tokens into Qt rich text (QTextDocument's
HTML subset: tables, lists with a ``start``, ``-qt-list-indent``, ``<s>``, inline styles).
Raw HTML in the text is shown as text, never rendered, and only http, https and mailto links
are clickable. Code blocks and JSON are highlighted by pygments with inline styles; each code
block of :func:`render` with ``copy=True`` has a header line with its language and a "Copy"
link ``copy:N`` (N counts the code blocks of that text: :func:`code_blocks` gives their code).

``split_stable`` finds the end of the last complete block of a growing text, so a streaming
view can freeze what is finished and re-render only the tail: nothing above the tail moves.
"""

from __future__ import annotations

import html
import itertools
import json
import re
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

from ui import theme

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

    from workspace.readable import JsonPieces, TextBlock

#: A code fence, also inside quotes and list items (indented, after ``>``).
_FENCE = re.compile(r"^[ \t>]*(`{3,}|~{3,})")

#: Link schemes that become clickable links; any other link shows its text only.
LINK_SCHEMES = ("http", "https", "mailto")
#: The scheme of a code block's copy link (``copy:N``).
COPY_SCHEME = "copy"
#: The scheme of a code block's wrap toggle (``wrap:N``: long lines wrap, or scroll sideways).
WRAP_SCHEME = "wrap"
#: A task item's box (a list holding task items shows no bullets, as on GitHub).
TASK_OPEN, TASK_DONE = "☐", "☑"


def split_stable(text: str) -> int:
    """Index just past the last complete block of ``text`` (0 when none is complete).

    A block is complete when a blank line follows it outside a code fence, or when its
    closing fence (the same character, at least as many, nothing after it) has arrived. The
    rest (the tail) may still change as text streams in.
    """
    pos = 0
    stable = 0
    in_fence: str | None = None
    prev_blank = True
    for line in text.splitlines(keepends=True):
        end = pos + len(line)
        complete_line = line.endswith("\n")
        stripped = line.strip()
        m = _FENCE.match(line)
        if in_fence is not None:
            if (complete_line and m and m.group(1)[0] == in_fence[0] and len(m.group(1)) >= len(in_fence)
                    and not line[m.end():].strip()):
                in_fence = None
                stable = end
        elif m and complete_line:
            in_fence = m.group(1)
            if not prev_blank:
                stable = pos  # the paragraph above the fence is finished
        elif complete_line and not stripped:
            stable = end
        prev_blank = not stripped
        pos = end
    return stable


#: A list item's line at the left margin: its bullet, or its number and the delimiter after it.
_ITEM_LINE = re.compile(r"(?:([-+*])|(\d{1,9})([.)]))(?:[ \t]|$)")
#: A thematic break ("- - -", "* * *"), which an item's line would otherwise match.
_RULE_LINE = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")


def _lazy(line: str) -> bool:
    """Whether a stripped line would go on a paragraph (not start a block: an item, a rule, a heading, a quote,
    a table's row, a fence)."""
    return (_ITEM_LINE.match(line) is None and _RULE_LINE.match(line) is None and line[:1] not in "#>|`~"
            and line[:1].isalnum())


class ListCut(NamedTuple):
    """Where a text may be cut inside a list: ``at``, the start of an item's line, the items before it finished."""

    at: int
    #: The item's number in its (ordered) list, counting the items before it; None in a bulleted list.
    number: int | None


def list_cuts(text: str, first: int | None = None) -> list[ListCut]:
    """Where ``text`` (a tail after :func:`split_stable`'s finished blocks: no blank line in it, outside a code
    fence) may be cut between the items of a list: the start of each line at the left margin that begins an item
    of the same list as the item before it (the lines in between in that item: indented as its text, or a
    paragraph's lazy lines). Rendered apart, the part before such a cut ends with the finished items (a list that
    goes on: see :func:`render_part`'s ``list_goes_on``) and the part after it starts the list's next item
    (``start``: its number). ``first``: ``text`` starts with a list that goes on from one cut before it, and its
    first item is number ``first``. The scan stops at the first line that may be read otherwise (a fence, a
    block less indented than the item's text, a line at the margin that is no item of the list): the cuts
    before it hold whatever follows."""
    cuts: list[ListCut] = []
    kind: str | None = None  # the marker of the list the lines are in: its bullet, or its number's delimiter
    number = 0  # the number of the next item of an ordered list
    content = 0  # where the last item's text starts
    paragraph = False  # the line before is a paragraph's (an item may interrupt one only as a bullet or "1.")
    pos = 0
    for line in text.splitlines(keepends=True):
        if not line.endswith("\n") or not line.strip() or _FENCE.match(line):
            break
        m = None if _RULE_LINE.match(line) else _ITEM_LINE.match(line)
        if m is None:
            if kind is not None and (line[0] not in " \t" or (len(line) - len(line.lstrip(" ")) < content
                                                              and not _lazy(line.strip()))):
                break  # the list may end here, or go on: not told without parsing
            paragraph = paragraph or (kind is None and line[0] not in " \t")
            pos += len(line)
            continue
        marker = m.group(1) or m.group(3)
        mark = m.group(1) or m.group(2) + m.group(3)
        after = line[len(mark):].rstrip("\n")
        spaces = len(after) - len(after.lstrip(" "))
        content = len(mark) + (spaces if 0 < spaces <= 4 and after.strip() else 1)
        if marker == kind:
            cuts.append(ListCut(pos, number if m.group(2) is not None else None))
            number += 1
        elif (kind is None and not paragraph) or (m.group(2) in (None, "1") and after.strip()):
            kind = marker  # a list starts
            number = int(m.group(2)) + 1 if m.group(2) is not None else 0
            if pos == 0 and first is not None and m.group(2) is not None:
                number = first + 1
        else:
            break
        paragraph = False
        pos += len(line)
    return cuts


#: A table's delimiter line: a cell of dashes (aligned by colons) per column, between pipes.
_DELIMITER_LINE = re.compile(r" {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
#: A pipe that parts two cells (not escaped).
_CELL_PIPE = re.compile(r"(?<!\\)\|")


class TableCut(NamedTuple):
    """A table cut between its rows (:func:`table_cuts`): its header and delimiter lines (each piece after the first
    renders its rows under them, not showing them) and its columns' widths in percent (every piece has them)."""

    head: str
    widths: tuple[int, ...]


def _cells(line: str) -> list[str]:
    row = line.strip()
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return [cell.strip() for cell in _CELL_PIPE.split(row)]


def table_cuts(text: str, head: str | None = None) -> tuple[str, list[int]] | None:
    """Where ``text`` (a tail after :func:`split_stable`'s finished blocks: no blank line in it) may be cut between the
    rows of the table it starts with: its head (the header and delimiter lines) and the start of each finished row
    line after them, or None when it starts with no table. ``head``: ``text`` goes on with the rows of a table cut
    before (no header in it). The rows end at the first line that may be read otherwise (no pipe in it, or a
    block's start: a quote, a fence, a heading, a list item, a rule)."""
    lines = text.splitlines(keepends=True)
    pos = 0
    if head is None:
        if (len(lines) < 2 or not lines[1].endswith("\n") or _DELIMITER_LINE.match(lines[1].rstrip("\n")) is None
                or "|" not in lines[0] + lines[1] or len(_cells(lines[0])) != len(_cells(lines[1]))):
            return None
        head = lines[0] + lines[1]
        pos = len(head)
        lines = lines[2:]
    cuts: list[int] = []
    for line in lines:
        stripped = line.strip()
        if (not line.endswith("\n") or "|" not in line or stripped[:1] in "#>`~" or _RULE_LINE.match(line)
                or _ITEM_LINE.match(stripped) or line.startswith("    ")):
            break
        if pos:
            cuts.append(pos)
        pos += len(line)
    return head, cuts


def _shown_length(cell: str) -> int:
    """About how many characters a cell's Markdown shows (no link targets, no emphasis or code marks)."""
    return len(_LINK_TARGET.sub("", cell)) - sum(cell.count(c) for c in "*`[]~")


#: A link's target after its text: ``](url)``.
_LINK_TARGET = re.compile(r"\]\([^)]*\)")


def table_widths(head: str, rows: str) -> tuple[int, ...]:
    """Percent widths for a table's columns from its header and first rows (each column's longest cell, within
    limits, so a long note does not squeeze the numbers): a table cut in pieces lays every piece out with them."""
    header = head.splitlines()[0]
    longest = [max(3, min(_shown_length(cell), 60)) for cell in _cells(header)]
    for line in rows.splitlines()[:50]:
        for i, cell in enumerate(_cells(line)[:len(longest)]):
            longest[i] = max(longest[i], min(_shown_length(cell), 60))
    total = sum(longest)
    return tuple(max(1, 100 * n // total) for n in longest)


#: Characters that never start, end or change Markdown syntax in the middle of a line (with letters and digits).
_PLAIN = frozenset(" .,;?'\"")
#: A line that is (or is inside) an ordered list item's marker: "1." or "- 2)" at its start.
_ORDERED_START = re.compile(r"[ >]*(?:(?:[-+*]|\d{1,9}[.)])(?: +|$))*\d{1,9}[.)](?: |$)")


def _plain(text: str) -> bool:
    return all(c.isalnum() or c in _PLAIN for c in text)


def plain_append(shown: str, text: str) -> str | None:
    """What to add, as plain text, at the end of ``shown``'s rendering so that it shows ``text``'s, or None
    when it cannot be told without rendering ``text``.

    ``text`` is ``shown`` plus letters, digits, spaces and ``.,;?'"`` on the last line, whose last word so
    far is plain too (no delimiter, link or code just before): that neither opens nor closes a block or
    an inline span, so the added words take the format of the text before them. A streaming view appends
    them to its document instead of laying the whole tail out again. Spaces at the end are held back and
    runs of spaces are one, as rich text shows them.
    """
    if not text.startswith(shown) or not _plain(delta := text[len(shown):]):
        return None
    head = shown.rstrip(" ")
    line = head[head.rfind("\n") + 1:]
    if not line.strip() or not _plain(line[line.rfind(" ") + 1:]):
        return None
    new_line = text[text.rfind("\n") + 1:]
    if "www." in new_line.lower() or "]:" in new_line or _ORDERED_START.match(new_line):
        return None  # a bare web address becomes a link; "[a]: b" a link reference; "1." a list item
    return re.sub(" {2,}", " ", text.rstrip(" ")[len(head):]) if delta else ""


def _esc(text: str) -> str:
    return html.escape(text, quote=False)


def _attr(text: str) -> str:
    return html.escape(text, quote=True)


@lru_cache(maxsize=2)
def _parser(*, blocks_only: bool = False) -> MarkdownIt:
    """CommonMark without raw HTML, plus GFM tables, strikethrough, task lists and bare-URL links.

    ``blocks_only``: the block structure alone; :func:`_inline_block` parses (and caches) the
    inline content of each block.
    """
    from markdown_it import MarkdownIt
    from mdit_py_plugins.gfm_autolink import gfm_autolink_plugin

    md = MarkdownIt("commonmark", {"html": False, "tasklists": True})
    md.enable(["table", "strikethrough"])
    md.use(gfm_autolink_plugin)
    if blocks_only:
        md.disable(["inline", "text_join"])
    return md


class _Style(NamedTuple):
    """What inline HTML depends on besides the text (the theme's colours and the code font)."""

    link: str
    code: str
    muted: str

    @staticmethod
    def current() -> _Style:
        c = theme.colors()
        return _Style(link=f"color:{c.accent}; text-decoration:none;",
                      code=f"font-family:{theme.mono_family()}; background-color:{c.inline_code_bg};",
                      muted=c.muted)


@lru_cache(maxsize=512)
def _cached_inline_html(content: str, style: _Style) -> str:
    tokens = _parser().parseInline(content)
    return _inline_html(tokens[0].children or [] if tokens else [], style)


def _inline_block(content: str, env: dict[str, Any], style: _Style) -> str:
    """A block's inline text as HTML (cached: a streaming tail re-parses only the paragraph that
    grew), unless the text defines link references that the inline text may use."""
    if not env.get("references"):
        return _cached_inline_html(content, style)
    md = _parser()
    children: list[Token] = []
    md.inline.parse(content, md, env, children)
    return _inline_html(children, style)


def clickable(url: str) -> bool:
    """Whether ``url`` may be opened by a click (http, https, mailto)."""
    scheme, colon, _rest = url.partition(":")
    return bool(colon) and scheme.strip().lower() in LINK_SCHEMES


def render(text: str, *, copy: bool = False, unwrapped: frozenset[int] | None = None,
           list_start: int | None = None, list_goes_on: bool = False, table_from: TableCut | None = None,
           table_goes_on: TableCut | None = None) -> str:
    """Markdown to Qt rich-text HTML; with ``copy``, code blocks get a ``copy:N`` link; with ``unwrapped``
    (a set, possibly empty), a ``wrap:N`` toggle too, and the blocks it names keep their long lines
    (the view scrolls sideways) instead of wrapping them. ``list_start``, ``list_goes_on``, ``table_from`` and
    ``table_goes_on``: see :func:`render_part`."""
    return render_part(text, copy=copy, unwrapped=unwrapped, list_start=list_start, list_goes_on=list_goes_on,
                       table_from=table_from, table_goes_on=table_goes_on)[0]


def render_part(text: str, *, copy: bool = False, unwrapped: frozenset[int] | None = None,
                first_code: int = 0, list_start: int | None = None, list_goes_on: bool = False,
                table_from: TableCut | None = None, table_goes_on: TableCut | None = None) -> tuple[str, int]:
    """:func:`render` of a part of a longer text whose code blocks before it are ``first_code`` (its first code
    block's links are ``copy:first_code``), and the index of the code block after it. A part cut inside a list
    (:func:`list_cuts`) renders as that list's items do in the whole text: ``list_start``, the text starts with a
    list that goes on from the part before, and its first item is number ``list_start``; ``list_goes_on``, the
    text ends with a list that goes on in the part after (its last item has an item's gap below, not a list's).
    A part cut inside a table (:func:`table_cuts`) renders as a piece of it: ``table_from``, the text starts with
    rows of that table (parsed under its head, which is not shown); ``table_goes_on``, the text ends with a table
    that goes on in the part after. Such a piece has the table's column widths (:class:`TableCut`) and no margin
    on the side where the table goes on, so the pieces line up as one table."""
    env: dict[str, Any] = {}
    tokens = _parser(blocks_only=True).parse(text if table_from is None else table_from.head + text, env)
    writer = _QtWriter(copy=copy, env=env, unwrapped=unwrapped)
    writer.code_index = first_code
    if table_from is not None and tokens and tokens[0].type == "table_open":
        head_end = next(i for i, t in enumerate(tokens) if t.type == "thead_close")
        writer.table_cut[id(tokens[0])] = _TablePiece(table_from.widths, top=0)
        tokens = [tokens[0], *tokens[head_end + 1:]]
    if table_goes_on is not None and tokens and tokens[-1].type == "table_close":
        opened = next(t for t in reversed(tokens) if t.type == "table_open")
        writer.table_cut[id(opened)] = writer.table_cut.get(id(opened), _TablePiece(table_goes_on.widths))._replace(bottom=0)
    if list_start is not None and tokens and tokens[0].type == "ordered_list_open":
        tokens[0].attrs["start"] = list_start
    if list_goes_on and tokens and tokens[-1].type in ("bullet_list_close", "ordered_list_close"):
        writer.goes_on = tokens[-1]
    return writer.blocks(tokens), writer.code_index


#: A list item's marker at the start of a text: the list before it would go on with it.
_ITEM_START = re.compile(r"(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)", re.MULTILINE)


def starts_on_its_own(text: str) -> bool:
    """Whether Markdown ``text``, coming after finished blocks (:func:`split_stable`), renders as it would alone:
    it starts with no indent (a list item's or a code block's continuation) and no list marker (the list before
    would take the item). (A link reference, ``[a]: url``, may be used before or after it: the caller checks.)"""
    return bool(text) and text[0] not in " \t\n" and _ITEM_START.match(text) is None


def inline(text: str) -> str:
    """Inline Markdown (code, links, bold, italic, strike) to HTML; everything else escaped."""
    return _cached_inline_html(text, _Style.current())


def code_blocks(text: str) -> list[str]:
    """The code of each code block of ``text``, in the order of :func:`render`'s ``copy:N`` links."""
    return [t.content.rstrip("\n") for t in _parser(blocks_only=True).parse(text) if t.type in ("fence", "code_block")]


@lru_cache(maxsize=64)
def _formatter(style: str) -> Any:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(noclasses=True, nowrap=True, style=style)


def highlight(code: str, language: str | None) -> str:
    """``code`` as highlighted HTML spans (no wrapper); plain escaped text when unknown."""
    from pygments import highlight as _highlight

    lexer = code_lexer(language)
    if lexer is None or len(code) > MAX_HIGHLIGHT:
        return _esc(code)
    result = no_background(_highlight(code, lexer, code_formatter()))
    return result[:-1] if result.endswith("\n") else result


#: Longer code is shown without colours (highlighting it would take seconds).
MAX_HIGHLIGHT = 200_000


def code_lexer(language: str | None) -> Any:
    """The pygments lexer :func:`highlight` uses for ``language`` (None: plain text)."""
    lang = (language or "").strip().lower()
    return _lexer(lang) if lang else None


def code_formatter() -> Any:
    """The pygments formatter :func:`highlight` uses (inline styles of the theme's style, no wrapper)."""
    return _formatter(theme.colors().pygments_style)


def no_background(html_text: str) -> str:
    """pygments styles may set a background on whole spans; a code block has its own."""
    return re.sub(r"background-color: #[0-9a-fA-F]{3,6};?\s*", "", html_text)


@lru_cache(maxsize=128)
def _lexer(lang: str) -> Any:
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(lang, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


@lru_cache(maxsize=128)
def _highlighted_block(code: str, language: str | None, style: str) -> str:
    """:func:`highlight` for code blocks: a streaming tail shows the same blocks render after render."""
    return highlight(code, language)


#: The languages whose lexers :func:`load_libraries` builds ahead (the common ones in answers).
COMMON_LANGUAGES = ("python", "json", "diff", "bash", "javascript", "cpp")


def load_libraries() -> None:
    """Import markdown-it and pygments and build the parsers and the common lexers (their regular
    expressions compile on first use): about 60 ms. No Qt: meant for a worker thread, so neither the
    window's start nor the first answer's code block pays it on the event loop. The lexers' joined
    rules (:mod:`ui.code_lex`, a few hundred ms of compiling) are not built here, where they would
    hold the interpreter while the window starts: the first code block in a language has its own
    thread build them."""
    _load_parsers()


def prepare_lexers() -> None:
    """Have :mod:`ui.code_lex`'s own thread build the common languages' joined rules now (a few hundred ms of
    compiling, off this thread): meant for a few seconds after the window's start-up (see ``ui.app``)."""
    from ui import code_lex

    code_lex.prepare_soon([code_lexer(lang) for lang in COMMON_LANGUAGES])


def _load_parsers() -> None:
    _parser(blocks_only=True)
    _parser()
    for lang in COMMON_LANGUAGES:
        highlight("x = 1\n", lang)


def warm_up() -> None:
    """Import the parser and pygments and build the common lexers now (at idle time), not mid-stream
    (on this thread: after :func:`load_libraries` in a worker, what is left — a render, which asks Qt
    for the monospace font — takes a few ms). The lexers' joined rules are not built here: on this
    thread, a streamed code block has them built by :mod:`ui.code_lex`'s own thread when it needs them."""
    _load_parsers()
    render("# x\n\n- [ ] *a* `b` https://x.org\n\n| a |\n|---|\n| 1 |\n")


def code_block(code: str, language: str | None, *, index: int | None = None, wrap: bool | None = None) -> str:
    """A highlighted code block under a header line: its language and, with ``index``, a
    ``copy:index`` link (one right-aligned line: a nested table would lay out slower); with ``wrap``
    (True or False) a ``wrap:index`` toggle, and the lines wrap only when it is True."""
    c = theme.colors()
    body = _highlighted_block(code.rstrip("\n"), language, c.pygments_style)
    header = code_header(language, index=index, wrap=wrap)
    return (
        f'<table width="100%" cellspacing="0" cellpadding="10" style="margin-top:4px; margin-bottom:10px; '
        f'background-color:{c.code_bg}; border: 1px solid {c.border};"><tr><td>{header}'
        f"{code_lines_html(body, wrap=wrap is None or wrap)}</td></tr></table>"
    )


def code_header(language: str | None, *, index: int | None = None, wrap: bool | None = None) -> str:
    """A code block's header line (:func:`code_block`): its language, the Wrap toggle, the Copy link."""
    c = theme.colors()
    head = [f'<span style="color:{c.muted};">{_esc(language)}</span>'] if language else []
    link = f"color:{c.accent}; text-decoration:none;"
    if index is not None and wrap is not None:
        head.append(f'<a href="{WRAP_SCHEME}:{index}" style="{link}">{TASK_DONE if wrap else TASK_OPEN}&nbsp;Wrap</a>')
    if index is not None:
        head.append(f'<a href="{COPY_SCHEME}:{index}" style="{link}">Copy</a>')
    return (f'<p align="right" style="margin:0 0 2px 0; font-size:small;">{" &nbsp;·&nbsp; ".join(head)}</p>'
            if head else "")


def code_lines_html(body: str, *, wrap: bool = True) -> str:
    """Highlighted code (:func:`highlight`'s HTML) as a code block's ``<pre>``."""
    space = "pre-wrap" if wrap else "pre"
    return f'<pre style="font-family:{theme.mono_family()}; margin:0; white-space:{space};">{body}</pre>'


def to_json_text(value: Any, *, indent: int = 2) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, TypeError):
            return value
    try:
        return json.dumps(value, indent=indent, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def json_html(value: Any, *, max_chars: int = 60_000) -> str:
    """Pretty, highlighted JSON as a ``<pre>`` block (long values cut with a note)."""
    text = to_json_text(value)
    note = ""
    if len(text) > max_chars:
        note = f"\n… {len(text) - max_chars:,} more characters (open Raw to see everything)"
        text = text[:max_chars]
    return (f'<pre style="font-family:{theme.mono_family()}; margin:0; white-space:pre-wrap;">'
            f"{highlight(text, 'json')}{_esc(note)}</pre>")


class Piece(NamedTuple):
    """A part of a value's rich text (:func:`value_pieces`): a block of the document (``goes_on`` False: a new
    element after the ones before) or more lines of the element before (``goes_on``: its text goes on, in the
    same element: the ``<pre>`` before, or the frame of a text under a key); ``bottom``: the margin under the
    element once its last piece is in (its lines' margins are 0)."""

    html: str
    goes_on: bool = False
    bottom: int = 0
    #: It starts with a label's paragraph (where a text under a key comes from).
    label: bool = False
    #: Lines of text it holds.
    lines: int = 0
    #: A text under a key, as plain lines (None: none): shown after ``html`` (its label) in a frame with the bar
    #: (:class:`~ui.widgets.common.PieceFeeder`), not in a table's cell, so that its pieces (``goes_on``) are laid
    #: out alone: Qt lays a table out whole on each change of its cell.
    text: str | None = None


def _chunks(text: str, lines: int | None) -> list[str]:
    """``text`` cut after every ``lines`` lines (None: whole), each to be a ``<pre>`` whose lines go on from the
    one before's (:func:`_chunked`)."""
    return [chunk for chunk, _ in _chunked(iter(text.split("\n")), lines)]


def _chunked(rows: Iterator[str], lines: int | None) -> Iterator[tuple[str, bool]]:
    """The text of ``rows`` (its lines) cut after every ``lines`` lines (None: whole), each chunk with whether it is
    the last, made as the rows come (two rows read past a chunk): each is to be a ``<pre>`` whose lines go on from
    the one before's: Qt drops a newline just inside a ``<pre>``'s either end, so a chunk starting or (but the last)
    ending with an empty line has one more there, and the whole's last newline (dropped) makes no chunk."""
    if lines is None:
        yield "\n".join(rows), True
        return
    ahead: list[str] = []
    first = True
    while True:
        ahead += itertools.islice(rows, lines + 2 - len(ahead))
        group, ahead = ahead[:lines], ahead[lines:]
        last = not ahead or ahead == [""]  # (rows were read to two past the group: none are left)
        chunk = "\n".join(group)
        yield ("\n" if not first and chunk.startswith("\n") else "") + chunk + (
            "\n" if not last and chunk.endswith("\n") else ""), last
        if last:
            return
        first = False


def _rows_within(fragments: Iterator[str], budget: int, length: list[int]) -> Iterator[str]:
    """The lines of the text ``fragments`` make, cut after its first ``budget`` characters; ``length[0]``: the
    characters of the fragments read, past the budget too once the last line is read: the first fragment past it
    is read (to know whether the text is cut), the rest are left in ``fragments``."""
    row: list[str] = []
    kept = 0
    for fragment in fragments:
        length[0] += len(fragment)
        part = fragment[: budget - kept]
        kept += len(part)
        if "\n" in part:
            *ends, rest = part.split("\n")
            for end in ends:
                row.append(end)
                yield "".join(row)
                row = []
            part = rest
        row.append(part)
        if kept >= budget and (len(part) < len(fragment) or _counted(fragments, length, 1)):
            break
    yield "".join(row)


def _counted(fragments: Iterator[str], length: list[int], most: int) -> bool:
    """Whether ``fragments`` had more characters, ``most`` at least (the last fragment whole) counted in
    ``length[0]``."""
    counted = 0
    for fragment in fragments:
        counted += len(fragment)
        if counted >= most:
            break
    length[0] += counted
    return counted > 0


#: A step's end with nothing added (:class:`~ui.widgets.common.PieceFeeder`): the pieces' maker has more to do
#: before its next piece (a JSON text's characters past those shown, counted for its note).
PAUSE = Piece("", goes_on=True)
#: Characters of a JSON text past those shown counted a step (encoded at some 20 a microsecond).
COUNT_CHARS = 40_000

#: Lines of a value's text a piece (:func:`value_pieces`) when a view shows it in steps: laid out whole, a result of
#: 50 KB held the window 15-120 ms; 100 lines cost a few.
PIECE_LINES = 100


def value_pieces(value: Any, *, lines: int | None = None, max_chars: int = 60_000) -> Iterator[Piece]:
    """:func:`value_html` in pieces of ``lines`` lines at most (None: an element a piece), each made (its
    highlighting) only when asked: a view shows a big result a bounded piece at a time, the document put
    together as the whole HTML makes it (:class:`~ui.widgets.common.AutoHeightText.append_piece`)."""
    mono = theme.mono_family()
    pre = f'<pre style="font-family:{mono}; margin:0; white-space:pre-wrap;">'
    if isinstance(value, str) and not _is_json_text(value):
        for i, chunk in enumerate(_chunks(value, lines)):
            yield Piece(f"{pre}{_esc(chunk)}</pre>", i > 0, lines=chunk.count("\n") + 1)
        return
    from workspace.readable import readable_parts

    yield from _readable_pieces(readable_parts(value), lines=lines, max_chars=max_chars, framed=True)


def _joined(pieces: Iterator[Piece]) -> str:
    """Pieces of whole blocks (``lines`` None) as one HTML."""
    return "".join(piece.html.replace("margin:0;", "margin:0 0 6px 0;", 1) if piece.bottom else piece.html
                   for piece in pieces)


def _readable_pieces(parts: Iterator[JsonPieces | TextBlock], *, lines: int | None, max_chars: int,
                     framed: bool = False) -> Iterator[Piece]:
    """:func:`readable_html` of a value's ``parts`` (:func:`workspace.readable.readable_parts`) in pieces
    (:func:`value_pieces`), its JSON encoded only as far as the pieces taken show; ``framed``: a text under a key as
    its lines (:attr:`Piece.text`, a piece per ``lines`` lines), not a table's HTML."""
    from workspace.readable import JsonPieces

    mono = theme.mono_family()
    pre = f'<pre style="font-family:{mono}; margin:0; white-space:pre-wrap;">'
    c = theme.colors()
    budget = max_chars
    for part in parts:
        if isinstance(part, JsonPieces):
            length = [0]
            kept = max(0, budget)
            for i, (chunk, last) in enumerate(_chunked(_rows_within(part.pieces, kept, length), lines)):
                cut = last and length[0] > budget
                if cut and lines is not None:  # the rest counted for the note a bounded portion a step
                    yield Piece(f"{pre}{highlight(chunk, 'json')}{chr(10) if chunk.endswith(chr(10)) else ''}</pre>",
                                i > 0, lines=chunk.count("\n") + 1)
                    while _counted(part.pieces, length, COUNT_CHARS):
                        yield PAUSE
                    note = f"… {length[0] - budget:,} more characters (open Raw to see everything)"
                    yield Piece(f"{pre}{_esc(note)}</pre>", True, 6, lines=1)
                    break
                while cut and _counted(part.pieces, length, COUNT_CHARS):
                    pass
                note = f"\n… {length[0] - budget:,} more characters (open Raw to see everything)" if cut else ""
                body = highlight(chunk, "json") + _esc(note)
                yield Piece(f"{pre}{body}</pre>", i > 0, 6 if last else 0, lines=chunk.count("\n") + 1)
            budget -= min(length[0], kept)
            continue
        text = part.text
        note = ""
        if len(text) > budget:
            note = f"\n… {len(text) - budget:,} more characters (open Raw to see everything)"
            text = text[: max(0, budget)]
        budget -= len(text)
        head = (f'<p style="margin:4px 0 2px 0; color:{c.muted}; font-family:{mono};">{_esc(part.label)}</p>'
                if part.label else "")
        if framed:
            yield from _text_pieces(head, text + note, lines)
        else:
            yield Piece(f'{head}<table width="100%" cellspacing="0" cellpadding="0" style="margin:0 0 6px 0;"><tr>'
                        f'<td width="3" style="background-color:{c.border};"></td><td width="8"></td><td>'
                        f"{pre}{_esc(text)}{_esc(note)}</pre></td></tr></table>", label=bool(head))
        if budget <= 0:
            break


def _text_pieces(head: str, text: str, lines: int | None) -> Iterator[Piece]:
    """A text under a key (after its label's paragraph ``head``) as :attr:`Piece.text` pieces of ``lines`` lines
    (None: one), its lines those the ``<pre>`` of :func:`readable_html` shows (Qt drops a newline just inside a
    ``<pre>``'s either end)."""
    text = text.removeprefix("\n")
    rows = (text[:-1] if text.endswith("\n") else text).split("\n")
    step = lines or len(rows)
    for i in range(0, len(rows), step):
        part = rows[i:i + step]
        yield Piece("" if i else head, bool(i), label=bool(head) and not i, lines=len(part), text="\n".join(part))


def readable_html(value: Any, *, max_chars: int = 60_000) -> str:
    """A value for people: pretty, highlighted JSON, with every string that spans lines shown as text
    under its key (no ``\\n`` or ``\\"``; see :mod:`workspace.readable`). Long parts are cut with a note."""
    from workspace.readable import readable_parts

    return _joined(_readable_pieces(readable_parts(value), lines=None, max_chars=max_chars))


class _TablePiece(NamedTuple):
    """How a table is written: its columns' widths in percent (none: as its cells need), its margins (px)."""

    widths: tuple[int, ...] = ()
    top: int = 4
    bottom: int = 10


_WHOLE_TABLE = _TablePiece()
_HEADING_SIZE = {"h1": "x-large", "h2": "large"}
_ITEM_GAP = "margin-bottom:3px;"
_ALIGN = re.compile(r"text-align:\s*(left|center|right)")


class _QtWriter:
    """markdown-it tokens to Qt rich text.

    Qt's HTML importer has no CSS boxes: a block quote is a table with a coloured bar cell, a
    code block a one-cell table, and list nesting is ``-qt-list-indent`` (counted again
    inside table cells, which are frames of their own).
    """

    def __init__(self, *, copy: bool = False, env: dict[str, Any] | None = None,
                 unwrapped: frozenset[int] | None = None) -> None:
        self.colors = theme.colors()
        self.env = env or {}
        self.copy = copy
        self.unwrapped = unwrapped
        self.code_index = 0
        self.depth = 0  # list nesting inside the current frame
        self.last_item = -1  # where in ``out`` the last list item of the current list opened
        self.saved: list[tuple[int, int]] = []  # (depth, last_item) outside the current frame
        self.task_box = ""  # a task item's box, written before the item's first text
        self.goes_on: Token | None = None  # the last list's close when the list goes on after the text
        #: The tables cut in pieces (by their open token's id): their columns' widths, and the piece's margins.
        self.table_cut: dict[int, _TablePiece] = {}
        self.widths: list[int] = []  # the widths of the open table's columns, until its first row's cells take them
        self.out: list[str] = []
        self.style = _Style.current()
        self.block_rules: dict[str, Callable[[Token], None]] = {
            "paragraph_open": self._paragraph_open, "paragraph_close": self._paragraph_close,
            "heading_open": self._heading_open, "heading_close": lambda t: self.out.append("</p>"),
            "bullet_list_open": self._list_open, "ordered_list_open": self._list_open,
            "bullet_list_close": self._list_close, "ordered_list_close": self._list_close,
            "list_item_open": self._item_open, "list_item_close": self._item_close,
            "blockquote_open": self._quote_open, "blockquote_close": self._quote_close,
            "fence": self._code, "code_block": self._code,
            "hr": lambda t: self.out.append("<hr>"),
            "table_open": self._table_open, "table_close": self._table_close,
            "tr_open": lambda t: self.out.append("<tr>"), "tr_close": lambda t: self.out.append("</tr>"),
            "th_open": self._cell_open, "td_open": self._cell_open,
            "th_close": lambda t: self.out.append("</th>"), "td_close": lambda t: self.out.append("</td>"),
            "thead_open": _skip, "thead_close": _skip, "tbody_open": _skip, "tbody_close": _skip,
        }

    # -- blocks -------------------------------------------------------------------------------
    def blocks(self, tokens: Sequence[Token]) -> str:
        rules = self.block_rules
        for token in tokens:
            if token.type == "inline":
                self.out.append(self.task_box + _inline_block(token.content, self.env, self.style))
                self.task_box = ""
            elif (rule := rules.get(token.type)) is not None:
                rule(token)
            elif token.content:  # anything else (raw HTML when enabled, plugins): shown as text
                self.out.append(f"<p>{_esc(token.content)}</p>")
        return "".join(self.out)

    def _paragraph_open(self, token: Token) -> None:
        if not token.hidden:  # hidden: the paragraph of a tight list item
            self.out.append('<p style="margin-top:0; margin-bottom:10px;">')

    def _paragraph_close(self, token: Token) -> None:
        if not token.hidden:
            self.out.append("</p>")

    def _heading_open(self, token: Token) -> None:
        size = _HEADING_SIZE.get(token.tag, "medium")
        self.out.append(f'<p style="margin-top:8px; margin-bottom:6px; font-size:{size}; font-weight:600;">')

    def _list_open(self, token: Token) -> None:
        # Qt gives a list's bottom margin to the last item at the list's own level (above its
        # nested lists), so lists have none: the last item of a whole list gets it (_list_close).
        self.depth += 1
        start = token.attrs.get("start")
        start_attr = f' start="{int(start)}"' if token.tag == "ol" and start is not None else ""
        tasks = " list-style-type:none;" if "contains-task-list" in str(token.attrs.get("class", "")) else ""
        self.out.append(f'<{token.tag}{start_attr} style="margin-top:0; margin-bottom:0; '
                        f'-qt-list-indent:{self.depth};{tasks}">')

    def _list_close(self, token: Token) -> None:
        self.depth -= 1
        self.out.append(f"</{token.tag}>")
        if self.depth == 0 and self.last_item >= 0 and token is not self.goes_on:
            self.out[self.last_item] = self.out[self.last_item].replace(_ITEM_GAP, "margin-bottom:10px;")
            self.last_item = -1

    def _item_open(self, token: Token) -> None:
        # Text boxes, not Qt's check-box markers (class="checked"), whose "checked" is a cross.
        checked = token.meta.get("checked") if token.meta else None
        if checked is not None:
            self.task_box = f"{TASK_DONE if checked else TASK_OPEN}&nbsp;"
        self.last_item = len(self.out)
        self.out.append(f'<li style="{_ITEM_GAP}">')

    def _item_close(self, token: Token) -> None:
        self.out.append(f"{self.task_box}</li>")  # the box of an empty task item
        self.task_box = ""

    def _enter_frame(self) -> None:
        self.saved.append((self.depth, self.last_item))
        self.depth, self.last_item = 0, -1

    def _leave_frame(self) -> None:
        self.depth, self.last_item = self.saved.pop() if self.saved else (0, -1)

    def _quote_open(self, token: Token) -> None:
        self._enter_frame()
        c = self.colors
        self.out.append(f'<table cellspacing="0" cellpadding="0" style="margin-top:4px; margin-bottom:10px;"><tr>'
                        f'<td width="3" style="background-color:{c.border};"></td><td width="10"></td>'
                        f'<td style="color:{c.muted};">')

    def _quote_close(self, token: Token) -> None:
        self._leave_frame()
        self.out.append("</td></tr></table>")

    def _code(self, token: Token) -> None:
        language = token.info.strip().split(maxsplit=1)[0] if token.info.strip() else None
        index = None
        if self.copy:
            index, self.code_index = self.code_index, self.code_index + 1
        wrap = None if self.unwrapped is None or index is None else index not in self.unwrapped
        self.out.append(code_block(token.content, language, index=index, wrap=wrap))

    def _table_open(self, token: Token) -> None:
        self._enter_frame()
        piece = self.table_cut.get(id(token), _WHOLE_TABLE)
        self.widths = list(piece.widths)  # the first row's cells take them
        width = ' width="100%"' if piece.widths else ""
        self.out.append(f'<table cellspacing="0" cellpadding="6" border="1"{width} style="border-color:{self.colors.border}; '
                        f'border-style:solid; border-collapse:collapse; margin-top:{piece.top}px; '
                        f'margin-bottom:{piece.bottom}px;">')

    def _table_close(self, token: Token) -> None:
        self._leave_frame()
        self.out.append("</table>")

    def _cell_open(self, token: Token) -> None:
        m = _ALIGN.search(str(token.attrs.get("style", "")))
        align = m.group(1) if m else "left"
        style = f' style="background-color:{self.colors.card_header};"' if token.tag == "th" else ""
        width = f' width="{self.widths.pop(0)}%"' if self.widths else ""
        self.out.append(f'<{token.tag} align="{align}"{width}{style}>')


def _inline_html(tokens: Sequence[Token], style: _Style) -> str:
    """Inline tokens to HTML: text escaped, links only to http, https and mailto."""
    out: list[str] = []
    links: list[bool] = []  # per open link: whether it was written as <a>
    for token in tokens:
        kind = token.type
        if kind == "text":
            out.append(_esc(token.content))
        elif kind == "softbreak":
            out.append(" ")
        elif kind == "code_inline":
            code = token.content.strip() or token.content
            out.append(f'<code style="{style.code}">&#8201;{_esc(code)}&#8201;</code>')
        elif kind in _INLINE_TAGS:
            out.append(_INLINE_TAGS[kind])
        elif kind == "link_open":
            href = str(token.attrs.get("href", ""))
            links.append(clickable(href))
            if links[-1]:
                out.append(f'<a href="{_attr(href)}" style="{style.link}">')
        elif kind == "link_close":
            if links and links.pop():
                out.append("</a>")
        elif kind == "image":
            out.append(_image(token, style, in_link=any(links)))
        else:  # text_special, html_inline (raw HTML is off, but never render it) and the rest
            out.append(_esc(token.content))
    return "".join(out)


def _image(token: Token, style: _Style, *, in_link: bool) -> str:
    """An image is a link to it (Qt would fetch nothing; a chat shows no remote pictures);
    inside a link, its text only."""
    src = str(token.attrs.get("src", ""))
    alt = "".join(t.content for t in token.children or [] if t.type in ("text", "text_special", "code_inline"))
    label = _esc(alt or src or "image")
    if in_link or not clickable(src):
        return f"[{label}]"
    return f'<a href="{_attr(src)}" style="{style.link}">{label}</a><span style="color:{style.muted};"> (image)</span>'


_INLINE_TAGS = {
    "strong_open": "<b>", "strong_close": "</b>", "em_open": "<i>", "em_close": "</i>",
    "s_open": "<s>", "s_close": "</s>", "hardbreak": "<br>",
}


def _skip(token: Token) -> None:
    return None


def _is_json_text(text: str) -> bool:
    """True when ``text`` is a JSON document (an object or array; plain words are not)."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return False
    try:
        json.loads(stripped)
    except ValueError:
        return False
    return True


def value_html(value: Any) -> str:
    """A result or an error for people: highlighted JSON with its multi-line strings as text, or plain
    text when it is not JSON (:func:`readable_html`)."""
    if isinstance(value, str) and not _is_json_text(value):
        return (f'<pre style="font-family:{theme.mono_family()}; margin:0; white-space:pre-wrap;">'
                f"{_esc(value)}</pre>")
    return readable_html(value)
