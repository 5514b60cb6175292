"""Inspector panes: Memory and Tool calls (the Trace pane is in :mod:`ui.inspector.trace_pane`). Each is a plain
widget over its Qt model; the main window puts each in a dock (see :meth:`ui.window.docks.Docks.register`)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import QAbstractItemModel, QItemSelectionModel, Qt, QTimer
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QStyle,
    QTableView,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from ui import markdown, theme
from ui.formatting import format_duration
from ui.inspector.learnt import LearntSection, LearntSource
from ui.inspector.memory import MemoryModel, pretty
from ui.inspector.tool_calls import ToolCallRecord, ToolCallsModel, diff_results
from ui.widgets.ansi_text import show_styled
from ui.widgets.common import ElidedLabel, PieceFeeder
from ui.widgets.first_column import FirstColumnFill
from ui.widgets.staged import StagedBuild

if TYPE_CHECKING:
    from ui.services import DockContext

#: The narrowest an inspector pane gets (ui.window.docks.DOCK_MIN_WIDTH): set, so that no pane's content
#: makes the dock area (and the window) wider; below their wish, tables scroll and labels elide.
PANE_MIN_WIDTH = 260


def _table(model: QAbstractItemModel, parent: QWidget) -> QTableView:
    view = QTableView(parent)
    view.setModel(model)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setAlternatingRowColors(True)
    view.setShowGrid(False)
    view.setWordWrap(False)
    view.verticalHeader().setVisible(False)
    view.verticalHeader().setDefaultSectionSize(24)
    view.horizontalHeader().setHighlightSections(False)
    view.horizontalHeader().setStretchLastSection(True)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    view.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
    return view


#: The most of a call's output the Tool calls pane's Output tab shows at once (Earlier / Later page through it).
OUTPUT_PAGE = 50_000


def output_part(rec: ToolCallRecord, edge: int, *, backwards: bool) -> tuple[int, int]:
    """The part of the call's output that ends at ``edge`` (``backwards``) or starts there: at most
    :data:`OUTPUT_PAGE` characters, its far end at a line's start when one is near (so no line, and no colour
    code, is cut there)."""
    length = rec.output_length
    if backwards:
        start = max(0, edge - OUTPUT_PAGE)
        if start > 0:
            newline = rec.output_slice(start, start + 200).find("\n")
            start = start + newline + 1 if newline >= 0 else start
        return start, edge
    end = min(length, edge + OUTPUT_PAGE)
    if end < length:
        newline = rec.output_slice(end - 200, end).rfind("\n")
        end = end - 200 + newline + 1 if newline >= 0 and end - 200 + newline > edge else end
    return edge, end


def _detail(parent: QWidget) -> QTextBrowser:
    view = QTextBrowser(parent)
    view.setObjectName("DetailView")
    view.setOpenExternalLinks(True)
    return view


def _pre(text: str, lang: str | None = None) -> str:
    body = markdown.highlight(text, lang) if lang else markdown._esc(text)
    return f'<pre style="font-family:{theme.mono_family()}; white-space:pre-wrap;">{body}</pre>'


def _value_html(value: Any) -> str:
    """A result or error: highlighted JSON when it is JSON, else plain text (no JSON colours on prose)."""
    from ui.markdown import value_html

    return value_html(value)


class MemoryPane(QWidget):
    """Live key/value memory with the writer and time of each value, and its history."""

    def __init__(self, model: MemoryModel, parent: QWidget | None = None, *,
                 learnt: LearntSource | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("InspectorPane")
        self.setMinimumWidth(PANE_MIN_WIDTH)
        self.model = model
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        splitter = QSplitter(Qt.Orientation.Vertical, self)
        self.table = _table(model, splitter)
        self.table.setAccessibleName("Memory: keys and values")
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.horizontalHeader().setStretchLastSection(False)
        self.detail = _detail(splitter)
        self.detail.setPlaceholderText("Select a key to see its value and history.")
        splitter.addWidget(self.table)
        splitter.addWidget(self.detail)
        splitter.setSizes([220, 200])
        #: What robots learnt (kept across runs), with Forget; None without a session model to ask.
        self.learnt: LearntSection | None = None
        if learnt is not None:
            self.learnt = LearntSection(learnt, splitter)
            splitter.addWidget(self.learnt)
            splitter.setSizes([200, 160, 160])
        layout.addWidget(splitter)
        self.table.selectionModel().currentRowChanged.connect(lambda cur, _prev: self._show(cur.row()))
        model.dataChanged.connect(lambda *_: self._show(self.table.currentIndex().row()))
        model.modelReset.connect(self.detail.clear)  # another thread: the last one's value goes
        self.setFocusProxy(self.table)

    def _show(self, row: int) -> None:
        if row < 0 or row >= self.model.rowCount():
            self.detail.clear()
            return
        entry = self.model.entries[row]
        c = theme.colors()
        parts = [f"<h3 style='margin:0'>{markdown._esc(entry.key)}</h3>",
                 f"<p style='color:{c.muted}; margin-top:2px'>written by {markdown._esc(entry.writer or 'unknown')} "
                 f"at {time.strftime('%H:%M:%S', time.localtime(entry.ts))}</p>",
                 markdown.readable_html(entry.value) if not isinstance(entry.value, str) else _pre(entry.value)]
        if len(entry.history) > 1:
            parts.append(f"<p style='margin-top:10px'><b>History</b> ({len(entry.history)} changes, newest first)</p>")
            for ts, writer, value, _previous in reversed(entry.history):
                stamp = time.strftime("%H:%M:%S", time.localtime(ts))
                parts.append(f"<p style='color:{c.muted}; margin:6px 0 2px 0'>{stamp} · {markdown._esc(writer or '?')}"
                             "</p>" + _pre(pretty(value)[:4000], "json" if not isinstance(value, str) else None))
        self.detail.setHtml("".join(parts))


#: The Tool calls pane's detail tabs, in order (each view is made on first use).
_TAB_TITLES = ("Arguments", "Result", "Output", "Raw", "Diff")
_ARGS, _RESULT, _OUTPUT, _RAW, _DIFF = range(len(_TAB_TITLES))
_PLACEHOLDERS = {_ARGS: "Select a call to see its arguments.", _RESULT: "Select a call to see its result.",
                 _DIFF: "Ctrl+click two calls, then Diff two results."}


class _OutputPage:
    """The Output tab's contents: a pager (which part of a long output shows; Earlier / Later) over the view."""

    def __init__(self, page: QWidget, layout: QVBoxLayout, page_to: Callable[[int], None]) -> None:
        self.pager = QWidget(page)
        pager = QHBoxLayout(self.pager)
        pager.setContentsMargins(4, 2, 4, 0)
        self.part = ElidedLabel("", self.pager, tooltip=True)
        self.part.setObjectName("Muted")
        pager.addWidget(self.part, 1)
        self.earlier = QPushButton("Earlier", self.pager)
        self.earlier.setToolTip(f"Show the {OUTPUT_PAGE:,} characters before these")
        self.earlier.clicked.connect(lambda: page_to(-1))
        pager.addWidget(self.earlier)
        self.later = QPushButton("Later", self.pager)
        self.later.setToolTip(f"Show the {OUTPUT_PAGE:,} characters after these")
        self.later.clicked.connect(lambda: page_to(1))
        pager.addWidget(self.later)
        self.pager.setVisible(False)
        layout.addWidget(self.pager)
        self.view = QPlainTextEdit(page)  # plain text: laid out several times faster than rich
        self.view.setReadOnly(True)
        self.view.setUndoRedoEnabled(False)  # a part shown replaces the last: no history of them
        self.view.setObjectName("ToolCallOutput")
        self.view.setFont(theme.mono_font())
        self.view.setPlaceholderText("What a command printed while it ran (run_command's output).")
        layout.addWidget(self.view, 1)
        self.view.show()  # at once when the tab shows


class CompareWindow(Protocol):
    """Opens two texts side by side in a window of their own (the change review's compare window)."""

    def __call__(self, old: str, new: str, *, name: str, title: str,
                 parent: QWidget | None = None) -> QWidget: ...


class ToolCallsPane(QWidget, StagedBuild):
    """Call/result pairs by id; highlighted arguments and result, raw payload, diff of two results."""

    def __init__(self, model: ToolCallsModel, parent: QWidget | None = None, *,
                 compare: CompareWindow | None = None, staged: bool = False) -> None:
        """``staged``: made in parts, the buttons now, then the table, then the detail tabs, each by
        :meth:`build_steps` (a start-up step each: whole, the pane and Qt's polish and layout of it held the window
        more than a frame); else whole."""
        super().__init__(parent)
        self.setObjectName("InspectorPane")
        self.setMinimumWidth(PANE_MIN_WIDTH)
        self.model = model
        #: Opens two texts side by side (the review's compare window, given by the window): None hides "Side by side…".
        self._compare = compare
        self._start_build(staged=staged)

    def _construct(self) -> Iterator[None]:
        model, compare = self.model, self._compare
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.setSpacing(6)
        #: Whose calls these are when not the open thread's (a comparison's candidate): hidden otherwise.
        self.source = ElidedLabel("", self, tooltip=True)
        self.source.setObjectName("ToolCallsSource")
        self.source.setStyleSheet("#ToolCallsSource { font-weight: bold; }")
        self.source.setVisible(False)
        layout.addWidget(self.source)
        bar = QHBoxLayout()
        self.count = ElidedLabel("", self, tooltip=True)
        self.count.setObjectName("Muted")
        bar.addWidget(self.count, 1)
        self.diff_button = QPushButton("Diff", self)
        self.diff_button.setToolTip("Select two calls (Ctrl+click) and compare their results")
        self.diff_button.setIcon(theme.icon("diff", theme.colors().muted, 16))
        self.diff_button.clicked.connect(self.show_diff)
        bar.addWidget(self.diff_button)
        self.compare_button = QPushButton("Side by side…", self)
        self.compare_button.setToolTip("Open the two selected results in the review view (side by side, highlighted)")
        self.compare_button.clicked.connect(self.compare_results)
        self.compare_button.setVisible(compare is not None)
        bar.addWidget(self.compare_button)
        layout.addLayout(bar)
        yield
        splitter = QSplitter(Qt.Orientation.Vertical, self)
        self.table = _table(model, splitter)
        self.table.setAccessibleName("Tool calls")
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        header = self.table.horizontalHeader()
        header.setStretchLastSection(False)
        # Widths from the shapes of the contents (sizing to contents measures every row on every change):
        # the Tool column takes the rest, but never less than TOOL_MIN_WIDTH (the table scrolls instead).
        for col in range(model.columnCount()):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
        fm = self.table.fontMetrics()
        pad = 2 * (self.table.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, self.table) + 1) + 12
        for col, sample in ((1, "Server"), (2, "assistant"), (3, "approval"), (4, "1 min 30 s")):
            title = str(model.headerData(col, Qt.Orientation.Horizontal) or "")
            header.resizeSection(col, max(fm.horizontalAdvance(sample), header.fontMetrics().horizontalAdvance(title)
                                          + 8) + pad)
        self._tool_column = FirstColumnFill(self.table, self.TOOL_MIN_WIDTH)
        splitter.addWidget(self.table)
        layout.addWidget(splitter, 1)
        yield
        self.tabs = QTabWidget(splitter)
        self.tabs.setDocumentMode(True)
        # Each tab's page is an empty holder; its view is made when the tab is first picked or shown, or when code
        # asks for it (args_view, output_view, ...): start-up makes only the tab bar and the current tab's view.
        #: The Output tab's page (the holder its pager and view are made in).
        self.output_tab = QWidget(self.tabs)
        self._pages: list[QWidget] = []  # each tab's page, and its layout, by tab
        self._holders: list[QVBoxLayout] = []
        for index, title in enumerate(_TAB_TITLES):
            page = self.output_tab if index == _OUTPUT else QWidget(self.tabs)
            holder = QVBoxLayout(page)
            self._pages.append(page)
            self._holders.append(holder)
            holder.setContentsMargins(0, 0, 0, 0)
            holder.setSpacing(4)
            self.tabs.addTab(page, title)
        self._views: dict[int, QTextBrowser] = {}  # the text tabs' views made so far, by tab
        self._feeder: PieceFeeder | None = None  # the Result tab's, once it shows a result
        self._output: _OutputPage | None = None
        #: The call whose output is shown, and the part shown: (start, end) in its output; None follows the end.
        self._output_call: tuple[str, str] | None = None
        self._output_part: tuple[int, int] | None = None
        self.tabs.currentChanged.connect(self._make_tab)
        splitter.addWidget(self.tabs)
        splitter.setSizes([200, 260])
        self.table.selectionModel().currentRowChanged.connect(lambda cur, _prev: self._show(cur.row()))
        self.table.selectionModel().selectionChanged.connect(lambda *_: self._update_buttons())
        model.rowsInserted.connect(lambda *_: self._update_count())
        model.modelReset.connect(self._update_count)
        model.dataChanged.connect(lambda *_: self._update_count())  # a call failed after its row came
        # a call that changed shows on the next turn of the loop: the changes of one turn (a result, the call's
        # status) are shown once, and not in the same turn as the chat's own work on them
        self._show_timer = QTimer(self)
        self._show_timer.setSingleShot(True)
        self._show_timer.setInterval(0)
        self._show_timer.timeout.connect(lambda: self._show(self.table.currentIndex().row()))
        model.dataChanged.connect(lambda *_: self._show_timer.start())
        model.modelReset.connect(self._clear_detail)  # another thread: the last one's call goes
        self.setFocusProxy(self.table)
        self._update_count()
        self._update_buttons()
        yield  # (the pane is whole: what made it in steps goes on in a step of its own)

    # -- the detail tabs' views, made on first use ------------------------------------------------------------
    def _make_tab(self, index: int) -> None:
        """Make tab ``index``'s view if it is not made yet, showing the current call."""
        if index == _OUTPUT:
            self._output_page()
        elif index >= 0:  # -1: no tab
            self._view(index)

    def _view(self, index: int) -> QTextBrowser:
        view = self._views.get(index)
        if view is None:
            view = self._views[index] = _detail(self._pages[index])
            if index in _PLACEHOLDERS:
                view.setPlaceholderText(_PLACEHOLDERS[index])
            self._holders[index].addWidget(view)
            view.show()  # at once when its tab shows (a layout shows a new child on the next turn of the loop)
            rec = self._current()
            if rec is not None and index != _DIFF:  # the diff shows only when asked for
                self._fill(index, rec)
        return view

    def _output_page(self) -> _OutputPage:
        if self._output is None:
            self._output = _OutputPage(self.output_tab, self._holders[_OUTPUT], self._page_output)
            rec = self._current()
            if rec is not None:
                self._show_output(rec)
        return self._output

    @property
    def args_view(self) -> QTextBrowser:
        return self._view(_ARGS)

    @property
    def result_view(self) -> QTextBrowser:
        return self._view(_RESULT)

    @property
    def raw_view(self) -> QTextBrowser:
        return self._view(_RAW)

    @property
    def diff_view(self) -> QTextBrowser:
        return self._view(_DIFF)

    @property
    def output_view(self) -> QPlainTextEdit:
        return self._output_page().view

    @property
    def output_pager(self) -> QWidget:
        return self._output_page().pager

    @property
    def output_part(self) -> ElidedLabel:
        return self._output_page().part

    @property
    def output_earlier(self) -> QPushButton:
        return self._output_page().earlier

    @property
    def output_later(self) -> QPushButton:
        return self._output_page().later

    def showEvent(self, event: QShowEvent) -> None:
        self._make_tab(self.tabs.currentIndex())  # the tab that shows: its view made now
        super().showEvent(event)

    def set_source(self, text: str | None) -> None:
        """Say whose calls the pane shows (``text``: a comparison's candidate), or nothing (None: the open thread's)."""
        self.source.setText(text or "")
        self.source.setAccessibleName(text or "")
        self.source.setVisible(bool(text))

    def _result_feeder(self, view: QTextBrowser) -> PieceFeeder:
        """What shows a result in the Result tab's ``view`` a piece at a time."""
        if self._feeder is None:
            self._feeder = PieceFeeder(view)
        return self._feeder

    @property
    def result_pending(self) -> bool:
        """The selected call's result is still coming in (a piece a turn of the event loop)."""
        return self._feeder is not None and self._feeder.pending

    def _clear_detail(self) -> None:
        if self._feeder is not None:
            self._feeder.stop()
        for view in self._views.values():
            view.clear()
        self._output_call = self._output_part = None
        if self._output is not None:
            self._output.view.clear()
            self._output.pager.setVisible(False)

    TOOL_MIN_WIDTH = 110

    def retheme(self) -> None:
        self.diff_button.setIcon(theme.icon("diff", theme.colors().muted, 16))
        self._show(self.table.currentIndex().row())

    def _update_count(self) -> None:
        n = self.model.rowCount()
        errors = self.model.failed_count
        self.count.setText(f"{n} call{'s' if n != 1 else ''}" + (f" · {errors} failed" if errors else ""))

    def _update_buttons(self) -> None:
        two = len(self.table.selectionModel().selectedRows()) == 2
        self.diff_button.setEnabled(two)
        self.compare_button.setEnabled(two)

    def select_call(self, call_id: str, run_id: str | None = None) -> None:
        """Select the call ``call_id`` (of run ``run_id``; ids repeat across runs: the latest when None)."""
        records = self.model.records
        for row in reversed(range(len(records))):
            rec = records[row]
            if rec.id == call_id and (run_id is None or rec.run_id == run_id):
                self.table.selectionModel().setCurrentIndex(
                    self.model.index(row, 0),
                    QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)
                return

    def _current(self) -> ToolCallRecord | None:
        row = self.table.currentIndex().row()
        return self.model.record(row) if 0 <= row < self.model.rowCount() else None

    def _show(self, row: int) -> None:
        if row < 0 or row >= self.model.rowCount():
            return
        rec: ToolCallRecord = self.model.record(row)
        for index in self._views:  # only the views made so far: the others show the call when made
            if index != _DIFF:
                self._fill(index, rec)
        if self._output_call != (rec.run_id, rec.id):
            self._output_call, self._output_part = (rec.run_id, rec.id), None
        if self._output is not None:
            self._show_output(rec)

    def _fill(self, index: int, rec: ToolCallRecord) -> None:
        """Show the call ``rec`` in the text tab ``index`` (Arguments, Result or Raw)."""
        view = self._views[index]
        if index == _RESULT:
            self._result_feeder(view).stop()  # (what it showed before)
        if index == _RAW:
            view.setHtml(markdown.readable_html(rec.raw_json()))
            return
        c = theme.colors()
        head = (f"<p style='margin:0 0 6px 0'><b>{markdown._esc(rec.display_name)}</b> "
                f"<span style='color:{c.muted}'>· {markdown._esc(rec.robot)} · {markdown._esc(rec.status)}"
                f"{' · ' + format_duration(rec.duration) if rec.duration is not None else ''} · id "
                f"{markdown._esc(rec.id)}</span></p>")
        if index == _ARGS:
            view.setHtml(head + markdown.readable_html(rec.input))
        elif rec.status in ("running", "approval"):
            view.setHtml(head + f"<p style='color:{c.muted}'>No result yet.</p>")
        elif rec.failed:
            reason = f"<p><b>Reason:</b> {markdown._esc(rec.reason)}</p>" if rec.reason else ""
            view.setHtml(head + f"<p style='color:{c.error}'><b>Error</b></p>" + reason + _value_html(rec.error))
        else:
            # a big result comes in steps (a piece a turn of the loop: laid out whole, 50 KB held the window
            # 50-90 ms), the head with its first piece
            payload = rec.payload
            value = payload["data"] if isinstance(payload, dict) and set(payload) == {"data"} else payload
            pieces = markdown.value_pieces(value, lines=markdown.PIECE_LINES)
            first = next(pieces, markdown.Piece(""))
            view.clear()
            self._result_feeder(view).start(itertools.chain([first._replace(html=head + first.html)], pieces))

    def _show_output(self, rec: ToolCallRecord) -> None:
        """One part of the call's output, at most :data:`OUTPUT_PAGE` characters (the end unless the person
        paged back): a long output is never joined or laid out whole."""
        length = rec.output_length
        start, end = self._output_part or output_part(rec, length, backwards=True)
        page = self._output_page()
        # its colours, other escapes dropped: the part read from the colour state where it starts, in one edit
        show_styled(page.view.document(), rec.output_styled(start, end))
        page.pager.setVisible(start > 0 or end < length)
        page.part.setText(f"Characters {start + 1:,}–{end:,} of {length:,}")
        page.earlier.setEnabled(start > 0)
        page.later.setEnabled(end < length)

    def _page_output(self, step: int) -> None:
        row = self.table.currentIndex().row()
        if row < 0 or row >= self.model.rowCount():
            return
        rec = self.model.record(row)
        start, end = self._output_part or output_part(rec, rec.output_length, backwards=True)
        if step < 0:
            self._output_part = output_part(rec, start, backwards=True)
        else:
            part = output_part(rec, end, backwards=False)
            self._output_part = None if part[1] >= rec.output_length else part  # the last part follows the end
        self._show_output(rec)

    def show_diff(self) -> None:
        rows = sorted(index.row() for index in self.table.selectionModel().selectedRows())
        if len(rows) != 2:
            self.diff_view.setHtml("<p>Select exactly two calls (Ctrl+click) to compare their results.</p>")
        else:
            a, b = (self.model.record(r) for r in rows)
            self.diff_view.setHtml(_pre(diff_results(a, b), "diff"))
        self.tabs.setCurrentIndex(_DIFF)

    def compare_results(self) -> QWidget | None:
        """The two selected results in the change review's view (a window, side by side)."""
        rows = sorted(index.row() for index in self.table.selectionModel().selectedRows())
        if len(rows) != 2 or self._compare is None:
            return None
        a, b = (self.model.record(r) for r in rows)
        window = self._compare(markdown.to_json_text(a.result_value), markdown.to_json_text(b.result_value),
                               name="result.json", title=f"{a.display_name} ({a.id}) vs {b.display_name} ({b.id})",
                               parent=self.window())
        window.show()
        return window


# -- the docks' factories (ui.window.docks.DOCKS names them) ------------------------------------------------
def make_tool_calls(context: DockContext) -> ToolCallsPane:
    return ToolCallsPane(context.tool_model, context.parent, compare=context.compare, staged=True)


def make_memory(context: DockContext) -> MemoryPane:
    return MemoryPane(context.memory_model, context.parent, learnt=context.services.session)
