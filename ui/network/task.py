"""The Network dock's task panel: what a task received, why it was skipped or failed, its answer, its events and its result as JSON."""

from __future__ import annotations

import html
import json
import re
from typing import Any

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QTabWidget,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ui import markdown, theme
from ui.formatting import format_duration
from ui.network.model import NetworkModel, TaskView
from ui.widgets.common import ElidedLabel, JsonHighlighter, pill
from ui.widgets.status import (
    STATUS_TEXT,
    color_chip,
    robot_color,
    status_background,
    status_color,
    status_pixmap,
)
from workspace import events as ev


def _section(title: str, body: str) -> str:
    c = theme.colors()
    return (f'<p style="margin:10px 0 3px 0; color:{c.muted}; font-size:11px; font-weight:600; '
            f'letter-spacing:0.4px;">{html.escape(title.upper())}</p>{body}')


def _quote(text: str, *, limit: int = 4000) -> str:
    """A message in a tinted box, rendered as Markdown (the full text is in the Result tab)."""
    c = theme.colors()
    shown = text if len(text) <= limit else text[:limit].rstrip() + " …"
    shown = re.sub(r"^#{1,6}\s+(.+)$", r"**\1**", shown, flags=re.MULTILINE)  # headings stay small
    return (f'<table width="100%" cellspacing="0" cellpadding="8" style="background:{c.code_bg};">'
            f"<tr><td>{markdown.render(shown)}</td></tr></table>")


def _why_title(status: str) -> str:
    return {"skipped": "Why it was skipped", "failed": "Why it failed", "cancelled": "Why it stopped"}.get(
        status, "Note")


def task_overview_html(task: TaskView, *, network_message: str | None = None) -> str:
    """The Overview tab: what the task received, why it did not run (or failed), its answer."""
    c = theme.colors()
    parts: list[str] = []
    if task.description:
        parts.append(f'<p style="color:{c.muted}; margin:0 0 4px 0;">{html.escape(task.description)}</p>')
    if task.reason and task.status in ("skipped", "failed", "cancelled"):
        color = c.error if task.status == "failed" else c.text
        parts.append(_section(_why_title(task.status), f'<p style="color:{color}; margin:0;">'
                                                        f"{html.escape(task.reason)}</p>"))
    if task.message is not None:
        same = network_message is not None and task.message == network_message
        title = "Received (the run's message)" if same else "Received"
        parts.append(_section(title, _quote(task.message, limit=900)))
    elif task.status == "waiting":
        note = "It runs only when a task routes to it." if task.optional else "It starts when its dependencies finish."
        parts.append(f'<p style="color:{c.muted};">Not started yet. {note}</p>')
    if task.text:
        parts.append(_section("Answer", markdown.render(task.text)))
    elif task.status == "running":
        parts.append(f'<p style="color:{c.muted};">Working…</p>')
    tools = [e for e in task.events if isinstance(e, ev.ToolUse)]
    if tools:
        names = ", ".join(dict.fromkeys(e.name for e in tools))
        parts.append(_section("Tools used", f"<p style='margin:0'>{len(tools)} call"
                                            f"{'s' if len(tools) != 1 else ''}: {html.escape(names)}</p>"))
    return "".join(parts) or f'<p style="color:{c.muted};">Nothing yet.</p>'


def task_transcript_html(task: TaskView) -> str:
    """The Transcript tab: the task's events in order, with their time from the task's start."""
    from ui.bridge import event_summary

    c = theme.colors()
    start = task.started
    rows: list[str] = []
    for event in task.events:
        if isinstance(event, ev.TextDelta | ev.Usage):
            continue
        offset = f"+{event.ts - start:.2f}s" if start is not None and event.ts >= start else ""
        head = (f'<span style="color:{c.muted}; font-family:{theme.mono_family()}; font-size:11px;">{offset}</span> '
                f'<b>{html.escape(event.kind)}</b>')
        match event:
            case ev.Text():
                body = markdown.render(event.text)
            case ev.ToolUse():
                body = f"<b>{html.escape(event.name)}</b> " + markdown.json_html(event.input)
            case ev.ToolResult():
                body = markdown.json_html(event.payload, max_chars=4000)
            case ev.TaskStarted():
                body = f'<span style="color:{c.muted};">received {len(event.message or "")} characters</span>'
            case ev.TaskFinished():
                body = f'<span style="color:{status_color(event.status)};">{html.escape(event.status)}</span>' + (
                    f" — {html.escape(str(event.error))}" if event.error else "")
            case _:
                body = html.escape(event_summary(event))
        rows.append(f'<div style="margin:0 0 8px 0;">{head}<br>{body}</div>')
    return "".join(rows) or f'<p style="color:{c.muted};">No events yet.</p>'


def task_json(task: TaskView) -> str:
    """The Result tab: the task's state and RobotResult as JSON."""
    data: dict[str, Any] = {
        "task": task.name,
        "robot": task.robot,
        "status": task.status,
        "optional": task.optional,
        "message": task.message,
        "reason": task.reason,
        "duration": round(task.duration, 3) if task.duration is not None else None,
        "result": task.result_dict(),
    }
    return json.dumps({k: v for k, v in data.items() if v is not None}, indent=2, ensure_ascii=False, default=str)


class TaskDetail(QWidget):
    """The selected task: its state, and tabs for its overview, transcript and result JSON."""

    reveal_requested = Signal(str)

    def __init__(self, model: NetworkModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("TaskDetail")
        self.model = model
        self.task_name: str | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 6, 0, 0)
        layout.setSpacing(6)
        head = QHBoxLayout()
        head.setSpacing(7)
        self.icon = QLabel(self)
        self.icon.setFixedSize(16, 16)
        head.addWidget(self.icon)
        # A long task name ends in "…" in a narrow dock (the tooltip has it), not the dock widened.
        self.title = ElidedLabel("", self, min_chars=3, tooltip=True)
        self.title.setObjectName("TaskDetailTitle")
        bold = self.title.font()
        bold.setBold(True)
        self.title.setFont(bold)
        head.addWidget(self.title)
        self._chip_holder = QHBoxLayout()
        self._chip_holder.setContentsMargins(0, 0, 0, 0)
        head.addLayout(self._chip_holder)
        self._chip: QLabel | None = None
        head.addStretch(1)
        self.duration = QLabel("", self)
        self.duration.setObjectName("Muted")
        head.addWidget(self.duration)
        self._pill_holder = QHBoxLayout()
        self._pill_holder.setContentsMargins(0, 0, 0, 0)
        head.addLayout(self._pill_holder)
        self._pill: QLabel | None = None
        self._clock = QTimer(self)  # a running task's time, every half second
        self._clock.setInterval(500)
        self._clock.timeout.connect(self._tick)
        self.reveal = QToolButton(self)
        self.reveal.setObjectName("GhostButton")
        self.reveal.setIcon(theme.icon("chat", theme.colors().muted, 16))
        self.reveal.setToolTip("Show this task's lane in the conversation")
        self.reveal.setAccessibleName("Show this task's lane in the conversation")
        self.reveal.clicked.connect(lambda: self.task_name and self.reveal_requested.emit(self.task_name))
        head.addWidget(self.reveal)
        layout.addLayout(head)
        self.tabs = QTabWidget(self)
        self.tabs.setDocumentMode(True)
        self.overview = QTextBrowser(self.tabs)
        self.overview.setObjectName("DetailView")
        self.overview.setOpenExternalLinks(True)
        self.transcript = QTextBrowser(self.tabs)
        self.transcript.setObjectName("DetailView")
        self.result = QPlainTextEdit(self.tabs)
        self.result.setAccessibleName("The task's result")
        self.result.setObjectName("DetailView")
        self.result.setReadOnly(True)
        self.result.setFont(theme.mono_font(-1))
        self._highlighter = JsonHighlighter(self.result.document())
        self.tabs.addTab(self.overview, "Overview")
        self.tabs.addTab(self.transcript, "Transcript")
        self.tabs.addTab(self.result, "Result")
        layout.addWidget(self.tabs, 1)
        model.task_changed.connect(self._on_task_changed)
        model.reset.connect(self._on_reset)
        self.show_task(None)

    def show_task(self, name: str | None) -> None:
        task = self.model.task(name) if name else None
        self.task_name = task.name if task is not None else None
        if task is None:
            self._clock.stop()
            self.icon.clear()
            self.title.setText("")
            self._set_chip(None)
            self._set_pill(None)
            self.duration.setText("")
            self.reveal.setVisible(False)
            c = theme.colors()
            note = f'<p style="color:{c.muted};">Click a task in the graph to see what it received, its answer, ' \
                   "its events and its result.</p>"
            self.overview.setHtml(note)
            self.transcript.setHtml("")
            self.result.setPlainText("")
            return
        if task.status == "running":
            self._clock.start()
        else:
            self._clock.stop()
        self.icon.setPixmap(status_pixmap(task.status, 16))
        self.title.setText(task.name)
        self._set_chip(task.robot)
        self._set_pill(task.status)
        self.duration.setText(format_duration(task.duration) if task.duration is not None else "")
        self.reveal.setVisible(task.status != "skipped" and task.started is not None)
        self._keep_scroll(self.overview, task_overview_html(task, network_message=self.model.message))
        self._keep_scroll(self.transcript, task_transcript_html(task))
        text = task_json(task)
        if text != self.result.toPlainText():
            self.result.setPlainText(text)

    def _tick(self) -> None:
        task = self.model.task(self.task_name) if self.task_name else None
        if task is None or task.status != "running":
            self._clock.stop()
            return
        self.duration.setText(format_duration(task.duration) if task.duration is not None else "")

    @staticmethod
    def _keep_scroll(view: QTextBrowser, text: str) -> None:
        bar = view.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 4
        value = bar.value()
        view.setHtml(text)
        bar.setValue(bar.maximum() if at_end and value > 0 else value)

    def _set_chip(self, robot: str | None) -> None:
        if self._chip is not None:
            self._chip_holder.removeWidget(self._chip)
            self._chip.deleteLater()
            self._chip = None
        if robot:
            self._chip = color_chip(robot, robot_color(robot, self.model.name), self)
            self._chip_holder.addWidget(self._chip)

    def _set_pill(self, status: str | None) -> None:
        if self._pill is not None:
            self._pill_holder.removeWidget(self._pill)
            self._pill.deleteLater()
            self._pill = None
        if status:
            self._pill = pill(STATUS_TEXT.get(status, status), status_color(status), status_background(status), self)
            self._pill_holder.addWidget(self._pill)

    def _on_task_changed(self, name: str) -> None:
        if name == self.task_name:
            self.show_task(name)

    def _on_reset(self) -> None:
        self.show_task(self.task_name if self.task_name in self.model.tasks else None)




__all__ = ["TaskDetail", "task_json", "task_overview_html", "task_transcript_html"]
