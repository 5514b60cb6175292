"""The Trace pane: a thread's trace as a tree (runs, model calls with their requests, tool calls; times, tokens,
cost), searchable and exportable (JSON, OTLP JSON, or sent to the configured OpenTelemetry endpoint), with "Run
again" on a tool call and "Fork this turn" on a model call; and the raw event stream, filterable by kind and text."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QItemSelectionModel, QModelIndex, Qt, QTimer
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QMenu,
    QPushButton,
    QSplitter,
    QStyle,
    QTabWidget,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from ui import markdown
from ui.inspector.panes import PANE_MIN_WIDTH, _detail, _table
from ui.inspector.trace import TraceFilterModel, TraceModel, raw_event_json
from ui.inspector.trace_tree import TraceNode, TraceTree
from ui.inspector.trace_view import Rerun, RerunDialog, TraceTreeFilter, TraceTreeModel, node_json
from ui.widgets.common import name_line_edit_buttons
from ui.widgets.first_column import FirstColumnFill
from workspace import events as ev
from workspace import tracing
from workspace.secrets import redact

if TYPE_CHECKING:
    from ui.services import DockContext


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
                 fork: Fork | None = None, compare: Callable[..., QWidget] | None = None,
                 otlp_endpoint: Callable[[], str | None] = tracing.export_endpoint) -> None:
        super().__init__(parent)
        #: Where "Send to OpenTelemetry" sends the trace (None: not configured, nothing is sent).
        self.otlp_endpoint = otlp_endpoint
        self.send_task: asyncio.Task[None] | None = None
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
        self.export_button.setToolTip("Save the trace as JSON or OTLP JSON, or send it to the OpenTelemetry endpoint "
                                      "configured (secrets masked)")
        export_menu = QMenu(self.export_button)
        export_menu.addAction("JSON (the tree)…", lambda: self.export_trace())
        export_menu.addAction("OTLP JSON (OpenTelemetry spans)…", lambda: self.export_otlp())
        self.send_action = export_menu.addAction("Send to OpenTelemetry", lambda: self.send_otlp())
        export_menu.aboutToShow.connect(self._name_endpoint)
        self.export_button.setMenu(export_menu)
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
        # Sized to known shapes, not measured over every node: "12.3 s", "123,456 → 12,345", "$0.0123".
        fm = self.tree.fontMetrics()
        for col, sample in ((1, "00.0 min"), (2, "000,000 → 00,000"), (3, "$0.0000")):
            tree_header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
            tree_header.resizeSection(col, fm.horizontalAdvance(sample) + 16)
        # The Step column takes the rest, never less than a step's name needs (the tree scrolls sideways).
        self._step_column = FirstColumnFill(self.tree, fm.horizontalAdvance("model call 00") + 48)
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
        self.tree_model.begin(TraceTree())
        self._building = (TraceTree(), events, 0)
        self._build_timer.start()

    def _build_slice(self) -> None:
        """Build the next part of a long thread's tree, for at most BUILD_SLICE_SECONDS (then the loop turns)."""
        if self._building is None:
            self._build_timer.stop()
            return
        tree, events, at = self._building
        deadline = time.perf_counter() + self.BUILD_SLICE_SECONDS
        if at < len(events):
            while at < len(events) and time.perf_counter() < deadline:
                tree.extend(events[at:at + 50])
                at = min(at + 50, len(events))
            self._building = (tree, events, at)
            if at < len(events):
                return
            self.tree_model.begin(tree)  # the tree is built: now its items, in slices too
        if not self.tree_model.build_step(deadline):
            return
        self._build_timer.stop()
        self._building = None
        if self._pending:  # what came meanwhile
            self.tree_model.append_events(self._pending)
            self._pending = []
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
        if self._searching():  # what the new events add and matches shows, with the path to it
            self.tree_proxy.set_text(self.filter.text())
            self.tree.expandAll()

    def _view_index(self, node: TraceNode, column: int = 0) -> QModelIndex:
        index = self.tree_model.index_of(node, column)
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

    def _name_endpoint(self) -> None:
        endpoint = self.otlp_endpoint()
        self.send_action.setEnabled(endpoint is not None)
        self.send_action.setText(f"Send to OpenTelemetry ({redact(endpoint)})" if endpoint else
                                 "Send to OpenTelemetry (set OTEL_EXPORTER_OTLP_ENDPOINT or tracing.endpoint)")

    def export_otlp(self, path: str | None = None) -> str | None:
        """Save the trace's spans as an OTLP JSON file (secrets masked) to ``path`` (None: ask where)."""
        if path is None:
            from PySide6.QtWidgets import QFileDialog

            path, _ = QFileDialog.getSaveFileName(self, "Export trace as OTLP JSON", "trace.otlp.json",
                                                  "OTLP JSON (*.json)")
            if not path:
                return None
        from pathlib import Path

        try:
            Path(path).write_text(tracing.otlp_json(self.model.events), encoding="utf-8")
        except OSError as exc:
            self.detail.setPlainText(f"Could not write {path}: {exc.strerror or exc}; choose another place.")
            return None
        return path

    def send_otlp(self) -> asyncio.Task[None] | None:
        """Send the trace's spans over OTLP/HTTP to the configured endpoint (off the window's loop); what came of it
        shows in the detail pane. None: no endpoint is configured, or a send is under way."""
        endpoint = self.otlp_endpoint()
        if endpoint is None:
            self.detail.setPlainText("No OpenTelemetry endpoint is configured: set OTEL_EXPORTER_OTLP_ENDPOINT "
                                     "(or tracing.endpoint in config.yaml) to send traces; nothing was sent.")
            return None
        if self.send_task is not None and not self.send_task.done():
            return None
        events = self.model.events
        self.detail.setPlainText(f"Sending the trace to {redact(endpoint)}…")

        async def send() -> None:
            try:
                count = await asyncio.to_thread(tracing.send_trace, events, endpoint=endpoint)
            except Exception as exc:
                self.detail.setPlainText(redact(str(exc)))
                return
            self.detail.setPlainText(f"Sent {count} spans to {redact(endpoint)}.")

        self.send_task = asyncio.get_running_loop().create_task(send(), name="trace-otlp-send")
        return self.send_task

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


# -- the dock's factory (ui.window.docks.DOCKS names it) ------------------------------------------------------
def make_trace(context: DockContext) -> TracePane:
    session = context.services.session

    def endpoint() -> str | None:
        try:
            config = context.services.config
        except Exception:  # no workspace yet: the environment alone
            config = None
        return tracing.export_endpoint(config)

    return TracePane(context.trace_model, context.parent, rerun=thread_rerun(session), fork=thread_fork(session),
                     compare=context.compare, otlp_endpoint=endpoint)


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
        turn_id = store.turn_of_run(thread.thread_id, run_id)
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
