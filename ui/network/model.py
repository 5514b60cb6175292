"""Models for networks in the desktop: the live state of a network run's tasks, and the picker's
list of robots and networks.

:class:`NetworkModel` is fed the same events as the chat (live from the bridge, or a stored
thread's events): ``run_started`` of the network resets every task to *waiting*,
``task_started`` / ``task_finished`` move a task through running → done / failed / skipped /
cancelled, and every other event of a task is kept as its transcript. It never holds a view.

:class:`ChatTargetModel` is the robot picker's model: robots, then networks, each under a
non-selectable heading.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QModelIndex, QObject, QPersistentModelIndex, Qt, Signal

from ui.network.robots import RobotListModel
from workspace import events as ev

if TYPE_CHECKING:
    from collections.abc import Sequence

    from workspace.catalog import RobotInfo
    from workspace.network import NetworkInfo

Index = QModelIndex | QPersistentModelIndex

WAITING, RUNNING, DONE, FAILED, SKIPPED, CANCELLED = "waiting", "running", "done", "failed", "skipped", "cancelled"
TERMINAL = frozenset({DONE, FAILED, SKIPPED, CANCELLED})

#: Example messages for the shipped networks (the empty state's chips).
NETWORK_EXAMPLES: dict[str, list[str]] = {
    "support-triage": ["I was charged twice for my subscription", "The app crashes when I upload a file",
                       "What are your opening hours?"],
    "parallel-analysis": ["The new Acme dashboard is fast and easy, but the export to Excel is broken."],
}
GENERIC_NETWORK_EXAMPLES = ["Summarise what you can do", "Hello!"]


def network_examples(name: str) -> list[str]:
    return NETWORK_EXAMPLES.get(name, GENERIC_NETWORK_EXAMPLES)


@dataclass(slots=True)
class TaskView:
    """One task as the Network dock shows it."""

    name: str
    robot: str
    optional: bool = False
    step: int | None = None
    description: str | None = None
    status: str = WAITING
    #: The message the task received.
    message: str | None = None
    started: float | None = None
    finished: float | None = None
    #: Why it failed, was skipped or was stopped.
    reason: str | None = None
    #: The RobotResult (live) or its dict (a stored thread).
    result: Any = None
    #: The task's last complete text (its answer).
    text: str = ""
    #: The task's own events (its transcript), task_started and task_finished included.
    events: list[ev.Event] = field(default_factory=list)
    run_id: str | None = None

    @property
    def duration(self) -> float | None:
        if self.started is None:
            return None
        end = self.finished if self.finished is not None else time.time()
        return max(0.0, end - self.started)

    @property
    def is_finished(self) -> bool:
        return self.status in TERMINAL

    def result_dict(self) -> dict[str, Any] | None:
        value = self.result
        if value is None:
            return None
        to_dict = getattr(value, "to_dict", None)
        if callable(to_dict):
            out = to_dict()
            return out if isinstance(out, dict) else {"result": out}
        return value if isinstance(value, dict) else {"result": value}


class NetworkModel(QObject):
    """The tasks of one network and the state of its latest run, from events."""

    #: The graph or the run changed entirely (a new network, a new run, a thread opened).
    reset = Signal()
    #: One task's state or transcript changed (its name).
    task_changed = Signal(str)
    #: The run's own state changed (running / finished / failed / cancelled).
    run_changed = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name: str | None = None
        self.description: str | None = None
        self.nodes: list[dict[str, Any]] = []
        self.edges: list[dict[str, Any]] = []
        self.groups: dict[str, list[str]] = {}
        self.tasks: dict[str, TaskView] = {}
        self.run_id: str | None = None
        #: "idle" (no run yet), "running", "finished", "failed" or "cancelled".
        self.run_status = "idle"
        self.run_error: str | None = None
        #: The message of the latest run.
        self.message: str | None = None
        #: The task whose answer is the network's answer (the last one done).
        self.answer_task: str | None = None
        self._runs: dict[str, str] = {}  # a task's own run id -> task name

    # -- graph --------------------------------------------------------------------------------------
    @property
    def has_graph(self) -> bool:
        return self.name is not None

    def set_graph(self, graph: dict[str, Any] | None, *, description: str | None = None) -> None:
        """Show ``network.graph()`` (None: no network); every task waiting."""
        graph = graph or {}
        self.name = graph.get("name") if graph else None
        self.description = description
        self.nodes = list(graph.get("nodes") or [])
        self.edges = list(graph.get("edges") or [])
        self.groups = {str(k): list(v) for k, v in (graph.get("groups") or {}).items()}
        self._fresh_tasks()
        self.run_id = None
        self.run_status = "idle"
        self.run_error = None
        self.message = None
        self.reset.emit()

    def _fresh_tasks(self) -> None:
        self.tasks = {
            str(n["name"]): TaskView(name=str(n["name"]), robot=str(n.get("robot") or n["name"]),
                                     optional=bool(n.get("optional")), step=n.get("step"),
                                     description=n.get("description"))
            for n in self.nodes
        }
        self._runs = {}
        self.answer_task = None

    def clear(self) -> None:
        self.set_graph(None)

    # -- events ---------------------------------------------------------------------------------
    def set_events(self, events: list[ev.Event]) -> None:
        """Replay ``events`` (a stored thread's): the state of the last network run among them."""
        self.blockSignals(True)
        try:
            self._fresh_tasks()
            self.run_id, self.run_status, self.run_error, self.message = None, "idle", None, None
            self.add_events(events)
        finally:
            self.blockSignals(False)
        self.reset.emit()

    def add_events(self, events: list[ev.Event]) -> None:
        changed: dict[str, None] = {}
        for event in events:
            name = self.apply(event)
            if name:
                changed[name] = None
        for name in changed:
            self.task_changed.emit(name)

    def apply(self, event: ev.Event) -> str | None:
        """Apply one event; the name of the task it changed (None for none)."""
        task = event.task
        if task is None:
            self._apply_to_run(event)
            return None
        if isinstance(event, ev.RunFailed) and event.run_id == self.run_id:
            # A failed network names its failed task.
            self.run_status, self.run_error = "failed", event.error
            self.run_changed.emit(self.run_status)
            return None
        state = self.tasks.get(task)
        if state is None:
            if not isinstance(event, ev.TaskStarted | ev.TaskFinished) or not self.has_graph:
                return None
            self.nodes.append({"name": task, "robot": event.robot, "optional": False, "step": None})
            state = self.tasks[task] = TaskView(name=task, robot=str(event.robot))
        match event:
            case ev.TaskStarted():
                state.status = RUNNING
                state.message = event.message
                state.started = event.ts
                state.finished = None
                state.reason = None
            case ev.TaskFinished():
                state.status = event.status
                state.finished = event.ts
                state.reason = event.error
                if event.result is not None:
                    state.result = event.result
                if state.status == DONE:
                    self.answer_task = task
            case ev.RunStarted() if event.parent_tool_id is None:  # not a robot the task's robot used as a tool
                state.run_id = event.run_id
                self._runs[event.run_id] = task
            case ev.Text() if event.text and event.parent_tool_id is None:
                state.text = event.text
            case _:
                pass  # kept in the task's transcript below
        state.events.append(event)
        return task

    def _apply_to_run(self, event: ev.Event) -> None:
        """An event of the network run itself (no task): its start and its end."""
        match event:
            case ev.RunStarted():
                if self.has_graph:
                    self._new_run(event.run_id)
                    self.message = event.message
                return
            case ev.RunFinished():
                status, error = "finished", None
            case ev.RunFailed():
                status, error = "failed", event.error or None
            case ev.RunCancelled():
                status, error = "cancelled", event.reason
            case _:
                return
        if event.run_id == self.run_id:
            self.run_status, self.run_error = status, error
            self.run_changed.emit(self.run_status)

    def _new_run(self, run_id: str) -> None:
        self._fresh_tasks()
        self.run_id = run_id
        self.run_status = "running"
        self.run_error = None
        self.reset.emit()
        self.run_changed.emit(self.run_status)

    # -- reading ------------------------------------------------------------------------------------
    def statuses(self) -> dict[str, str]:
        return {name: t.status for name, t in self.tasks.items()}

    def task(self, name: str) -> TaskView | None:
        return self.tasks.get(name)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.tasks.values():
            out[t.status] = out.get(t.status, 0) + 1
        return out

    def summary(self) -> str:
        """"2 done · 1 running · 1 waiting" (in a fixed order)."""
        counts = self.counts()
        order = (RUNNING, DONE, FAILED, CANCELLED, SKIPPED, WAITING)
        return " · ".join(f"{counts[s]} {s}" for s in order if counts.get(s))

    def steps(self) -> list[list[str]]:
        """Columns for drawing: tasks by step (tasks without a known step in a last column)."""
        by_step: dict[int, list[str]] = {}
        unknown: list[str] = []
        for node in self.nodes:
            step = node.get("step")
            if isinstance(step, int):
                by_step.setdefault(step, []).append(str(node["name"]))
            else:
                unknown.append(str(node["name"]))
        columns = [by_step[k] for k in sorted(by_step)]
        if unknown:
            columns.append(unknown)
        return columns


class ChatTargetModel(RobotListModel):
    """The picker: "Robots" then "Networks", each a heading row that cannot be chosen.

    A row's key is ``("robot", name)``, ``("network", name)`` or ``(None, heading)``.
    """

    KindRole = Qt.ItemDataRole.UserRole + 3

    def __init__(self, parent: QObject | None = None, *, default_model: str | None = None) -> None:
        super().__init__(parent, default_model=default_model)
        self._networks: list[NetworkInfo] = []
        #: (kind, what): ("robot", RobotInfo), ("network", NetworkInfo) or (None, a heading's text).
        self._rows: list[tuple[str | None, Any]] = []
        self.icons: dict[str, Any] = {}

    def _rebuild(self) -> None:
        rows: list[tuple[str | None, Any]] = []
        if self._networks:
            rows.append((None, "Robots"))
        rows += [("robot", r) for r in self._robots]
        if self._networks:
            rows.append((None, "Networks"))
            rows += [("network", n) for n in self._networks]
        self._rows = rows

    def set_robots(self, robots: Sequence[RobotInfo]) -> None:
        self.beginResetModel()
        self._robots = list(robots)
        self._rebuild()
        self.endResetModel()

    def set_networks(self, networks: Sequence[NetworkInfo]) -> None:
        self.beginResetModel()
        self._networks = list(networks)
        self._rebuild()
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        kind, _ = self._rows[index.row()]
        if kind is None:
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        kind, info = self._rows[index.row()]
        if kind is None:
            if role == Qt.ItemDataRole.DisplayRole:
                return str(info).upper()
            if role == Qt.ItemDataRole.FontRole:
                from PySide6.QtGui import QFont

                font = QFont()
                font.setPointSizeF(max(7.0, font.pointSizeF() - 1.5))
                font.setBold(True)
                font.setLetterSpacing(QFont.SpacingType.AbsoluteSpacing, 0.6)
                return font
            if role == Qt.ItemDataRole.AccessibleTextRole:
                return f"{info}:"
            return None
        if role == self.KindRole:
            return kind
        if role == Qt.ItemDataRole.DecorationRole:
            return self.icons.get(kind)
        if kind == "network":
            if role in (Qt.ItemDataRole.DisplayRole, self.NameRole):
                return info.name
            if role == self.InfoRole:
                return info
            if role == Qt.ItemDataRole.ToolTipRole:
                desc = getattr(info, "description", "") or ""
                return f"Network {info.name} ({info.source}, {info.tasks} tasks) — {desc}"
            if role == Qt.ItemDataRole.AccessibleTextRole:
                return f"network {info.name}"
            return None
        if role in (Qt.ItemDataRole.DisplayRole, self.NameRole):
            return info.name
        if role == self.InfoRole:
            return info
        if role == self.ModelRole:
            return self.model_label(info)
        if role == Qt.ItemDataRole.ToolTipRole:
            desc = getattr(info, "description", "") or ""
            return f"{info.name} ({getattr(info, 'source', '')}) — {desc}\nModel: {self.model_label(info)}"
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return f"robot {info.name}"
        return None

    # -- lookups ----------------------------------------------------------------------------------
    def key_at(self, row: int) -> tuple[str | None, str]:
        if not 0 <= row < len(self._rows):
            return None, ""
        kind, info = self._rows[row]
        return kind, (str(info) if kind is None else info.name)

    def names(self) -> list[str]:
        """Display names by row (headings included, so indexes match rows)."""
        return [self.key_at(row)[1] for row in range(len(self._rows))]

    def row_of(self, name: str, kind: str = "robot") -> int:
        for row, (k, info) in enumerate(self._rows):
            if k == kind and info.name == name:
                return row
        return -1

    def robot_names(self) -> list[str]:
        return [r.name for r in self._robots]
