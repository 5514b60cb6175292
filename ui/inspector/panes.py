"""Inspector panes: Memory, Tool calls, Trace. Each is a plain widget over its Qt model;
the main window puts each in a dock (see :meth:`ui.window.docks.Docks.register`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import QAbstractItemModel, QEvent, QItemSelectionModel, QModelIndex, QObject, Qt, QTimer
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QStyle,
    QTableView,
    QTabWidget,
    QTextBrowser,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from ui import markdown, theme
from ui.formatting import format_duration
from ui.inspector.learnt import LearntSection, LearntSource
from ui.inspector.memory import MemoryModel, pretty
from ui.inspector.tool_calls import ToolCallRecord, ToolCallsModel, diff_results
from ui.inspector.trace import TraceFilterModel, TraceModel, raw_event_json
from ui.inspector.trace_tree import TraceNode, TraceTree
from ui.inspector.trace_view import Rerun, RerunDialog, TraceTreeFilter, TraceTreeModel, node_json
from ui.widgets.ansi_text import show_styled
from ui.widgets.common import ElidedLabel, name_line_edit_buttons
from workspace import events as ev

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


class CompareWindow(Protocol):
    """Opens two texts side by side in a window of their own (the change review's compare window)."""

    def __call__(self, old: str, new: str, *, name: str, title: str,
                 parent: QWidget | None = None) -> QWidget: ...


class ToolCallsPane(QWidget):
    """Call/result pairs by id; highlighted arguments and result, raw payload, diff of two results."""

    def __init__(self, model: ToolCallsModel, parent: QWidget | None = None, *,
                 compare: CompareWindow | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("InspectorPane")
        self.setMinimumWidth(PANE_MIN_WIDTH)
        self.model = model
        #: Opens two texts side by side (the review's compare window, given by the window): None hides "Side by side…".
        self._compare = compare
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.setSpacing(6)
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
        self.table.viewport().installEventFilter(self)
        self._fit_tool_column()
        self.tabs = QTabWidget(splitter)
        self.tabs.setDocumentMode(True)
        self.args_view = _detail(self.tabs)
        self.result_view = _detail(self.tabs)
        self.raw_view = _detail(self.tabs)
        self.diff_view = _detail(self.tabs)
        self.output_tab = QWidget(self.tabs)
        output_layout = QVBoxLayout(self.output_tab)
        output_layout.setContentsMargins(0, 0, 0, 0)
        output_layout.setSpacing(4)
        self.output_pager = QWidget(self.output_tab)
        pager = QHBoxLayout(self.output_pager)
        pager.setContentsMargins(4, 2, 4, 0)
        self.output_part = ElidedLabel("", self.output_pager, tooltip=True)
        self.output_part.setObjectName("Muted")
        pager.addWidget(self.output_part, 1)
        self.output_earlier = QPushButton("Earlier", self.output_pager)
        self.output_earlier.setToolTip(f"Show the {OUTPUT_PAGE:,} characters before these")
        self.output_earlier.clicked.connect(lambda: self._page_output(-1))
        pager.addWidget(self.output_earlier)
        self.output_later = QPushButton("Later", self.output_pager)
        self.output_later.setToolTip(f"Show the {OUTPUT_PAGE:,} characters after these")
        self.output_later.clicked.connect(lambda: self._page_output(1))
        pager.addWidget(self.output_later)
        self.output_pager.setVisible(False)
        output_layout.addWidget(self.output_pager)
        self.output_view = QPlainTextEdit(self.output_tab)  # plain text: laid out several times faster than rich
        self.output_view.setReadOnly(True)
        self.output_view.setUndoRedoEnabled(False)  # a part shown replaces the last: no history of them
        self.output_view.setObjectName("ToolCallOutput")
        self.output_view.setFont(theme.mono_font())
        self.output_view.setPlaceholderText("What a command printed while it ran (run_command's output).")
        output_layout.addWidget(self.output_view, 1)
        #: The call whose output is shown, and the part shown: (start, end) in its output; None follows the end.
        self._output_call: tuple[str, str] | None = None
        self._output_part: tuple[int, int] | None = None
        self.args_view.setPlaceholderText("Select a call to see its arguments.")
        self.result_view.setPlaceholderText("Select a call to see its result.")
        self.diff_view.setPlaceholderText("Ctrl+click two calls, then Diff two results.")
        self.tabs.addTab(self.args_view, "Arguments")
        self.tabs.addTab(self.result_view, "Result")
        self.tabs.addTab(self.output_tab, "Output")
        self.tabs.addTab(self.raw_view, "Raw")
        self.tabs.addTab(self.diff_view, "Diff")
        splitter.addWidget(self.table)
        splitter.addWidget(self.tabs)
        splitter.setSizes([200, 260])
        layout.addWidget(splitter, 1)
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

    def _clear_detail(self) -> None:
        for view in (self.args_view, self.result_view, self.raw_view, self.diff_view, self.output_view):
            view.clear()
        self._output_call = self._output_part = None
        self.output_pager.setVisible(False)

    TOOL_MIN_WIDTH = 110

    def _fit_tool_column(self) -> None:
        """The Tool column fills the table's width (at least TOOL_MIN_WIDTH; the table scrolls below)."""
        header = self.table.horizontalHeader()
        others = sum(header.sectionSize(col) for col in range(1, self.model.columnCount()))
        header.resizeSection(0, max(self.TOOL_MIN_WIDTH, self.table.viewport().width() - others))

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if obj is self.table.viewport() and event.type() == QEvent.Type.Resize:
            self._fit_tool_column()
        return super().eventFilter(obj, event)

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

    def _show(self, row: int) -> None:
        if row < 0 or row >= self.model.rowCount():
            return
        rec: ToolCallRecord = self.model.record(row)
        c = theme.colors()
        head = (f"<p style='margin:0 0 6px 0'><b>{markdown._esc(rec.display_name)}</b> "
                f"<span style='color:{c.muted}'>· {markdown._esc(rec.robot)} · {markdown._esc(rec.status)}"
                f"{' · ' + format_duration(rec.duration) if rec.duration is not None else ''} · id "
                f"{markdown._esc(rec.id)}</span></p>")
        self.args_view.setHtml(head + markdown.readable_html(rec.input))
        if rec.status in ("running", "approval"):
            self.result_view.setHtml(head + f"<p style='color:{c.muted}'>No result yet.</p>")
        elif rec.failed:
            reason = f"<p><b>Reason:</b> {markdown._esc(rec.reason)}</p>" if rec.reason else ""
            self.result_view.setHtml(head + f"<p style='color:{c.error}'><b>Error</b></p>" + reason
                                     + _value_html(rec.error))
        else:
            payload = rec.payload
            value = payload["data"] if isinstance(payload, dict) and set(payload) == {"data"} else payload
            self.result_view.setHtml(head + _value_html(value))
        self.raw_view.setHtml(markdown.readable_html(rec.raw_json()))
        if self._output_call != (rec.run_id, rec.id):
            self._output_call, self._output_part = (rec.run_id, rec.id), None
        self._show_output(rec)

    def _show_output(self, rec: ToolCallRecord) -> None:
        """One part of the call's output, at most :data:`OUTPUT_PAGE` characters (the end unless the person
        paged back): a long output is never joined or laid out whole."""
        length = rec.output_length
        start, end = self._output_part or output_part(rec, length, backwards=True)
        # its colours, other escapes dropped: the part read from the colour state where it starts, in one edit
        show_styled(self.output_view.document(), rec.output_styled(start, end))
        self.output_pager.setVisible(start > 0 or end < length)
        self.output_part.setText(f"Characters {start + 1:,}–{end:,} of {length:,}")
        self.output_earlier.setEnabled(start > 0)
        self.output_later.setEnabled(end < length)

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
        self.tabs.setCurrentWidget(self.diff_view)

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


class TracePane(QWidget):
    """The thread's trace: a tree of its runs, model calls and tool calls (times, tokens, cost), searchable
    and exportable, with "Run again" on a tool call; and the raw event stream, filterable by kind and text.
    One click shows a node's or an event's JSON."""

    ALL = "All events"
    NO_DELTAS = "All but text deltas"
    #: How long live events wait to be added to the tree together (a run streams many small batches).
    TREE_DELAY_MS = 250
    #: Up to this many events the tree is built at once; more are built in slices of at most
    #: BUILD_SLICE_SECONDS between the event loop's other work (the window stays responsive; the tree shows
    #: when built, with the events that came meanwhile).
    SYNC_TREE_EVENTS = 300
    BUILD_SLICE_SECONDS = 0.008

    def __init__(self, model: TraceModel, parent: QWidget | None = None, *, rerun: Rerun | None = None,
                 fork: Fork | None = None, compare: Callable[..., QWidget] | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("InspectorPane")
        self.setMinimumWidth(PANE_MIN_WIDTH)
        self.model = model
        self._rerun = rerun
        self._fork = fork
        self._compare = compare
        self.proxy = TraceFilterModel(self)
        self.proxy.setSourceModel(model)
        self.tree_model = TraceTreeModel(self)
        self.tree_proxy = TraceTreeFilter(self)
        self.tree_proxy.setSourceModel(self.tree_model)
        self._pending: list[ev.Event] = []
        self._tree_timer = QTimer(self)
        self._tree_timer.setSingleShot(True)
        self._tree_timer.setInterval(self.TREE_DELAY_MS)
        self._tree_timer.timeout.connect(self.flush_tree)
        self._building: tuple[TraceTree, list[ev.Event], int] | None = None
        self._build_timer = QTimer(self)
        self._build_timer.setInterval(0)
        self._build_timer.timeout.connect(self._build_slice)
        self.rerun_dialog: RerunDialog | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.setSpacing(6)
        bar = QHBoxLayout()
        self.kind = QComboBox(self)
        self.kind.setAccessibleName("Which events")
        self.kind.addItems([self.NO_DELTAS, self.ALL])
        self.kind.currentTextChanged.connect(self._on_kind)
        self.kind.view().pressed.connect(lambda *_: None)
        bar.addWidget(self.kind)
        self.filter = QLineEdit(self)
        self.filter.setAccessibleName("Search the trace")
        self.filter.setPlaceholderText("Search the trace…")
        self.filter.setClearButtonEnabled(True)
        name_line_edit_buttons(self.filter, clear="Clear the search")
        self.filter.textChanged.connect(self._on_filter)
        bar.addWidget(self.filter, 1)
        self.export_button = QPushButton("Export trace…", self)
        self.export_button.setToolTip("Save the trace tree as JSON (secrets masked)")
        self.export_button.clicked.connect(self.export_trace)
        bar.addWidget(self.export_button)
        layout.addLayout(bar)
        splitter = QSplitter(Qt.Orientation.Vertical, self)
        self.views = QTabWidget(splitter)
        self.views.setDocumentMode(True)
        self.tree = QTreeView(self.views)
        self.tree.setAccessibleName("Trace tree")
        # The tree's own model while nothing is searched (a filter over thousands of nodes maps them all);
        # the filter in front of it while a search is on.
        self.tree.setModel(self.tree_model)
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        self.tree.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._tree_menu)
        self.tree.doubleClicked.connect(self._tree_activated)
        tree_header = self.tree.header()
        tree_header.setStretchLastSection(False)
        tree_header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        # Sized to known shapes, not measured over every node: "12.3 s", "123,456 → 12,345", "$0.0123".
        fm = self.tree.fontMetrics()
        for col, sample in ((1, "00.0 min"), (2, "000,000 → 00,000"), (3, "$0.0000")):
            tree_header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
            tree_header.resizeSection(col, fm.horizontalAdvance(sample) + 16)
        self.views.addTab(self.tree, "Tree")
        self.table = _table(self.proxy, self.views)
        self.table.setAccessibleName("Events")
        self.views.addTab(self.table, "Events")
        header = self.table.horizontalHeader()
        header.setStretchLastSection(True)
        # Sized to their contents, which have known shapes (measuring thousands of rows on every batch
        # would be slow): sequence numbers, "HH:MM:SS.mmm", the longest event kind; the user can resize.
        for col in range(4):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
        self.size_columns()
        self.detail = _detail(splitter)
        self.detail.setPlaceholderText("Select a step or an event to see its JSON.")
        splitter.addWidget(self.views)
        splitter.addWidget(self.detail)
        splitter.setSizes([300, 160])
        layout.addWidget(splitter, 1)
        self.table.selectionModel().currentRowChanged.connect(self._show)
        self._connect_tree_selection()
        self.views.currentChanged.connect(lambda _i: self.kind.setVisible(self.views.currentWidget() is self.table))
        self.kind.setVisible(False)
        self._stick = True
        bar_ = self.table.verticalScrollBar()
        bar_.valueChanged.connect(lambda v: setattr(self, "_stick", v >= bar_.maximum() - 4))
        bar_.rangeChanged.connect(lambda _lo, hi: bar_.setValue(hi) if self._stick else None)
        model.rowsInserted.connect(self._refresh_kinds)
        model.rowsInserted.connect(self._rows_added)
        model.modelReset.connect(self._refresh_kinds)
        model.modelReset.connect(self._events_reset)
        model.modelReset.connect(self.detail.clear)
        self.setFocusProxy(self.views)
        self._on_kind(self.kind.currentText())
        if model.rowCount():
            self._events_reset()

    # -- the tree ---------------------------------------------------------------------------------------
    def _connect_tree_selection(self) -> None:
        self.tree.selectionModel().currentRowChanged.connect(self._show_node)

    def _searching(self) -> bool:
        return self.tree.model() is self.tree_proxy

    def _events_reset(self) -> None:
        self._pending.clear()
        self._tree_timer.stop()
        self._build_timer.stop()
        events = self.model.events
        self._building = None
        if len(events) <= self.SYNC_TREE_EVENTS:
            self.tree_model.set_events(events)
            self._open_last_run()
            return
        self.tree_model.set_tree(TraceTree())
        self._building = (TraceTree(), events, 0)
        self._build_timer.start()

    def _build_slice(self) -> None:
        """Build the next part of a long thread's tree, for at most BUILD_SLICE_SECONDS (then the loop turns)."""
        if self._building is None:
            self._build_timer.stop()
            return
        tree, events, at = self._building
        deadline = time.perf_counter() + self.BUILD_SLICE_SECONDS
        while at < len(events) and time.perf_counter() < deadline:
            tree.extend(events[at:at + 50])
            at += 50
        if at < len(events):
            self._building = (tree, events, at)
            return
        self._build_timer.stop()
        self._building = None
        tree.extend(self._pending)
        self._pending = []
        self.tree_model.set_tree(tree)
        self._open_last_run()

    @property
    def building(self) -> bool:
        """Whether a long thread's tree is still being built (in slices, between the loop's other work)."""
        return self._building is not None

    def _open_last_run(self) -> None:
        roots = self.tree_model.tree.roots
        if roots:  # the last run open: what a person looks at first
            self.tree.expand(self._view_index(roots[-1]))

    def _rows_added(self, _parent: QModelIndex, first: int, last: int) -> None:
        self._pending.extend(self.model.event_at(row) for row in range(first, last + 1))
        if not self._tree_timer.isActive():
            self._tree_timer.start()

    def flush_tree(self) -> None:
        """Add the live events that wait to the tree (their expanded nodes stay expanded)."""
        self._tree_timer.stop()
        if not self._pending or self._building is not None:
            return
        events, self._pending = self._pending, []
        self.tree_model.append_events(events)

    def _view_index(self, node: TraceNode, column: int = 0) -> QModelIndex:
        index = self.tree_model.createIndex(node.pos, column, node)
        return self.tree_proxy.mapFromSource(index) if self._searching() else index

    def node_at(self, index: QModelIndex) -> TraceNode | None:
        if not index.isValid():
            return None
        return self.tree_model.node(self.tree_proxy.mapToSource(index) if self._searching() else index)

    def find_nodes(self, kind: str) -> list[TraceNode]:
        return [n for n in self.tree_model.tree.walk() if n.kind == kind]

    def select_node(self, node: TraceNode) -> None:
        index = self._view_index(node)
        self.tree.scrollTo(index)
        self.tree.selectionModel().setCurrentIndex(
            index, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)

    def _show_node(self, current: QModelIndex, _previous: QModelIndex | None = None) -> None:
        node = self.node_at(current)
        if node is not None:
            self.detail.setHtml(markdown.readable_html(node_json(node)))

    def _tree_menu(self, pos: Any) -> None:
        node = self.node_at(self.tree.indexAt(pos))
        if node is None:
            return
        menu = QMenu(self)
        if node.kind == "tool_call" and self._rerun is not None:
            menu.addAction("Run again…", lambda: self.run_again(node))
        if self.can_fork(node):
            action = menu.addAction("Fork this turn with another model…", lambda: self.fork_from(node))
            action.setToolTip("A new branch from this turn's message, answered by the model you choose "
                              "(a thread branches at a message, not inside a turn)")
        menu.addAction("Copy as JSON", lambda: QApplication.clipboard().setText(node_json(node)))
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        menu.popup(self.tree.viewport().mapToGlobal(pos))  # not exec(): never a nested event loop

    def _tree_activated(self, index: QModelIndex) -> None:
        node = self.node_at(index)
        if node is not None and node.kind == "tool_call" and self._rerun is not None:
            self.run_again(node)

    def run_again(self, node: TraceNode) -> RerunDialog | None:
        """The "Run again" dialog of tool call ``node`` (None: this trace cannot run calls again)."""
        if self._rerun is None or node.kind != "tool_call":
            return None
        if self.rerun_dialog is not None:
            self.rerun_dialog.close()
        dialog = self.rerun_dialog = RerunDialog(node, self._rerun, self.window(), compare=self._compare)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.destroyed.connect(lambda *_: setattr(self, "rerun_dialog", None))
        dialog.show()
        return dialog

    def can_fork(self, node: TraceNode) -> bool:
        """Whether ``node`` is a model call of a turn's own run (a thread branches at a turn's message)."""
        return (self._fork is not None and node.kind == "model_call" and node.parent is not None
                and node.parent.parent is None)

    def fork_from(self, node: TraceNode, model: str | None = None) -> bool:
        """A new branch from the turn of model call ``node``, with ``model`` (None: ask which, in a small
        dialog that forks when accepted)."""
        if self._fork is None or not self.can_fork(node):
            return False
        if model is None:
            from PySide6.QtWidgets import QInputDialog

            ask = QInputDialog(self)
            ask.setWindowTitle("Fork this turn")
            ask.setLabelText("The model to answer this turn's message again, in a new branch:")
            ask.setTextValue(node.label.split(" · ", 1)[1] if " · " in node.label else "")  # the model that answered
            ask.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            ask.textValueSelected.connect(lambda text: self.fork_from(node, text) if text.strip() else None)
            ask.open()  # not exec(): never a nested event loop
            return False
        return bool(self._fork(node.run_id, model.strip()))

    def export_trace(self, path: str | None = None) -> str | None:
        """Save the trace tree as JSON (secrets masked) to ``path`` (None: ask where); the path, or None."""
        self.flush_tree()
        if path is None:
            from PySide6.QtWidgets import QFileDialog

            path, _ = QFileDialog.getSaveFileName(self, "Export trace", "trace.json", "JSON (*.json)")
            if not path:
                return None
        from pathlib import Path

        try:
            Path(path).write_text(self.tree_model.tree.to_json(), encoding="utf-8")
        except OSError as exc:
            self.detail.setPlainText(f"Could not write {path}: {exc.strerror or exc}; choose another place.")
            return None
        return path

    def _on_filter(self, text: str) -> None:
        self.proxy.set_text(text)
        self.tree_proxy.set_text(text)
        searching = bool(text.strip())
        if searching != self._searching():
            self.tree.setModel(self.tree_proxy if searching else self.tree_model)
            self._connect_tree_selection()
        if searching:
            self.tree.expandAll()

    # -- the events --------------------------------------------------------------------------------------
    def column_samples(self) -> list[str]:
        """The widest text each of the first four columns shows (seq, time, kind, robot)."""
        kinds = sorted(_known_kinds() | set(self.model.kinds()), key=len) or [ev.RunStarted.kind]
        return ["00000", "00:00:00.000", kinds[-1], "assistant"]

    def size_columns(self) -> None:
        """Make the seq, time, kind and robot columns wide enough for what they show."""
        header = self.table.horizontalHeader()
        fm = self.table.fontMetrics()
        header_fm = header.fontMetrics()
        margin = self.table.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, self.table)
        pad = 2 * (margin + 1) + 12  # the cell's text margins, and some air
        for col, sample in enumerate(self.column_samples()):
            title = str(self.model.headerData(col, Qt.Orientation.Horizontal) or "")
            width = max(fm.horizontalAdvance(sample), header_fm.horizontalAdvance(title) + 8) + pad
            header.resizeSection(col, width)

    def _refresh_kinds(self, *_: Any) -> None:
        current = self.kind.currentText()
        wanted = [self.NO_DELTAS, self.ALL, *self.model.kinds()]
        have = [self.kind.itemText(i) for i in range(self.kind.count())]
        if wanted != have:
            self.kind.blockSignals(True)
            self.kind.clear()
            self.kind.addItems(wanted)
            self.kind.setCurrentText(current if current in wanted else self.NO_DELTAS)
            self.kind.blockSignals(False)

    def _on_kind(self, text: str) -> None:
        if text == self.ALL or not text:
            self.proxy.set_kinds(None)
        elif text == self.NO_DELTAS:
            kinds = set(self.model.kinds()) | _known_kinds()
            kinds.discard(ev.TextDelta.kind)
            self.proxy.set_kinds(kinds)
        else:
            self.proxy.set_kinds({text})

    def _show(self, current: QModelIndex, _previous: QModelIndex | None = None) -> None:
        if not current.isValid():
            return
        source = self.proxy.mapToSource(current)
        event = self.model.event_at(source.row())
        self.detail.setHtml(markdown.readable_html(raw_event_json(event)))


def _known_kinds() -> set[str]:
    """Every event's name as the trace shows it (its serialised ``kind``)."""
    return set(ev.event_kinds())


# -- the docks' factories (ui.window.docks.DOCKS names them) ------------------------------------------------
def make_tool_calls(context: DockContext) -> ToolCallsPane:
    return ToolCallsPane(context.tool_model, context.parent, compare=context.compare)


def make_memory(context: DockContext) -> MemoryPane:
    return MemoryPane(context.memory_model, context.parent, learnt=context.services.session)


def make_trace(context: DockContext) -> TracePane:
    session = context.services.session
    return TracePane(context.trace_model, context.parent, rerun=thread_rerun(session), fork=thread_fork(session),
                     compare=context.compare)


#: "Fork this turn": the run's id (a turn's own run) and the model → whether the new branch started.
Fork = Callable[[str, str], bool]


def thread_fork(session: Any) -> Fork:
    """A new branch of the open thread from the turn of run ``run_id``, answered by ``model``: the thread's
    model is switched (recorded in the thread, as the composer's picker does) and the turn regenerated."""

    def fork(run_id: str, model: str) -> bool:
        thread = session.session
        if thread is None:
            session.problem.emit("Open the thread to fork it")
            return False
        if session.running:
            session.notice.emit("Stop the current run (Esc) first.")
            return False
        store = session.require_store()
        turn_id = next((turn for turn, event in store.thread_events(thread.thread_id)
                        if isinstance(event, ev.RunStarted) and event.run_id == run_id), None)
        if turn_id is None:
            session.problem.emit("That run is not a turn of the open thread: open its thread to fork it")
            return False
        try:
            thread.set_model(model)
        except Exception as exc:
            session.problem.emit(f"Could not switch the model to {model}: {exc}")
            return False
        return bool(session.regenerate(turn_id))

    return fork


def thread_rerun(session: Any) -> Rerun:
    """"Run again" in the open thread: the recorded call run with the thread's robot, through the
    workspace's approval (the person is asked in the chat as for any call), without the model."""

    async def rerun(call_id: str, arguments: dict[str, Any]) -> Any:
        from workspace.replay import ReplayError, rerun_call

        thread = session.session
        if thread is None:
            raise ReplayError("Open the thread whose call to run again")
        workspace = session.require_workspace()
        robot = thread.robot  # a network's thread says it has no robot of its own
        return await rerun_call(workspace.store, thread.thread_id, call_id, robot, arguments=arguments,
                                approval=workspace.approval, folder=workspace.folder)

    return rerun
