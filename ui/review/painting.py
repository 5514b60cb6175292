"""Painting the diff view's rows (the :class:`DiffPainting` mixin of :class:`~ui.review.view.DiffView`)."""


from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QPoint, QPointF, QRect, QRectF, Qt, QTimer
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetrics,
    QPainter,
    QPaintEvent,
)
from PySide6.QtWidgets import QScrollBar, QWidget

from ui.review.colors import DiffColors, mix
from ui.review.highlight import EMPTY, LineColors, Runs, lexer_for
from ui.review.rows import ADD, CTX, DEL, GAP, HUNK, INFO, PAIR, DiffRows
from ui.widgets.eliding import elide_text
from workspace.changes import ACCEPTED, PENDING, REJECTED
from workspace.diffing import strip_eol
from workspace.sandbox import display_path

if TYPE_CHECKING:
    from ui.review.model import ChangeReviewModel
    from workspace.changes import FileChange, Hunk

#: How long idle-time lexing may hold the event loop per turn (seconds).
PREFETCH_BUDGET = 0.006
#: How long one paint may spend lexing lines not lexed yet (seconds); the rest is drawn plain at first
#: and coloured on the next turns of the event loop, so a jump into an unseen region never stalls.
PAINT_LEX_BUDGET = 0.008
#: How far ahead of (and behind) the viewport idle-time lexing goes, in viewport heights.
PREFETCH_PAGES = 3




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


#: How the view's message (nothing to show) is drawn: centred, wrapped at words.
MESSAGE_FLAGS = int(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop) | int(Qt.TextFlag.TextWordWrap)


def fitted_message(metrics: QFontMetrics, text: str, area: QRect) -> str:
    """``text`` as much of it fits in ``area`` wrapped at words: whole, else its first paragraphs (split at blank
    lines), else its first paragraph on one line ending in "…"."""
    paragraphs = text.split("\n\n")
    while paragraphs:
        shown = "\n\n".join(paragraphs)
        needed = metrics.boundingRect(QRect(0, 0, max(1, area.width()), 1_000_000), MESSAGE_FLAGS, shown)
        if needed.height() <= area.height() and needed.width() <= area.width():
            return shown
        if len(paragraphs) == 1:
            break
        paragraphs.pop()
    return elide_text(metrics, text.split("\n", 1)[0], area.width())


def _human_size(n: int | None) -> str:
    if n is None:
        return "absent"
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / 1024 / 1024:.1f} MB"




class DiffPainting:
    """The painting half of :class:`~ui.review.view.DiffView`: rows, headers and their buttons, gaps,
    syntax colours lexed per block (within a time budget per paint) and ahead of the viewport in idle
    time. A mixin: the view owns the state these methods read (declared below for the type checker)."""

    if TYPE_CHECKING:
        model: ChangeReviewModel | None
        fc: FileChange | None
        colors: DiffColors
        styles: Any
        fm: QFontMetrics
        fm_ui: QFontMetrics
        font_normal: QFont
        font_bold: QFont
        font_italic: QFont
        font_ui: QFont
        font_ui_bold: QFont
        line_height: int
        header_h: int
        heights: dict[int, int]
        placeholder: str
        #: The message drawn last when there was nothing to show (the placeholder as it fit).
        shown_message: str
        paints: int
        longest_paint: float
        _rows: DiffRows
        _split: bool
        _buttons: list[tuple[QRect, str, str]]
        label_ends: dict[str, int]
        _hover: tuple[str, str] | None
        _slot_row: int
        _colors_cache: dict[int, tuple[Any, LineColors]]
        _inline_cache: dict[str, tuple[Any, dict[int, tuple[tuple[int, int], ...]],
                                       dict[int, tuple[tuple[int, int], ...]]]]
        _prefetch_scheduled: bool
        _lex_deadline: float
        _plain_drawn: bool

        def viewport(self) -> QWidget: ...
        def verticalScrollBar(self) -> QScrollBar: ...
        def horizontalScrollBar(self) -> QScrollBar: ...
        @property
        def current_hunk(self) -> Hunk | None: ...
        def visible_rows(self) -> range: ...
        def _row_at(self, y: int) -> int: ...
        def _row_y(self, row: int) -> int: ...
        def _gutter_widths(self) -> tuple[int, int]: ...
        def _decidable(self, h: Hunk | None) -> bool: ...

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
        self.label_ends = {}
        rows = self._rows.rows
        if self.fc is None or not rows:
            p.setPen(c.muted)
            p.setFont(self.font_ui)
            message = self.placeholder if self.fc is None else "No differences."
            # Short of room (a short dock under the memory writes), the margins shrink first, then the text.
            margin = max(4, min(20, (rect.height() - QFontMetrics(self.font_ui).lineSpacing()) // 2))
            area = rect.adjusted(20, margin, -20, -margin)
            self.shown_message = fitted_message(QFontMetrics(self.font_ui), message, area)
            p.drawText(area, MESSAGE_FLAGS, self.shown_message)
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
        # In a narrow pane the buttons never cover the label: first their keys go (the keys still work),
        # then the label shortens ("2/3"), then it goes.
        bold = QFontMetrics(self.font_ui_bold)

        def row(texts: list[tuple[str, str]]) -> int:
            return sum(fm.horizontalAdvance(t) + 26 for _, t in texts)

        if bold.horizontalAdvance(label) + 12 + row(buttons) > right - x:
            buttons = [(action, text.split("  ")[0]) for action, text in buttons]
            for shorter in (f"{hunk.number}/{total}" if total > 1 else "", ""):
                if bold.horizontalAdvance(label) + 12 + row(buttons) <= right - x:
                    break
                label = shorter
        if label:
            p.drawText(QPointF(x, base), label)
            x += bold.horizontalAdvance(label) + 12
        self.label_ends[hunk.id] = x - 12 if label else x
        # buttons from the right, then the hunk's place in what room is left (never under the buttons)
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
                p.setBrush(mix(c.header.name(), color.name(), 0.14))
                p.drawRoundedRect(pr, 8, 8)
                p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
                p.setPen(color)
                p.drawText(pr, Qt.AlignmentFlag.AlignCenter, shown)

    def _paint_button(self, p: QPainter, r: QRect, text: str, action: str, hunk_id: str) -> None:
        c = self.colors
        hover = self._hover == (hunk_id, action)
        fill = {"accept": c.accept_bg, "reject": c.reject_bg}.get(action, c.button)
        if hover:
            fill = mix(fill.name(), (c.success if action == "accept" else c.error if action == "reject"
                                      else c.accent).name(), 0.18)
        border = {"accept": c.success, "reject": c.error}.get(action, c.border)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        p.setPen(mix(c.bg.name(), border.name(), 0.55))
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


__all__ = ["DiffPainting"]
