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


def shown_widgets(window: QWidget) -> list[QWidget]:
    """The window's widgets a person sees: docks behind another dock's tab left out."""
    from PySide6.QtWidgets import QDockWidget

    docks = getattr(window, "docks", None)
    hidden = [d for d in window.findChildren(QDockWidget) if docks is not None and not docks.in_front(d)]
    return [w for w in window.findChildren(QWidget)
            if w.isVisibleTo(window) and not any(d is w or d.isAncestorOf(w) for d in hidden)]


def clipped_texts(root: QWidget) -> list[str]:
    """Visible labels and buttons under ``root`` whose text does not fit them (cut, not elided)."""
    from PySide6.QtWidgets import QLabel, QPushButton

    from ui.widgets.common import ElidedLabel

    out = []
    for widget in shown_widgets(root):
        if widget.width() <= 0:
            continue
        if isinstance(widget, ElidedLabel):
            continue  # ends in "…" by design (its tooltip has the whole text)
        if isinstance(widget, QLabel) and widget.text().strip() and widget.pixmap().isNull():
            if widget.wordWrap():
                need = widget.heightForWidth(widget.width())
                if need > widget.height() + 2:
                    out.append(f"wrapped {widget.text()[:60]!r}: {widget.height()} px tall, needs {need}")
            else:
                hint = widget.sizeHint()
                if hint.width() > widget.width() + 2 or hint.height() > widget.height() + 2:
                    out.append(f"label {widget.text()[:60]!r}: {widget.width()}x{widget.height()}, needs "
                               f"{hint.width()}x{hint.height()}")
        elif isinstance(widget, QPushButton) and widget.text().strip():
            text = widget.text().replace("&&", "&")
            need = widget.fontMetrics().horizontalAdvance(text) + (20 if not widget.icon().isNull() else 0)
            if need > widget.width():
                out.append(f"button {text!r}: {widget.width()} px wide, needs {need}")
    return out
