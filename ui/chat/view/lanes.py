"""Lanes: a network run in the chat, one lane per task.

A network run shows a small header (the network), then one :class:`TaskLane` per task in the
order the tasks start (or are skipped). A lane has the robot's colour as a stripe and its badge,
the task's status (icon and pill), its duration and tokens; its body holds the robot's text and
tool cards. A finished lane collapses to one line (its answer's first line) as soon as another
task runs, except the task whose answer is the network's answer (the last one done), which stays
open. A lane the user opened or closed stays that way. Skipped tasks are a single muted line
saying why. What a lane shows is its :class:`~ui.chat.model.state.LaneItem` (the chat's presenter
decides the state, folding included): :meth:`TaskLane.apply` renders it.

Also here, shared with the Network dock: the colours and painted icons of task states.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetrics,
    QMouseEvent,
    QPainter,
    QPainterPath,
    QPaintEvent,
    QPen,
)
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QSizePolicy, QToolButton, QVBoxLayout, QWidget

from ui import markdown, theme
from ui.chat.view.cards import ToolCard
from ui.chat.view.stream import MarkdownStream
from ui.formatting import format_duration
from ui.widgets.common import ElidedLabel, pill
from ui.widgets.status import (
    STATUS_TEXT,
    color_chip,
    network_icon,
    recolor_chips,
    status_background,
    status_color,
    status_pixmap,
)

if TYPE_CHECKING:
    from ui.chat.model.state import Lane, NetworkItem

def _tokens(input_tokens: int, output_tokens: int) -> str:
    total = input_tokens + output_tokens
    return f"{total:,} tokens" if total else ""


# -- widgets ---------------------------------------------------------------------------------------
class NetworkHeader(QWidget):
    """The first row of a network run: the network's glyph and name, then a summary."""

    def __init__(self, network: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("NetworkHeader")
        self.network = network
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(8)
        c = theme.colors()
        self.icon = QLabel(self)
        self.icon.setPixmap(network_icon(c.accent, 18).pixmap(18, 18))
        layout.addWidget(self.icon)
        self.name = QLabel(network, self)
        self.name.setObjectName("NetworkName")
        self.name.setStyleSheet(f"color: {c.accent}; font-weight: 600;")
        layout.addWidget(self.name)
        self.kind = ElidedLabel("network", self, tooltip=True)
        self.kind.setObjectName("Muted")
        layout.addWidget(self.kind, 1)

    def set_summary(self, text: str) -> None:
        self.kind.setText(f"network · {text}" if text else "network")

    def apply(self, item: NetworkItem) -> None:
        self.set_summary(item.summary)


class _LaneHeader(QFrame):
    clicked = Signal()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit()
            event.accept()
            return
        super().mousePressEvent(event)


class TaskLane(QFrame):
    """One task of a network run: a coloured lane with a header and the robot's work inside."""

    #: The person clicked the header or the chevron: fold (True) or open (False) the lane.
    toggle_requested = Signal(bool)

    def __init__(self, task: str, robot: str, parent: QWidget | None = None, *, color: str | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("TaskLane")
        self.task = task
        self.robot = robot
        self.color = color or theme.badge_color(robot)
        self.status = "waiting"
        self.reason: str | None = None
        self.message: str | None = None
        self.started: float | None = None
        self.finished: float | None = None
        self.collapsed = False
        #: The user chose open/closed: automatic collapsing leaves the lane alone.
        self.user_toggled = False
        self.input_tokens = 0
        self.output_tokens = 0
        self._summary_text = ""
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, False)

        outer = QVBoxLayout(self)
        outer.setContentsMargins(4, 0, 0, 0)  # room for the stripe
        outer.setSpacing(0)
        self.header = _LaneHeader(self)
        self.header.setObjectName("TaskLaneHeader")
        self.header.setCursor(Qt.CursorShape.PointingHandCursor)
        self.header.clicked.connect(self.toggle)
        hl = QHBoxLayout(self.header)
        hl.setContentsMargins(8, 6, 10, 6)
        hl.setSpacing(7)
        self.chevron = QToolButton(self.header)
        self.chevron.setObjectName("GhostButton")
        self.chevron.setAutoRaise(True)
        self.chevron.setCursor(Qt.CursorShape.PointingHandCursor)
        self.chevron.clicked.connect(self.toggle)
        self.chevron.setFixedSize(20, 20)
        hl.addWidget(self.chevron)
        self.status_icon = QLabel(self.header)
        self.status_icon.setFixedSize(14, 14)
        hl.addWidget(self.status_icon)
        # A short task name stays whole (the summary gives way first); a long one ends in "…" at 140 px
        # rather than widen the conversation (the tooltip has it). Measured in the bold font it is drawn
        # with: a size hint taken before the style applies was a few pixels short at 200 %.
        self.title = ElidedLabel(task, self.header, min_chars=3, tooltip=True)
        self.title.setObjectName("TaskTitle")
        bold = QFont(self.title.font())
        bold.setBold(True)
        self.title.setFont(bold)
        self.title.setToolTip(task)
        whole = QFontMetrics(bold).horizontalAdvance(task) + 4
        self.title.setMinimumWidth(max(30, min(whole, 140)))
        hl.addWidget(self.title)
        self.chip = color_chip(robot, self.color, self.header)
        self.chip.setToolTip(f"Robot {robot}")
        hl.addWidget(self.chip)
        self.summary = ElidedLabel("", self.header)
        self.summary.setObjectName("Muted")
        hl.addWidget(self.summary, 1)
        self.usage = ElidedLabel("", self.header, whole=True)
        self.usage.setObjectName("Muted")
        hl.addWidget(self.usage)
        self.duration = QLabel("", self.header)
        self.duration.setObjectName("Muted")
        hl.addWidget(self.duration)
        self._pill_holder = QHBoxLayout()
        self._pill_holder.setContentsMargins(0, 0, 0, 0)
        hl.addLayout(self._pill_holder)
        self._pill: QLabel | None = None
        outer.addWidget(self.header)

        self.body = QWidget(self)
        self.body.setObjectName("TaskLaneBody")
        self.body_layout = QVBoxLayout(self.body)
        self.body_layout.setContentsMargins(12, 2, 12, 10)
        self.body_layout.setSpacing(6)
        self.note = QLabel("", self.body)
        self.note.setObjectName("Muted")
        self.note.setWordWrap(True)
        self.note.setTextFormat(Qt.TextFormat.RichText)
        self.note.setVisible(False)
        self.body_layout.addWidget(self.note)
        outer.addWidget(self.body)
        self._widgets: list[QWidget] = []
        self._set_status("waiting")
        self._update_chevron()

    # -- content --------------------------------------------------------------------------------
    def add_widget(self, widget: QWidget) -> None:
        recolor_chips(widget, self.robot, self.color)
        widget.setParent(self.body)
        self.body_layout.addWidget(widget)
        self._widgets.append(widget)
        widget.setVisible(True)
        if self.note.isVisible():  # the failure note stays last
            self.body_layout.removeWidget(self.note)
            self.body_layout.addWidget(self.note)

    def widgets(self) -> list[QWidget]:
        return [w for w in self._widgets if w.parent() is self.body]

    def tool_cards(self) -> list[Any]:
        return [w for w in self.widgets() if isinstance(w, ToolCard)]

    @property
    def text(self) -> str:
        """The lane's text (every text segment, joined)."""
        parts = [w.text for w in self.widgets() if isinstance(w, MarkdownStream)]
        return "\n\n".join(p for p in parts if p)

    # -- state ------------------------------------------------------------------------------------
    def apply(self, lane: Lane) -> None:
        """Show the task's state: status, times, tokens, why it stopped, folded or open."""
        self.started, self.finished = lane.started, lane.finished
        self.message = lane.message
        self.user_toggled = lane.user_toggled
        if lane.status != self.status or self._pill is None:
            self._set_status(lane.status)
        self.update_duration()
        usage = lane.usage
        if usage.input_tokens or usage.output_tokens or self.input_tokens or self.output_tokens:
            self.set_usage(usage.input_tokens, usage.output_tokens, usage.cost)
        if lane.reason != self.reason:
            self.reason = lane.reason
            if lane.status in ("failed", "cancelled") and lane.reason:
                c = theme.colors()
                color = c.error if lane.status == "failed" else c.muted
                what = "Failed" if lane.status == "failed" else "Stopped"
                self.note.setText(f'<span style="color:{color};">{what}: {markdown._esc(lane.reason)}</span>')
                self.body_layout.removeWidget(self.note)
                self.body_layout.addWidget(self.note)
                self.note.setVisible(True)
        if lane.status == "skipped":
            self._skip(lane.summary)
            return
        self.collapsed = lane.collapsed
        self.body.setVisible(not lane.collapsed)
        self._update_chevron()
        self._summary_text = lane.summary
        self.summary.setText(lane.summary if lane.collapsed else "")
        self.summary.setToolTip(lane.summary)

    def _skip(self, why: str) -> None:
        """A skipped task: a single muted line saying why."""
        self.body.setVisible(False)
        self.chevron.setVisible(False)
        self.header.setCursor(Qt.CursorShape.ArrowCursor)
        self.collapsed = True
        self.summary.setText(why)
        self.summary.setToolTip(why if why != "not run" else "")
        if not self.property("compact"):
            self.setProperty("compact", True)
            self.style().unpolish(self)
            self.style().polish(self)
        self.update()

    def _set_status(self, status: str) -> None:
        self.status = status
        self.setProperty("status", status)
        self.status_icon.setPixmap(status_pixmap(status, 14))
        if self._pill is not None:
            self._pill_holder.removeWidget(self._pill)
            self._pill.deleteLater()
        self._pill = pill(STATUS_TEXT.get(status, status), status_color(status), status_background(status),
                          self.header)
        self._pill_holder.addWidget(self._pill)
        self.update()

    def update_duration(self, now: float | None = None) -> None:
        if self.started is None:
            self.duration.setText("")
            return
        import time

        end = self.finished if self.finished is not None else (now or time.time())
        self.duration.setText(format_duration(max(0.0, end - self.started)))

    def set_usage(self, input_tokens: int, output_tokens: int, cost: float | None = None) -> None:
        self.input_tokens, self.output_tokens = input_tokens, output_tokens
        self.usage.setText(_tokens(input_tokens, output_tokens))
        tip = f"{input_tokens:,} input + {output_tokens:,} output tokens"
        if cost:
            tip += f", ${cost:.4f}"
        self.usage.setToolTip(tip)

    # -- collapsing -------------------------------------------------------------------------------
    def toggle(self) -> None:
        """The person opens or closes the lane: the chat's presenter decides (see ``toggle_requested``)."""
        if self.status == "skipped":
            return
        self.toggle_requested.emit(not self.collapsed)

    def set_collapsed(self, collapsed: bool) -> None:
        """Fold or open the lane on screen (the view state stays as it is)."""
        if self.status == "skipped":
            return
        self.collapsed = collapsed
        self.body.setVisible(not collapsed)
        self._update_chevron()
        self.summary.setText(self._summary_text if collapsed else "")

    def _update_chevron(self) -> None:
        name = "chevron-right" if self.collapsed else "chevron-down"
        self.chevron.setIcon(theme.icon(name, theme.colors().muted, 14))
        self.chevron.setToolTip("Show this task's work" if self.collapsed else "Hide this task's work")
        self.chevron.setAccessibleName(f"{'Expand' if self.collapsed else 'Collapse'} task {self.task}")

    # -- painting -----------------------------------------------------------------------------------
    def paintEvent(self, event: QPaintEvent) -> None:
        c = theme.colors()
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5)
        path = QPainterPath()
        path.addRoundedRect(rect, 9, 9)
        skipped = self.status == "skipped"
        painter.fillPath(path, QColor(c.window if skipped else c.card))
        robot = QColor(self.color)
        painter.save()
        painter.setClipPath(path)
        if not skipped:
            tint = QColor(robot)
            tint.setAlpha(20 if c.name == "light" else 34)
            painter.fillRect(QRectF(0, 0, self.width(), self.header.geometry().bottom() + 1), tint)
        stripe = QColor(c.border) if skipped else robot
        painter.fillRect(QRectF(0, 0, 4, self.height()), stripe)
        painter.restore()
        border = QColor(c.border)
        pen = QPen(border, 1)
        if skipped:
            pen.setStyle(Qt.PenStyle.DashLine)
        elif self.status == "running":
            border = QColor(robot)
            border.setAlpha(150)
            pen = QPen(border, 1.2)
        elif self.status == "failed":
            pen = QPen(QColor(c.error), 1)
        painter.setPen(pen)
        painter.drawPath(path)
        painter.end()


__all__ = ["NetworkHeader", "TaskLane"]
