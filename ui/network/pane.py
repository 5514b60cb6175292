"""The Network dock: a network's task graph with each task's live state, and the selected task's
transcript and result.

The graph is laid out left to right by execution step (``Network.levels()``, carried in the
graph's nodes): a column per step, the tasks of a step stacked, a parallel group framed, edges
for dependencies (solid) and routes (dashed, labelled with the rule). Each node shows the task,
its robot (in the robot's colour, as in the chat's lanes), a state icon, and its duration; a
running task's icon turns and its border glows. Clicking a node opens it in the panel below:
what it received, why it was skipped or failed, its answer, its events, its result as JSON.

Everything comes from a :class:`~ui.network.model.NetworkModel`; the pane never touches a run.

The graph is :mod:`ui.network.graph`, the task panel :mod:`ui.network.task`.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import (
    QGuiApplication,
)
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from ui import theme
from ui.network.graph import NetworkGraphView
from ui.network.model import NetworkModel
from ui.network.task import TaskDetail
from ui.widgets.status import (
    assign_robot_colors,
    network_icon,
)

if TYPE_CHECKING:
    from workspace.network import Network


class NetworkPane(QWidget):
    """The Network dock: header, task graph, and the selected task."""

    reveal_requested = Signal(str)

    def __init__(self, model: NetworkModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("InspectorPane")
        self.model = model
        self.network: Network | None = None
        #: The user clicked a task: the dock stops following the running task / the answer.
        self._user_selected = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.setSpacing(6)
        self.stack = QStackedWidget(self)
        layout.addWidget(self.stack)

        # empty state
        self.empty = QLabel("", self.stack)
        self.empty.setObjectName("Muted")
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setTextFormat(Qt.TextFormat.RichText)
        self.empty.setContentsMargins(24, 24, 24, 24)
        self.stack.addWidget(self.empty)

        # the network
        page = QWidget(self.stack)
        pl = QVBoxLayout(page)
        pl.setContentsMargins(0, 0, 0, 0)
        pl.setSpacing(6)
        bar = QHBoxLayout()
        bar.setSpacing(6)
        self.glyph = QLabel(page)
        bar.addWidget(self.glyph)
        self.title = QLabel("", page)
        self.title.setObjectName("NetworkTitle")
        self.title.setMinimumWidth(40)  # a long network name is cut in a narrow dock
        bar.addWidget(self.title)
        self.state = QLabel("", page)
        self.state.setObjectName("Muted")
        policy = QSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)  # "● finished · 2 done · 2 skipped" wraps in a narrow dock, never cut
        self.state.setSizePolicy(policy)
        self.state.setWordWrap(True)
        self.state.setMinimumWidth(20)
        bar.addWidget(self.state, 1)
        self.copy_button = QPushButton("Copy Mermaid", page)
        self.copy_button.setToolTip("Copy the graph, coloured by state, as a Mermaid flowchart")
        self.copy_button.clicked.connect(self.copy_mermaid)
        bar.addWidget(self.copy_button)
        pl.addLayout(bar)
        self.splitter = QSplitter(Qt.Orientation.Vertical, page)
        self.splitter.setChildrenCollapsible(False)
        holder = QFrame(self.splitter)
        holder.setObjectName("GraphFrame")
        hl = QVBoxLayout(holder)
        hl.setContentsMargins(1, 1, 1, 1)
        self.graph = NetworkGraphView(model, holder)
        hl.addWidget(self.graph)
        self.detail = TaskDetail(model, self.splitter)
        self.splitter.addWidget(holder)
        self.splitter.addWidget(self.detail)
        self.splitter.setSizes([300, 360])
        pl.addWidget(self.splitter, 1)
        self.stack.addWidget(page)
        self.page = page

        self.graph.task_selected.connect(self.select)
        model.reset.connect(self._on_model_reset)
        self.detail.reveal_requested.connect(self.reveal_requested)
        model.reset.connect(self._update_header)
        model.task_changed.connect(lambda _name: self._update_header())
        model.run_changed.connect(lambda _state: self._update_header())
        self.set_network(None)
        self.retheme()

    # -- content ------------------------------------------------------------------------------
    def set_network(self, network: Network | Mapping[str, Any] | None, *, note: str | None = None) -> None:
        """Show ``network`` (a Network, its graph dict, or None with an explanation)."""
        self.network = None if network is None or isinstance(network, Mapping) else network
        if network is None:
            self.model.set_graph(None)
            self.empty.setText(note or self._empty_text())
            self.stack.setCurrentWidget(self.empty)
            return
        graph = dict(network) if isinstance(network, Mapping) else network.graph()
        assign_robot_colors(str(graph.get("name")), [str(n.get("robot")) for n in graph.get("nodes") or []])
        self.model.set_graph(graph, description=getattr(network, "description", None))
        self.stack.setCurrentWidget(self.page)
        self._update_header()

    def _empty_text(self) -> str:
        c = theme.colors()
        return (f'<p style="font-size:14px; color:{c.text};"><b>No network in this thread</b></p>'
                f'<p style="color:{c.muted};">Pick a network in the robot picker (under <i>Networks</i>) to chat '
                "with a team of robots. Its task graph, each task's live state and each task's transcript "
                "show here.</p>")

    def select(self, name: str | None) -> None:
        """Open task ``name`` in the panel (as a click on its node does)."""
        self._user_selected = name is not None
        self._show(name)

    def _show(self, name: str | None) -> None:
        self.graph.select(name)
        self.detail.show_task(name)

    def _on_model_reset(self) -> None:
        if self.detail.task_name not in self.model.tasks:
            self._user_selected = False

    def selected(self) -> str | None:
        return self.detail.task_name

    def _update_header(self) -> None:
        m = self.model
        if not m.has_graph:
            return
        self.title.setText(f"<b>{html.escape(m.name or '')}</b>")
        self.title.setToolTip(m.description or "")
        state = m.run_status
        label = {"idle": "not run yet", "running": "running", "finished": "finished", "failed": "failed",
                 "cancelled": "stopped"}.get(state, state)
        summary = m.summary() if state != "idle" else f"{len(m.tasks)} tasks"
        c = theme.colors()
        color = {"running": c.accent, "finished": c.success, "failed": c.error, "cancelled": c.warning}.get(
            state, c.muted)
        self.state.setText(f'<span style="color:{color};">● {label}</span>'
                           f'<span style="color:{c.muted};">  ·  {html.escape(summary)}</span>')
        self.state.setToolTip(m.run_error or "")
        if not self._user_selected and state != "idle":
            # Follow the work: the running task (the first in the graph), then the network's answer.
            running = next((t.name for t in m.tasks.values() if t.status == "running"), None)
            failed = next((t.name for t in m.tasks.values() if t.status == "failed"), None)
            pick = failed or (running if state == "running" else m.answer_task)
            if pick and pick != self.detail.task_name:
                self._show(pick)

    def copy_mermaid(self) -> None:
        if self.network is None:
            return
        text = self.network.to_mermaid(status=self.model.statuses())
        QGuiApplication.clipboard().setText(text)

    def retheme(self) -> None:
        c = theme.colors()
        self.glyph.setPixmap(network_icon(c.accent, 18).pixmap(18, 18))
        self.graph.retheme()
        self.graph.rebuild()
        self.detail.show_task(self.detail.task_name)
        self._update_header()
        if self.model.has_graph is False:
            self.empty.setText(self._empty_text())
