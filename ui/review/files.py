"""The file list of a review: path, action, +/− and the hunk decisions of each file."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter
from PySide6.QtWidgets import (
    QAbstractItemView,
    QListView,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QWidget,
)

from ui import theme
from ui.review.model import ChangeReviewModel

ACTION_LABELS = {"create": "new", "modify": "edit", "delete": "deleted", "rename": "renamed"}
STATE_LABELS = {"applied": "applied", "undone": "undone", "rejected": "not applied", "conflict": "conflict",
                "failed": "failed"}


class FileDelegate(QStyledItemDelegate):
    """Two lines per file: the name (folder muted), then +/−, and pending / accepted / rejected hunks."""

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:
        fm = QFontMetrics(option.font)
        return QSize(200, fm.height() * 2 + 16)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        fc: Any = index.data(ChangeReviewModel.FileRole)
        if fc is None:
            return
        c = theme.colors()
        painter.save()
        r = option.rect
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        if selected:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(c.selection))
            painter.drawRoundedRect(QRectF(r).adjusted(2, 1, -2, -1), 6, 6)
        font = QFont(option.font)
        fm = QFontMetrics(font)
        x, y, w = r.x() + 10, r.y() + 6, r.width() - 20
        counts = fc.counts()
        # line 1: name (bold) + folder (muted), elided in the middle
        path = fc.display_path
        folder, _, name = path.rpartition("/")
        bold = QFont(font)
        bold.setBold(True)
        fmb = QFontMetrics(bold)
        file_state = str(index.data(ChangeReviewModel.StateRole) or fc.state)
        state = STATE_LABELS.get(file_state, "")
        action = ACTION_LABELS.get(fc.action, fc.action)
        tag = state or action
        tag_w = fm.horizontalAdvance(tag) + 14
        name_shown = fmb.elidedText(name, Qt.TextElideMode.ElideMiddle, max(20, w - tag_w - 8))
        painter.setFont(bold)
        painter.setPen(QColor(c.text))
        painter.drawText(QRect(x, y, w, fm.height()), Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                         name_shown)
        used = fmb.horizontalAdvance(name_shown)
        if folder:
            painter.setFont(font)
            painter.setPen(QColor(c.muted))
            rest = fm.elidedText("  " + folder + "/", Qt.TextElideMode.ElideMiddle, max(0, w - tag_w - used - 8))
            painter.drawText(QRect(x + used, y, w - used, fm.height()),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, rest)
        # the tag on the right
        tag_color = {"applied": c.success, "conflict": c.error, "failed": c.error,
                     "rejected": c.muted, "undone": c.muted}.get(file_state, c.accent if fc.action != "modify"
                                                                    else c.muted)
        painter.setFont(font)
        tr = QRectF(x + w - tag_w, y, tag_w, fm.height())
        painter.setPen(QColor(tag_color))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawText(tr, Qt.AlignmentFlag.AlignCenter, tag)
        # line 2: +added −removed · hunks
        y2 = y + fm.height() + 2
        small = QFont(font)
        small.setPointSizeF(max(7.0, font.pointSizeF() - 1))
        fms = QFontMetrics(small)
        painter.setFont(small)
        parts: list[tuple[str, str]] = [(f"+{counts['added']}", c.success), (f"−{counts['removed']}", c.error)]
        n = counts["hunks"]
        parts.append((f"  {n} hunk{'s' if n != 1 else ''}", c.muted))
        if counts["pending"]:
            parts.append((f"  {counts['pending']} pending", c.warning))
        if counts["accepted"]:
            parts.append((f"  ✓ {counts['accepted']}", c.success))
        if counts["rejected"]:
            parts.append((f"  ✗ {counts['rejected']}", c.error))
        xx = x
        for text, color in parts:
            painter.setPen(QColor(color))
            painter.drawText(QRect(xx, y2, w, fms.height() + 2), Qt.AlignmentFlag.AlignLeft
                             | Qt.AlignmentFlag.AlignVCenter, text)
            xx += fms.horizontalAdvance(text) + 6
        painter.restore()


def file_list(model: ChangeReviewModel, parent: QWidget) -> QListView:
    view = QListView(parent)
    view.setObjectName("ChangeFileList")
    view.setModel(model)
    view.setItemDelegate(FileDelegate(view))
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    view.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
    view.setUniformItemSizes(True)
    view.setAccessibleName("Changed files")
    return view


__all__ = ["FileDelegate", "file_list"]
