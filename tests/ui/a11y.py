"""What the accessibility tests check: every control a person can use has a name a screen reader says."""

from __future__ import annotations

from PySide6.QtGui import QAccessible
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSlider,
    QComboBox,
    QHeaderView,
    QLineEdit,
    QPlainTextEdit,
    QTabBar,
    QTextEdit,
    QWidget,
)

CONTROLS = (QAbstractButton, QLineEdit, QPlainTextEdit, QComboBox, QAbstractItemView, QTabBar)


def accessible_name(widget: QWidget) -> str:
    iface = QAccessible.queryAccessibleInterface(widget)
    return iface.text(QAccessible.Text.Name).strip() if iface is not None else ""


def unnamed_controls(root: QWidget) -> list[str]:
    """Every visible, enabled control under ``root`` without an accessible name, described."""
    out = []
    for widget in root.findChildren(QWidget):
        if not isinstance(widget, CONTROLS) or isinstance(widget, QAbstractSlider | QHeaderView):
            continue
        if isinstance(widget, QTextEdit) and widget.isReadOnly():
            continue
        if not widget.isVisibleTo(root) or not widget.isEnabled():
            continue
        if type(widget).__name__.startswith("QComboBoxPrivate") or widget.objectName().startswith("qt_"):
            continue
        if not accessible_name(widget):
            parent = widget.parentWidget()
            out.append(f"{type(widget).__name__} {widget.objectName()!r} in {type(parent).__name__ if parent else '-'}"
                       f" {parent.objectName() if parent else ''!r} tip={widget.toolTip()!r}")
    return out
