"""A long code block shown while it streams, without laying the whole block out again on each flush.

A :class:`CodeStream` draws the block as :func:`ui.markdown.code_block` does (header line, coloured
box), but its code is a column of small documents: frozen pieces of about :data:`PIECE_CHARS` of
finished lines, each highlighted and laid out once and never touched again; and a recent piece, the
finished lines since then the line being written (with the lines of a string still open), one document:
the line being written is replaced from where it changed, and once finished it stays the paragraph it
was (not written again elsewhere). A line longer than
:data:`~ui.chat.view.code_lines.LONG_LINE_CHARS` (a minified document) is cut while it streams: its
beginning becomes a paragraph of about that size at a time (in the turn's one edit), ending where a row of the line
being written started when it was last laid out, or, in a burst, where a row starts when that paragraph is laid out
alone with a row's worth of what follows (so the cut shows no line break of its own), so
neither the lexer nor the layout sees the whole line on a flush. So a flush costs the line being written, not the block. Lines are the
lexer's tokens as runs of one style (never formatted to HTML), written into a piece's document with a
cursor, an edit's lines as one plain text and each line's colours its paragraph's layout's formats
(:mod:`ui.chat.view.code_draw`), never by setting or inserting HTML: the line being written is replaced from where
it changed. A piece of printable ASCII code (tabs too) is laid out without text shaping (a
glyph a character: what shaping gives ASCII in a monospace font), and once the code holds anything else the
piece showing it and the later ones shape their text (:meth:`Piece.shape`). Copy copies the whole code, the Wrap toggle applies to
every piece (one shared scroll bar when lines do not wrap). Once the block closes, the lines shown are checked against the
block highlighted whole (a step per turn of the event loop), and the pieces that differ (a lexer
rule over several lines) are set again, one a turn; a line cut while it streamed stays in its paragraphs, each
made to end where a row of the line shown whole ends (so no cut shows as a line break: again when the block's width
changes; unwrapped, the line is one paragraph).
"""

from __future__ import annotations

import re
import time
from bisect import bisect_right
from collections.abc import Callable, Iterator

from PySide6.QtCore import QSize, QSizeF, Qt, QTimer
from PySide6.QtGui import QContextMenuEvent, QFont, QGuiApplication, QResizeEvent, QShowEvent, QWheelEvent
from PySide6.QtWidgets import QFrame, QLabel, QScrollBar, QSizePolicy, QTextBrowser, QVBoxLayout, QWidget

from ui import markdown, theme
from ui.chat.view import code_draw
from ui.chat.view.code_lines import (
    LONG_LINE_CHARS,
    LOOKAHEAD_CHARS,
    CodeLines,
    Line,
    colours,
    split_line,
    text_length,
    whole_lines,
)
from ui.widgets.common import follow_link

#: A frozen piece holds about this many characters of code. A new piece (a text widget made, then shown and
#: polished for the first time) costs about 2.5 ms: at 3,000 characters that was a tenth of a code block's
#: CPU; twice that halves it, while the recent piece's edits (laid out in a document up to this size) cost
#: about the same (larger still, they grow).
PIECE_CHARS = 6000
#: At most about this many characters of new lines are highlighted per turn of the event loop: as much as prose's
#: Markdown a turn (:data:`ui.chat.view.stream.MAX_RENDER_CHARS`). A burst's turn costs what its new lines take and
#: a fixed part (the pieces' paint, whose lines are all new in a burst, the column laid out, the line being written
#: lexed): at 2,500 characters a code block took 0.44 turns a KB to prose's 0.31, and spent 0.2-0.5 ms more of the
#: window's CPU a KB, with no smaller worst stall.
MAX_LINES_CHARS = 3500
#: A cut line's runs are laid out alone with this many characters of the line after them to find their rows (more
#: than a row holds at any width: a 2,560 px column of a 7 px code font is 366), when the line being written was not
#: laid out with them (a burst).
ROW_LOOKAHEAD_CHARS = 400
#: While a block has no width yet (made in this turn of the loop, shown in the next), a cut line's runs wait for it to
#: be made paragraphs that end at rows, up to this many characters (a turn's share of a burst and a cut): past that,
#: a block that is not shown gets them as paragraphs as they are.
BLIND_CARRY_CHARS = MAX_LINES_CHARS + LONG_LINE_CHARS
#: The check against the whole block works at most this long per turn of the event loop.
CHECK_SLICE_S = 0.004


def _row_sizes(sizes: list[int], rows: list[int] | None) -> list[int]:
    """The sizes of a cut line's paragraphs (``sizes``: as it was cut) with each one ending where a row of the line
    shown whole starts (``rows``: the rows' starts, :func:`ui.chat.view.code_draw.wrap_starts`): each cut moved back
    to the row it is in, so that the paragraphs show the line's rows and no break of their own (a paragraph shorter
    than a row comes out empty). ``rows`` None (not wrapped): one paragraph, the whole line (the others empty)."""
    total = sum(sizes)
    if rows is None:
        return [total] + [0] * (len(sizes) - 1)
    cuts, at, last = [], 0, 0
    for size in sizes[:-1]:
        at += size
        last = max(last, rows[bisect_right(rows, at) - 1])
        cuts.append(last)
    ends = [*cuts, total]
    return [end - start for start, end in zip([0, *cuts], ends, strict=True)]


#: What a piece laid out without text shaping does not show as shaping would (a block rendered whole does): a
#: control character (ESC, BEL, DEL ...) takes no width unshaped and a column shaped, so once the code holds one
#: (or anything not ASCII) its pieces shape their text.
_UNSHAPED = re.compile(r"[^\t\n\x20-\x7e]")


class _Pieces(QWidget):
    """The pieces' parent: a piece's context menu copies the whole message (``markdown_source``)."""

    def __init__(self, source: Callable[[], str], parent: QWidget) -> None:
        super().__init__(parent)
        self.markdown_source = source


class Piece(QTextBrowser):
    """A piece of the code: read-only rich text as tall as its lines, no frame, no scroll bars of its
    own (lighter than :class:`~ui.widgets.common.AutoHeightText`: no style sheet of its own, no links)."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("StreamedCodePiece")
        # ASCII code is laid out without text shaping (a glyph a character at the monospace font's advance; its
        # kerning, none in a monospace font, kept): a line's runs of one style are many short items, and shaping
        # each was about a third of writing the lines and laying them out. Only this attribute of the font is set
        # (the rest comes from the parent and the style sheet); :meth:`shape` undoes it.
        strategy = QFont()
        strategy.setStyleStrategy(QFont.StyleStrategy.PreferNoShaping)
        self.setFont(strategy)
        self.setOpenLinks(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.viewport().setAutoFillBackground(False)
        self.document().setDocumentMargin(0)
        self.document().setUndoRedoEnabled(False)  # written a line at a time: no undo history to keep
        self.document().documentLayout().documentSizeChanged.connect(self._fit)
        self.setFixedHeight(1)
        #: Laid out again at a new width (the column's: the conversation's scroll bar shown, the window resized)
        #: since the block last grew.
        self.relaid = False

    @property
    def shaped(self) -> bool:
        """Its text is shaped (as Qt lays text out by default)."""
        return not self.font().styleStrategy() & QFont.StyleStrategy.PreferNoShaping

    def shape(self) -> None:
        """Shape its text from now on (laid out again once): text other than ASCII may need it (a combining
        accent placed on its letter, Arabic's joined letters)."""
        if not self.shaped:
            self.setFont(QFont())

    def _fit(self, size: QSizeF) -> None:
        height = max(1, int(size.height() + 0.999))  # (not document().size(): it would ask the layout again)
        if height != self.height():
            self.setFixedHeight(height)

    def sizeHint(self) -> QSize:
        return QSize(super().sizeHint().width(), self.height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        """A new width lays the document out again (QTextEdit's), unless it was laid out at that width already
        (:meth:`CodeStream._piece`: a new piece is written before it is first shown and sized)."""
        size = event.size()
        if size.width() != event.oldSize().width():
            if self.document().pageSize().width() == self.viewport().width():
                event = QResizeEvent(size, QSize(size.width(), event.oldSize().height()))  # Qt's scroll ranges alone
            else:
                self.relaid = True
        super().resizeEvent(event)

    def wheelEvent(self, event: QWheelEvent) -> None:
        event.ignore()  # the conversation scrolls (sideways: the block's bar, CodeStream.wheelEvent)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        """The usual menu (copy the selection, select all), and the whole message as Markdown."""
        menu = self.createStandardContextMenu(event.pos())
        source = getattr(self.parentWidget(), "markdown_source", None)
        text = source() if callable(source) else ""
        if text:
            menu.addSeparator()
            action = menu.addAction("Copy message as Markdown")
            action.triggered.connect(lambda: QGuiApplication.clipboard().setText(str(text)))
        menu.exec(event.globalPos())
        menu.deleteLater()


class CodeStream(QWidget):
    """A code block that grows: frozen pieces of finished lines, the recent lines, the live line."""

    def __init__(self, language: str | None, parent: QWidget, *, source: Callable[[], str]) -> None:
        super().__init__(parent)
        self.language = language
        #: The block's Markdown (its fence and code): what Copy copies the code of.
        self.markdown = ""
        self.wrap = True
        self.lines = CodeLines(language)
        self._code = ""
        self._fed = 0  # characters of the code given to ``lines`` as finished lines
        self._cut = 0  # where the line being written's part not cut off yet starts (>= _fed)
        self._recent_start = 0  # where in the code the recent piece's lines start
        self._shown: dict[Piece, list[Line]] = {}  # the lines each piece shows
        self._blocks: dict[Piece, list[Line]] = {}  # its paragraphs: its lines, a cut line in pieces
        self._check: Iterator[None] | None = None
        self._waited = False  # the last turn grew nothing: its pieces were laid out again at a new width
        self._shaped = False  # the code so far is not all printable ASCII: new pieces shape their text (Piece.shape)
        self._plain_to = 0  # the code before this is printable ASCII (looked at once)
        c = theme.colors()
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 4, 0, 10)
        self.box = QFrame(self)
        self.box.setObjectName("StreamedCode")
        self.box.setStyleSheet(f"QFrame#StreamedCode {{ background-color: {c.code_bg}; border: 1px solid {c.border}; }} "
                               "QTextBrowser#StreamedCodePiece { background: transparent; border: none; padding: 0px; }")
        outer.addWidget(self.box)
        layout = QVBoxLayout(self.box)
        layout.setContentsMargins(10, 10, 10, 10)
        layout.setSpacing(0)
        self.header = QLabel(self.box)
        self.header.setTextFormat(Qt.TextFormat.RichText)
        self.header.setStyleSheet("QLabel { background: transparent; border: none; }")
        self.header.linkActivated.connect(self._on_link)
        for widget in (self, self.box, self.header):  # as tall as their lines, however tall the column
            widget.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        layout.addWidget(self.header)
        self._column = _Pieces(source, self.box)
        self._pieces = QVBoxLayout(self._column)
        self._pieces.setContentsMargins(0, 0, 0, 0)
        self._pieces.setSpacing(0)
        layout.addWidget(self._column)
        self.bar = QScrollBar(Qt.Orientation.Horizontal, self.box)
        self.bar.valueChanged.connect(self._scroll)
        self.bar.hide()
        layout.addWidget(self.bar)
        self.recent = self._piece()
        self._done_blocks: list[Line] = []  # the recent piece's finished paragraphs (above the live ones)
        self._carry: Line = ()  # the runs cut off the line being written, not a paragraph yet (_carry_rows)
        self._done_shown: list[Line] = []  # their lines
        self._whole: list[Line] | None = None  # the closed block's lines, highlighted whole (once checked)
        self._long_lines = False  # a line of it was cut while it streamed
        self._rows_width = 0  # the width its cut lines' paragraphs were last made to end where their rows do at
        #: The width every cut made while it streamed ended where a row did at (0: none made yet; -1: some ended
        #: elsewhere, or at another width): the closing check at that width need not look for the rows.
        self._cut_width = 0
        self._set_header()

    @property
    def code(self) -> str:
        return self._code

    @property
    def pieces(self) -> list[Piece]:
        """The pieces, top to bottom: the frozen ones, then the recent lines and the line being written."""
        found = (self._pieces.itemAt(i) for i in range(self._pieces.count()))
        return [w for item in found if item is not None and isinstance(w := item.widget(), Piece)]

    @property
    def checking(self) -> bool:
        """The closed block is being checked against its whole highlight."""
        return self._check is not None

    def shown_lines(self) -> list[Line]:
        """Every line shown (its runs of one style), top to bottom."""
        return [line for piece in self.pieces for line in self._shown.get(piece, [])]

    def _piece(self) -> Piece:
        piece = Piece(self._column)
        if self._shaped:
            piece.shape()  # (before its first line: not laid out again)
        piece.setVisible(False)
        if self._column.isVisible():
            # Laid out once, from its first line: a piece is written before it is shown, and its style's font (given
            # when it is first polished) and the column's width (when it is first shown) would each lay out again
            # what was written by then, at the hidden widget's width (100 px) first. (The first piece is made with
            # the block, before the column has a width: its lines are laid out when it is shown.)
            piece.ensurePolished()
            piece.resize(self._column.width(), 1)
            piece.document().setPageSize(QSizeF(piece.viewport().width(), -1))
        self._pieces.addWidget(piece)
        return piece

    def _set_header(self) -> None:
        self.header.setText(markdown.code_header(self.language, index=0, wrap=self.wrap))

    def grow(self, code: str, *, closed: bool) -> bool:
        """Show ``code`` (the block's code so far, as :meth:`ui.chat.view.code_lines.OpenFence.code` gives
        it). Returns True when lines are left for the next turn (a burst): call again."""
        self._code = code
        if not self._shaped:
            if code.isascii() and _UNSHAPED.search(code, min(self._plain_to, len(code))) is None:
                self._plain_to = len(code)
            else:
                # (The pieces above the recent one hold code shown by earlier turns, printable ASCII all of it.)
                self._shaped = True
                self.recent.shape()
        relaid = [piece for piece in self.pieces if piece.relaid]
        for piece in relaid:
            piece.relaid = False
        if relaid and not self._waited:
            # The pieces laid out again at a new width (a 50 KB line's took ~5 ms when the conversation's scroll bar
            # came) were this turn's work: the block grows in the next one (once: a width changing every turn, a
            # window resized by dragging, does not hold it up).
            self._waited = True
            return True
        self._waited = False
        more = self._cut_long_line(code)
        finished = code.rfind("\n", self._cut) + 1 or self._fed
        new = code[self._cut:finished] if not more else ""
        if len(new) > MAX_LINES_CHARS:
            more = True
            new = new[:max(new.rfind("\n", 0, MAX_LINES_CHARS), new.find("\n")) + 1]
        if new:
            self._fed = self._cut = self._cut + len(new)
            done = self.lines.finished(new)
            if done:
                self._finish(done, head=self.lines.head_runs)
        self._show_recent(self.lines.live("" if more else code[max(finished, self._cut):]))
        if closed and not more:
            self._check = self._checking(code)
            QTimer.singleShot(0, self, self._check_step)
        return more

    def _cut_long_line(self, code: str) -> bool:
        """Cut the beginning off a line longer than LONG_LINE_CHARS (finished or not) into the recent
        piece, a paragraph at a time; True when the burst's share of this turn is used up."""
        budget = MAX_LINES_CHARS
        window = LONG_LINE_CHARS + LOOKAHEAD_CHARS
        more = False
        while len(code) - self._cut >= window and code.find("\n", self._cut, self._cut + window) < 0:
            if budget <= 0:
                more = True
                break
            done = self.lines.take_pending()
            if done:
                self._finish(done, head=self.lines.head_runs)
            size, part = self.lines.cut(code[self._cut:self._cut + window])
            self._cut += size
            budget -= size
            self._carry += part
            self._carry_rows(code)
        return more

    def _carry_rows(self, code: str) -> None:
        """Make the beginning of the cut line's runs not shown as paragraphs yet (``_carry``) a paragraph, up to where
        the last of its rows starts: a paragraph that ends where a row does shows no line break of its own. The rows
        are those of the live paragraph, which starts with the runs, as it was laid out in the last turn; else (the
        text came in a burst, faster than it was shown) those of the runs laid out alone with what follows them in
        ``code`` (:func:`~ui.chat.view.code_draw.row_starts`: a few thousand characters at most, not the line). While
        the block has no width yet (made in this turn, shown in the next: :meth:`_will_show`), the runs wait for it, up
        to :data:`BLIND_CARRY_CHARS`; past that, in a block that is not shown, or unwrapped, they are a paragraph as
        they are, whose end shows as a break till the block closes (:meth:`_mend`)."""
        size = text_length(self._carry)
        width = self.recent.viewport().width()
        shown = self.wrap and self._column.isVisible() and width > 0
        at = self._live_row(size) or (self._row_alone(code, size, width) if shown else 0)
        if not at:
            if self.wrap and not shown and size < BLIND_CARRY_CHARS and self._will_show():
                return  # (its rows once the block is shown)
            at = size  # (no row to go by)
            self._cut_width = -1
        elif self._cut_width != width:
            self._cut_width = width if not self._cut_width else -1  # (-1: cut at rows of two widths, or at none)
        head, self._carry = split_line(self._carry, [at, size - at])
        self._done_blocks.append(head)

    def _will_show(self) -> bool:
        """The block is not shown yet but will be in a later turn of the loop: it, or the widget it is in, was put in a
        shown window's layout in this turn (Qt shows it then), and nothing between them was hidden."""
        widget: QWidget | None = self
        while widget is not None:
            if widget.isVisible():
                return True
            if widget.isHidden() and widget.testAttribute(Qt.WidgetAttribute.WA_WState_ExplicitShowHide):
                return False
            widget = widget.parentWidget()
        return False

    def _live_row(self, size: int) -> int:
        """Where the last row of the live paragraph within the carried runs' ``size`` characters starts, as it was
        laid out in the last turn (0: none, or the live paragraph does not start with the runs)."""
        blocks = self._blocks.get(self.recent, [])
        block = self.recent.document().lastBlock()
        layout = block.layout()
        if blocks and layout is not None and layout.lineCount() > 1:
            text, carried = block.text(), code_draw.line_text(self._carry)
            if text[:len(carried)] == carried[:len(text)]:  # (it starts with the runs: not a paragraph of its own yet)
                for i in range(layout.lineCount() - 1, 0, -1):
                    start = code_draw.chars(text, layout.lineAt(i).textStart())
                    if start <= size:
                        return start
        return 0

    def _row_alone(self, code: str, size: int, width: int) -> int:
        """Where the last row within the carried runs' ``size`` characters starts when they are laid out alone at
        ``width`` with up to :data:`ROW_LOOKAHEAD_CHARS` of the line after them (plain: a code font's characters are
        as wide in any colour); a row whose end that text may have cut short is not taken (0: none)."""
        following = code[self._cut:self._cut + ROW_LOOKAHEAD_CHARS].partition("\n")[0]
        line = self._carry + ((("", following),) if following else ())
        rows = code_draw.row_starts(line, width, self.recent.document().defaultFont())
        return max((start for start in rows[1:-1] if start <= size), default=0)

    def _finish(self, done: list[Line], *, head: int = 0) -> None:
        """Lines highlighted for good, for the recent piece's finished paragraphs (drawn with the line being
        written, in one edit: :meth:`_show_recent`). ``head``: the first line starts with this many runs
        already there (a cut line's pieces)."""
        self._done_shown.extend(done)
        blocks = [self._carry + done[0][head:], *done[1:]] if head else done
        self._carry = ()
        self._done_blocks.extend(blocks if blocks[0] or not head else blocks[1:])

    def _show_recent(self, live: list[Line]) -> None:
        """Show the recent piece's finished paragraphs and ``live`` (the line being written, and the lines
        still open before it) after them, in one edit of its document: a line finished, or a paragraph cut
        off a long line, stays the paragraph it was while it was written (laid out with that turn's change,
        not again in a piece of its own, nor the paragraph above it with it). Once the finished paragraphs
        hold about PIECE_CHARS of code, they are frozen in the piece and the line being written goes on in
        a new recent piece below it."""
        piece = self.recent
        if self._cut - self._recent_start >= PIECE_CHARS:
            self._shown[piece] = self._done_shown
            self._set(piece, self._done_blocks)
            self.recent = piece = self._piece()
            self._recent_start = self._cut
            self._done_blocks, self._done_shown = [], []
        self._shown[piece] = [*self._done_shown, *live]
        if self._carry:  # the line being written starts with the runs cut off it not made a paragraph yet
            live = [self._carry + (live[0] if live else ()), *live[1:]]
        blocks = [*self._done_blocks, *live]
        if self._blocks.get(piece, []) != blocks:
            self._set(piece, blocks)

    def _set(self, piece: Piece, blocks: list[Line], *, anew: bool = False) -> None:
        """Show ``blocks`` in ``piece``: the paragraphs it shows already as they are stay (the live line
        is replaced in place), the others are written again; ``anew``: all of them (Wrap toggled)."""
        doc = piece.document()
        if anew:
            doc.clear()
        code_draw.replace_lines(doc, [] if anew else self._blocks.get(piece, []), blocks, wrap=self.wrap)
        self._blocks[piece] = list(blocks)
        if piece.isHidden() == bool(blocks):
            piece.setVisible(bool(blocks))
        if not self.wrap:
            self._fit_bar()

    def _checking(self, code: str) -> Iterator[None]:
        """The check against the whole block, a step at a time: the block highlighted whole
        (:func:`whole_lines`), then compared with the lines shown (:meth:`_mend`)."""
        whole: list[Line] = []
        for step in whole_lines(code, self.language):
            if step is None:
                yield None
            else:
                whole = step
        self._whole = whole
        yield from self._mend(whole)

    def _check_step(self) -> None:
        """A slice of the check against the whole block (at its end, the pieces that differ are set again)."""
        if self._check is None:
            return
        deadline = time.perf_counter() + CHECK_SLICE_S
        for _step in self._check:
            if time.perf_counter() > deadline:
                QTimer.singleShot(0, self, self._check_step)
                return
        self._check = None

    def _mend(self, whole: list[Line]) -> Iterator[None]:
        """Show the whole block's highlight: each piece keeps its lines; a line cut while it streamed
        keeps its paragraphs when their colours are the whole line's (setting a 50 KB line whole would
        lay it out at once), else it gets the whole line's colours, cut where it was. Shown and wrapped, each
        cut first moves back to where the row it is in starts when the line is shown whole (the rows found a
        window a step, :func:`ui.chat.view.code_draw.wrap_starts`), so no cut shows as a line break; unwrapped, the
        line is one paragraph. A step at a time (None after each slice of work): a cut line is compared a
        paragraph a step, and a piece that differs is set again in a step of its own."""
        pieces = self.pieces
        flat = [(piece, block) for piece in pieces for block in self._blocks.get(piece, [])]
        blocks: dict[Piece, list[Line]] = {piece: [] for piece in pieces}
        shown: dict[Piece, list[Line]] = {piece: [] for piece in pieces}
        at = 0
        for line in whole:
            size, taken = text_length(line), [flat[at]] if at < len(flat) else []
            got = text_length(taken[0][1]) if taken else 0
            while got < size and at + len(taken) < len(flat):
                taken.append(flat[at + len(taken)])
                got += text_length(taken[-1][1])
            at += len(taken)
            owner = taken[0][0] if taken else pieces[-1]
            shown[owner].append(line)
            if len(taken) < 2 or got != size:
                blocks[owner].append(line)
                continue
            parts = [block for _piece, block in taken]
            yield None
            sizes = [text_length(part) for part in parts]
            want_sizes = _row_sizes(sizes, None) if not self.wrap else sizes
            if self.wrap and self.isVisible() and (width := owner.viewport().width()) > 0:
                self._rows_width = width
                # (Cut where its rows start at this width while it streamed: kept. Else the rows are looked for.)
                for rows in code_draw.wrap_starts(line, width, owner.document().defaultFont()) if (
                        width != self._cut_width) else ():
                    if rows is None:
                        yield None
                    else:
                        want_sizes = _row_sizes(sizes, rows)
            whole_parts = split_line(line, want_sizes)
            same = want_sizes == sizes
            for part, want in zip(parts, whole_parts, strict=True):  # (equal for each part: for the line)
                if not same:
                    break
                yield None
                if colours(part) != colours(want):
                    same = False
            self._long_lines = True
            for (piece, _block), part in zip(taken, parts if same else whole_parts, strict=True):
                if part:
                    blocks[piece].append(part)
        for piece in pieces:
            self._shown[piece] = shown[piece]
            if self._blocks.get(piece, []) != blocks[piece]:
                yield None  # a piece set again a turn
                self._set(piece, blocks[piece])

    def _mend_again(self) -> None:
        """The closed block's cut lines shown again as the width or the Wrap toggle now has them (:meth:`_mend`)."""
        if self._whole is not None and self._long_lines:
            started = self._check is not None
            self._check = self._mend(self._whole)
            if not started:
                QTimer.singleShot(0, self, self._check_step)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width() and self.wrap and self._whole is not None:
            self._cut_width = -1  # (its cuts no longer end where rows do, once the block's paragraphs were moved)
            self._mend_again()  # a cut line's paragraphs end where its rows end at the new width

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self.wrap and self._rows_width != self.recent.viewport().width():
            self._mend_again()  # (a cut line's rows are found on screen, where the block has its width)

    # -- Copy and Wrap ------------------------------------------------------------------------
    def _on_link(self, url: str) -> None:
        if url.startswith(markdown.WRAP_SCHEME + ":"):
            self.set_wrap(not self.wrap)
            return
        follow_link(url, self.markdown)

    def set_wrap(self, wrap: bool) -> None:
        """Wrap long lines, or keep them (one scroll bar under the block scrolls every piece sideways)."""
        self.wrap = wrap
        self._set_header()
        for piece in self.pieces:
            self._set(piece, self._blocks.get(piece, []), anew=True)
        self._mend_again()  # a cut line: one paragraph unwrapped, its rows' paragraphs wrapped
        if wrap:
            self.bar.hide()
            self._scroll(0)
        else:
            self._fit_bar()

    def _fit_bar(self) -> None:
        widest = max((p.horizontalScrollBar().maximum() for p in self.pieces), default=0)
        self.bar.setRange(0, widest)
        self.bar.setPageStep(max(1, self._column.width()))
        self.bar.setVisible(widest > 0)

    def _scroll(self, value: int) -> None:
        for piece in self.pieces:
            piece.horizontalScrollBar().setValue(value)

    def wheelEvent(self, event: QWheelEvent) -> None:
        if not self.wrap and event.angleDelta().x() and not event.angleDelta().y():
            self.bar.setValue(self.bar.value() - event.angleDelta().x())
            event.accept()
            return
        event.ignore()  # the conversation scrolls
