"""Markdown that grows while a robot streams it (the chat's and the lanes' robot text).

A :class:`MarkdownStream` is a stack of rich-text segments: finished Markdown blocks are frozen
into a segment once they are big enough, and only the last (live) segment is re-rendered when
text arrives, so nothing above the tail moves; in the live segment, the finished blocks' rendering
stays and only the blocks after them are rendered again
(:meth:`~ui.widgets.common.AutoHeightText.grow_markdown`: a piece of text costs what it and the open
block take to render, not the whole live segment). A long list with no blank line in it (none of its blocks
counts as finished) is frozen between two of its items, and goes on in the next segment, numbered on
(:func:`ui.markdown.list_cuts`): the pieces show what the whole list shows. A long table is frozen between two
of its rows likewise (:func:`ui.markdown.table_cuts`): each piece a table of its own with the whole table's column
widths, the header in the first piece only. Words that add no Markdown to the live segment's
last paragraph are appended to its document as text, without rendering the tail again. Text that comes
faster than it renders (a burst: a flush of several thousand characters) is caught up over later turns of the
event loop, one render of about ``MAX_RENDER_CHARS`` of Markdown a turn: text that comes while such a render waits
joins it instead of being rendered too. A code block
still open once it is long (nothing in it counts as finished for Markdown) becomes a
:class:`~ui.chat.view.code_stream.CodeStream`, which highlights and lays out each finished line once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QVBoxLayout, QWidget

from ui import markdown
from ui.chat.view.code_lines import leading_fence
from ui.chat.view.code_stream import CodeStream
from ui.widgets.common import AutoHeightText

if TYPE_CHECKING:
    from collections.abc import Callable

#: Freeze finished blocks into their own segment once this many characters are stable.
FREEZE_CHARS = 1200
#: At most about this much Markdown is rendered per event-loop turn (bursts catch up over turns).
MAX_RENDER_CHARS = 3500
#: A long table's pieces hold at most about this much Markdown (a piece is frozen at its first row past
#: ``FREEZE_CHARS``): Qt lays a table's cells out at several times the cost of prose per character (1,700 characters
#: of table: setHtml and its layout ~4.5 ms, prose ~0.8), and a backlog is caught up a piece a turn of the loop, so a
#: turn that shows a piece, renders the next and paints a screen of them stays within a frame.
TABLE_PIECE_CHARS = FREEZE_CHARS


def frame_clock(widget: QWidget) -> Callable[[Callable[[], None]], bool] | None:
    """The ``defer_render`` of the nearest view above ``widget`` that sets one (a comparison's column: its
    renders go on the comparison's frame clock, one column a tick, not on timers of their own that land in
    another column's pass): it takes a render for later and says whether it did."""
    parent = widget.parentWidget()
    while parent is not None:
        defer = getattr(parent, "defer_render", None)
        if defer is not None:
            return defer
        parent = parent.parentWidget()
    return None


class MarkdownStream(QWidget):
    """Markdown that grows: frozen segments plus one live segment re-rendered on change."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(0)
        self._text = ""
        self._frozen = 0
        self._live: AutoHeightText | None = None
        self._scheduled = False
        #: A render left for later ran in this turn of the event loop (the next turn clears it): text that comes
        #: in the same turn (a flush) waits for a render of the next turn instead of adding a second render to it.
        self._rendered = False
        self._code: CodeStream | None = None
        self._code_since = 0  # where in the tail the open code block's unfinished lines start
        self._codes: list[CodeStream] = []
        #: The next live segment starts inside an ordered list cut between its items: its first item's number.
        self._list_start: int | None = None
        #: The next live segment starts inside a table cut between its rows: the table's head and column widths.
        self._table_from: markdown.TableCut | None = None
        self.segments = 0
        if text:
            self.append(text)

    @property
    def text(self) -> str:
        return self._text

    def markdown_source(self) -> str:
        """The whole message's Markdown (a segment's context menu copies it)."""
        return self._text

    def _new_live(self) -> AutoHeightText:
        label = AutoHeightText("", self)
        label.setObjectName("MessageText")
        label.list_start, self._list_start = self._list_start, None
        label.table_from, self._table_from = self._table_from, None
        self._layout.addWidget(label)
        self.segments += 1
        return label

    def append(self, delta: str) -> None:
        self._text += delta
        if self._scheduled:
            return  # the render waiting for a later turn takes it: one render a turn, not two
        if self._code is None and self._append_plain():
            return
        if self._rendered:
            self._schedule()  # this turn has had its render
            return
        self._render(freeze=False)
        if self._scheduled:  # it left a part for later (a burst): that part waits for the next turn
            self._turn_rendered()  # (marked after the render: the mark's timer comes after the part's)

    def _append_plain(self) -> bool:
        """Words added to the live segment's last paragraph with no Markdown in them: add them to its document
        as text (no block opens or closes, no format changes, nothing to freeze) instead of rendering the tail."""
        live = self._live
        if live is None or live.markdown is None:
            return False
        tail = self._text[self._frozen:]
        text = markdown.plain_append(live.markdown, tail)
        return text is not None and live.append_plain(text, source=tail)

    def set_text(self, text: str) -> None:
        if text.startswith(self._text):
            self.append(text[len(self._text):])
            return
        # A different text (rare: a provider replaced its output): render from scratch.
        while self._layout.count():
            item = self._layout.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        self._text, self._frozen, self._live, self.segments, self._code = "", 0, None, 0, None
        self._codes, self._list_start, self._table_from = [], None, None
        self.append(text)

    def _render(self, *, freeze: bool = True) -> None:
        """Freeze finished blocks, re-render the tail. Work per call is bounded (about
        ``MAX_RENDER_CHARS``, the freeze's and the new tail's together): a backlog (text arriving faster than
        it renders) is caught up on the next turns of the event loop instead of stalling this one. Text as it
        streams (``freeze`` False, a tail shorter than that) is rendered in the live segment, and its freeze
        (the segment finished, a new one made and rendered) goes in a turn of its own: not in the turn that
        renders the new text, which would then do both."""
        self._scheduled = False
        if self._code is not None and self._grow_code():
            return
        tail = self._text[self._frozen:]
        if self._live is None:
            self._live = self._new_live()
        stable = markdown.split_stable(tail)
        if stable < FREEZE_CHARS and self._start_code(tail, stable):
            return
        cut, in_list, in_table = self._cut(tail, stable)
        froze = cut >= FREEZE_CHARS and (freeze or len(tail) > MAX_RENDER_CHARS)
        if cut >= FREEZE_CHARS and not froze:
            self._schedule()  # the freeze, in a turn of its own
        if froze:
            self._live.list_goes_on = in_list is not None
            self._live.table_goes_on = in_table
            rendered = self._live.grow_markdown(tail[:cut], cut)
            self._frozen += cut
            tail = tail[cut:]
            self._list_start = in_list.number if in_list is not None else None
            self._table_from = in_table
            if rendered + len(tail) > MAX_RENDER_CHARS:
                # What is left (more blocks to freeze, or the new open part) would take this turn over its
                # budget: the next turn of the loop renders it, in a new segment made then.
                self._live = None
                self._schedule()
                return
            self._live = self._new_live()
            if self._start_code(tail, 0):  # a long open code block after them
                return
            stable = markdown.split_stable(tail)
        visible = bool(tail.strip())
        if visible:
            self._live.grow_markdown(tail, stable)
        else:
            self._live.setHtml("")
        if self._live.isVisibleTo(self) != visible:
            self._live.setVisible(visible)

    def _cut(self, tail: str, stable: int) -> tuple[int, markdown.ListCut | None, markdown.TableCut | None]:
        """Where to freeze the tail: after its finished blocks (``stable``), at most about ``MAX_RENDER_CHARS`` of
        them; else, when the tail ends with a long list (no blank line in it: no block of it counts as finished),
        between two of the list's items (:func:`ui.markdown.list_cuts`; the cut, returned too, says how the
        pieces render as the list does whole); or when it ends with a long table, between two of its rows
        (:func:`ui.markdown.table_cuts`; the table's head and column widths, returned too, render every piece as a
        part of one table). Less than ``FREEZE_CHARS``: nothing to freeze yet."""
        start = stable  # where the open block starts, which may be cut inside
        # Past FREEZE_CHARS, the finished blocks within MAX_RENDER_CHARS; when the first of them is longer (a list or a
        # table whose blank line came in the backlog), it is cut as an open one is (start 0: the scans stop at its
        # blank line).
        if stable >= FREEZE_CHARS and (stable <= MAX_RENDER_CHARS
                                       or (start := markdown.split_stable(tail[:MAX_RENDER_CHARS]))):
            return start, None, None
        assert self._live is not None
        first = None if start else self._live.list_start
        cuts = markdown.list_cuts(tail[start:], first)
        at = self._budget_cut(start, [c.at for c in cuts])
        if at is not None:
            return start + at, next(c for c in cuts if c.at == at), None
        table = None if start else self._live.table_from
        found = markdown.table_cuts(tail[start:], None if table is None else table.head)
        at = self._budget_cut(start, found[1] if found is not None else [], TABLE_PIECE_CHARS)
        if found is None or at is None:
            return stable, None, None
        if table is None:  # the table's first piece: its rows give the columns' widths
            table = markdown.TableCut(found[0], markdown.table_widths(found[0], tail[start + len(found[0]):start + at]))
        return start + at, None, table

    @staticmethod
    def _budget_cut(stable: int, cuts: list[int], budget: int = MAX_RENDER_CHARS) -> int | None:
        """The cut to freeze at among ``cuts`` (after ``stable``): the largest within ``budget``, else the first past
        ``FREEZE_CHARS`` (None: none is)."""
        cuts = [at for at in cuts if stable + at >= FREEZE_CHARS]
        if not cuts:
            return None
        fits = [at for at in cuts if stable + at <= budget]
        return fits[-1] if fits else cuts[0]

    def _start_code(self, tail: str, stable: int) -> bool:
        """When the tail is finished blocks (``tail[:stable]``) then a code block still open and long,
        freeze the blocks and grow the code block in a :class:`CodeStream` from now on."""
        fence = leading_fence(tail[stable:])
        if fence is None or fence.end is not None or len(tail) - stable - fence.start < FREEZE_CHARS:
            return False
        live = self._live
        assert live is not None
        if stable:
            live.grow_markdown(tail[:stable], stable)
            self._frozen += stable
            live = self._live = self._new_live()
        code = CodeStream(fence.language, self, source=self.markdown_source)
        self._layout.insertWidget(self._layout.indexOf(live), code)
        live.setHtml("")
        live.setVisible(False)
        self._code, self._code_since = code, 0
        self._codes.append(code)
        self.segments += 1
        return self._grow_code()

    def _grow_code(self) -> bool:
        """Give the open code block its code so far; False once it closed (the rest renders as usual)."""
        code = self._code
        assert code is not None
        tail = self._text[self._frozen:]
        fence = leading_fence(tail, self._code_since)
        if fence is None:
            # The text grew a carriage return or a NUL (markdown-it rewrites them; leading_fence takes no text with
            # one): the block is rendered as the rest is, from its start, and its CodeStream, which showed it so far,
            # goes (else the code would be shown twice).
            self._code = None
            self._codes.remove(code)
            code.setVisible(False)
            self._layout.removeWidget(code)
            code.deleteLater()
            return False
        code.markdown = tail[:fence.end]
        text = fence.code(tail)
        self._code_since = fence.start + text.rfind("\n") + 1  # no line before it closes the block
        if code.grow(text, closed=fence.end is not None):
            self._schedule()
            return True
        if fence.end is None:
            return True
        self._frozen += fence.end
        self._code = None
        return False

    def _schedule(self) -> None:
        """The next render (a freeze, a backlog's next part) in a later turn of the loop: on the frame clock of
        the view it is in when that view has one (see :func:`frame_clock`), else the next turn (after the paint
        and the input that wait: a backlog is caught up a bounded render a turn, as fast as the turns go)."""
        if not self._scheduled:
            self._scheduled = True
            self._wait()

    def _wait(self) -> None:
        defer = frame_clock(self)
        if defer is None or not defer(self._render_scheduled):
            QTimer.singleShot(0, self, self._render_scheduled)

    def _turn_rendered(self) -> None:
        """A render ran in this turn of the loop: until the next turn (a timer of its own clears the mark), text
        that comes waits for a render of the next turn, and so does a render left for later."""
        if not self._rendered:
            self._rendered = True
            QTimer.singleShot(0, self, self._next_turn)

    def _next_turn(self) -> None:
        """The loop turned since a render ran: text may render as it comes again."""
        self._rendered = False

    def _render_scheduled(self) -> None:
        """The render :meth:`_schedule` asked for, unless new text rendered (and scheduled anew) since; text that
        comes later in this turn waits for the next one. When a render ran in this turn already (a flush's text,
        rendered as it came, left the rest of a burst for later: Qt runs a timer of no delay started in a timer's
        call in the same pass, before the paint), it waits for the next turn: one render a turn, not two."""
        if self._scheduled:
            if self._rendered:
                self._wait()
                return
            self._turn_rendered()
            self._render()

    @property
    def pending(self) -> bool:
        """Text received but not rendered yet (catching up after a burst)."""
        return self._scheduled

    @property
    def checking(self) -> bool:
        """A closed code block's check against its whole highlight is still running (a few ms per turn of
        the event loop; it may set pieces again, the text shown does not change)."""
        return any(code.checking for code in self._codes)
