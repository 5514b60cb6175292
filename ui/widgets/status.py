"""The robots' colours and a network task's status, drawn the same in the chat's lanes and the
Network dock: status colours, pills, pixmaps and the spinner's phase; the network icon."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QByteArray, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import (
    QColor,
    QIcon,
    QPainter,
    QPainterPath,
    QPen,
    QPixmap,
)
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

from ui import theme
from ui.formatting import LANE_STATUS_TEXT

STATUS_TEXT = LANE_STATUS_TEXT

NETWORK_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="24" height="24" viewBox="0 0 24 24" fill="none" '
    'stroke="currentColor" stroke-width="1.8" stroke-linecap="round" stroke-linejoin="round">'
    '<rect x="2.5" y="9" width="6" height="6" rx="1.6"/><rect x="15.5" y="3" width="6" height="6" rx="1.6"/>'
    '<rect x="15.5" y="15" width="6" height="6" rx="1.6"/><path d="M8.5 12h2.5a2 2 0 0 0 2-2V8a2 2 0 0 1 2-2h.5"/>'
    '<path d="M11 12a2 2 0 0 1 2 2v2a2 2 0 0 0 2 2h.5"/></svg>'
)


# -- colours and icons ---------------------------------------------------------------------------
#: Robot colours per network: distinct within a network, the robot's usual colour when free.
_NETWORK_COLORS: dict[str, dict[str, str]] = {}


def robot_color(robot: str, network: str | None = None) -> str:
    """The robot's colour; inside ``network`` one no other robot of that network has (stable for
    the process: the first robots to ask — the dock asks in the graph's order — keep theirs)."""
    preferred = theme.badge_color(robot)
    if network is None:
        return preferred
    table = _NETWORK_COLORS.setdefault(network, {})
    found = table.get(robot)
    if found is not None:
        return found
    palette = list(theme.BADGE_COLORS)
    start = palette.index(preferred) if preferred in palette else 0
    used = set(table.values())
    color = next((palette[(start + i) % len(palette)] for i in range(len(palette))
                  if palette[(start + i) % len(palette)] not in used), preferred)
    table[robot] = color
    return color


def assign_robot_colors(network: str, robots: Iterable[str]) -> None:
    """Give the robots of ``network`` their colours in this order (the graph's)."""
    for robot in robots:
        robot_color(robot, network)


def color_chip(robot: str, color: str, parent: QWidget | None = None) -> QLabel:
    """The robot badge (as on tool cards) in a given colour."""
    label = QLabel(robot, parent)
    label.setObjectName("RobotChip")
    style_chip(label, color)
    label.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)
    return label


def style_chip(label: QLabel, color: str) -> None:
    fg, bg = theme.chip_colors(color, theme.colors())
    label.setStyleSheet(
        f"QLabel#RobotChip {{ color: {fg}; background-color: {bg}; border-radius: 8px; padding: 1px 8px;"
        " font-size: 11px; font-weight: 600; }" + theme.EMPTY_PILL  # (a card's badge narrowed to nothing)
    )


def recolor_chips(widget: QWidget, robot: str, color: str) -> None:
    """Robot badges of ``robot`` inside ``widget`` (a tool card's) in the lane's colour."""
    for label in widget.findChildren(QLabel, "RobotChip"):
        if label.text() == robot:
            style_chip(label, color)


def status_color(status: str) -> str:
    c = theme.colors()
    return {
        "running": c.accent,
        "done": c.success,
        "failed": c.error,
        "cancelled": c.warning,
        "skipped": c.muted,
        "waiting": c.muted,
    }.get(status, c.muted)


def status_background(status: str) -> str:
    c = theme.colors()
    dark = c.name == "dark"
    return {
        "running": "#25244a" if dark else "#eeedfc",
        "done": "#1b2e22" if dark else "#e9f6ec",
        "failed": c.error_bg,
        "cancelled": c.warning_bg,
        "skipped": c.card_header,
        "waiting": c.card_header,
    }.get(status, c.card_header)


def paint_status(painter: QPainter, rect: QRectF, status: str, *, phase: float = 0.0) -> None:
    """A status icon in ``rect``: waiting ○, running (a turning arc), done ✓, failed ✕,
    skipped ⊘, cancelled ■."""
    color = QColor(status_color(status))
    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    side = min(rect.width(), rect.height())
    r = QRectF(0, 0, side, side)
    r.moveCenter(rect.center())
    width = max(1.4, side / 9)
    inner = r.adjusted(width / 2, width / 2, -width / 2, -width / 2)
    if status == "running":
        faint = QColor(color)
        faint.setAlpha(60)
        painter.setPen(QPen(faint, width))
        painter.drawEllipse(inner)
        painter.setPen(QPen(color, width, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap))
        start = int(-phase * 360 * 16) % (360 * 16)
        painter.drawArc(inner, start, 110 * 16)
    elif status in ("done", "failed", "cancelled"):
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(color)
        painter.drawEllipse(r)
        pen = QPen(QColor("#ffffff"), width * 1.1, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap,
                   Qt.PenJoinStyle.RoundJoin)
        painter.setPen(pen)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        s = side
        x, y = r.left(), r.top()
        if status == "done":
            path = QPainterPath(QPointF(x + s * 0.28, y + s * 0.52))
            path.lineTo(x + s * 0.44, y + s * 0.67)
            path.lineTo(x + s * 0.72, y + s * 0.36)
            painter.drawPath(path)
        elif status == "failed":
            painter.drawLine(QPointF(x + s * 0.34, y + s * 0.34), QPointF(x + s * 0.66, y + s * 0.66))
            painter.drawLine(QPointF(x + s * 0.66, y + s * 0.34), QPointF(x + s * 0.34, y + s * 0.66))
        else:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor("#ffffff"))
            painter.drawRoundedRect(QRectF(x + s * 0.34, y + s * 0.34, s * 0.32, s * 0.32), s * 0.05, s * 0.05)
    elif status == "skipped":
        painter.setPen(QPen(color, width))
        painter.drawEllipse(inner)
        painter.drawLine(QPointF(inner.left() + inner.width() * 0.2, inner.bottom() - inner.height() * 0.2),
                         QPointF(inner.right() - inner.width() * 0.2, inner.top() + inner.height() * 0.2))
    else:  # waiting
        pen = QPen(color, width)
        pen.setStyle(Qt.PenStyle.DotLine if side >= 14 else Qt.PenStyle.SolidLine)
        painter.setPen(pen)
        painter.drawEllipse(inner)
    painter.restore()


def status_pixmap(status: str, size: int = 14, *, phase: float = 0.0) -> QPixmap:
    app_scale = 2
    pixmap = QPixmap(size * app_scale, size * app_scale)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    paint_status(painter, QRectF(0, 0, size * app_scale, size * app_scale), status, phase=phase)
    painter.end()
    pixmap.setDevicePixelRatio(app_scale)
    return pixmap


def network_icon(color: str | None = None, size: int = 18) -> QIcon:
    """The network glyph (three linked boxes) in ``color``."""
    svg = NETWORK_SVG.replace("currentColor", color or theme.colors().muted)
    renderer = QSvgRenderer(QByteArray(svg.encode("utf-8")))
    scale = 2
    pixmap = QPixmap(QSize(size * scale, size * scale))
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter, QRectF(0, 0, size * scale, size * scale))
    painter.end()
    pixmap.setDevicePixelRatio(scale)
    return QIcon(pixmap)


def spinner_phase(ms: float, period_ms: float = 1100.0) -> float:
    """Phase (0..1) of a turning arc at time ``ms``."""
    return (ms % period_ms) / period_ms
