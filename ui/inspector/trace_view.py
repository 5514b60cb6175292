"""The Trace dock's tree: a Qt item model over :class:`ui.inspector.trace_tree.TraceTree`, its search filter,
and the "Run again" dialog of a tool-call node (the call run again without the model, the new result beside
the old with their diff)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from PySide6.QtCore import (
    QAbstractItemModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from ui import markdown, theme
from ui.formatting import format_duration
from ui.inspector.trace_tree import TraceNode, TraceTree
from workspace import events as ev
from workspace.secrets import redact, redactor

Index = QModelIndex | QPersistentModelIndex

#: What "Run again" calls: the call's id and the arguments (a JSON object) → the rerun's result.
Rerun = Callable[[str, dict[str, Any]], Awaitable[Any]]


def tokens_text(node: TraceNode) -> str:
    if not node.input_tokens and not node.output_tokens:
        return ""
    return f"{node.input_tokens:,} → {node.output_tokens:,}"


def cost_text(node: TraceNode) -> str:
    return "" if not node.cost else f"${node.cost:.4f}"  # (a free model's 0 says nothing)


class TraceTreeModel(QStandardItemModel):
    """The tree of a thread's runs (see :mod:`ui.inspector.trace_tree`) as Qt's own items: what a view paints and
    scrolls through is read in C++, never asked of Python row by row (a Python item model answered a dozen
    roles a cell, and a page of a long trace took several frames to paint). The items mirror the Qt-free tree:
    :meth:`sync` adds the nodes it gained (a new subtree built apart, then added in one step) and updates the
    texts that changed; a node never moves, so what is expanded and selected stays so. A long thread's items
    are built in slices (:meth:`begin`, :meth:`build_step`) apart from the view, and shown in one step."""

    COLUMNS = ("Step", "Time", "Tokens in → out", "Cost")
    NodeRole = Qt.ItemDataRole.UserRole + 1
    #: Before the items follow the tree's changes (a search's filter forgets what it kept then).
    about_to_sync = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.setHorizontalHeaderLabels(list(self.COLUMNS))
        self.tree = TraceTree()
        #: Each shown node's row of items, and what its texts were made from (to update only what changed).
        self._items: dict[int, list[QStandardItem]] = {}
        self._made_from: dict[int, tuple[Any, ...]] = {}
        self._mask = redactor()
        self._build: Iterator[None] | None = None

    # -- the rows -----------------------------------------------------------------------------------------
    def label(self, node: TraceNode) -> str:
        return self._mask(node.label)

    @staticmethod
    def _source(node: TraceNode) -> tuple[Any, ...]:
        return (node.label, node.start, node.end, node.input_tokens, node.output_tokens, node.cost)

    def _texts(self, node: TraceNode) -> tuple[str, str, str, str]:
        duration = node.duration
        return (self.label(node),
                "" if duration is None or node.kind in _INSTANTS else format_duration(duration),
                tokens_text(node), cost_text(node))

    def _new_row(self, node: TraceNode) -> list[QStandardItem]:
        """``node``'s items alone (not editable: the view has no edit triggers; the numbers right-aligned, set
        only where there is one: most steps have none, and every call into Qt counts on a long trace)."""
        texts = self._texts(node)
        row = [QStandardItem(text) for text in texts]
        first = row[0]
        first.setData(node, self.NodeRole)
        first.setToolTip(texts[0])
        for item, text in zip(row[1:], texts[1:], strict=True):
            if text:
                item.setTextAlignment(_RIGHT)
        return row

    def _row(self, node: TraceNode) -> list[QStandardItem]:
        """``node``'s row with its children's rows beneath (apart from the model: added in one step)."""
        row = self._new_row(node)
        first = row[0]
        self._items[id(node)] = row
        self._made_from[id(node)] = self._source(node)
        for child in node.children:
            first.appendRow(self._row(child))
        return row

    # -- filling ------------------------------------------------------------------------------------------
    def _reset(self, tree: TraceTree) -> None:
        self._build = None
        self.removeRows(0, self.rowCount())
        self._items.clear()
        self._made_from.clear()
        self._mask = redactor()
        self.tree = tree

    def set_events(self, events: list[ev.Event]) -> None:
        tree = TraceTree()
        tree.extend(events)
        self.set_tree(tree)

    def set_tree(self, tree: TraceTree) -> None:
        """Show ``tree`` now (a long thread's: :meth:`begin` builds its items in slices)."""
        self._reset(tree)
        self.sync()

    def begin(self, tree: TraceTree) -> None:
        """Build ``tree``'s items in slices (:meth:`build_step`); the model shows nothing meanwhile."""
        self._reset(TraceTree())
        self._build = self._building(tree)

    def build_step(self, deadline: float) -> bool:
        """Build items until ``deadline`` (``time.perf_counter()``); True when done (the tree is then shown)."""
        if self._build is None:
            return True
        for _ in self._build:
            if time.perf_counter() >= deadline:
                return False
        self._build = None
        return True

    def _building(self, tree: TraceTree) -> Iterator[None]:
        rows: list[list[QStandardItem]] = []
        for root in tree.roots:  # a run's subtree at a time, a model call's subtree at a time under it
            row = self._new_row(root)
            self._items[id(root)] = row
            self._made_from[id(root)] = self._source(root)
            for child in root.children:
                row[0].appendRow(self._row(child))
                yield
            rows.append(row)
        self.tree = tree
        for row in rows:
            self.invisibleRootItem().appendRow(row)

    def append_events(self, events: list[ev.Event]) -> None:
        """Live events: added to the tree, and its new and changed nodes to the items."""
        self.tree.extend(events)
        self.sync()

    def sync(self) -> None:
        """The items follow the tree: new nodes added (each new subtree in one step), changed texts updated."""
        self.about_to_sync.emit()
        root = self.invisibleRootItem()
        for node in self.tree.roots:
            self._follow(node, root)

    def _follow(self, node: TraceNode, parent: QStandardItem) -> None:
        row = self._items.get(id(node))
        if row is None:
            parent.appendRow(self._row(node))
            return
        source = self._source(node)
        if source != self._made_from[id(node)]:
            self._made_from[id(node)] = source
            for column, (item, text) in enumerate(zip(row, self._texts(node), strict=True)):
                if item.text() != text:
                    if column and not item.text():
                        item.setTextAlignment(_RIGHT)
                    item.setText(text)
            if row[0].toolTip() != row[0].text():
                row[0].setToolTip(row[0].text())
        first = row[0]
        shown = first.rowCount()
        for at, child in enumerate(node.children):
            if at >= shown:
                first.appendRow(self._row(child))
            elif child.children or child.end is None or child.kind in ("run", "model_call", "tool_call"):
                self._follow(child, first)  # (a closed leaf, an answer or a request, does not change)

    # -- reading ------------------------------------------------------------------------------------------
    def node(self, index: Index) -> TraceNode | None:
        if not index.isValid():
            return None
        first = index if index.column() == 0 else self.index(index.row(), 0, index.parent())
        node: TraceNode | None = first.data(self.NodeRole)
        return node

    def index_of(self, node: TraceNode, column: int = 0) -> QModelIndex:
        """The index of ``node``'s row (invalid while it is not shown yet)."""
        row = self._items.get(id(node))
        return row[column].index() if row is not None else QModelIndex()


_RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
#: Steps that are a moment, not a span (no time shown).
_INSTANTS = frozenset({"request", "response", "text", "approval", "event", "message"})


class TraceTreeFilter(QSortFilterProxyModel):
    """Keeps the nodes whose text holds the search, with the path to them: the tree is searched in one pass
    (:meth:`TraceTree.matching`) when the search changes, the rows then kept by that set."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._text = ""
        self._keep: set[int] | None = None

    def setSourceModel(self, model: QAbstractItemModel) -> None:
        super().setSourceModel(model)
        model.modelAboutToBeReset.connect(self._forget)
        model.layoutAboutToBeChanged.connect(self._forget)
        if isinstance(model, TraceTreeModel):
            model.about_to_sync.connect(self._forget)  # live events: new nodes may match
            model.rowsAboutToBeRemoved.connect(self._forget)

    def _forget(self) -> None:
        self._keep = None

    def set_text(self, text: str) -> None:
        text = text.strip().lower()
        if hasattr(self, "beginFilterChange"):  # Qt >= 6.10
            self.beginFilterChange()
            self._text, self._keep = text, None
            self.endFilterChange(QSortFilterProxyModel.Direction.Rows)
        else:  # pragma: no cover - older Qt
            self._text, self._keep = text, None
            self.invalidateFilter()

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:
        if not self._text:
            return True
        model = self.sourceModel()
        if not isinstance(model, TraceTreeModel):
            return True
        if self._keep is None:
            self._keep = model.tree.matching(self._text)
        node = model.node(model.index(source_row, 0, source_parent))
        return node is not None and id(node) in self._keep


def node_json(node: TraceNode) -> str:
    """A node's detail: its data as pretty JSON, secrets masked."""
    body: dict[str, Any] = {"step": node.label, "kind": node.kind}
    if node.duration is not None:
        body["seconds"] = round(node.duration, 3)
    if node.input_tokens or node.output_tokens:
        body["tokens"] = {"input": node.input_tokens, "output": node.output_tokens}
    if node.cost is not None:
        body["cost"] = node.cost
    if node.request is not None:  # the request as sent, whole (the record keeps what changed since the last)
        first = {k: node.request[k] for k in ("model", "messages") if k in node.request}  # what people read first
        body["request"] = {**first, **{k: v for k, v in node.request.items() if k not in first}}
    if node.data is not None:
        body["data"] = node.data
    return redact(json.dumps(body, indent=2, ensure_ascii=False, default=str))


def _pre(text: str, lang: str | None = None) -> str:
    body = markdown.highlight(text, lang) if lang else markdown._esc(text)
    return f'<pre style="font-family:{theme.mono_family()}; white-space:pre-wrap;">{body}</pre>'


class RerunDialog(QDialog):
    """Run a recorded tool call again: its arguments (editable JSON), then the new result beside the old
    with their diff. The run goes through ``rerun`` (the approval as usual); the model is not asked."""

    def __init__(self, node: TraceNode, rerun: Rerun, parent: QWidget | None = None, *,
                 compare: Callable[..., QWidget] | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Run again: {node.tool}")
        self.node = node
        self._rerun = rerun
        self._compare = compare
        self.task: asyncio.Task[None] | None = None
        self.rerun_result: Any = None
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel(f"Run <b>{markdown._esc(node.tool)}</b> again without the model, with these "
                                "arguments (JSON):", self))
        self.arguments = QPlainTextEdit(self)
        self.arguments.setAccessibleName("Arguments")
        self.arguments.setFont(theme.mono_font())
        self.arguments.setPlainText(json.dumps(node.arguments or {}, indent=2, ensure_ascii=False))
        self.arguments.setMaximumHeight(120)
        layout.addWidget(self.arguments)
        self.status = QLabel("", self)
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        sides = QSplitter(Qt.Orientation.Horizontal, self)
        self.old_view = QTextBrowser(sides)
        self.old_view.setAccessibleName("Recorded result")
        self.new_view = QTextBrowser(sides)
        self.new_view.setAccessibleName("New result")
        self.new_view.setPlaceholderText("Run to see the new result.")
        self.old_view.setHtml(self._titled("Recorded", node.result))
        sides.addWidget(self.old_view)
        sides.addWidget(self.new_view)
        layout.addWidget(sides, 1)
        self.diff_view = QTextBrowser(self)
        self.diff_view.setAccessibleName("Diff")
        self.diff_view.setPlaceholderText("The diff of the two results shows here.")
        layout.addWidget(self.diff_view, 1)
        buttons = QDialogButtonBox(self)
        self.run_button = QPushButton("Run", self)
        self.run_button.setDefault(True)
        self.run_button.clicked.connect(self.start)
        buttons.addButton(self.run_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.side_button = QPushButton("Side by side…", self)
        self.side_button.setVisible(compare is not None)
        self.side_button.setEnabled(False)
        self.side_button.clicked.connect(self.side_by_side)
        buttons.addButton(self.side_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        row = QHBoxLayout()
        row.addWidget(buttons)
        layout.addLayout(row)
        self.resize(760, 560)

    @staticmethod
    def _titled(title: str, value: Any) -> str:
        text = "(no result recorded)" if value is None else redact(markdown.to_json_text(value))
        return f"<p><b>{title}</b></p>" + _pre(text, "json")

    def parsed_arguments(self) -> dict[str, Any] | None:
        """The arguments as typed, or None (with the reason shown) when they are not a JSON object."""
        try:
            value = json.loads(self.arguments.toPlainText() or "{}")
        except json.JSONDecodeError as exc:
            self.status.setText(f"The arguments are not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                                "fix them and run again.")
            return None
        if not isinstance(value, dict):
            self.status.setText(f"The arguments must be a JSON object ({{...}}), not {type(value).__name__}.")
            return None
        return value

    def start(self) -> asyncio.Task[None] | None:
        """Run the call again (an asyncio task on the window's loop; the tool's own work is off it)."""
        arguments = self.parsed_arguments()
        if arguments is None or (self.task is not None and not self.task.done()):
            return None
        self.run_button.setEnabled(False)
        self.status.setText(f"Running {self.node.tool}…")
        self.task = asyncio.get_running_loop().create_task(self._run(arguments), name="trace-rerun")
        return self.task

    async def _run(self, arguments: dict[str, Any]) -> None:
        try:
            result = await self._rerun(self.node.call_id, arguments)
        except asyncio.CancelledError:
            self.status.setText("Stopped.")
            raise
        except Exception as exc:
            self.status.setText(f"Could not run it again: {redact(str(exc))}")
            return
        finally:
            self.run_button.setEnabled(True)
        self.show_result(result)

    def show_result(self, result: Any) -> None:
        """A :class:`workspace.replay.RerunResult`: both results and their diff."""
        self.rerun_result = result
        self.old_view.setHtml(self._titled("Recorded", result.old))
        self.new_view.setHtml(self._titled(f"Now ({format_duration(result.duration)})", result.new))
        diff = redact(result.diff)
        self.diff_view.setHtml(_pre(diff, "diff") if diff else "<p>The same result as recorded.</p>")
        self.status.setText("The result changed." if result.changed else "The same result as recorded.")
        self.side_button.setEnabled(True)

    def side_by_side(self) -> QWidget | None:
        if self._compare is None or self.rerun_result is None:
            return None
        window = self._compare(redact(markdown.to_json_text(self.rerun_result.old)),
                               redact(markdown.to_json_text(self.rerun_result.new)), name="result.json",
                               title=f"{self.node.tool}: recorded vs now", parent=self)
        window.show()
        return window

    def done(self, code: int) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
        super().done(code)


__all__ = ["RerunDialog", "TraceTreeFilter", "TraceTreeModel", "node_json"]
