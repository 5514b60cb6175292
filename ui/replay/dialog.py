""""Replay with…": the open thread's user turns sent again to another model or robot (workspace.replay),
recorded tool calls answered from the record, then the comparison turn by turn — the diverging turns
marked, the answers side by side with their diff, and a summary line with the verdict (what
``robotlab threads replay`` says with its exit status)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSplitter,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from ui import markdown, theme
from ui.formatting import format_duration
from workspace.secrets import redact

if TYPE_CHECKING:
    from ui.services import Services
    from workspace.replay import ReplayResult, TurnComparison

#: The combo entry that keeps the thread's own model / robot.
THREADS_OWN = "(the thread's own)"
TOLERANCES = {"exact": "Exact: same tools, arguments and answers", "tools": "Same tools and arguments"}


@dataclass(frozen=True, slots=True)
class ReplayChoice:
    """What the person picked: a model (None: the thread's), a robot (None: the thread's), the tolerance."""

    model: str | None
    robot: str | None
    tolerance: str = "exact"
    #: The model's server (a local server's model, from the composer's list); None: its provider's.
    api_base: str | None = None


#: Runs the replay of the choice (the window's: :func:`thread_replay`).
Start = Callable[[ReplayChoice], Awaitable["ReplayResult"]]


def verdict(result: ReplayResult) -> str:
    """The summary line: where it diverged (exit status 1) or that it did not (exit status 0)."""
    ran = (f"{len(result.turns)} turn(s), {result.served} call(s) answered from the record, "
           f"{result.executed} tool(s) run, in {format_duration(result.duration)}")
    first = result.first_divergence()
    if first is None:
        within = " past the tolerance" if result.divergences else ""
        return f"No divergence{within} — exit status 0. {ran}."
    return f"Diverged at turn {first.turn} ({first.kind}: {first.detail}) — exit status 1. {ran}."


def turn_line(turn: TurnComparison) -> str:
    mark = "✗" if turn.diverged else ("·" if turn.divergences else "✓")
    text = " ".join(turn.recorded.user_text.split())
    text = text if len(text) <= 60 else text[:59] + "…"
    state = ", ".join(d.kind for d in turn.divergences if d.counts) if turn.diverged else (
        "within the tolerance" if turn.divergences else "same")
    return f"{mark} Turn {turn.index}: {text} — {state}"


def _pre(text: str, lang: str | None = None) -> str:
    body = markdown.highlight(text, lang) if lang else markdown._esc(text)
    return f'<pre style="font-family:{theme.mono_family()}; white-space:pre-wrap;">{body}</pre>'


class ReplayDialog(QDialog):
    """Pick a model and robot, replay (cancelable, with a progress line), then the comparison."""

    def __init__(self, title: str, start: Start, *, models: list[tuple[str, str | None]], robots: list[str],
                 turns: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Replay with… — {title}")
        self._start = start
        self._turns = turns
        self.task: asyncio.Task[None] | None = None
        self.replay_result: ReplayResult | None = None
        self._started = 0.0
        layout = QVBoxLayout(self)
        form = QFormLayout()
        self.model = QComboBox(self)
        self.model.setEditable(True)
        self.model.setAccessibleName("Model")
        self.model.addItem(THREADS_OWN, None)
        for model_id, api_base in models:  # (each with its server, for a local server's model)
            self.model.addItem(model_id, api_base)
        self.model.setToolTip("The model to send the thread's messages to (type any model name)")
        form.addRow("Model", self.model)
        self.robot = QComboBox(self)
        self.robot.setAccessibleName("Robot")
        self.robot.addItems([THREADS_OWN, *robots])
        form.addRow("Robot", self.robot)
        self.tolerance = QComboBox(self)
        self.tolerance.setAccessibleName("Tolerance")
        for key, text in TOLERANCES.items():
            self.tolerance.addItem(text, key)
        form.addRow("Diverges when not", self.tolerance)
        layout.addLayout(form)
        row = QHBoxLayout()
        self.progress = QLabel(f"{turns} turn(s) to replay; recorded tool calls are answered from the record, "
                               "nothing is run.", self)
        self.progress.setWordWrap(True)
        self.progress.setAccessibleName("Progress")
        row.addWidget(self.progress, 1)
        self.start_button = QPushButton("Replay", self)
        self.start_button.setDefault(True)
        self.start_button.clicked.connect(self.start)
        row.addWidget(self.start_button)
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        row.addWidget(self.cancel_button)
        layout.addLayout(row)
        self.summary = QLabel("", self)
        self.summary.setWordWrap(True)
        self.summary.setAccessibleName("Verdict")
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.summary)
        split = QSplitter(Qt.Orientation.Vertical, self)
        self.turn_list = QListWidget(split)
        self.turn_list.setAccessibleName("Turns")
        self.turn_list.currentRowChanged.connect(self.show_turn)
        sides = QSplitter(Qt.Orientation.Horizontal, split)
        self.recorded_view = QTextBrowser(sides)
        self.recorded_view.setAccessibleName("Recorded answer")
        self.replayed_view = QTextBrowser(sides)
        self.replayed_view.setAccessibleName("Replayed answer")
        self.diff_view = QTextBrowser(split)
        self.diff_view.setAccessibleName("Differences")
        self.diff_view.setPlaceholderText("Where the selected turn diverges, with the diff.")
        split.addWidget(self.turn_list)
        split.addWidget(sides)
        split.addWidget(self.diff_view)
        split.setSizes([120, 220, 160])
        layout.addWidget(split, 1)
        self._tick = QTimer(self)
        self._tick.setInterval(500)
        self._tick.timeout.connect(self._show_progress)
        self.resize(900, 640)

    def choice(self) -> ReplayChoice:
        model = self.model.currentText().strip()
        robot = self.robot.currentText().strip()
        listed = self.model.findText(model)
        api_base = self.model.itemData(listed) if listed >= 0 else None
        return ReplayChoice(model=None if model in {"", THREADS_OWN} else model,
                            robot=None if robot in {"", THREADS_OWN} else robot,
                            tolerance=str(self.tolerance.currentData() or "exact"),
                            api_base=api_base if isinstance(api_base, str) and api_base else None)

    def start(self) -> asyncio.Task[None] | None:
        if self.task is not None and not self.task.done():
            return None
        self._set_running(True)
        self.summary.setText("")
        self.turn_list.clear()
        self._started = time.monotonic()
        self._show_progress()
        self._tick.start()
        self.task = asyncio.get_running_loop().create_task(self._run(self.choice()), name="replay")
        return self.task

    def _show_progress(self) -> None:
        choice = self.choice()
        self.progress.setText(f"Replaying {self._turns} turn(s) with {choice.model or 'the thread’s model'}… "
                              f"{format_duration(time.monotonic() - self._started)}")

    def _set_running(self, running: bool) -> None:
        self.start_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        for box in (self.model, self.robot, self.tolerance):
            box.setEnabled(not running)

    def cancel(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()

    async def _run(self, choice: ReplayChoice) -> None:
        try:
            result = await self._start(choice)
        except asyncio.CancelledError:
            self.progress.setText("Replay cancelled: its unfinished thread was removed.")
            raise
        except Exception as exc:
            self.progress.setText(f"Could not replay: {redact(str(exc))}")
            return
        finally:
            self._tick.stop()
            self._set_running(False)
        self.show_result(result)

    def show_result(self, result: ReplayResult) -> None:
        self.replay_result = result
        self.progress.setText(f"Replayed as a new thread ({result.thread_id[:8]}).")
        self.summary.setText(verdict(result))
        self.turn_list.clear()
        first: int | None = None
        for row, turn in enumerate(result.turns):
            item = QListWidgetItem(turn_line(turn))
            if turn.diverged:
                item.setForeground(QColor(theme.colors().error))
                first = row if first is None else first
            self.turn_list.addItem(item)
        self.turn_list.setCurrentRow(first if first is not None else 0)

    def show_turn(self, row: int) -> None:
        if self.replay_result is None or not 0 <= row < len(self.replay_result.turns):
            return
        turn = self.replay_result.turns[row]
        self.recorded_view.setHtml("<p><b>Recorded</b></p>" + _pre(redact(turn.recorded.answer) or "(no answer)"))
        self.replayed_view.setHtml("<p><b>Replayed</b></p>" + _pre(redact(turn.replayed.answer) or "(no answer)"))
        if not turn.divergences:
            self.diff_view.setHtml("<p>This turn went as recorded.</p>")
            return
        parts = []
        for d in turn.divergences:
            within = "" if d.counts else " (within the tolerance)"
            parts.append(f"<p><b>{markdown._esc(d.kind)}</b>: {markdown._esc(redact(d.detail))}{within}</p>")
            if d.diff:
                parts.append(_pre(redact(d.diff), "diff"))
        self.diff_view.setHtml("".join(parts))

    def done(self, code: int) -> None:
        self.cancel()
        super().done(code)


def thread_replay(services: Services, thread_id: str) -> Start:
    """The window's replay of ``thread_id``: the choice's robot and model (the thread's by default, on the
    thread's own server), the workspace's approval and folder; the MCP servers a replay starts stay with the
    window's manager."""

    async def start(choice: ReplayChoice) -> ReplayResult:
        from workspace.replay import ReplayError, replay

        c = services.session
        workspace = c.require_workspace()
        store = workspace.store
        if choice.model:
            name = choice.robot or store.get_thread(thread_id).robot
            robot = workspace.load_robot_with_model(name, choice.model, api_base=choice.api_base)
        elif choice.robot:
            robot = workspace.load_robot(choice.robot)
        else:
            session = c.session if c.thread_id == thread_id else None
            robot = (session or workspace.open_thread(thread_id)).robot
        if robot is None:
            raise ReplayError("No robot to replay with: choose one")
        options: dict[str, Any] = {"robot": robot.name, "model": robot.model}
        return await replay(store, thread_id, robot, tolerance=choice.tolerance, approval=workspace.approval,
                            folder=workspace.folder, options=options)

    return start


def open_replay(services: Services, *, models: list[tuple[str, str | None]]) -> ReplayDialog | None:
    """"Replay with…" on the open thread (a notice when there is none, or it is a network's); ``models``: the
    composer's list, each model with its server (None: its provider's)."""
    c = services.session
    session = c.session
    if session is None:
        services.notices.toast("Open a thread to replay it.")
        return None
    if getattr(session, "is_network", False):
        services.notices.toast("Only a robot's thread can be replayed.")
        return None
    thread_id = session.thread_id
    try:
        turns = len(c.require_store().path(thread_id))
        title = c.require_store().get_thread(thread_id).display_title
    except Exception as exc:
        services.notices.banner(f"Could not read the thread to replay: {exc}")
        return None
    dialog = ReplayDialog(title, thread_replay(services, thread_id), models=models, robots=c.robot_names(),
                          turns=turns, parent=services.shell)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.show()
    return dialog


__all__ = ["ReplayChoice", "ReplayDialog", "open_replay", "thread_replay", "turn_line", "verdict"]
