"""DiffView: one file's diff, unified or side by side, painted row by row (virtualised).

Only the rows in the viewport are painted, so a 20,000-line file with 500 hunks scrolls
as fast as a 20-line one: rows are small tuples (:mod:`ui.review.rows`), their y positions
a prefix sum (bisect finds the first visible row), syntax colours are lexed per block of
lines when first seen (:mod:`ui.review.highlight`) and the blocks around the viewport are
lexed ahead in idle time, intra-line spans are computed per hunk on first paint.

Each hunk has a header with its decision buttons. Keys (when the view has focus):
``]c`` / ``[c`` (or ``j`` / ``k``) next / previous hunk — across files, ``a`` accept,
``r`` reject (an inline box asks for an optional reason for the robot), ``e`` edit the
proposed lines inline (Ctrl+Enter saves and accepts), ``u`` undo the decision, ``s``
switch unified / side by side. A decision moves on to the next undecided hunk.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject, QPoint, QPointF, QRect, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QContextMenuEvent,
    QFont,
    QFontMetrics,
    QGuiApplication,
    QKeyEvent,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QResizeEvent,
)
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ui import theme
from ui.review.highlight import EMPTY, LineColors, Runs, lexer_for, palette
from ui.review.rows import ADD, CTX, DEL, GAP, HUNK, INFO, PAIR, DiffRows, build_rows, hunk_final_lines
from workspace.changes import ACCEPTED, PENDING, REJECTED
from workspace.diffing import strip_eol
from workspace.sandbox import display_path

if TYPE_CHECKING:
    from ui.models.changes import ChangeReviewModel
    from workspace.changes import FileChange, Hunk

#: How long idle-time lexing may hold the event loop per turn (seconds).
PREFETCH_BUDGET = 0.006
#: How long one paint may spend lexing lines not lexed yet (seconds); the rest is drawn plain at first
#: and coloured on the next turns of the event loop, so a jump into an unseen region never stalls.
PAINT_LEX_BUDGET = 0.008
#: How far ahead of (and behind) the viewport idle-time lexing goes, in viewport heights.
PREFETCH_PAGES = 3


def _mix(base: str, over: str, alpha: float) -> QColor:
    a, b = QColor(base), QColor(over)
    return QColor(round(a.red() + (b.red() - a.red()) * alpha), round(a.green() + (b.green() - a.green()) * alpha),
                  round(a.blue() + (b.blue() - a.blue()) * alpha))


@dataclass(slots=True)
class DiffColors:
    bg: QColor
    text: QColor
    muted: QColor
    gutter: QColor
    gutter_text: QColor
    add_bg: QColor
    add_strong: QColor
    add_gutter: QColor
    del_bg: QColor
    del_strong: QColor
    del_gutter: QColor
    header: QColor
    header_current: QColor
    border: QColor
    accent: QColor
    gap: QColor
    success: QColor
    error: QColor
    warning: QColor
    button: QColor
    button_hover: QColor
    accept_bg: QColor
    reject_bg: QColor


def diff_colors() -> DiffColors:
    c = theme.colors()
    dark = c.name == "dark"
    green, red = ("#2ea043", "#f85149") if dark else ("#1a7f37", "#cf222e")
    bg = c.surface
    return DiffColors(
        bg=QColor(bg), text=QColor(c.text), muted=QColor(c.muted),
        gutter=_mix(bg, c.sidebar, 0.6 if dark else 0.8), gutter_text=_mix(c.muted, bg, 0.25),
        add_bg=_mix(bg, green, 0.14 if dark else 0.10), add_strong=_mix(bg, green, 0.40 if dark else 0.30),
        add_gutter=_mix(bg, green, 0.22 if dark else 0.18),
        del_bg=_mix(bg, red, 0.14 if dark else 0.08), del_strong=_mix(bg, red, 0.42 if dark else 0.26),
        del_gutter=_mix(bg, red, 0.22 if dark else 0.15),
        header=QColor(c.card_header), header_current=_mix(c.card_header, c.accent, 0.16 if dark else 0.10),
        border=QColor(c.border), accent=QColor(c.accent), gap=_mix(bg, c.sidebar, 0.7),
        success=QColor(c.success), error=QColor(c.error), warning=QColor(c.warning),
        button=QColor(c.surface), button_hover=_mix(c.surface, c.accent, 0.12),
        accept_bg=_mix(bg, c.success, 0.14), reject_bg=_mix(bg, c.error, 0.10),
    )


def _display(text: str) -> tuple[str, list[int] | None]:
    """``text`` with tabs expanded (4 columns) and, if any, each original index's display column."""
    if "\t" not in text:
        return text, None
    out: list[str] = []
    cols: list[int] = []
    col = 0
    for ch in text:
        cols.append(col)
        if ch == "\t":
            n = 4 - col % 4
            out.append(" " * n)
            col += n
        else:
            out.append(ch)
            col += 1
    cols.append(col)
    return "".join(out), cols


def _human_size(n: int | None) -> str:
    if n is None:
        return "absent"
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / 1024 / 1024:.1f} MB"


class _Overlay(QFrame):
    """The inline box under a hunk's header (a reason for rejecting, or the hunk's text to edit)."""

    def __init__(self, view: DiffView, hunk: Hunk, kind: str) -> None:
        super().__init__(view.viewport())
        self.setObjectName("DiffInlineBox")
        self.view = view
        self.hunk_id = hunk.id
        self.kind = kind
        c = theme.colors()
        self.setStyleSheet(
            f"#DiffInlineBox {{ background: {c.surface}; border: 1px solid "
            f"{c.error if kind == 'reject' else c.accent}; border-radius: 8px; }}")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.setSpacing(6)
        row = QHBoxLayout()
        row.setSpacing(8)
        self.editor: QPlainTextEdit | None = None
        self.reason: QLineEdit | None = None
        if kind == "reject":
            self.reason = QLineEdit(self)
            self.reason.setObjectName("RejectReason")
            self.reason.setPlaceholderText("Why? (optional — the robot is told)")
            self.reason.setAccessibleName("Reason for rejecting this hunk")
            self.reason.returnPressed.connect(self.confirm)
            self.reason.installEventFilter(self)
            row.addWidget(self.reason, 1)
            ok = QPushButton("Reject", self)
            ok.setObjectName("DangerButton")
        else:
            hint = QLabel("Edit the proposed lines — Ctrl+Enter saves and accepts, Esc cancels", self)
            hint.setObjectName("Muted")
            layout.addWidget(hint)
            self.editor = QPlainTextEdit(self)
            self.editor.setObjectName("HunkEditor")
            self.editor.setAccessibleName("Proposed lines of this hunk (editable)")
            self.editor.setFont(view.font_normal)
            self.editor.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
            self.editor.setPlainText("\n".join(strip_eol(x) for x in hunk_final_lines(hunk)))
            self.editor.setTabChangesFocus(False)
            layout.addWidget(self.editor, 1)
            row.addStretch(1)
            ok = QPushButton("Save && accept", self)
            ok.setObjectName("PrimaryButton")
            self.editor.installEventFilter(self)
        cancel = QPushButton("Cancel", self)
        cancel.clicked.connect(self.cancel)
        ok.clicked.connect(self.confirm)
        row.addWidget(cancel)
        row.addWidget(ok)
        layout.addLayout(row)
        lines = 0
        if self.editor is not None:
            lines = max(3, min(14, self.editor.blockCount() + 1))
            self.editor.setFixedHeight(view.line_height * lines + 12)
        self.wanted_height = (view.line_height * lines + 12 + 64) if self.editor is not None else 48

    def focus(self) -> None:
        target = self.reason if self.reason is not None else self.editor
        if target is not None:
            target.setFocus()
            if self.editor is not None:
                cursor = self.editor.textCursor()
                cursor.movePosition(cursor.MoveOperation.End)
                self.editor.setTextCursor(cursor)

    def confirm(self) -> None:
        self.view._overlay_done(self, True)

    def cancel(self) -> None:
        self.view._overlay_done(self, False)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """In the box: Ctrl+Enter saves (and accepts), Esc cancels — before the window's shortcuts for the
        same keys (send the message, stop the run) can take them."""
        if watched in (self.editor, self.reason) and isinstance(event, QKeyEvent):
            ctrl_enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and bool(
                event.modifiers() & Qt.KeyboardModifier.ControlModifier)
            escape = event.key() == Qt.Key.Key_Escape
            if event.type() == QEvent.Type.ShortcutOverride and (ctrl_enter or escape):
                event.accept()  # ours, not a window shortcut's
                return True
            if event.type() == QEvent.Type.KeyPress and (ctrl_enter or escape):
                if escape:
                    self.cancel()
                else:
                    self.confirm()
                return True
        return super().eventFilter(watched, event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.cancel()
            return
        super().keyPressEvent(event)

    def text(self) -> str:
        if self.reason is not None:
            return self.reason.text()
        return self.editor.toPlainText() if self.editor is not None else ""


class DiffView(QAbstractScrollArea):
    """One file of a :class:`~ui.models.changes.ChangeReviewModel`, with hunk decisions and keys."""

    #: The current hunk changed (its id; "" for none).
    current_hunk_changed = Signal(str)
    #: Another file is shown (its id; "" for none) — navigation may cross files.
    file_shown = Signal(str)
    split_changed = Signal(bool)
    #: Every hunk under review is decided (after a key or button decision).
    all_decided = Signal()
    #: Ctrl+Enter in the view: apply the decisions (the Changes dock and the review window do).
    apply_requested = Signal()

    def __init__(self, model: ChangeReviewModel | None = None, parent: QWidget | None = None, *,
                 split: bool = False) -> None:
        super().__init__(parent)
        self.setObjectName("DiffView")
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setAccessibleName("Diff")
        self.viewport().setMouseTracking(True)
        self.viewport().setAutoFillBackground(False)
        self.model: ChangeReviewModel | None = None
        self.fc: FileChange | None = None
        self._split = split
        self.whole_file = False
        self._expanded: set[int] = set()
        self._rows: DiffRows = DiffRows(rows=[], split=split)
        self._ys: list[int] = [0]
        self._signature: tuple[Any, ...] = ()
        self._current: str | None = None
        self._prefix: str | None = None
        self._buttons: list[tuple[QRect, str, str]] = []
        self._hover: tuple[str, str] | None = None
        self._overlay: _Overlay | None = None
        self._slot_row = -1
        self._slot_h = 0
        self._colors_cache: dict[int, tuple[Any, LineColors]] = {}
        self._inline_cache: dict[str, tuple[Any, dict[int, tuple[tuple[int, int], ...]],
                                                dict[int, tuple[tuple[int, int], ...]]]] = {}
        self._prefetch_scheduled = False
        self._lex_deadline = 0.0
        #: A paint drew some lines plain (their block was not lexed in time): colour them soon.
        self._plain_drawn = False
        self._max_chars = 0
        self.placeholder = "Select a file to see its changes."
        #: Paint statistics for benchmarks: number of paints, longest paint (s).
        self.paints = 0
        self.longest_paint = 0.0
        self._setup_fonts()
        self.retheme()
        if model is not None:
            self.set_model(model)

    # -- set-up ---------------------------------------------------------------------------------------
    def _setup_fonts(self) -> None:
        self.ensurePolished()  # the style sheet's font, not the default one (measuring must match drawing)
        self.font_normal = theme.mono_font()
        self.font_bold = QFont(self.font_normal)
        self.font_bold.setBold(True)
        self.font_italic = QFont(self.font_normal)
        self.font_italic.setItalic(True)
        self.font_ui = QFont(self.font())
        self.font_ui_bold = QFont(self.font_ui)
        self.font_ui_bold.setBold(True)
        self.fm = QFontMetrics(self.font_normal)
        self.fm_ui = QFontMetrics(self.font_ui)
        self.line_height = self.fm.height() + 4
        self.char_w = max(1, self.fm.horizontalAdvance("0"))
        self.header_h = max(self.line_height + 14, self.fm_ui.height() + 16)
        self.heights = {CTX: self.line_height, DEL: self.line_height, ADD: self.line_height,
                        PAIR: self.line_height, HUNK: self.header_h, INFO: self.line_height + 12,
                        GAP: self.line_height + 6}

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange) and hasattr(self, "heights"):
            self._setup_fonts()
            self._rebuild(keep="top")

    def retheme(self) -> None:
        """Colours of the current theme (and its pygments style): call after the theme changes."""
        self.colors = diff_colors()
        self.styles = palette(theme.colors().pygments_style)
        self._colors_cache.clear()
        self.viewport().update()

    def set_model(self, model: ChangeReviewModel) -> None:
        if self.model is not None:
            self.model.changed.disconnect(self._on_model_changed)
            self.model.source_changed.disconnect(self._on_model_source_changed)
        self.model = model
        model.changed.connect(self._on_model_changed)
        model.source_changed.connect(self._on_model_source_changed)
        self._on_model_source_changed()

    # -- showing ----------------------------------------------------------------------------------------
    @property
    def split(self) -> bool:
        return self._split

    def set_split(self, split: bool) -> None:
        if split == self._split:
            return
        self._split = split
        self._rebuild(keep="hunk")
        self.split_changed.emit(split)

    def set_whole_file(self, whole: bool) -> None:
        if whole != self.whole_file:
            self.whole_file = whole
            self._rebuild(keep="hunk")

    def show_file(self, fc: FileChange | None, *, hunk_id: str | None = None) -> None:
        """Show ``fc`` (scrolled to ``hunk_id``, or to its first hunk)."""
        self._close_overlay()
        changed = fc is not self.fc
        self.fc = fc
        if changed:
            self._expanded.clear()
            self._inline_cache.clear()
            self._max_chars = self._measure(fc)
        self._rebuild(keep=None)
        target = hunk_id or (fc.hunks[0].id if fc is not None and fc.hunks else None)
        if target is not None:
            self.select_hunk(target)
        else:
            self._set_current(None)
            self.verticalScrollBar().setValue(0)
        if changed:
            self.file_shown.emit(fc.id if fc is not None else "")

    def _on_model_source_changed(self) -> None:
        model = self.model
        if model is None:
            return
        files = model.files
        if self.fc is not None and any(f is self.fc for f in files):
            self._on_model_changed()
            return
        self.show_file(files[0] if files else None)

    def _on_model_changed(self) -> None:
        if self.fc is None:
            if self.model is not None and self.model.files:
                self.show_file(self.model.files[0])
            return
        if self.model is not None and not any(f is self.fc for f in self.model.files):
            files = self.model.files
            self.show_file(files[0] if files else None)
            return
        if self._file_signature() != self._signature:
            self._inline_cache.clear()
            self._rebuild(keep="hunk")
            if self._current is not None and self._hunk(self._current) is None:
                self._set_current(self.fc.hunks[0].id if self.fc.hunks else None)
        self.viewport().update()

    def _file_signature(self) -> tuple[Any, ...]:
        fc = self.fc
        if fc is None:
            return ()
        return (id(fc.hunks), id(fc.old_lines), tuple(id(h.edited_lines) for h in fc.hunks if h.edited_lines))

    def _measure(self, fc: FileChange | None) -> int:
        if fc is None:
            return 0
        longest = 0
        for lines in (fc.old_lines, fc.new_lines):
            if lines:
                longest = max(longest, max(map(len, lines)))
        return min(longest, 4000)

    def _rebuild(self, *, keep: str | None) -> None:
        """Rebuild the rows (layout, context, an edit changed them), keeping the view near where it was."""
        anchor = None
        if keep == "hunk" and self._current is not None:
            anchor = self._current
        top_row = self._row_at(self.verticalScrollBar().value()) if keep == "top" else -1
        fc = self.fc
        if fc is None:
            self._rows = DiffRows(rows=[], split=self._split)
        else:
            self._rows = build_rows(fc, split=self._split, whole_file=self.whole_file,
                                    expanded=frozenset(self._expanded))
        heights = self.heights
        self._ys = [0, *accumulate(heights[r[0]] for r in self._rows.rows)]
        self._signature = self._file_signature()
        self._update_scrollbars()
        if anchor is not None and self._hunk(anchor) is not None:
            self._scroll_to_hunk(anchor, force=False)
        elif top_row >= 0:
            self.verticalScrollBar().setValue(self._row_y(min(top_row, len(self._rows.rows) - 1)))
        self._place_overlay()
        self.viewport().update()

    # -- geometry -----------------------------------------------------------------------------------------
    def _row_y(self, row: int) -> int:
        y = self._ys[row]
        if self._slot_row >= 0 and row > self._slot_row:
            y += self._slot_h
        return y

    def _total_height(self) -> int:
        return self._ys[-1] + (self._slot_h if self._slot_row >= 0 else 0)

    def _row_at(self, y: int) -> int:
        """Row at content y (-2: the inline box; -1: none)."""
        if not self._rows.rows:
            return -1
        if self._slot_row >= 0:
            slot_top = self._ys[self._slot_row + 1]
            if slot_top <= y < slot_top + self._slot_h:
                return -2
            if y >= slot_top + self._slot_h:
                y -= self._slot_h
        row = bisect.bisect_right(self._ys, y) - 1
        return row if 0 <= row < len(self._rows.rows) else -1

    def _gutter_widths(self) -> tuple[int, int]:
        fc = self.fc
        total = max(len(fc.old_lines or []), len(fc.new_lines or [])) if fc is not None else 0
        digits = max(3, len(str(total)))
        return digits * self.char_w + 14, self.char_w + 10

    def _text_width(self) -> int:
        num_w, sign_w = self._gutter_widths()
        width = self.viewport().width()
        if self._split:
            return max(10, width // 2 - num_w - sign_w)
        return max(10, width - 2 * num_w - sign_w)

    def _update_scrollbars(self) -> None:
        vbar = self.verticalScrollBar()
        page = self.viewport().height()
        vbar.setRange(0, max(0, self._total_height() - page + self.line_height))
        vbar.setPageStep(max(1, page))
        vbar.setSingleStep(self.line_height)
        hbar = self.horizontalScrollBar()
        need = self._max_chars * self.char_w + 24
        hbar.setRange(0, max(0, need - self._text_width()))
        hbar.setPageStep(self._text_width())
        hbar.setSingleStep(self.char_w * 4)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._update_scrollbars()
        self._place_overlay()

    def scrollContentsBy(self, dx: int, _dy: int) -> None:
        self._place_overlay()
        self.viewport().update()

    def sizeHint(self) -> QSize:
        return QSize(640, 480)

    # -- hunks -----------------------------------------------------------------------------------------------
    def _hunk(self, hunk_id: str | None) -> Hunk | None:
        if self.fc is None or hunk_id is None:
            return None
        for h in self.fc.hunks:
            if h.id == hunk_id:
                return h
        return None

    @property
    def current_hunk(self) -> Hunk | None:
        return self._hunk(self._current)

    def _set_current(self, hunk_id: str | None) -> None:
        if hunk_id != self._current:
            self._current = hunk_id
            self.viewport().update()
            self.current_hunk_changed.emit(hunk_id or "")

    def select_hunk(self, hunk_id: str, *, scroll: bool = True) -> bool:
        """Make ``hunk_id`` current (switching file if it is in another one) and scroll to it."""
        h = self._hunk(hunk_id)
        if h is None and self.model is not None:
            found = self.model.locate(hunk_id)
            if found is not None:
                self.show_file(found[0], hunk_id=hunk_id)
                return True
            return False
        if h is None:
            return False
        self._set_current(hunk_id)
        if scroll:
            self._scroll_to_hunk(hunk_id, force=False)
        return True

    def _scroll_to_hunk(self, hunk_id: str, *, force: bool) -> None:
        h = self._hunk(hunk_id)
        if h is None or h.index not in self._rows.header_rows:
            return
        start, end = self._rows.hunk_span(h.index)
        top, bottom = self._row_y(start), self._row_y(end)
        vbar = self.verticalScrollBar()
        view_top, page = vbar.value(), self.viewport().height()
        lead = min(3 * self.line_height + self.line_height // 2, page // 4)
        if force or top < view_top or bottom > view_top + page:
            vbar.setValue(max(0, top - lead))

    def next_hunk(self, *, undecided: bool = False) -> bool:
        """``]c``: the next hunk (in the next file after the last one here)."""
        return self._step(+1, undecided)

    def prev_hunk(self, *, undecided: bool = False) -> bool:
        """``[c``: the previous hunk."""
        return self._step(-1, undecided)

    def _step(self, delta: int, undecided: bool) -> bool:
        if self.model is not None and self.model.files:
            step = self.model.next_hunk if delta > 0 else self.model.prev_hunk
            found = step(self._current, undecided=undecided)
            if found is None:
                return False
            fc, h = found
            if fc is not self.fc:
                self.show_file(fc, hunk_id=h.id)
            else:
                self.select_hunk(h.id)
            return True
        if self.fc is None or not self.fc.hunks:
            return False
        ids = [h.id for h in self.fc.hunks]
        at = ids.index(self._current) if self._current in ids else (-1 if delta > 0 else 0)
        self.select_hunk(ids[(at + delta) % len(ids)])
        return True

    def _decidable(self, h: Hunk | None) -> bool:
        return h is not None and self.model is not None and self.model.decidable(self.fc)

    def _advance(self) -> None:
        """After a decision: on to the next undecided hunk (anywhere), or tell that all are decided."""
        if self.model is None:
            return
        if not self._step(+1, True):
            self.all_decided.emit()

    # -- decisions ---------------------------------------------------------------------------------------------
    def accept_current(self) -> bool:
        h = self.current_hunk
        if not self._decidable(h) or h is None or self.model is None:
            return False
        if self.model.accept(h.id):
            self._advance()
            return True
        return False

    def reject_current(self, reason: str | None = None, *, ask: bool = True) -> bool:
        """Reject the current hunk; with ``ask`` (the ``r`` key) an inline box asks for a reason first."""
        h = self.current_hunk
        if not self._decidable(h) or h is None or self.model is None:
            return False
        if ask and reason is None:
            self._open_overlay(h, "reject")
            return True
        if self.model.reject(h.id, reason=reason):
            self._advance()
            return True
        return False

    def edit_current(self) -> bool:
        h = self.current_hunk
        if not self._decidable(h) or h is None or h.kind == "rename" or self.fc is None or self.fc.binary:
            return False
        self._open_overlay(h, "edit")
        return True

    def reset_current(self) -> bool:
        h = self.current_hunk
        if not self._decidable(h) or h is None or self.model is None:
            return False
        return self.model.reset(h.id)

    @property
    def overlay(self) -> _Overlay | None:
        """The open inline box (reason or edit), if any."""
        return self._overlay

    def _open_overlay(self, h: Hunk, kind: str) -> None:
        self._close_overlay()
        self._set_current(h.id)
        box = _Overlay(self, h, kind)
        self._overlay = box
        self._slot_row = self._rows.header_rows.get(h.index, -1)
        self._slot_h = box.wanted_height + 8
        self._update_scrollbars()
        self._scroll_to_hunk(h.id, force=False)
        bottom = self._ys[self._slot_row + 1] + self._slot_h
        vbar = self.verticalScrollBar()
        if bottom > vbar.value() + self.viewport().height():
            vbar.setValue(bottom - self.viewport().height() + self.line_height)
        self._place_overlay()
        box.show()
        box.focus()
        self.viewport().update()

    def _place_overlay(self) -> None:
        box = self._overlay
        if box is None or self._slot_row < 0:
            return
        y = self._ys[self._slot_row + 1] - self.verticalScrollBar().value() + 4  # just under the header
        box.setGeometry(10, y, max(200, self.viewport().width() - 20), self._slot_h - 8)

    def _close_overlay(self) -> None:
        box = self._overlay
        if box is None:
            return
        self._overlay = None
        self._slot_row, self._slot_h = -1, 0
        box.hide()
        box.deleteLater()
        self._update_scrollbars()
        self.viewport().update()

    def _overlay_done(self, box: _Overlay, confirmed: bool) -> None:
        if box is not self._overlay:
            return
        text = box.text()
        hunk_id, kind = box.hunk_id, box.kind
        self._close_overlay()
        self.setFocus()
        if not confirmed or self.model is None:
            return
        if kind == "reject":
            if self.model.reject(hunk_id, reason=text.strip() or None):
                self._set_current(hunk_id)
                self._advance()
            return
        h = self._hunk(hunk_id)
        if h is None:
            return
        final = hunk_final_lines(h)
        fmt = self.fc.format if self.fc is not None else None
        ends_with_eol = bool(final) and final[-1].endswith(("\n", "\r"))
        if text and not text.endswith("\n") and (ends_with_eol or (not final and fmt is not None and fmt.final_newline)):
            text += "\n"
        if self.model.edit_hunk(hunk_id, text):
            self._set_current(hunk_id)
            self._advance()

    # -- keys and mouse -----------------------------------------------------------------------------------------
    @staticmethod
    def _is_apply_key(event: QKeyEvent) -> bool:
        return event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and bool(
            event.modifiers() & Qt.KeyboardModifier.ControlModifier)

    def event(self, event: QEvent) -> bool:
        # Ctrl+Enter applies here, not the window's Send: the view takes it before the shortcuts.
        if event.type() == QEvent.Type.ShortcutOverride and isinstance(event, QKeyEvent) and self._is_apply_key(event):
            event.accept()
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if self._is_apply_key(event):
            self.apply_requested.emit()
            return
        text = event.text()
        mods = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
        if mods not in (Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.ShiftModifier) or not text:
            self._prefix = None
            super().keyPressEvent(event)
            return
        prefix, self._prefix = self._prefix, None
        if prefix is not None and text == "c":
            self._step(+1 if prefix == "]" else -1, False)
            return
        if text in ("]", "["):
            self._prefix = text
            return
        handled = True
        if text == "j":
            self._step(+1, False)
        elif text == "k":
            self._step(-1, False)
        elif text == "a":
            self.accept_current()
        elif text == "r":
            self.reject_current()
        elif text == "e":
            self.edit_current()
        elif text == "u":
            self.reset_current()
        elif text == "s":
            self.set_split(not self._split)
        else:
            handled = False
        if not handled:
            super().keyPressEvent(event)

    def _hunk_at_row(self, row: int) -> Hunk | None:
        if row < 0 or self.fc is None:
            return None
        hi = self._rows.rows[row][1]
        return self.fc.hunks[hi] if 0 <= hi < len(self.fc.hunks) else None

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            super().mousePressEvent(event)
            return
        self.setFocus()
        pos = event.position().toPoint()
        for rect, hunk_id, action in self._buttons:
            if rect.contains(pos):
                self.trigger(hunk_id, action)
                return
        row = self._row_at(pos.y() + self.verticalScrollBar().value())
        if row < 0:
            return
        kind, _hi, left, _right = self._rows.rows[row]
        if kind == GAP:
            self.expand_gap(left)
            return
        h = self._hunk_at_row(row)
        if h is not None:
            self._set_current(h.id)

    def trigger(self, hunk_id: str, action: str) -> None:
        """A header button: ``accept``, ``reject``, ``edit`` or ``reset`` on ``hunk_id``."""
        self._set_current(hunk_id)
        {"accept": self.accept_current, "reject": self.reject_current, "edit": self.edit_current,
         "reset": self.reset_current}[action]()

    def expand_gap(self, gap_index: int) -> None:
        if 0 <= gap_index < len(self._rows.gaps):
            self._expanded.add(self._rows.gaps[gap_index].region)
            self._rebuild(keep="top")

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        pos = event.position().toPoint()
        hover = None
        for rect, hunk_id, action in self._buttons:
            if rect.contains(pos):
                hover = (hunk_id, action)
                break
        row = self._row_at(pos.y() + self.verticalScrollBar().value())
        over_gap = row >= 0 and self._rows.rows[row][0] == GAP
        self.viewport().setCursor(Qt.CursorShape.PointingHandCursor if hover or over_gap
                                  else Qt.CursorShape.ArrowCursor)
        if hover != self._hover:
            self._hover = hover
            self.viewport().update()
        super().mouseMoveEvent(event)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        row = self._row_at(event.pos().y() + self.verticalScrollBar().value())
        h = self._hunk_at_row(row)
        if h is None:
            return
        self._set_current(h.id)
        menu = QMenu(self)
        decidable = self._decidable(h)
        for label, action in (("Accept hunk\ta", "accept"), ("Reject hunk…\tr", "reject"),
                              ("Edit hunk…\te", "edit"), ("Undo decision\tu", "reset")):
            act = menu.addAction(label)
            act.setEnabled(decidable and (action != "reset" or h.status != PENDING))
            act.triggered.connect(lambda _=False, a=action, hid=h.id: self.trigger(hid, a))
        menu.addSeparator()
        menu.addAction("Copy proposed lines").triggered.connect(
            lambda: QGuiApplication.clipboard().setText("".join(hunk_final_lines(h))))
        menu.addAction("Copy original lines").triggered.connect(
            lambda: QGuiApplication.clipboard().setText("".join(h.old_lines)))
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        menu.popup(event.globalPos())  # not exec(): never a nested event loop

    # -- colours --------------------------------------------------------------------------------------------
    def _line_colors(self, lines: list[str] | None) -> LineColors | None:
        if lines is None or self.fc is None:
            return None
        key = id(lines)
        hit = self._colors_cache.get(key)
        if hit is not None and hit[0] is lines:
            return hit[1]
        colors = LineColors(lines, lexer_for(self.fc.target), self.styles)
        self._colors_cache[key] = (lines, colors)
        return colors

    def _inline(self, h: Hunk) -> tuple[dict[int, tuple[tuple[int, int], ...]], dict[int, tuple[tuple[int, int], ...]]]:
        key = (id(h.edited_lines), h.status)
        hit = self._inline_cache.get(h.id)
        if hit is not None and hit[0] == key:
            return hit[1], hit[2]
        old_map: dict[int, tuple[tuple[int, int], ...]] = {}
        new_map: dict[int, tuple[tuple[int, int], ...]] = {}
        base_new = 0 if h.edited_lines is not None else h.new_start
        for p in h.inline():
            old_map[h.old_start + p.old_index] = p.old_spans
            new_map[base_new + p.new_index] = p.new_spans
        self._inline_cache[h.id] = (key, old_map, new_map)
        return old_map, new_map

    # -- painting -----------------------------------------------------------------------------------------------
    def paintEvent(self, event: QPaintEvent) -> None:
        started = time.perf_counter()
        self._lex_deadline = started + PAINT_LEX_BUDGET
        self._plain_drawn = False
        p = QPainter(self.viewport())
        c = self.colors
        rect = self.viewport().rect()
        p.fillRect(rect, c.bg)
        self._buttons = []
        rows = self._rows.rows
        if self.fc is None or not rows:
            p.setPen(c.muted)
            p.setFont(self.font_ui)
            message = self.placeholder if self.fc is None else "No differences."
            p.drawText(rect.adjusted(20, 20, -20, -20), Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop,
                       message)
            p.end()
            return
        top = self.verticalScrollBar().value()
        height = rect.height()
        width = rect.width()
        first = self._row_at(top)
        if first == -2:
            first = self._slot_row + 1
        first = max(0, first)
        current = self.current_hunk
        current_index = current.index if current is not None else -1
        row = first
        while row < len(rows):
            y = self._row_y(row) - top
            if y >= height:
                break
            kind, hi, left, right = rows[row]
            h_px = self.heights[kind]
            hunk = self.fc.hunks[hi] if hi >= 0 else None
            if kind == HUNK:
                self._paint_header(p, y, width, hunk, hunk is not None and hunk.index == current_index)
            elif kind == GAP:
                self._paint_gap(p, y, width, h_px, left)
            elif kind == INFO:
                self._paint_info(p, y, width, h_px, hunk)
            else:
                dim = hunk is not None and hunk.status == REJECTED
                if dim:
                    p.setOpacity(0.45)
                if self._split:
                    self._paint_split_row(p, y, width, kind, hunk, left, right)
                else:
                    self._paint_unified_row(p, y, width, kind, hunk, left, right)
                if dim:
                    p.setOpacity(1.0)
                if hunk is not None:
                    self._paint_stripe(p, y, h_px, hunk, hunk.index == current_index)
            row += 1
        p.end()
        self.paints += 1
        elapsed = time.perf_counter() - started
        self.longest_paint = max(self.longest_paint, elapsed)
        self._schedule_prefetch()

    def _paint_stripe(self, p: QPainter, y: int, h: int, hunk: Hunk, current: bool) -> None:
        c = self.colors
        color = c.accent if current else {ACCEPTED: c.success, REJECTED: c.error}.get(hunk.status)
        if color is not None:
            p.fillRect(QRect(0, y, 3, h), color)

    def _status_text(self, hunk: Hunk) -> tuple[str, QColor]:
        c = self.colors
        if self.model is None or self.model.read_only:
            return "", c.muted
        if hunk.status == ACCEPTED:
            return ("accepted · edited" if hunk.edited else "accepted"), c.success
        if hunk.status == REJECTED:
            text = "rejected" if hunk.reviewed else "not applied"
            return (text + (f" — “{hunk.reason}”" if hunk.reason else "")), c.error
        return "pending", c.warning

    def _paint_header(self, p: QPainter, y: int, width: int, hunk: Hunk | None, current: bool) -> None:
        c = self.colors
        h = self.header_h
        if y > 0:
            p.fillRect(QRect(0, y, width, 1), c.border)
        p.fillRect(QRect(0, y + 1, width, h - 2), c.header_current if current else c.header)
        p.fillRect(QRect(0, y + h - 1, width, 1), c.border)
        if hunk is None or self.fc is None:
            return
        if current:
            p.fillRect(QRect(0, y, 3, h), c.accent)
        total = len(self.fc.hunks)
        x = 14
        mid = y + h // 2
        p.setFont(self.font_ui_bold)
        p.setPen(c.text)
        label = f"Hunk {hunk.number} of {total}" if total > 1 else "Hunk"
        if self.model is None or self.model.read_only:
            label = f"Change {hunk.number} of {total}" if total > 1 else "Change"
        fm = self.fm_ui
        base = mid + fm.ascent() // 2 - 1
        p.drawText(QPointF(x, base), label)
        x += QFontMetrics(self.font_ui_bold).horizontalAdvance(label) + 12
        # buttons from the right, then the hunk's place in what room is left (never under the buttons)
        right = width - 10
        buttons: list[tuple[str, str]] = []
        if self._decidable(hunk):
            if hunk.status == PENDING:
                buttons = [("accept", "Accept  a"), ("reject", "Reject  r")]
                if hunk.kind != "rename" and not self.fc.binary:
                    buttons.append(("edit", "Edit  e"))
            else:
                if hunk.status == ACCEPTED and hunk.kind != "rename" and not self.fc.binary:
                    buttons.append(("edit", "Edit  e"))
                buttons.append(("reset", "Undo  u"))
        p.setFont(self.font_ui)
        bh = h - 10
        for action, text in reversed(buttons):
            bw = fm.horizontalAdvance(text) + 20
            r = QRect(right - bw, y + 5, bw, bh)
            self._paint_button(p, r, text, action, hunk.id)
            right -= bw + 6
        p.setFont(self.font_normal)
        p.setPen(c.muted)
        where = hunk.header() if hunk.kind == "lines" else hunk.where()
        room = right - x - 8
        if room > 20:
            shown_where = self.fm.elidedText(where, Qt.TextElideMode.ElideRight, room)
            p.drawText(QPointF(x, base), shown_where)
            x += self.fm.horizontalAdvance(shown_where) + 12
        status, color = self._status_text(hunk)
        if status:
            p.setFont(self.font_ui)
            available = right - x - 8
            if available > 30:
                shown = fm.elidedText(status, Qt.TextElideMode.ElideRight, available)
                pill_w = fm.horizontalAdvance(shown) + 14
                pr = QRectF(x, y + (h - fm.height() - 4) / 2, pill_w, fm.height() + 4)
                p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
                p.setPen(Qt.PenStyle.NoPen)
                p.setBrush(_mix(c.header.name(), color.name(), 0.14))
                p.drawRoundedRect(pr, 8, 8)
                p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
                p.setPen(color)
                p.drawText(pr, Qt.AlignmentFlag.AlignCenter, shown)

    def _paint_button(self, p: QPainter, r: QRect, text: str, action: str, hunk_id: str) -> None:
        c = self.colors
        hover = self._hover == (hunk_id, action)
        fill = {"accept": c.accept_bg, "reject": c.reject_bg}.get(action, c.button)
        if hover:
            fill = _mix(fill.name(), (c.success if action == "accept" else c.error if action == "reject"
                                      else c.accent).name(), 0.18)
        border = {"accept": c.success, "reject": c.error}.get(action, c.border)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        p.setPen(_mix(c.bg.name(), border.name(), 0.55))
        p.setBrush(fill)
        p.drawRoundedRect(QRectF(r).adjusted(0.5, 0.5, -0.5, -0.5), 6, 6)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        p.setPen({"accept": c.success, "reject": c.error}.get(action, c.text))
        p.drawText(r, Qt.AlignmentFlag.AlignCenter, text)
        self._buttons.append((r, hunk_id, action))

    def _paint_gap(self, p: QPainter, y: int, width: int, h: int, gap_index: int) -> None:
        c = self.colors
        p.fillRect(QRect(0, y, width, h), c.gap)
        gap = self._rows.gaps[gap_index] if 0 <= gap_index < len(self._rows.gaps) else None
        if gap is None:
            return
        p.setFont(self.font_ui)
        p.setPen(c.muted)
        n = gap.count
        text = f"⋯   {n} unchanged line{'s' if n != 1 else ''} (lines {gap.old_start + 1}–{gap.old_end}) — click to show"
        p.drawText(QRect(14, y, width - 28, h), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, text)

    def _paint_info(self, p: QPainter, y: int, width: int, h: int, hunk: Hunk | None) -> None:
        c = self.colors
        fc = self.fc
        if hunk is None or fc is None:
            return
        if hunk.kind == "rename":
            text = f"Renamed: {display_path(fc.path)} → {display_path(fc.new_path or '')}"
            bg = c.gap
        elif fc.binary:
            text = f"Binary file: {_human_size(len(fc.before) if fc.before is not None else None)} → " \
                   f"{_human_size(len(fc.after) if fc.after is not None else None)} (shown as a whole-file change)"
            bg = c.gap
        elif fc.before is None:
            text, bg = "New empty file", c.add_bg
        elif fc.after is None:
            text, bg = "File deleted (it was empty)", c.del_bg
        else:
            text, bg = "The whole file changes", c.gap
        p.fillRect(QRect(0, y, width, h), bg)
        p.setFont(self.font_ui)
        p.setPen(c.text)
        p.drawText(QRect(16, y, width - 32, h), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, text)
        if hunk.status == REJECTED:
            p.fillRect(QRect(0, y, 3, h), c.error)

    def _line(self, side: str, index: int, hunk: Hunk | None) -> tuple[str, Runs]:
        fc = self.fc
        assert fc is not None
        if side == "old":
            lines = fc.old_lines or []
        elif hunk is not None and hunk.edited_lines is not None:
            lines = hunk.edited_lines
        else:
            lines = fc.new_lines or []
        if not 0 <= index < len(lines):
            return "", EMPTY
        colors = self._line_colors(lines)
        if colors is None:
            return strip_eol(lines[index]), EMPTY
        runs = colors.runs(index, lex=time.perf_counter() < self._lex_deadline)
        if runs is None:
            self._plain_drawn = True
            runs = EMPTY
        return strip_eol(lines[index]), runs

    def _spans(self, hunk: Hunk | None, side: str, index: int) -> tuple[tuple[int, int], ...]:
        if hunk is None or hunk.kind != "lines":
            return ()
        old_map, new_map = self._inline(hunk)
        return (old_map if side == "old" else new_map).get(index, ())

    def _paint_unified_row(self, p: QPainter, y: int, width: int, kind: int, hunk: Hunk | None, left: int,
                           right: int) -> None:
        c = self.colors
        h = self.line_height
        num_w, sign_w = self._gutter_widths()
        text_x = 2 * num_w + sign_w
        if kind == DEL:
            bg, gut, strong, sign = c.del_bg, c.del_gutter, c.del_strong, "−"
            text, runs = self._line("old", left, hunk)
            spans = self._spans(hunk, "old", left)
            old_no, new_no = left + 1, None
        elif kind == ADD:
            bg, gut, strong, sign = c.add_bg, c.add_gutter, c.add_strong, "+"
            text, runs = self._line("new", right, hunk)
            spans = self._spans(hunk, "new", right)
            if hunk is not None and hunk.edited_lines is not None:
                old_no, new_no = None, hunk.new_start + right + 1
            else:
                old_no, new_no = None, right + 1
        else:
            bg, gut, strong, sign = c.bg, c.gutter, c.bg, ""
            text, runs = self._line("old", left, None)
            spans = ()
            old_no, new_no = left + 1, right + 1
        p.fillRect(QRect(0, y, text_x, h), gut)
        p.fillRect(QRect(text_x, y, width - text_x, h), bg)
        p.setFont(self.font_normal)
        p.setPen(c.gutter_text)
        base = y + (h + self.fm.ascent() - self.fm.descent()) // 2
        if old_no is not None:
            p.drawText(QRect(0, y, num_w - 8, h), Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                       str(old_no))
        if new_no is not None:
            p.drawText(QRect(num_w, y, num_w - 8, h), Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                       str(new_no))
        if sign:
            p.setPen(c.success if kind == ADD else c.error)
            p.drawText(QRect(2 * num_w, y, sign_w, h), Qt.AlignmentFlag.AlignCenter, sign)
        self._paint_text(p, text_x + 4, width, y, base, text, runs, spans, strong)

    def _paint_split_row(self, p: QPainter, y: int, width: int, kind: int, hunk: Hunk | None, left: int,
                         right: int) -> None:
        c = self.colors
        h = self.line_height
        num_w, sign_w = self._gutter_widths()
        half = width // 2
        base = y + (h + self.fm.ascent() - self.fm.descent()) // 2
        p.setFont(self.font_normal)
        for side, x0, x1 in (("old", 0, half), ("new", half, width)):
            index = left if side == "old" else right
            if kind == CTX:
                bg, gut, strong, sign = c.bg, c.gutter, c.bg, ""
                text, runs = self._line("old", left, None)
                spans: tuple[tuple[int, int], ...] = ()
                number = index + 1
            elif index < 0:
                p.fillRect(QRect(x0, y, x1 - x0, h), c.gap)
                continue
            else:
                is_old = side == "old"
                bg = c.del_bg if is_old else c.add_bg
                gut = c.del_gutter if is_old else c.add_gutter
                strong = c.del_strong if is_old else c.add_strong
                sign = "−" if is_old else "+"
                text, runs = self._line(side, index, hunk)
                spans = self._spans(hunk, side, index)
                if not is_old and hunk is not None and hunk.edited_lines is not None:
                    number = hunk.new_start + index + 1
                else:
                    number = index + 1
            p.fillRect(QRect(x0, y, num_w + sign_w, h), gut)
            p.fillRect(QRect(x0 + num_w + sign_w, y, x1 - x0 - num_w - sign_w, h), bg)
            p.setPen(c.gutter_text)
            p.drawText(QRect(x0, y, num_w - 8, h), Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                       str(number))
            if sign:
                p.setPen(c.success if sign == "+" else c.error)
                p.drawText(QRect(x0 + num_w, y, sign_w, h), Qt.AlignmentFlag.AlignCenter, sign)
            p.save()
            p.setClipRect(QRect(x0 + num_w + sign_w, y, x1 - x0 - num_w - sign_w, h))
            self._paint_text(p, x0 + num_w + sign_w + 4, x1, y, base, text, runs, spans, strong)
            p.restore()
        p.fillRect(QRect(half, y, 1, h), c.border)

    def _paint_text(self, p: QPainter, x0: int, right: int, y: int, base: int, text: str, runs: Runs,
                    spans: tuple[tuple[int, int], ...], strong: QColor) -> None:
        if not text:
            return
        shown, cols = _display(text)
        hoff = self.horizontalScrollBar().value()
        x_start = x0 - hoff
        fm = self.fm
        h = self.line_height

        def x_at(index: int) -> int:
            col = cols[index] if cols is not None else index
            if col <= 0:
                return x_start
            return x_start + fm.horizontalAdvance(shown[:col])

        for a, b in spans:
            xa, xb = x_at(min(a, len(text))), x_at(min(b, len(text)))
            if xb > x0 - 2 and xa < right:
                p.fillRect(QRect(max(xa, x0 - 2), y + 1, max(2, xb - max(xa, x0 - 2)), h - 2), strong)
        formats = self.styles.formats
        default = self.colors.text
        x = x_start
        pos = 0
        flat = [*runs] if runs else []
        covered = sum(flat[0::2])
        if covered < len(text):
            flat += (len(text) - covered, 0)
        font_now = 0
        for k in range(0, len(flat), 2):
            length, style = flat[k], flat[k + 1]
            if length <= 0:
                continue
            if pos >= len(text):
                break
            end = min(len(text), pos + length)
            segment = shown[cols[pos]:cols[end]] if cols is not None else text[pos:end]
            pos = end
            advance = fm.horizontalAdvance(segment)
            if x + advance < x0 - 4:
                x += advance
                continue
            if x > right:
                break
            color, bold, italic = formats[style] if style < len(formats) else (None, False, False)
            wanted = 1 if bold else (2 if italic else 0)
            if wanted != font_now:
                p.setFont(self.font_bold if bold else self.font_italic if italic else self.font_normal)
                font_now = wanted
            p.setPen(color if color is not None else default)
            p.drawText(QPoint(x, base), segment)
            x += advance
        if font_now:
            p.setFont(self.font_normal)

    # -- idle-time lexing ----------------------------------------------------------------------------------------
    def _schedule_prefetch(self) -> None:
        if not self._prefetch_scheduled:
            self._prefetch_scheduled = True
            QTimer.singleShot(0, self._prefetch)

    def _prefetch(self) -> None:
        """Lex the blocks around the viewport ahead of time, a few milliseconds per event-loop turn."""
        self._prefetch_scheduled = False
        fc = self.fc
        rows = self._rows.rows
        if fc is None or not rows:
            return
        deadline = time.perf_counter() + PREFETCH_BUDGET
        if self._plain_drawn:  # lines on screen are plain: colour them first
            self._plain_drawn = False
            self._lex_deadline = deadline
            for row in self.visible_rows():
                kind, hi, left, right = rows[row]
                if kind in (HUNK, INFO, GAP):
                    continue
                hunk = fc.hunks[hi] if hi >= 0 else None
                if left >= 0 and kind != ADD:
                    self._line("old", left, hunk)
                if right >= 0 and kind in (ADD, PAIR):
                    self._line("new", right, hunk)
            self.viewport().update()  # repaints (and schedules more lexing if the budget ran out)
            return
        top = self.verticalScrollBar().value()
        page = max(1, self.viewport().height())
        first = max(0, self._row_at(max(0, top - page * PREFETCH_PAGES)))
        last = self._row_at(top + page * (PREFETCH_PAGES + 1))
        last = len(rows) - 1 if last < 0 else last
        visible = self._row_at(top)
        order = list(range(max(0, visible), last + 1)) + list(range(max(0, visible) - 1, first - 1, -1))
        old = self._line_colors(fc.old_lines)
        new = self._line_colors(fc.new_lines)
        for row in order[::4]:
            kind, hi, left, right = rows[row]
            worked = False
            if old is not None and left >= 0 and kind in (CTX, DEL, PAIR):
                worked |= old.prefetch(left)
            if new is not None and right >= 0 and kind in (ADD, PAIR):
                hunk = fc.hunks[hi] if hi >= 0 else None
                if hunk is None or hunk.edited_lines is None:
                    worked |= new.prefetch(right)
            if worked and time.perf_counter() > deadline:
                self._schedule_prefetch_later()
                return

    def _schedule_prefetch_later(self) -> None:
        if not self._prefetch_scheduled:
            self._prefetch_scheduled = True
            QTimer.singleShot(1, self._prefetch)

    # -- for tests and benchmarks --------------------------------------------------------------------------
    @property
    def rows(self) -> DiffRows:
        return self._rows

    def visible_rows(self) -> range:
        top = self.verticalScrollBar().value()
        first = max(0, self._row_at(top))
        last = self._row_at(top + self.viewport().height())
        return range(first, (len(self._rows.rows) if last < 0 else last + 1))

    def button_rect(self, hunk_id: str, action: str) -> QRect | None:
        """Where a header button was last painted (None: not visible)."""
        for rect, hid, act in self._buttons:
            if hid == hunk_id and act == action:
                return rect
        return None


__all__ = ["DiffColors", "DiffView", "diff_colors"]
