"""A command's live output in its tool card: a bounded, coloured tail that changes at most once a frame."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import (
    QLabel,
    QPlainTextEdit,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from ui import theme
from ui.ansi import PLAIN, Style
from ui.chat.model.tool_calls import cut_note
from ui.widgets.ansi_text import insert_styled, show_styled
from ui.widgets.flow import ElidedToolButton, shrinkable

if TYPE_CHECKING:

    from ui.chat.model.tool_calls import OutputState

#: Lines of a command's output the card shows at most (it scrolls beyond).
OUTPUT_MAX_LINES = 14
#: A finished call's output longer than this many lines starts folded.
OUTPUT_FOLD_LINES = 12
#: The card's output view changes at most once a frame (milliseconds): the chunks that come sooner wait for it and
#: go in together, so a fast command costs one document update per frame, not one per chunk.
OUTPUT_FRAME_MS = 16
#: Lines the card's output view holds at most (a bounded tail: the thread keeps the call's output, and the Tool
#: calls inspector shows all of it). An update that would go past them shows the view anew from the last half
#: of them: laying out a few hundred lines again is cheaper than the document dropping as many from its start.
OUTPUT_VIEW_LINES = 500
#: Characters the card's output view holds at most (long lines), the same way.
OUTPUT_VIEW_CHARS = 50_000
#: When a card shows a long output anew (its start was cut, or it opens with the output), the colours of its last
#: this many characters are painted; what comes before shows plain (the Tool calls inspector has it all).
RESTYLE_CHARS = 20_000


def output_tail(text: str, *, lines: int, chars: int) -> str:
    """The end of ``text``: its last ``lines`` lines, at most ``chars`` characters (then from a line's start when
    one is near)."""
    tail = text[-chars:]
    start = len(tail) - 1 if tail.endswith("\n") else len(tail)
    for _ in range(lines):
        start = tail.rfind("\n", 0, start)
        if start < 0:
            break
    if start >= 0:
        return tail[start + 1:]
    if len(tail) < len(text):
        newline = tail.find("\n", 0, 200)
        return tail[newline + 1:] if newline >= 0 else tail
    return tail


class CommandOutput(QWidget):
    """A running command's output in its card: monospace, at most :data:`OUTPUT_MAX_LINES` high with a scroll
    bar, following the end unless the person scrolled up; once the call ends, a long output folds behind
    its toggle ("Output · 120 lines").

    The view is a bounded tail (:data:`OUTPUT_VIEW_LINES` lines, :data:`OUTPUT_VIEW_CHARS` characters at most) of
    what came, and it changes at most once a frame (:data:`OUTPUT_FRAME_MS`): :meth:`append` queues a chunk,
    :meth:`flush` puts every queued chunk in with one edit."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("CommandOutput")
        c = theme.colors()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        self.toggle = ElidedToolButton(self, min_text="Output…")
        self.toggle.setObjectName("OutputToggle")
        self.toggle.setCheckable(True)
        self.toggle.setChecked(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setIcon(theme.icon("chevron-down", c.muted, 14))
        self.toggle.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.toggle.setCursor(Qt.CursorShape.PointingHandCursor)
        self.toggle.toggled.connect(self._on_toggled)
        layout.addWidget(self.toggle)
        self.cut_note = shrinkable(QLabel("", self))
        self.cut_note.setObjectName("Muted")
        self.cut_note.setVisible(False)
        layout.addWidget(self.cut_note)
        self.view = QPlainTextEdit(self)
        self.view.setObjectName("ToolOutput")
        self.view.setAccessibleName("Command output")
        self.view.setReadOnly(True)
        self.view.setFont(theme.mono_font())
        self.view.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.view.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.view.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.view.setMaximumBlockCount(OUTPUT_VIEW_LINES)
        layout.addWidget(self.view)
        self._lines = 0
        self._cut = 0
        #: The output's last line end, not shown yet (the view would end in an empty line).
        self._held = False
        self._finished = False
        #: Chunks that came since the last update, and the output they were added to.
        self._queued: list[str] = []
        self._state: OutputState | None = None
        self._frame = QTimer(self)
        self._frame.setSingleShot(True)
        self._frame.setInterval(OUTPUT_FRAME_MS)
        self._frame.timeout.connect(self.flush)
        self._fit()

    @property
    def text(self) -> str:
        """What the view shows (the queued chunks put in first)."""
        self.flush()
        return self.view.toPlainText() + ("\n" if self._held else "")

    def at_end(self) -> bool:
        bar = self.view.verticalScrollBar()
        return bar.value() >= bar.maximum() - 2

    def append(self, state: OutputState, text: str) -> None:
        """``text`` came (``state`` is all the output kept so far): shown with the next frame."""
        self._state = state
        self._queued.append(text)
        if not self._frame.isActive():
            self._frame.start()

    def flush(self) -> None:
        """Puts the queued chunks in the view, in one edit."""
        self._frame.stop()
        state = self._state
        if state is None or not self._queued:
            return
        text = "".join(self._queued)
        self._queued.clear()
        follow = self.at_end()
        bar = self.view.verticalScrollBar()
        kept = bar.value()
        document = self.view.document()
        shown = document.characterCount() - 1
        if (shown == 0 or shown + len(text) > OUTPUT_VIEW_CHARS
                or document.blockCount() + text.count("\n") > OUTPUT_VIEW_LINES):
            # the first output, or the view would hold too much: shown anew from what is kept, or its end (at most
            # once per half a view of output that came)
            tail = state.text
            if len(tail) > OUTPUT_VIEW_CHARS or tail.count("\n", -OUTPUT_VIEW_CHARS) >= OUTPUT_VIEW_LINES:
                tail = output_tail(tail, lines=OUTPUT_VIEW_LINES // 2, chars=OUTPUT_VIEW_CHARS // 2)
            start = len(state.text) - len(tail)
            # Its colours from RESTYLE_CHARS before the end (where the person reads), in the style the kept output
            # has there (its runs, also once its start was cut): the text before, plain in one piece, so showing
            # the tail anew costs one insert, not one per coloured word.
            split = max(start, len(state.text) - RESTYLE_CHARS)
            self._insert(([(state.text[start:split], PLAIN)] if split > start else []) + state.styled(split), anew=True)
        else:
            self._insert(state.styled(len(state.text) - len(text)))
        # what the view does not show: what the thread cut, and what the view dropped or never took
        self._cut = state.cut + len(state.text) - (document.characterCount() - 1 + self._held)
        self.cut_note.setText(cut_note(self._cut))
        self.cut_note.setVisible(bool(self._cut) and self.expanded)
        self._lines = state.lines
        self._label()
        self._fit()
        if follow:
            bar.setValue(bar.maximum())
        else:
            bar.setValue(kept)  # the person scrolled up: the view stays where they read

    def _insert(self, spans: list[tuple[str, Style]], *, anew: bool = False) -> None:
        """Add the spans in their colours at the end (``anew``: in place of what the view shows, in the same
        edit); a line end at their end is held back until more comes (no empty last line)."""
        if anew:
            self._held = False
        elif not spans:
            return
        if self._held:
            spans = [("\n", PLAIN), *spans]
        if spans:
            last, style = spans[-1]
            self._held = last.endswith("\n")
            if self._held:
                spans[-1] = (last[:-1], style)
        if anew:
            show_styled(self.view.document(), spans)
            return
        cursor = QTextCursor(self.view.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        insert_styled(cursor, spans)

    def finish(self) -> None:
        """The call ended: a long output folds (its toggle opens it again)."""
        self.flush()
        if self._finished:
            return
        self._finished = True
        self._label()
        if self._lines > OUTPUT_FOLD_LINES:
            self.toggle.setChecked(False)

    @property
    def expanded(self) -> bool:
        return self.toggle.isChecked()

    def _label(self) -> None:
        lines = f"{self._lines} line" + ("" if self._lines == 1 else "s")
        self.toggle.setText(f"Output  ·  {lines}" + ("" if self._finished else "  ·  running"))

    def _fit(self) -> None:
        metrics = self.view.fontMetrics()
        lines = max(1, min(OUTPUT_MAX_LINES, self._lines or 1))
        margins = 2 * self.view.document().documentMargin() + 2 * self.view.frameWidth() + 4
        self.view.setFixedHeight(int(metrics.lineSpacing() * lines + margins))

    def _on_toggled(self, checked: bool) -> None:
        self.view.setVisible(checked)
        self.cut_note.setVisible(checked and bool(self.cut_note.text()))
        self.toggle.setIcon(theme.icon("chevron-down" if checked else "chevron-right", theme.colors().muted, 14))
        if checked:
            bar = self.view.verticalScrollBar()
            bar.setValue(bar.maximum())
