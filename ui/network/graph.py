"""The Network dock's graph: task nodes (state icon, robot colour, duration; a running task's icon turns), dependency and route edges, parallel groups, laid out left to right by execution step."""

from __future__ import annotations

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
    QStyleOptionGraphicsItem,
    QWidget,
)

from ui import theme
from ui.formatting import format_duration
from ui.network.model import NetworkModel, TaskView
from ui.widgets.status import (
    STATUS_TEXT,
    paint_status,
    robot_color,
    status_background,
    status_color,
)

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


__all__ = ["EdgeItem", "GroupItem", "NetworkGraphView", "TaskNode"]
