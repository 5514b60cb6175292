"""The Network dock: a network's task graph with each task's live state, and the selected task's
transcript and result.

The graph is laid out left to right by execution step (``Network.levels()``, carried in the
graph's nodes): a column per step, the tasks of a step stacked, a parallel group framed, edges
for dependencies (solid) and routes (dashed, labelled with the rule). Each node shows the task,
its robot (in the robot's colour, as in the chat's lanes), a state icon, and its duration; a
running task's icon turns and its border glows. Clicking a node opens it in the panel below:
what it received, why it was skipped or failed, its answer, its events, its result as JSON.

Everything comes from a :class:`~ui.models.network.NetworkModel`; the pane never touches a run.
"""

from __future__ import annotations

import html
import json
import re
import time
from typing import Any

from PySide6.QtCore import QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QFontMetrics,
    QGuiApplication,
    QPainter,
    QPainterPath,
    QPen,
    QPolygonF,
    QResizeEvent,
)
from PySide6.QtWidgets import (
    QFrame,
    QGraphicsItem,
    QGraphicsObject,
    QGraphicsPathItem,
    QGraphicsScene,
    QGraphicsSceneHoverEvent,
    QGraphicsSceneMouseEvent,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QStyleOptionGraphicsItem,
    QTabWidget,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ui import markdown, theme
from ui.models.network import NetworkModel, TaskView
from ui.models.tool_calls import format_duration
from ui.widgets.common import ElidedLabel, JsonHighlighter, pill
from ui.widgets.lanes import (
    STATUS_TEXT,
    assign_robot_colors,
    color_chip,
    network_icon,
    paint_status,
    robot_color,
    status_background,
    status_color,
    status_pixmap,
)
from workspace import events as ev

NODE_W = 164.0
NODE_H = 62.0
COL_GAP = 64.0
ROW_GAP = 22.0
GROUP_PAD = 12.0
GROUP_LABEL = 20.0
SPIN_PERIOD_MS = 1100.0


def _font(size_delta: float = 0.0, *, bold: bool = False) -> QFont:
    font = QFont(QGuiApplication.font())
    if size_delta:
        font.setPointSizeF(max(6.0, font.pointSizeF() + size_delta))
    font.setBold(bold)
    return font


# -- graph items -------------------------------------------------------------------------------------
class TaskNode(QGraphicsObject):
    """One task: a rounded card with the state icon, the task, its robot and its time."""

    def __init__(self, task: TaskView, view: NetworkGraphView) -> None:
        super().__init__()
        self.task = task
        self._view = view
        self.selected = False
        self.hovered = False
        self.setAcceptHoverEvents(True)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsFocusable, True)
        self.setToolTip(self._tooltip())
        self.setZValue(2)

    @property
    def name(self) -> str:
        return self.task.name

    def _tooltip(self) -> str:
        t = self.task
        lines = [f"{t.name} — robot {t.robot}", f"state: {t.status}"]
        if t.optional:
            lines.append("optional: runs only when a task routes to it")
        if t.description:
            lines.append(t.description)
        if t.reason:
            lines.append(t.reason)
        return "\n".join(lines)

    def refresh(self) -> None:
        self.setToolTip(self._tooltip())
        self.update()

    def boundingRect(self) -> QRectF:
        return QRectF(-4, -4, NODE_W + 8, NODE_H + 8)

    def shape(self) -> QPainterPath:
        path = QPainterPath()
        path.addRoundedRect(QRectF(0, 0, NODE_W, NODE_H), 10, 10)
        return path

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        c = theme.colors()
        t = self.task
        status = t.status
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = QRectF(0.5, 0.5, NODE_W - 1, NODE_H - 1)
        path = QPainterPath()
        path.addRoundedRect(rect, 10, 10)
        faded = status == "skipped"
        robot = QColor(robot_color(t.robot, self._view.model.name))
        bg = QColor(c.surface)
        if status == "running":
            bg = QColor(status_background("running"))
        elif self.hovered:
            bg = QColor(c.card_header)
        painter.fillPath(path, bg)
        painter.save()
        painter.setClipPath(path)
        stripe = QColor(robot)
        if faded:
            stripe.setAlpha(90)
        painter.fillRect(QRectF(0, 0, 5, NODE_H), stripe)
        painter.restore()
        # border: the state's colour; dashed for optional tasks not (yet) run
        pen = QPen(QColor(c.border), 1.2)
        if status in ("done", "failed", "cancelled"):
            pen = QPen(QColor(status_color(status)), 1.4)
        elif status == "running":
            glow = QColor(c.accent)
            phase = self._view.phase
            glow.setAlpha(int(110 + 110 * abs(1 - 2 * phase)))
            halo = QPainterPath()
            halo.addRoundedRect(rect.adjusted(-2.5, -2.5, 2.5, 2.5), 12, 12)
            painter.setPen(QPen(glow, 2.4))
            painter.drawPath(halo)
            pen = QPen(QColor(c.accent), 1.4)
        if t.optional and status in ("waiting", "skipped"):
            pen.setStyle(Qt.PenStyle.DashLine)
        painter.setPen(pen)
        painter.drawPath(path)
        if self.selected:
            ring = QPainterPath()
            ring.addRoundedRect(rect.adjusted(-3, -3, 3, 3), 12, 12)
            painter.setPen(QPen(QColor(c.accent), 2))
            painter.drawPath(ring)
        text = QColor(c.muted if faded else c.text)
        muted = QColor(c.muted)
        # state icon
        paint_status(painter, QRectF(14, 12, 16, 16), status, phase=self._view.phase)
        # task name
        painter.setFont(_font(0.5, bold=True))
        fm = QFontMetrics(painter.font())
        painter.setPen(text)
        painter.drawText(QRectF(38, 9, NODE_W - 46, 22), Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                         fm.elidedText(t.name, Qt.TextElideMode.ElideRight, int(NODE_W - 46)))
        # robot (in its colour) · state or duration
        painter.setFont(_font(-1.5))
        fm = QFontMetrics(painter.font())
        robot_text = QColor(robot if c.name == "light" else robot.lighter(150))
        if faded:
            robot_text = muted
        dot = QRectF(16, 40, 7, 7)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QBrush(robot_text))
        painter.drawEllipse(dot)
        right = self._right_text()
        right_w = fm.horizontalAdvance(right) + 4
        painter.setPen(robot_text)
        painter.drawText(QRectF(29, 34, NODE_W - 40 - right_w, 18),
                         Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                         fm.elidedText(t.robot, Qt.TextElideMode.ElideRight, int(NODE_W - 40 - right_w)))
        painter.setPen(QColor(status_color(status)) if status in ("running", "failed") else muted)
        painter.drawText(QRectF(NODE_W - 10 - right_w, 34, right_w, 18),
                         Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, right)

    def _right_text(self) -> str:
        t = self.task
        if t.status == "running":
            return format_duration(t.duration) if t.duration and t.duration >= 1 else "running"
        if t.status == "waiting":
            return "optional" if t.optional else "waiting"
        if t.status in ("done", "failed", "cancelled") and t.duration is not None:
            return format_duration(t.duration)
        return STATUS_TEXT.get(t.status, t.status)

    def hoverEnterEvent(self, event: QGraphicsSceneHoverEvent) -> None:
        self.hovered = True
        self.update()

    def hoverLeaveEvent(self, event: QGraphicsSceneHoverEvent) -> None:
        self.hovered = False
        self.update()

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            self._view.select(self.task.name, emit=True)
            event.accept()
            return
        super().mousePressEvent(event)


class EdgeItem(QGraphicsPathItem):
    """A dependency (solid) or a route (dashed, labelled) from one task to another."""

    def __init__(self, edge: dict[str, Any], source: TaskNode, target: TaskNode) -> None:
        super().__init__()
        self.edge = edge
        self.source = source
        self.target = target
        self.kind = str(edge.get("kind") or "depends")
        self.label = str(edge.get("label") or "")
        self.setZValue(1)
        self._build()

    def _points(self) -> tuple[QPointF, QPointF]:
        s = self.source.pos()
        t = self.target.pos()
        if abs(s.x() - t.x()) < 1:  # same column: bottom to top
            return QPointF(s.x() + NODE_W / 2, s.y() + NODE_H), QPointF(t.x() + NODE_W / 2, t.y())
        return QPointF(s.x() + NODE_W, s.y() + NODE_H / 2), QPointF(t.x(), t.y() + NODE_H / 2)

    def _build(self) -> None:
        a, b = self._points()
        path = QPainterPath(a)
        if abs(a.x() - b.x()) < 1:
            mid = (b.y() - a.y()) / 2
            path.cubicTo(QPointF(a.x(), a.y() + mid), QPointF(b.x(), b.y() - mid), b)
        else:
            dx = max(30.0, (b.x() - a.x()) / 2)
            path.cubicTo(QPointF(a.x() + dx, a.y()), QPointF(b.x() - dx, b.y()), b)
        self.setPath(path)
        self._end = b
        self._path = path

    def state(self) -> str:
        """"taken" (the target ran after the source), "not-taken" (target skipped) or "idle"."""
        src, dst = self.source.task.status, self.target.task.status
        if dst == "skipped":
            return "not-taken"
        if src == "done" and dst in ("running", "done", "failed", "cancelled"):
            return "taken"
        return "idle"

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        c = theme.colors()
        state = self.state()
        color = QColor(c.muted)
        width = 1.4
        if state == "taken":
            color = QColor(c.accent)
            width = 2.0
        elif state == "not-taken":
            color.setAlpha(90)
        pen = QPen(color, width, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap)
        if self.kind == "route" and state != "taken":
            pen.setStyle(Qt.PenStyle.DashLine)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(pen)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawPath(self._path)
        # arrow head
        end = self._end
        angle_point = self._path.pointAtPercent(0.97)
        direction = end - angle_point
        length = max(0.001, (direction.x() ** 2 + direction.y() ** 2) ** 0.5)
        ux, uy = direction.x() / length, direction.y() / length
        size = 8.0
        left = QPointF(end.x() - ux * size - uy * size * 0.5, end.y() - uy * size + ux * size * 0.5)
        right = QPointF(end.x() - ux * size + uy * size * 0.5, end.y() - uy * size - ux * size * 0.5)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(color)
        painter.drawPolygon(QPolygonF([end, left, right]))
        if self.label:
            self._paint_label(painter, state)

    def _paint_label(self, painter: QPainter, state: str) -> None:
        c = theme.colors()
        point = self._path.pointAtPercent(0.5)
        painter.setFont(_font(-2))
        fm = QFontMetrics(painter.font())
        text = fm.elidedText(self.label, Qt.TextElideMode.ElideRight, 110)
        w = fm.horizontalAdvance(text) + 12
        h = fm.height() + 4
        box = QRectF(point.x() - w / 2, point.y() - h / 2, w, h)
        fill = QColor(c.surface)
        border = QColor(c.accent if state == "taken" else c.border)
        painter.setPen(QPen(border, 1))
        painter.setBrush(fill)
        painter.drawRoundedRect(box, h / 2, h / 2)
        fg = QColor(c.accent if state == "taken" else c.muted)
        if state == "not-taken":
            fg.setAlpha(140)
        painter.setPen(fg)
        painter.drawText(box, Qt.AlignmentFlag.AlignCenter, text)

    def boundingRect(self) -> QRectF:
        return super().boundingRect().adjusted(-70, -14, 70, 14)


class GroupItem(QGraphicsObject):
    """A parallel group: a soft frame around its tasks, with its name."""

    def __init__(self, name: str, rect: QRectF) -> None:
        super().__init__()
        self.name = name
        self.rect = rect
        self.setZValue(0)

    def boundingRect(self) -> QRectF:
        return self.rect.adjusted(-2, -2, 2, 2)

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        c = theme.colors()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        tint = QColor(c.accent)
        tint.setAlpha(12 if c.name == "light" else 22)
        border = QColor(c.accent)
        border.setAlpha(90)
        pen = QPen(border, 1.2, Qt.PenStyle.DashLine)
        painter.setPen(pen)
        painter.setBrush(tint)
        painter.drawRoundedRect(self.rect, 12, 12)
        painter.setFont(_font(-2, bold=True))
        painter.setPen(QColor(c.accent))
        painter.drawText(self.rect.adjusted(12, 4, -8, 0), Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
                         f"{self.name} · in parallel")


class NetworkGraphView(QGraphicsView):
    """The task graph, laid out left to right by step."""

    task_selected = Signal(str)

    def __init__(self, model: NetworkModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("NetworkGraph")
        self.model = model
        self._scene = QGraphicsScene(self)
        self.setScene(self._scene)
        self.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setMinimumHeight(140)
        self.nodes: dict[str, TaskNode] = {}
        self.edges: list[EdgeItem] = []
        self.groups: list[GroupItem] = []
        self.selected: str | None = None
        self.phase = 0.0
        self._t0 = time.monotonic()
        self._timer = QTimer(self)
        self._timer.setInterval(40)
        self._timer.timeout.connect(self._animate)
        self._tick = 0
        self.retheme()
        model.reset.connect(self.rebuild)
        model.task_changed.connect(self._on_task_changed)
        self.rebuild()

    def retheme(self) -> None:
        self.setBackgroundBrush(QColor(theme.colors().surface))
        self.viewport().update()

    # -- building -------------------------------------------------------------------------------
    def rebuild(self) -> None:
        self._scene.clear()
        self.nodes, self.edges, self.groups = {}, [], []
        model = self.model
        columns = model.steps()
        group_of = {member: name for name, members in model.groups.items() for member in members}
        group_rank = {name: i for i, name in enumerate(model.groups)}
        index = {str(n["name"]): i for i, n in enumerate(model.nodes)}
        heights = []
        ordered: list[list[str]] = []
        for column in columns:
            col = sorted(column, key=lambda n: (group_rank.get(group_of.get(n, ""), -1), index.get(n, 0)))
            ordered.append(col)
            groups_in = {group_of[n] for n in col if n in group_of}
            heights.append(len(col) * NODE_H + (len(col) - 1) * ROW_GAP + len(groups_in) * GROUP_LABEL)
        tallest = max(heights, default=0.0)
        # Route labels sit between the columns: make room for the widest.
        fm = QFontMetrics(_font(-2))
        widest = max((fm.horizontalAdvance(str(e.get("label") or "")) for e in model.edges if e.get("label")),
                     default=0)
        gap = max(COL_GAP, min(150.0, widest + 44.0)) if widest else COL_GAP
        for ci, col in enumerate(ordered):
            x = ci * (NODE_W + gap)
            y = (tallest - heights[ci]) / 2
            previous_group: str | None = None
            for name in col:
                group = group_of.get(name)
                if group is not None and group != previous_group:
                    y += GROUP_LABEL
                previous_group = group
                task = model.tasks.get(name)
                if task is None:
                    continue
                node = TaskNode(task, self)
                node.setPos(x, y)
                self._scene.addItem(node)
                self.nodes[name] = node
                y += NODE_H + ROW_GAP
        for name, members in model.groups.items():
            rects = [QRectF(self.nodes[m].pos().x(), self.nodes[m].pos().y(), NODE_W, NODE_H)
                     for m in members if m in self.nodes]
            if not rects:
                continue
            box = rects[0]
            for r in rects[1:]:
                box = box.united(r)
            box = box.adjusted(-GROUP_PAD, -GROUP_PAD - GROUP_LABEL + 4, GROUP_PAD, GROUP_PAD)
            frame = GroupItem(name, box)
            self._scene.addItem(frame)
            self.groups.append(frame)
        for edge in model.edges:
            source, target = self.nodes.get(str(edge.get("from"))), self.nodes.get(str(edge.get("to")))
            if source is None or target is None:
                continue
            line = EdgeItem(edge, source, target)
            self._scene.addItem(line)
            self.edges.append(line)
        if self.selected in self.nodes:
            self.nodes[self.selected].selected = True
        else:
            self.selected = None
        bounds = self._scene.itemsBoundingRect().adjusted(-12, -14, 12, 14)
        self._scene.setSceneRect(bounds)
        self._fit()
        self._update_timer()

    def _fit(self) -> None:
        rect = self._scene.sceneRect()
        if rect.isEmpty():
            return
        self.resetTransform()
        view = self.viewport().rect()
        if view.width() <= 0 or view.height() <= 0:
            return
        scale = min(1.0, view.width() / rect.width(), view.height() / rect.height())
        scale = max(scale, 0.55)  # smaller than this is unreadable: scroll instead
        self.scale(scale, scale)
        self.centerOn(rect.center())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()

    # -- state ----------------------------------------------------------------------------------
    def _on_task_changed(self, name: str) -> None:
        node = self.nodes.get(name)
        if node is None:
            self.rebuild()
            return
        node.refresh()
        for edge in self.edges:
            if edge.source is node or edge.target is node:
                edge.update()
        self._update_timer()

    def _update_timer(self) -> None:
        running = any(n.task.status == "running" for n in self.nodes.values())
        if running and not self._timer.isActive():
            self._timer.start()
        elif not running and self._timer.isActive():
            self._timer.stop()
            self.phase = 0.0

    def _animate(self) -> None:
        ms = (time.monotonic() - self._t0) * 1000
        self.phase = (ms % SPIN_PERIOD_MS) / SPIN_PERIOD_MS
        for node in self.nodes.values():
            if node.task.status == "running":
                node.update()

    def select(self, name: str | None, *, emit: bool = False) -> None:
        if self.selected in self.nodes:
            self.nodes[self.selected].selected = False
            self.nodes[self.selected].update()
        self.selected = name if name in self.nodes else None
        if self.selected is not None:
            node = self.nodes[self.selected]
            node.selected = True
            node.update()
            self.ensureVisible(node, 20, 20)
        if emit and self.selected is not None:
            self.task_selected.emit(self.selected)


# -- the selected task ----------------------------------------------------------------------------
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
        # A long task name ends in "…" in a narrow dock (the full name in its tooltip), never widens the dock.
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


class NetworkPane(QWidget):
    """The Network dock: header, task graph, and the selected task."""

    reveal_requested = Signal(str)

    def __init__(self, model: NetworkModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("InspectorPane")
        self.model = model
        self.network: Any = None
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
    def set_network(self, network: Any, *, note: str | None = None) -> None:
        """Show ``network`` (a Network, its graph dict, or None with an explanation)."""
        self.network = network if network is not None and hasattr(network, "graph") else None
        if network is None:
            self.model.set_graph(None)
            self.empty.setText(note or self._empty_text())
            self.stack.setCurrentWidget(self.empty)
            return
        graph = network.graph() if hasattr(network, "graph") else dict(network)
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
