"""Keys typed at the window's frame before start-up filled it in: kept, then given to the message box (or run as
their command) once it is there (:meth:`ui.main_window.MainWindow.take_early_keys`)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QApplication, QWidget

if TYPE_CHECKING:
    from collections.abc import Iterator


class EarlyKeys(QObject):
    """An application-wide event filter that keeps the key presses aimed at ``window`` until :meth:`take`."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.window = window
        #: The keys kept so far (None: the window takes its keys itself).
        self.keys: list[QKeyEvent] | None = []
        #: Whether the application's events pass through :meth:`eventFilter`.
        self.filtering = False

    def install(self) -> None:
        app = QApplication.instance()
        if self.keys is not None and app is not None:
            app.installEventFilter(self)
            self.filtering = True

    def take(self) -> list[QKeyEvent] | None:
        """The keys kept (None: none were), and the filter removed for good."""
        keys, self.keys = self.keys, None
        self.filtering = False
        app = QApplication.instance()
        if app is not None:
            app.removeEventFilter(self)
        return keys

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """It sees every event of every object until :meth:`take`: the key events are told apart first, by their
        class (a type check, no call into Qt), so the rest cost next to nothing."""
        if self.keys is None or not isinstance(event, QKeyEvent):
            return False
        if not isinstance(watched, QWidget) or watched.window() is not self.window:
            return False
        if event.type() == QEvent.Type.ShortcutOverride:  # a command made meanwhile runs in its turn, not now
            event.accept()
            return True
        if event.type() == QEvent.Type.KeyPress:
            self.keys.append(event.clone())
            return True
        return False

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """A start-up step: the filter is off meanwhile (keys come from the event loop, never from inside a step,
        and every event the step's new widgets get would pass through Python)."""
        app = QApplication.instance()
        filtering = self.filtering and app is not None
        if filtering and app is not None:
            app.removeEventFilter(self)
        try:
            yield
        finally:
            if filtering and app is not None and self.filtering:
                app.installEventFilter(self)
