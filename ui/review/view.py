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

This module holds the state, geometry, navigation, decisions and input; the painting is the
:class:`~ui.review.painting.DiffPainting` mixin, the colours :mod:`ui.review.colors`, the inline
reason/edit box :mod:`ui.review.overlay`.
"""

from __future__ import annotations

import bisect
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QRect, QSize, Qt, Signal
from PySide6.QtGui import (
    QContextMenuEvent,
    QFont,
    QFontMetrics,
    QGuiApplication,
    QKeyEvent,
    QMouseEvent,
    QResizeEvent,
)
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QFrame,
    QMenu,
    QWidget,
)

from ui import theme
from ui.review.highlight import LineColors, palette
from ui.review.rows import ADD, CTX, DEL, GAP, HUNK, INFO, PAIR, DiffRows, build_rows, hunk_final_lines
from workspace.changes import PENDING

if TYPE_CHECKING:
    from ui.review.model import ChangeReviewModel
    from workspace.changes import FileChange, Hunk
from ui.review.colors import diff_colors
from ui.review.overlay import HunkOverlay
from ui.review.painting import DiffPainting


class DiffView(DiffPainting, QAbstractScrollArea):
    """One file of a :class:`~ui.review.model.ChangeReviewModel`, with hunk decisions and keys."""

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
        #: Where each painted hunk header's label ends (x): its buttons start right of it.
        self.label_ends: dict[str, int] = {}
        self._hover: tuple[str, str] | None = None
        self._overlay: HunkOverlay | None = None
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
        self.shown_message = ""
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

    def scrollContentsBy(self, _dx: int, _dy: int) -> None:
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
    def overlay(self) -> HunkOverlay | None:
        """The open inline box (reason or edit), if any."""
        return self._overlay

    def _open_overlay(self, h: Hunk, kind: str) -> None:
        self._close_overlay()
        self._set_current(h.id)
        box = HunkOverlay(self, h, kind)
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

    def _overlay_done(self, box: HunkOverlay, confirmed: bool) -> None:
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


__all__ = ["DiffView"]
