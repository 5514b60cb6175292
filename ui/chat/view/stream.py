"""Markdown that grows while a robot streams it (the chat's and the lanes' robot text).

A :class:`MarkdownStream` is a stack of rich-text segments: finished Markdown blocks are frozen
into a segment once they are big enough, and only the last (live) segment is re-rendered when
text arrives, so nothing above the tail moves. A long code block still open at the start of the
live segment grows in place instead: its finished lines are highlighted and laid out once, and
only the lines after them are replaced (:class:`_OpenCode`); once it closes, it is checked
against the block rendered whole and frozen.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from PySide6.QtCore import QTimer
from PySide6.QtGui import QTextCursor, QTextDocumentFragment, QTextTable
from PySide6.QtWidgets import QVBoxLayout, QWidget

from ui import markdown, theme
from ui.widgets.common import AutoHeightText

#: Freeze finished blocks into their own segment once this many characters are stable.
FREEZE_CHARS = 1200
#: At most about this much Markdown is rendered per event-loop turn (bursts catch up over turns).
MAX_RENDER_CHARS = 2500


@dataclass
class _OpenCode:
    """The code block growing in place at the start of the live segment."""

    language: str | None
    lines: markdown.CodeLines
    #: Where the code starts in the live segment's text.
    start: int
    #: Characters of the code given to ``lines`` as finished lines.
    fed: int = 0
    #: The HTML of the lines highlighted for good, and how many lines that is.
    done: list[str] = field(default_factory=list)
    done_lines: int = 0
    #: The number of the block (in the segment's document) of the code's first line.
    first_block: int = 0
    #: The document's revision after the last update (another one: it was rendered anew, e.g. Wrap).
    revision: int = -1


_CHECKER: ThreadPoolExecutor | None = None


def _checker() -> ThreadPoolExecutor:
    """The worker that highlights closed code blocks whole (:meth:`MarkdownStream._check_later`)."""
    global _CHECKER
    if _CHECKER is None:
        _CHECKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="code-check")
    return _CHECKER


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
        self._code: _OpenCode | None = None
        self._checks = 0
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
        self._layout.addWidget(label)
        self.segments += 1
        return label

    def append(self, delta: str) -> None:
        self._text += delta
        self._render()

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
        self.append(text)

    def _render(self) -> None:
        """Freeze finished blocks, re-render the tail. Work per call is bounded (about
        ``MAX_RENDER_CHARS``): a backlog (text arriving faster than it renders) is caught up
        on the next turns of the event loop instead of stalling this one."""
        self._scheduled = False
        tail = self._text[self._frozen:]
        if self._live is None:
            self._live = self._new_live()
        if self._render_code(tail):
            return
        stable = markdown.split_stable(tail)
        # A long code block after the finished blocks: they are frozen, so that it grows in place.
        if stable >= FREEZE_CHARS or (stable and len(tail) - stable >= FREEZE_CHARS
                                      and markdown.leading_fence(tail[stable:]) is not None):
            cut = stable
            if stable > MAX_RENDER_CHARS:
                cut = markdown.split_stable(tail[:MAX_RENDER_CHARS]) or stable
            self._live.set_markdown(tail[:cut])
            self._frozen += cut
            tail = tail[cut:]
            self._live = self._new_live()
        if len(tail) > MAX_RENDER_CHARS and markdown.split_stable(tail) >= FREEZE_CHARS:
            self._schedule()  # more finished blocks to freeze: next turn of the loop
            return
        visible = bool(tail.strip())
        if visible:
            self._live.set_markdown(tail)
        else:
            self._live.setHtml("")
        if self._live.isVisibleTo(self) != visible:
            self._live.setVisible(visible)

    def _render_code(self, tail: str) -> bool:
        """Grow the open code block the live segment starts with, if it does and is long; False: render
        the segment the usual way. A block that closed is checked against the block rendered whole
        (rendered whole if it differs: a lexer whose rule spans lines it had taken one at a time) and
        frozen."""
        live = self._live
        assert live is not None
        state = self._code
        fence = markdown.leading_fence(tail, state.start + state.fed if state is not None else 0)
        if fence is None or (state is not None and (state.language != fence.language
                                                    or state.revision != live.document().revision())):
            self._code = state = None  # not a code block any more, or rendered anew (the Wrap toggle)
        if fence is None:
            return False
        code = fence.code(tail)
        if state is None:
            lines = markdown.CodeLines(fence.language)
            if fence.end is not None or len(code) < FREEZE_CHARS or len(code) > markdown.MAX_HIGHLIGHT or not lines.resumable:
                return False
            live.set_markdown(tail)  # once; from now on only what follows the finished lines changes
            cell = self._code_cell()
            if cell is None:
                return False
            state = self._code = _OpenCode(fence.language, lines, start=fence.start, first_block=cell[0])
        if len(code) > markdown.MAX_HIGHLIGHT:
            self._code = None
            return False
        finished = code.rfind("\n") + 1
        new = code[state.fed:finished]
        more = len(new) > MAX_RENDER_CHARS  # a burst: catch up over the next turns of the loop
        if more:
            new = new[:max(new.rfind("\n", 0, MAX_RENDER_CHARS), new.find("\n")) + 1]
        state.fed += len(new)
        if new:
            done = state.lines.finished(new)
            if done:
                state.done.append(done)
            state.done_lines += done.count("\n")
        else:
            done = ""
        last = state.lines.live("" if more else code[finished:])
        if not self._replace_code(state, done + last, previous=state.done_lines - done.count("\n")):
            self._code = None
            live.set_markdown(tail)
            return True
        live.markdown = tail
        if more:
            self._schedule()
        elif fence.end is not None:
            self._check_later(live, tail[:fence.end], code, fence.language, "".join(state.done) + last)
            live.markdown = tail[:fence.end]
            self._frozen += fence.end
            self._code = None
            self._live = self._new_live()
            self._render()
        return True

    def _check_later(self, segment: AutoHeightText, text: str, code: str, language: str | None, shown: str) -> None:
        """Highlight the closed block whole in a worker; should it differ from what was shown line by line
        (a lexer rule that spans lines, taken one at a time), render the segment anew."""
        future = _checker().submit(markdown.highlight, code, language)
        self._checks += 1

        def poll() -> None:
            if not future.done():
                QTimer.singleShot(8, poll)
                return
            self._checks -= 1
            try:
                differs = future.result() != shown
            except Exception:  # highlighting failed: the whole render shows what it can
                differs = True
            if differs and segment.markdown == text:
                segment.set_markdown(text)

        QTimer.singleShot(8, poll)

    def _code_cell(self) -> tuple[int, int] | None:
        """The numbers of the live segment's code block's first and last lines (its blocks), or None."""
        live = self._live
        assert live is not None
        tables = [f for f in live.document().rootFrame().childFrames() if isinstance(f, QTextTable)]
        if not tables:
            return None
        table = tables[0]
        cell = table.cellAt(0, 0)
        first = cell.firstCursorPosition().block().blockNumber() + 1  # under the header line
        last = cell.lastCursorPosition().block().blockNumber()
        return (first, last) if last >= first else None

    def _replace_code(self, state: _OpenCode, html: str, *, previous: int) -> bool:
        """Replace the code block's lines from line ``previous`` on (those not highlighted for good before
        this update) with ``html``. False when the document is not laid out as expected."""
        live = self._live
        assert live is not None
        cell = self._code_cell()
        if cell is None or cell[0] != state.first_block or cell[1] < state.first_block + previous:
            return False
        doc = live.document()
        start = doc.findBlockByNumber(state.first_block + previous)
        end = doc.findBlockByNumber(cell[1])
        cursor = QTextCursor(doc)
        cursor.setPosition(start.position())
        cursor.setPosition(end.position() + end.length() - 1, QTextCursor.MoveMode.KeepAnchor)
        cursor.beginEditBlock()
        cursor.removeSelectedText()
        if html:
            space = "pre" if 0 in live.unwrapped else "pre-wrap"
            cursor.insertFragment(QTextDocumentFragment.fromHtml(
                f'<pre style="font-family:{theme.mono_family()}; margin:0; white-space:{space};">{html}</pre>'))
        cursor.endEditBlock()
        state.revision = doc.revision()
        return True

    def _schedule(self) -> None:
        if not self._scheduled:
            self._scheduled = True
            QTimer.singleShot(4, self._render)  # leave room for input and painting

    @property
    def pending(self) -> bool:
        """Text received but not rendered yet (catching up after a burst), or a code block's check running."""
        return self._scheduled or self._checks > 0
