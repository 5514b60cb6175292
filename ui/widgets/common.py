"""Small shared widgets and helpers: labels that wrap rich text or elide it, badges, JSON highlighting.

The rich-text views (:class:`RichLabel`, :class:`AutoHeightText`) open only http, https and
mailto links; shown Markdown (``set_markdown``) has a "Copy" link over each code block that puts
the block's code on the clipboard.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterator

from PySide6.QtCore import QEvent, QMimeData, QObject, QSize, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import (
    QBrush,
    QColor,
    QContextMenuEvent,
    QCursor,
    QDesktopServices,
    QGuiApplication,
    QImage,
    QKeyEvent,
    QPainter,
    QSyntaxHighlighter,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextDocumentFragment,
    QTextFormat,
    QTextFrame,
    QTextFrameFormat,
    QWheelEvent,
)
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QSizePolicy,
    QTextBrowser,
    QTextEdit,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from ui import markdown, theme
from ui.widgets.eliding import ElidesOnResize, elide_text


@contextlib.contextmanager
def signals_blocked(obj: QObject) -> Iterator[None]:
    """Block ``obj``'s signals inside the block (napari's qt_signals_blocked)."""
    previous = obj.blockSignals(True)
    try:
        yield
    finally:
        obj.blockSignals(previous)


def holds_focus(widget: QWidget) -> bool:
    """Whether the keyboard is in ``widget`` (it, or one of its children, has the focus)."""
    focused = QApplication.focusWidget()
    return focused is not None and (focused is widget or widget.isAncestorOf(focused))


def follow_link(url: str, source: str | None) -> bool:
    """Act on a click on ``url`` in rich text shown from the Markdown ``source`` (or None).

    ``copy:N`` puts the code of the source's N-th code block on the clipboard; http, https and
    mailto links open outside; anything else does nothing. Returns whether something happened.
    """
    scheme, _, rest = url.partition(":")
    if scheme == markdown.COPY_SCHEME:
        blocks = markdown.code_blocks(source) if source is not None else []
        index = int(rest) if rest.isdigit() else -1
        if not 0 <= index < len(blocks):
            return False
        QGuiApplication.clipboard().setText(blocks[index])
        QToolTip.showText(QCursor.pos(), "Copied")
        return True
    if markdown.clickable(url):
        return QDesktopServices.openUrl(QUrl(url))
    return False


class RichLabel(QLabel):
    """A selectable, word-wrapping rich-text label whose height follows its width."""

    def __init__(self, html: str = "", parent: QWidget | None = None, *, selectable: bool = True) -> None:
        super().__init__(parent)
        self.markdown: str | None = None
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setWordWrap(True)
        self.linkActivated.connect(lambda url: follow_link(url, self.markdown))
        flags = Qt.TextInteractionFlag.LinksAccessibleByMouse
        if selectable:
            flags |= Qt.TextInteractionFlag.TextSelectableByMouse
        self.setTextInteractionFlags(flags)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        if html:
            self.setText(html)

    def setText(self, text: str) -> None:
        super().setText(text)
        self.markdown = None

    def set_markdown(self, text: str) -> None:
        """Show Markdown, with a "Copy" link over each code block."""
        self.setText(markdown.render(text, copy=True))
        self.markdown = text


#: The pixels a piece of a table cut in pieces (``AutoHeightText.table_from``, ``table_goes_on``) hides above and below
#: its table where the table goes on: Qt draws a table's outer border a pixel or two inside its frame, so two pieces one
#: under the other would show two rules with the page between them where the whole table shows one.
TABLE_SEAM = 2


#: A text under a key's bar (:meth:`PieceFeeder._text_frame`), as the table of :func:`ui.markdown.readable_html` draws
#: it: its width, and the gap between it and the text (px).
BAR_WIDTH = 3
BAR_GAP = 8


@functools.lru_cache(maxsize=4)
def _bar(color: str) -> QImage:
    """A frame's background that is the bar alone: a texture as wide as any frame, its first :data:`BAR_WIDTH` pixels
    of ``color`` and the rest clear (Qt draws a frame's background from its top left corner)."""
    image = QImage(8192, 1, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.fillRect(0, 0, BAR_WIDTH, 1, QColor(color))
    painter.end()
    return image


class PieceFeeder(QObject):
    """Shows a value's pieces (:func:`ui.markdown.value_pieces`) in a text view: the first at once, then one a
    turn of the event loop, so a big result never holds the window more than a piece's parsing and layout (laid
    out whole, a 50 KB one held it 15-120 ms). The view's text is the whole HTML's once all are in."""

    def __init__(self, view: QTextEdit) -> None:
        super().__init__(view)
        self._view = view
        self._pieces: Iterator[markdown.Piece] | None = None
        #: The frame the last pieces were put in (a text under a key), a label's block format, and a text's block and
        #: character formats (a ``<pre>``'s, indented past the bar).
        self._frame: QTextFrame | None = None
        self._label: QTextBlockFormat | None = None
        self._text: tuple[QTextBlockFormat, QTextCharFormat] | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._next)

    @property
    def pending(self) -> bool:
        """Pieces are still to come."""
        return self._pieces is not None

    def start(self, pieces: Iterator[markdown.Piece]) -> None:
        """Show ``pieces`` in the view (its document empty: cleared when it showed something else), the first
        step's now; any still to come of the pieces before are dropped."""
        self.stop()
        self._frame = None
        self._pieces = pieces
        self._next()

    def stop(self) -> None:
        """No more pieces (the view shows something else)."""
        self._pieces = None
        self._timer.stop()

    def _next(self) -> None:
        """A step: a piece, and more until they have added half of :data:`ui.markdown.PIECE_LINES` lines (a result's
        first lines of JSON and the text under a key after them come together). No piece is made ahead of its step:
        making one (its JSON encoded, its highlighting) is part of what a step costs."""
        shown = 0
        while self._pieces is not None:
            piece = next(self._pieces, None)
            if piece is None:
                self.stop()
                return
            if piece is markdown.PAUSE:
                break
            self._append(piece)
            shown += piece.lines
            if shown >= markdown.PIECE_LINES // 2:
                break
        self._timer.start()

    def _append(self, piece: markdown.Piece) -> None:
        """Add ``piece`` at the end of the view's document (its lines that go on: at the end of the element before,
        the ``<pre>`` or the text's frame), as the whole puts it: only the piece is parsed and laid out. Qt merges
        the first paragraph of what is inserted into the block it goes in: a label's block is given its own format
        again."""
        doc = self._view.document()
        if piece.goes_on:
            if piece.text is not None and self._frame is not None:
                cursor = self._frame.lastCursorPosition()
                block, chars = self._text_formats()
                cursor.insertBlock(block, chars)
                cursor.insertText(piece.text, chars)
                return
            cursor = QTextCursor(doc)
            cursor.movePosition(QTextCursor.MoveOperation.End)
            cursor.insertBlock()  # its lines go on in a block of the one before's format
            cursor.insertHtml(piece.html)
        else:
            cursor = QTextCursor(doc)
            cursor.movePosition(QTextCursor.MoveOperation.End)
            first = doc.isEmpty()
            if piece.html:
                if self._frame is not None:  # the empty block after a text's frame stays, and takes no height
                    cursor.insertBlock(QTextBlockFormat())
                elif not first:
                    cursor.insertBlock()
                start = cursor.position()
                cursor.insertHtml(piece.html)
                if piece.label and not first:
                    QTextCursor(doc.findBlock(start)).setBlockFormat(self._label_format(piece.html))
            self._frame = None if piece.text is None else self._text_frame(cursor, piece.text)
        if piece.bottom:
            block = cursor.blockFormat()
            block.setBottomMargin(piece.bottom)
            cursor.setBlockFormat(block)

    def _text_frame(self, cursor: QTextCursor, text: str) -> QTextFrame:
        """A frame at ``cursor`` holding ``text`` (a text under a key) as the table of :func:`ui.markdown.readable_html`
        shows it: a bar of the border's colour down its left, the text 8 px past it, 6 px under it. Its pieces that go
        on are added in it: Qt lays out only their blocks (a table is laid out whole on each change of a cell)."""
        frame_format = QTextFrameFormat()
        frame_format.setBackground(QBrush(_bar(theme.colors().border)))
        frame_format.setBottomMargin(6)
        frame = cursor.insertFrame(frame_format)
        block, chars = self._text_formats()
        cursor.setBlockFormat(block)
        cursor.setCharFormat(chars)
        cursor.insertText(text, chars)
        # the empty block Qt puts after it takes no height (as Qt lays out the one after a table)
        after = QTextCursor(cursor.document())
        after.setPosition(frame.lastPosition() + 1)
        if after.block().length() == 1:
            empty = QTextBlockFormat()
            empty.setLineHeight(0, QTextBlockFormat.LineHeightTypes.FixedHeight.value)
            after.setBlockFormat(empty)
        return frame

    def _text_formats(self) -> tuple[QTextBlockFormat, QTextCharFormat]:
        """The block and character formats of a text under a key: a ``<pre>``'s of :func:`ui.markdown.value_html`,
        its left margin past the bar."""
        if self._text is None:
            scratch = QTextDocument()
            scratch.setHtml(next(markdown.value_pieces("x")).html)
            block = scratch.begin().blockFormat()
            block.setLeftMargin(BAR_WIDTH + BAR_GAP)
            cursor = QTextCursor(scratch)
            cursor.setPosition(1)
            self._text = block, cursor.charFormat()
        return self._text

    def _label_format(self, html: str) -> QTextBlockFormat:
        """The block format of the label paragraph ``html`` starts with."""
        if self._label is None:
            scratch = QTextDocument()
            scratch.setHtml(html[: html.index("</p>") + 4])
            self._label = scratch.begin().blockFormat()
        return self._label


class AutoHeightText(QTextBrowser):
    """Read-only rich text whose height follows its content (selectable, links open outside).

    Unlike a word-wrapping QLabel, whose size hint lays big rich text out several times,
    this lays its document out once per change and only the blocks that changed. Shown Markdown's
    code blocks have a Copy link and a Wrap toggle: a block that does not wrap keeps its long lines
    and the text scrolls sideways.
    """

    def __init__(self, html: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.markdown: str | None = None
        #: :meth:`grow_markdown` is changing the document: its height is fitted once, at the end.
        self._growing = False
        #: Code blocks (by index) whose long lines do not wrap.
        self.unwrapped: set[int] = set()
        self.setReadOnly(True)
        self.setOpenLinks(False)  # follow_link decides what a click does
        self.anchorClicked.connect(self._on_link)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.DefaultContextMenu)
        self.viewport().setAutoFillBackground(False)
        # Transparent, no border nor padding: a rule of the application's style sheet (ui.theme.chat_rules), not
        # a style sheet of each (parsed, and the widget polished apart, for each of the chat's many texts).
        self.setProperty("autoHeight", True)
        self.document().setDocumentMargin(0)
        self.document().documentLayout().documentSizeChanged.connect(self._fit)
        self.setFixedHeight(1)
        #: What :meth:`grow_markdown` keeps: the Markdown's finished blocks shown (its first ``_kept`` characters,
        #: 0: none), where their rendering ends in the document, and the code blocks among them.
        self._kept = self._kept_pos = self._kept_codes = 0
        #: Where the open part could not be added to the finished blocks' rendering (-1: nowhere).
        self._whole_at = -1
        #: The shown Markdown is a part of a list cut between its items (:func:`ui.markdown.list_cuts`): it starts
        #: with the list's item number ``list_start`` (None: it does not start inside a list), and the list goes on
        #: after it (``list_goes_on``), so it renders as those items do in the whole list.
        self.list_start: int | None = None
        self.list_goes_on = False
        #: Likewise for a table cut between its rows (:func:`ui.markdown.table_cuts`): the shown Markdown starts with
        #: rows of the table ``table_from`` (None: it does not start inside a table), or ends with a table that goes
        #: on after it (``table_goes_on``); the piece has the whole table's column widths.
        self.table_from: markdown.TableCut | None = None
        self.table_goes_on: markdown.TableCut | None = None
        if html:
            self.setHtml(html)

    def createMimeDataFromSelection(self) -> QMimeData:
        """The selection for the clipboard, its tables' HTML with a collapsed grid (:func:`ui.markdown.copied_html`)."""
        data = super().createMimeDataFromSelection()
        if data.hasHtml():
            data.setHtml(markdown.copied_html(data.html()))
        return data

    def _fit(self, size: object = None) -> None:
        if self._growing:
            return
        height = int(self.document().size().height() + 0.999)
        top = TABLE_SEAM if self.table_from is not None else 0
        if self.viewportMargins().top() != -top:
            self.setViewportMargins(0, -top, 0, 0)
        height -= top + (TABLE_SEAM if self.table_goes_on is not None else 0)
        bar = self.horizontalScrollBar()
        if self.horizontalScrollBarPolicy() != Qt.ScrollBarPolicy.ScrollBarAlwaysOff and bar.maximum() > 0:
            height += bar.sizeHint().height()
        if height != self.height():
            self.setFixedHeight(max(1, height))

    def setHtml(self, text: str) -> None:
        super().setHtml(text)
        self.markdown = None
        self._kept = 0
        self._fit()

    def set_markdown(self, text: str) -> None:
        """Show Markdown, with a "Copy" link and a "Wrap" toggle over each code block."""
        self.setHtml(markdown.render(text, copy=True, unwrapped=frozenset(self.unwrapped), list_start=self.list_start,
                                     list_goes_on=self.list_goes_on, table_from=self.table_from,
                                     table_goes_on=self.table_goes_on))
        self.markdown = text
        policy = Qt.ScrollBarPolicy.ScrollBarAsNeeded if self.unwrapped else Qt.ScrollBarPolicy.ScrollBarAlwaysOff
        self.setHorizontalScrollBarPolicy(policy)
        self._fit()

    def grow_markdown(self, text: str, stable: int) -> int:
        """Show Markdown ``text`` (shown as :meth:`set_markdown` shows it) whose first ``stable`` characters are
        finished blocks (:func:`ui.markdown.split_stable`), rendering only what changed: when ``text`` goes on
        from the finished blocks shown before, the document keeps their rendering and only the blocks after
        it are replaced (the open part shown before, the blocks finished since, the new open part), so the
        work of an update follows the new text, not the whole text. What may render differently in parts (a
        list, an indented block or a table going on from the blocks before, a link reference, a code block's
        Wrap toggle) renders the whole text. Returns how many characters of Markdown it rendered (what the update
        cost, whatever ``text``'s length)."""
        self._growing = True
        try:
            rendered = self._grow(text, stable)
        finally:
            self._growing = False
        self._fit()
        return rendered

    def _grow(self, text: str, stable: int) -> int:
        if text[:stable].isspace():
            stable = 0
        rest = text[stable:]
        if (self.unwrapped or "]:" in text
                or (rest.strip() and (not stable or self._whole_at == stable or not markdown.starts_on_its_own(rest)))):
            self.set_markdown(text)  # nothing kept: the next update renders the whole text again
            self._whole_at = stable
            return len(text)
        kept, shown = self._kept, self.markdown
        if (shown is None or not 0 < kept <= stable or not text.startswith(shown[:kept])
                or (kept < stable and not markdown.starts_on_its_own(text[kept:stable]))):
            kept = 0
        rendered = len(rest) if rest.strip() else 0
        ends = self.list_goes_on and not rest.strip()  # the finished blocks end the text (and its list goes on)
        table_ends = None if rest.strip() else self.table_goes_on
        if kept:
            cursor = QTextCursor(self.document())
            cursor.setPosition(self._kept_pos)
            cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
            cursor.removeSelectedText()
            if kept < stable:
                html, codes = markdown.render_part(text[kept:stable], copy=True, unwrapped=frozenset(),
                                                    first_code=self._kept_codes, list_goes_on=ends,
                                                    table_goes_on=table_ends)
                rendered += stable - kept
                kept = kept if self._insert_html(html) else 0
                self._kept_codes = codes
        if not kept:  # the finished blocks rendered whole
            html, self._kept_codes = markdown.render_part(text[:stable], copy=True, unwrapped=frozenset(),
                                                          list_start=self.list_start, list_goes_on=ends,
                                                          table_from=self.table_from, table_goes_on=table_ends)
            rendered += stable
            QTextBrowser.setHtml(self, html)
        self._kept = stable
        self._kept_pos = self.document().characterCount() - 1
        self.markdown = text[:stable]
        if rest.strip() and not self._insert_html(markdown.render_part(rest, copy=True, unwrapped=frozenset(),
                                                                        first_code=self._kept_codes,
                                                                        list_goes_on=self.list_goes_on,
                                                                        table_goes_on=self.table_goes_on)[0]):
            self.set_markdown(text)
            self._whole_at = stable
            return rendered + len(text)
        self.markdown = text
        return rendered

    def _insert_html(self, html: str) -> bool:
        """Add rich text ``html`` (rendered Markdown blocks) after the document's blocks, as one ``setHtml`` of
        both would show them; False (nothing changed) when it starts with what would not (a list, a table, a
        rule: Qt gives the first block of what is inserted the format of the block it goes in), or when the document
        ends with a rule."""
        part = QTextDocument()
        part.setHtml(html)
        first = part.firstBlock()
        if first.length() <= 1 or first.textList() is not None or QTextCursor(first).currentFrame() is not part.rootFrame():
            return False
        document = self.document()
        cursor = QTextCursor(document)
        cursor.movePosition(QTextCursor.MoveOperation.End)
        block = cursor.block()
        if block.blockFormat().hasProperty(QTextFormat.Property.BlockTrailingHorizontalRulerWidth):
            return False  # a rule: the block Qt would add after it takes its line
        after_frame = (block.length() <= 1 and block.previous().isValid() and block.textList() is None
                       and QTextCursor(block.previous()).currentFrame() is not document.rootFrame())
        if after_frame:  # the empty block Qt keeps after a table (a code block, a quote): the text goes in it
            cursor.setBlockFormat(first.blockFormat())
            cursor.setBlockCharFormat(first.charFormat())
        else:
            cursor.insertBlock(first.blockFormat(), first.charFormat())
        cursor.insertFragment(QTextDocumentFragment(part))
        return True

    def append_plain(self, text: str, *, source: str) -> bool:
        """Add ``text`` (words, no Markdown: see :func:`ui.markdown.plain_append`) at the end of the shown
        Markdown, in the format of the text before it, without laying the document out anew; ``source`` is
        the Markdown it then shows. False (nothing changed) when the end is not in a top-level paragraph, list
        item or heading that ends with what the Markdown's last word shows (a code block or a quote, a
        table, a heading's closing ``#``): render it instead."""
        shown = self.markdown
        if shown is None:
            return False
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        if cursor.currentTable() is not None or cursor.currentFrame() is not self.document().rootFrame():
            return False
        head = shown.rstrip(" ")
        if not cursor.block().text().endswith(head[max(head.rfind(" "), head.rfind("\n")) + 1:]):
            return False
        if text:
            cursor.insertText(text)
        self.markdown = source
        return True

    def _on_link(self, url: QUrl) -> None:
        scheme, _, rest = url.toString().partition(":")
        if scheme == markdown.WRAP_SCHEME and rest.isdigit() and self.markdown is not None:
            index = int(rest)
            self.unwrapped ^= {index}
            self.set_markdown(self.markdown)
            return
        follow_link(url.toString(), self.markdown)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        """The usual menu (copy the selection, select all), and the whole message as Markdown."""
        menu = self.createStandardContextMenu(event.pos())
        source = getattr(self.parentWidget(), "markdown_source", None)
        text = source() if callable(source) else self.markdown
        if text:
            menu.addSeparator()
            action = menu.addAction("Copy message as Markdown")
            action.triggered.connect(lambda: QGuiApplication.clipboard().setText(str(text)))
        menu.exec(event.globalPos())
        menu.deleteLater()

    def wheelEvent(self, event: QWheelEvent) -> None:
        if self.unwrapped and event.angleDelta().x() and not event.angleDelta().y():
            super().wheelEvent(event)  # sideways in a block that does not wrap
            return
        event.ignore()  # the conversation scrolls, not each message

    def sizeHint(self) -> QSize:
        return QSize(super().sizeHint().width(), self.height())


class SubmitEdit(QPlainTextEdit):
    """A text box where Ctrl+Enter submits and Esc cancels (editing a sent message, tool arguments).

    Both keys are window shortcuts too (Send, Stop): the box takes them first while it has focus.
    """

    submitted = Signal()
    cancelled = Signal()

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ShortcutOverride and isinstance(event, QKeyEvent) and self._ours(event):
            event.accept()
            return True
        return super().event(event)

    @staticmethod
    def _ours(event: QKeyEvent) -> bool:
        if event.key() == Qt.Key.Key_Escape:
            return True
        return event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and bool(
            event.modifiers() & Qt.KeyboardModifier.ControlModifier)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.cancelled.emit()
            return
        if self._ours(event):
            self.submitted.emit()
            return
        super().keyPressEvent(event)


def name_line_edit_buttons(edit: QLineEdit, *, clear: str = "Clear") -> None:
    """Give the buttons Qt puts inside a line edit (its clear button, its actions) an accessible name."""
    from PySide6.QtWidgets import QToolButton

    for button in edit.findChildren(QToolButton):
        if not button.accessibleName():
            action = button.defaultAction()
            text = action.text() if action is not None else ""
            button.setAccessibleName(text or clear)


def card_frame(card: QWidget, icon: str, color: str, *,
               spacing: int = 6) -> tuple[QVBoxLayout, QFrame, QHBoxLayout]:
    """The frame the chat's cards share (tool calls, MCP requests, proposed changes): the card's column
    the header (``ToolCardHeader``) and its row, which starts with ``icon`` in ``color``. The caller
    fills the row, then adds the header and a body to the column."""
    outer = QVBoxLayout(card)
    outer.setContentsMargins(0, 0, 0, 0)
    outer.setSpacing(0)
    header = QFrame(card)
    header.setObjectName("ToolCardHeader")
    row = QHBoxLayout(header)
    row.setContentsMargins(10, 6, 10, 6)
    row.setSpacing(spacing)
    mark = QLabel(header)
    mark.setPixmap(theme.icon(icon, color).pixmap(14, 14))
    row.addWidget(mark)
    return outer, header, row


def badge(text: str, color: str, parent: QWidget | None = None, *, small: bool = True) -> QLabel:
    """A rounded pill with white text on ``color``."""
    label = QLabel(text, parent)
    label.setObjectName("Badge")
    pad = "1px 7px" if small else "2px 9px"
    label.setStyleSheet(
        f"QLabel#Badge {{ background-color: {color}; color: white; border-radius: 8px; padding: {pad};"
        " font-size: 11px; font-weight: 600; }"
    )
    label.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)
    return label


def robot_chip(robot: str, parent: QWidget | None = None) -> QLabel:
    """The robot's name in its colour on a light tint of it (the robot badge of cards)."""
    label = QLabel(robot, parent)
    _badge(label, robot)
    label.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)
    return label


def _badge(label: QLabel, robot: str) -> None:
    # Its colours are a rule of the application's style sheet per robot colour (ui.theme.chat_rules).
    label.setObjectName("RobotChip")
    label.setProperty("badge", str(theme.badge_index(robot)))


def elided_robot_chip(robot: str, parent: QWidget, *, min_chars: int = 0) -> QLabel:
    """The robot badge of a card that may narrow: a long robot name ends in "…" and, in a narrow column (a
    comparison's), the badge gives way entirely (the run's header above names the robot; the tooltip has it)."""
    chip = ElidedLabel(robot, parent, min_chars=min_chars, pill=True)
    _badge(chip, robot)
    chip.setToolTip(f"Robot {robot}")
    return chip


def pill(text: str, fg: str, bg: str, parent: QWidget | None = None, *, min_chars: int | None = None,
         tone: str | None = None) -> QLabel:
    """A rounded status pill; with ``min_chars`` it may narrow to that many characters and "…" (its tooltip
    then has the whole text), so it never widens a narrow card. With ``tone`` (one of ``theme.PILL_TONES``) its
    colours are that tone's rule of the application's style sheet (``fg`` and ``bg`` unused): no style sheet
    of its own to parse and polish it with."""
    label = QLabel(text, parent) if min_chars is None else ElidedLabel(text, parent, min_chars=min_chars,
                                                                         tooltip=True, pill=True)
    label.setObjectName("Pill")
    if tone is not None:
        label.setProperty("tone", tone)
    else:
        label.setStyleSheet(
            f"QLabel#Pill {{ color: {fg}; background-color: {bg}; border-radius: 8px; padding: 1px 8px;"
            " font-size: 11px; font-weight: 600; }"
        )
    label.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)
    return label


class JsonHighlighter(QSyntaxHighlighter):
    """Highlights JSON in an editable QPlainTextEdit (keys, strings, numbers, literals)."""

    _TOKENS = re.compile(
        r'(?P<key>"(?:[^"\\]|\\.)*"(?=\s*:))|(?P<str>"(?:[^"\\]|\\.)*")|(?P<num>-?\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b)'
        r"|(?P<lit>\b(?:true|false|null)\b)"
    )

    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        dark = theme.colors().name == "dark"
        self._formats = {
            "key": self._fmt("#8ab4f8" if dark else "#0b54b8", bold=True),
            "str": self._fmt("#a5d6a7" if dark else "#116329"),
            "num": self._fmt("#f9ae58" if dark else "#953800"),
            "lit": self._fmt("#d2a8ff" if dark else "#8250df", bold=True),
        }

    @staticmethod
    def _fmt(color: str, *, bold: bool = False) -> QTextCharFormat:
        fmt = QTextCharFormat()
        fmt.setForeground(QColor(color))
        if bold:
            fmt.setFontWeight(600)
        return fmt

    def highlightBlock(self, text: str) -> None:
        for m in self._TOKENS.finditer(text):
            kind = m.lastgroup
            if kind is not None:
                self.setFormat(m.start(), m.end() - m.start(), self._formats[kind])


class ElidedLabel(ElidesOnResize, QLabel):
    """A one-line label that ends in "…" when it is too narrow; ``text()`` is the full text.

    It asks for its whole text (size hint) but needs only ``min_chars`` characters and "…"
    (minimum size hint; 0: it may shrink to nothing), so a long text never widens its layout
    (nor, through it, the window). With ``whole=True`` it shows all its text or nothing (a short
    caption: "Robot", "78 tokens"). With ``tooltip=True`` an elided label shows the full text as
    its tooltip. With ``pill=True`` it is a badge drawn on a background of the style sheet's (a robot
    badge, a status pill): while it shows nothing its ``empty`` property is true, and the theme's rules
    (:func:`ui.theme.chat_rules`) draw no background for it, so no empty pill stays where a narrow
    column gave the text no room. Only the background goes: its padding, so its size hints, are the
    same with or without text, and the width it is given never depends on what it shows.
    """

    def __init__(self, text: str = "", parent: QWidget | None = None, *, min_chars: int = 0,
                 tooltip: bool = False, whole: bool = False, pill: bool = False) -> None:
        super().__init__(parent)
        self._full = text
        self._min_chars = 0 if whole else min_chars
        self._whole = whole
        self._auto_tooltip = tooltip
        self._pill = pill
        self._repolishing = False
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        self._elide()

    def setText(self, text: str) -> None:
        if text == self._full:
            return
        self._full = text
        self._elide()
        self.updateGeometry()

    def text(self) -> str:
        return self._full

    @property
    def elided(self) -> bool:
        """True when the label shows less than its text."""
        return QLabel.text(self) != self._full

    def _overhead(self) -> int:
        """Width around the text: frame, margins, style sheet padding and border, the indent QLabel gives a text in
        a frame (a style sheet's padding or border is one), and a pixel for the rounding of its text's width. The
        same whatever it shows: were it measured on the text shown (a size hint less that text's width, which is
        a pixel more with a text than without), the width a layout gives it would depend on what it shows, which
        depends on that width."""
        margins = self.contentsMargins()
        return margins.left() + margins.right() + 2 * self.margin() + self._indents()[0] + 1

    def _indents(self) -> tuple[int, int]:
        """The indent QLabel adds to a text: in its size hint, and where it draws it (the room it leaves the text,
        short of its contents rectangle). With no indent set, a label in a frame (a style sheet's padding or border
        makes one) is given the width of an "x" in its hint and draws its text half an "x" in (QLabel's rule)."""
        indent, margin = self.indent(), self.margin()
        if indent < 0 and self.frameWidth() > 0:
            x = self.fontMetrics().horizontalAdvance("x")
            hint, drawn = x - 2 * margin, x // 2 - margin
        else:
            hint = drawn = indent
        if not self.alignment() & (Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignRight):
            return 0, 0
        return max(0, hint), max(0, drawn)

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()
        return QSize(self._overhead() + self.fontMetrics().horizontalAdvance(self._full) + 1, hint.height())

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        full = self._full
        if self._min_chars and len(full) > self._min_chars:
            part = full[: self._min_chars].rstrip() + "…"
        elif self._min_chars:
            part = full
        else:
            part = ""
        return QSize(self._overhead() + (self.fontMetrics().horizontalAdvance(part) + 1 if part else 0),
                     hint.height())

    def _elide(self) -> None:
        if self._repolishing:
            return
        # The width it draws the text in: its contents less its margin and the indent QLabel draws a text at (half
        # an "x" in a style sheet's pill: elided to the contents' width, "file-hel…" lost its last dot).
        width = self.contentsRect().width() - 2 * self.margin() - self._indents()[1]
        shown = elide_text(self.fontMetrics(), self._full, width, whole=self._whole)
        if shown != QLabel.text(self):
            super().setText(shown)
        if self._pill and (empty := not shown and bool(self._full)) != bool(self.property("empty")):
            # Its rules again for the property; unpolished, it has neither the rules' font nor their padding (what it
            # would show then is not what it shows): no eliding until it has them back, which are those it elided in.
            self.setProperty("empty", empty)
            self._repolishing = True
            try:
                style = self.style()
                style.unpolish(self)
                style.polish(self)
            finally:
                self._repolishing = False
        if self._auto_tooltip:
            self.setToolTip(self._full if shown != self._full else "")
