"""Windows and dialogs sized for the screen they open on (its available area: without panels and docks).

Below the window's parts (``ui.window``, ``ui.review``, ``ui.widgets``, the dialogs): it imports nothing of
``ui``, so any of them may use it.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize
from PySide6.QtGui import QGuiApplication, QScreen
from PySide6.QtWidgets import QWidget

#: How much of the screen's available area a window or dialog takes at most.
SCREEN_SHARE = 0.92
#: The area assumed when there is no screen at all.
FALLBACK = QSize(1400, 900)


def available(screen: QScreen | None) -> QRect:
    """The screen's area for windows (the primary screen's when unknown)."""
    screen = screen or QGuiApplication.primaryScreen()
    return screen.availableGeometry() if screen is not None else QRect(0, 0, FALLBACK.width(), FALLBACK.height())


def fit(rect: QRect, area: QRect) -> QRect:
    """``rect`` moved (and shrunk when needed) to lie inside ``area``."""
    width, height = min(rect.width(), area.width()), min(rect.height(), area.height())
    x = min(max(rect.x(), area.x()), area.x() + area.width() - width)
    y = min(max(rect.y(), area.y()), area.y() + area.height() - height)
    return QRect(x, y, width, height)


def size_to_screen(widget: QWidget, preferred: QSize, *, anchor: QWidget | None = None,
                   share: float = SCREEN_SHARE) -> QSize:
    """Size a dialog or a second window for the screen it opens on: ``preferred`` at most, and at most
    ``share`` of the screen's available area (so its buttons are on the screen at 1024×640 too); its
    minimum size gives way to fit; placed over ``anchor`` (its parent by default), inside the screen."""
    anchor = anchor if anchor is not None else widget.parentWidget()
    area = available((anchor or widget).screen())
    size = QSize(max(1, min(preferred.width(), int(area.width() * share))),
                 max(1, min(preferred.height(), int(area.height() * share))))
    widget.setMinimumSize(min(widget.minimumWidth(), size.width()), min(widget.minimumHeight(), size.height()))
    widget.resize(size)
    over = anchor.window() if anchor is not None else None
    rect = QRect(QPoint(0, 0), size)
    rect.moveCenter(over.frameGeometry().center() if over is not None and over.isVisible() else area.center())
    widget.move(fit(rect, area).topLeft())
    return size


__all__ = ["SCREEN_SHARE", "available", "fit", "size_to_screen"]
