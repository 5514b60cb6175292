"""The Trace dock's tree: a Qt item model over :class:`ui.inspector.trace_tree.TraceTree`, its search filter,
and the "Run again" dialog of a tool-call node (the call run again without the model, the new result beside
the old with their diff)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from PySide6.QtCore import (
    QAbstractItemModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
)
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


class TraceTreeModel(QAbstractItemModel):
    """The tree of a thread's runs (see :mod:`ui.inspector.trace_tree`); rebuilt as a whole when the events
    change (:meth:`set_events`, :meth:`append_events`), which takes milliseconds for thousands of events."""

    COLUMNS = ("Step", "Time", "Tokens in → out", "Cost")
    NodeRole = Qt.ItemDataRole.UserRole

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.tree = TraceTree()
        #: Labels as shown (secrets masked), worked out once per node when first painted.
        self._labels: dict[int, str] = {}
        self._mask = redactor()
        self.modelAboutToBeReset.connect(self._forget)

    def _forget(self) -> None:
        self._labels.clear()
        self._mask = redactor()

    def label(self, node: TraceNode) -> str:
        label = self._labels.get(id(node))
        if label is None:
            label = self._labels[id(node)] = self._mask(node.label)
        return label

    # -- filling ----------------------------------------------------------------------------------
    def set_events(self, events: list[ev.Event]) -> None:
        tree = TraceTree()
        tree.extend(events)
        self.set_tree(tree)

    def set_tree(self, tree: TraceTree) -> None:
        """Show ``tree`` (built elsewhere: a long thread's is built off the window's thread)."""
        self.beginResetModel()
        self.tree = tree
        self.endResetModel()

    def append_events(self, events: list[ev.Event]) -> None:
        """Live events: added to the tree. A node never moves (new ones are appended under their parent),
        so the view is told the layout changed, not reset: what is expanded and selected stays so."""
        self.layoutAboutToBeChanged.emit()
        self.tree.extend(events)
        self.layoutChanged.emit()

    # -- the item model ---------------------------------------------------------------------------
    def node(self, index: Index) -> TraceNode | None:
        node: TraceNode | None = index.internalPointer() if index.isValid() else None
        return node

    def index(self, row: int, column: int, parent: Index = QModelIndex()) -> QModelIndex:
        children = self.tree.children(self.node(parent))
        if not 0 <= row < len(children) or not 0 <= column < len(self.COLUMNS):
            return QModelIndex()
        return self.createIndex(row, column, children[row])

    def parent(self, index: Index = QModelIndex()) -> QModelIndex:  # type: ignore[override]
        node = self.node(index)
        if node is None or node.parent is None:
            return QModelIndex()
        return self.createIndex(node.parent.pos, 0, node.parent)

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        if parent.isValid() and parent.column() != 0:
            return 0
        return len(self.tree.children(self.node(parent)))

    def columnCount(self, _parent: Index = QModelIndex()) -> int:
        return len(self.COLUMNS)

    def hasChildren(self, parent: Index = QModelIndex()) -> bool:
        return self.rowCount(parent) > 0

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.COLUMNS[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        # Painting asks for a dozen roles a cell; only these have answers (checked first: it is hot).
        if role not in _ROLES or not index.isValid():
            return None
        node: TraceNode = index.internalPointer()
        if role == self.NodeRole:
            return node
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if col == 0:
                return self.label(node)
            if col == 1:
                duration = node.duration
                return "" if duration is None or node.kind in _INSTANTS else format_duration(duration)
            if col == 2:
                return tokens_text(node)
            return cost_text(node)
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return _RIGHT if col > 0 else None
        return self.label(node) if col == 0 else None  # the tooltip


_ROLES = frozenset({Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.TextAlignmentRole, Qt.ItemDataRole.ToolTipRole,
                    TraceTreeModel.NodeRole})
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
#: Steps that are a moment, not a span (no time shown).
_INSTANTS = frozenset({"request", "response", "text", "approval", "event"})


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
        model.layoutAboutToBeChanged.connect(self._forget)  # live events: new nodes may match

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
