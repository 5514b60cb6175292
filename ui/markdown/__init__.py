"""Markdown (CommonMark and GitHub's extensions) to the HTML subset Qt's rich text understands.

markdown-it-py parses (CommonMark, GFM tables, strikethrough, task lists, bare-URL autolinks
from mdit-py-plugins); :class:`_QtWriter` turns its tokens into Qt rich text (QTextDocument's
HTML subset: tables, lists with a ``start``, ``-qt-list-indent``, ``<s>``, inline styles).
Raw HTML in the text is shown as text, never rendered, and only http, https and mailto links
are clickable. Code blocks and JSON are highlighted by pygments with inline styles; each code
block of :func:`render` with ``copy=True`` has a header line with its language and a "Copy"
link ``copy:N`` (N counts the code blocks of that text: :func:`code_blocks` gives their code).

Its parts, each a module of this package and named here too: :mod:`ui.markdown.cuts`, where a growing text can be
cut (``split_stable`` finds the end of the last complete block of a growing text, so a streaming view can freeze
what is finished and re-render only the tail: nothing above the tail moves; long lists and tables are cut between
their items and rows); :mod:`ui.markdown.values`, tool results and other values as HTML, whole or in pieces.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

from ui import theme
from ui.markdown.cuts import ListCut as ListCut
from ui.markdown.cuts import TableCut as TableCut
from ui.markdown.cuts import list_cuts as list_cuts
from ui.markdown.cuts import plain_append as plain_append
from ui.markdown.cuts import split_stable as split_stable
from ui.markdown.cuts import table_cuts as table_cuts
from ui.markdown.cuts import table_widths as table_widths

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token


#: Link schemes that become clickable links; any other link shows its text only.
LINK_SCHEMES = ("http", "https", "mailto")
#: The scheme of a code block's copy link (``copy:N``).
COPY_SCHEME = "copy"
#: The scheme of a code block's wrap toggle (``wrap:N``: long lines wrap, or scroll sideways).
WRAP_SCHEME = "wrap"
#: A task item's box (a list holding task items shows no bullets, as on GitHub).
TASK_OPEN, TASK_DONE = "☐", "☑"


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
    """``code`` as highlighted HTML spans (no wrapper); plain escaped text when unknown. Spaces after a token
    take its style when both styles are a colour alone (:func:`spaces_joined`)."""
    from pygments import format as _format

    lexer = code_lexer(language)
    if lexer is None or len(code) > MAX_HIGHLIGHT:
        return _esc(code)
    result = no_background(_format(spaces_joined(lexer.get_tokens(code)), code_formatter()))
    return result[:-1] if result.endswith("\n") else result


def _read_style(kind: Any) -> str:
    """The inline style pygments' HTML formatter gives a token type (what :func:`highlight` shows it in), less its
    background: read off the formatter's HTML for one character of that type."""
    from pygments import format as _format

    opened = _format([(kind, "x")], code_formatter())
    found = re.match(r'<span style="([^"]*)">', opened)
    return no_background(found.group(1)) if found else ""


#: Each token type's style (:func:`token_style`), for the theme's pygments style it was read in.
_TOKEN_STYLES: dict[str, dict[Any, str]] = {}
#: The styles that set a colour and nothing else (or nothing): a space looks the same in any of them.
PLAIN_COLOURS: set[str] = {""}


def token_styles() -> dict[Any, str]:
    """The token types' styles read so far for the theme's pygments style (a cache :func:`token_style` fills)."""
    return _TOKEN_STYLES.setdefault(theme.colors().pygments_style, {})


def token_style(kind: Any, styles: dict[Any, str]) -> str:
    """The inline style :func:`highlight` shows a token of type ``kind`` in, less any background (``styles``:
    :func:`token_styles`, where it is kept); a style that is a colour alone is noted in :data:`PLAIN_COLOURS`."""
    style = styles.get(kind)
    if style is None:
        style = styles[kind] = _read_style(kind)
        if style.startswith("color: ") and ";" not in style:
            PLAIN_COLOURS.add(style)
    return style


def spaces_joined(tokens: Iterable[tuple[Any, str]]) -> Iterator[tuple[Any, str]]:
    """The lexer's tokens, a token of spaces alone given the type of the token before it on its line when both
    styles are a colour alone (:data:`PLAIN_COLOURS`): a space looks the same in either, and the line has a run
    of one style fewer to lay out and draw (C++'s spaces between words are a type of their own, in grey).
    :func:`ui.chat.view.code_lines` joins them the same way while a code block streams."""
    styles = token_styles()
    plain_colours = PLAIN_COLOURS
    before: Any = None  # the type of the last token on the line, when its style is a colour alone
    for kind, value in tokens:
        if value:
            style = styles.get(kind)
            plain = (style if style is not None else token_style(kind, styles)) in plain_colours
            if plain and before is not None and value[0] == " " and not value.strip(" "):
                kind = before
            else:
                before = kind if plain and value[-1] != "\n" else None
        yield kind, value


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


class _TablePiece(NamedTuple):
    """How a table is written: its columns' widths in percent (none: as its cells need), its margins (px)."""

    widths: tuple[int, ...] = ()
    top: int = 4
    bottom: int = 10


_WHOLE_TABLE = _TablePiece()
#: A table cell's padding above and below its text (6 px on the sides, the table's cellpadding): a collapsed border's
#: cell has half the rule's width more on each side, which puts its text half a pixel lower than 6 and 6 would.
_CELL_PADDING = "padding-top:7px; padding-bottom:5px;"
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
        # One 1 px grid as Qt's border-collapse draws it, without border-collapse: each cell draws its own border
        # and the cells overlap by a pixel (cellspacing -1), so two neighbours' borders are one rule. Qt finds a
        # collapsed border's neighbours cell by cell when it lays the table out and when it paints it (a screen of
        # table: ~6 ms to paint instead of ~1.3, ~2.7 ms to lay out again instead of ~1.3). The margins (1 px more
        # above and on the left, 2 below and on the right) and the cells' padding (_CELL_PADDING) put the rules and
        # the text where the collapsed table has them.
        self.out.append(f'<table cellspacing="-1" cellpadding="6" border="1"{width} style="border-color:{self.colors.border}; '
                        f'border-style:solid; margin-top:{piece.top + 1}px; margin-bottom:{piece.bottom + 2}px; '
                        f'margin-left:1px; margin-right:2px;">')

    def _table_close(self, token: Token) -> None:
        self._leave_frame()
        self.out.append("</table>")

    def _cell_open(self, token: Token) -> None:
        m = _ALIGN.search(str(token.attrs.get("style", "")))
        align = m.group(1) if m else "left"
        background = f" background-color:{self.colors.card_header};" if token.tag == "th" else ""
        width = f' width="{self.widths.pop(0)}%"' if self.widths else ""
        self.out.append(f'<{token.tag} align="{align}"{width} style="{_CELL_PADDING}{background}">')


_TABLE_TAG = re.compile(r'<table\b[^>]*\bcellspacing="-1"[^>]*>')


def copied_html(html: str) -> str:
    """``html`` copied out of a shown document (a selection's HTML for the clipboard) with its tables' grid as a
    collapsed one: shown, a table's cells overlap by a pixel (``cellspacing="-1"``, see ``_table_open``), which
    HTML elsewhere (a browser, an office suite) takes as no valid spacing and draws doubled borders for."""
    if 'cellspacing="-1"' not in html:
        return html

    def collapsed(match: re.Match[str]) -> str:
        tag = match.group(0).replace('cellspacing="-1"', 'cellspacing="0"')
        if ' style="' in tag:
            return tag.replace(' style="', ' style="border-collapse:collapse;', 1)
        return tag[:-1] + ' style="border-collapse:collapse;">'

    return _TABLE_TAG.sub(collapsed, html)


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


# The values' HTML uses the highlighting above: imported after it.
from ui.markdown.values import COUNT_CHARS as COUNT_CHARS  # noqa: E402
from ui.markdown.values import PAUSE as PAUSE  # noqa: E402
from ui.markdown.values import PIECE_LINES as PIECE_LINES  # noqa: E402
from ui.markdown.values import Piece as Piece  # noqa: E402
from ui.markdown.values import json_html as json_html  # noqa: E402
from ui.markdown.values import readable_html as readable_html  # noqa: E402
from ui.markdown.values import to_json_text as to_json_text  # noqa: E402
from ui.markdown.values import value_html as value_html  # noqa: E402
from ui.markdown.values import value_pieces as value_pieces  # noqa: E402
