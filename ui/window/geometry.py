"""The window's size and layout: the first window fits the screen; later ones come back as they were.

The first window is sized to the screen it opens on (its available area: without panels and docks),
never larger, so the message box is on screen at 1280×720 too. When the window closes, its geometry,
the docks' layout, the sidebar's width and the inspector's tabs are kept (``QSettings`` in an INI
file of the configuration folder, ``window.ini``, with the size of the screen it was on); the next window restores
them on a screen of that size, opens at its first-start size on a screen of another size (another monitor, another
resolution), and always fits itself to the screen (a window restored off it or larger than it is brought back).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QRect, QSettings, QSize

from ui.screen import SCREEN_SHARE, available, fit, size_to_screen

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMainWindow, QSplitter

    from ui.window.docks import Docks

#: The window's size at first start on a big screen.
PREFERRED = QSize(1400, 900)
#: A window lower than this is compact (``MainWindow.fit_height``): the banner on one line, the message box without
#: its hint, a comparison's headers in two rows (at 1024×640 a comparison's answers had under 100 px of height).
COMPACT_HEIGHT = 800
#: ``saveState`` version: bump when the docks change so an old layout is not applied to new docks.
STATE_VERSION = 2


def settings_file() -> str:
    from workspace import paths

    return str(paths.config_dir() / "window.ini")


def settings() -> QSettings:
    return QSettings(settings_file(), QSettings.Format.IniFormat)


def first_size(area: QRect) -> QSize:
    """The first window's size on a screen whose available area is ``area``."""
    width = min(PREFERRED.width(), int(area.width() * SCREEN_SHARE))
    height = min(PREFERRED.height(), int(area.height() * SCREEN_SHARE))
    return QSize(max(1, width), max(1, height))


def _rect(value: object) -> QRect | None:
    """A rectangle saved as [x, y, width, height] (None when absent or damaged)."""
    if not isinstance(value, list | tuple) or len(value) != 4:
        return None
    try:
        x, y, width, height = (int(str(v)) for v in value)
    except ValueError:
        return None
    return QRect(x, y, width, height) if width > 0 and height > 0 else None


def _screen_width(blob: QByteArray) -> int | None:
    """The width of the screen a geometry saved by ``QWidget.saveGeometry`` was saved on (format 2 and later: after
    the magic number, the version, the frame and normal geometries, the screen's number and two states); None when the
    bytes are not such a geometry."""
    import struct

    data = bytes(blob.data())
    if len(data) < 50 or struct.unpack(">I", data[:4])[0] != 0x1D9D0CB or struct.unpack(">H", data[4:6])[0] < 2:
        return None
    width = int(struct.unpack(">i", data[46:50])[0])
    return width if width > 0 else None


class WindowMemory:
    """Sizes the window at start and remembers its geometry and layout across restarts."""

    def __init__(self, window: QMainWindow) -> None:
        self.window = window
        #: The conversation's splitter and the docks, once the window has built them (:meth:`attach`).
        self.splitter: QSplitter | None = None
        self.docks: Docks | None = None
        #: The layout was restored from a previous session (False: the first start, or a reset).
        self.restored = False
        #: The size this class gave the window (None: not yet); a size set since is someone else's.
        self.sized: QSize | None = None

    def attach(self, splitter: QSplitter, docks: Docks) -> None:
        """The parts whose layout is kept too (the window's widgets, built after the window is sized)."""
        self.splitter = splitter
        self.docks = docks

    # -- at start -------------------------------------------------------------------------------------
    def size_window(self) -> None:
        """Restore the last geometry on a screen of the size it was closed on, or size the window for its screen as
        at first start (on a screen of another size: a window closed at 1024×640 on a small screen opens at its
        usual size on a 1920×1080 one, maximized if it was); either way it fits the screen."""
        w = self.window
        store = settings()
        saved = store.value("window/geometry")
        rect = _rect(store.value("window/rect"))
        blob = QByteArray(saved) if isinstance(saved, QByteArray | bytes) else None
        if blob is not None and w.restoreGeometry(blob):
            self.restored = True
            if not w.isMaximized() and not w.isFullScreen() and self._other_screen(store, blob, rect):
                self._first_size()
        elif rect is not None:
            # Qt refuses a geometry that no longer fits a screen: the same size, made to fit this one.
            self.restored = True
            if self._other_screen(store, None, rect):
                self._first_size()
            else:
                rect = fit(rect, available(w.screen()))
                w.resize(rect.size())
                w.move(rect.topLeft())
        else:
            self._first_size()
        self.fit_to_screen()

    def _first_size(self) -> None:
        """The size and place of a first start on the window's screen: centred, :func:`first_size`."""
        w = self.window
        area = available(w.screen())
        size = first_size(area)
        w.resize(size)
        w.move(area.x() + (area.width() - size.width()) // 2, area.y() + (area.height() - size.height()) // 2)

    def _other_screen(self, store: QSettings, blob: QByteArray | None, rect: QRect | None) -> bool:
        """The window was closed on a screen of another size than the one it opens on now: the screen's available
        area kept at close (``window/screen``), else, from a layout kept before it was, the screen's width Qt's
        geometry holds. The screen it opens on: the one under its last place, else the window's."""
        from PySide6.QtGui import QGuiApplication

        w = self.window
        screen = QGuiApplication.screenAt(rect.center()) if rect is not None else None
        area = available(screen or w.screen())
        was = _rect(store.value("window/screen"))
        if was is not None:
            return was.size() != area.size()
        width = _screen_width(blob) if blob is not None else None
        geometry = (screen or w.screen() or QGuiApplication.primaryScreen())
        return width is not None and geometry is not None and width != geometry.geometry().width()

    def fit_when_shown(self) -> None:
        """Once shown (its frame's size known), fit the window with its frame to the screen: only when
        its size is still the one given here (a size set since, by a test or a script, is kept)."""
        if self.sized is not None and self.window.size() == self.sized:
            self.fit_to_screen()

    def fit_to_screen(self) -> None:
        """Shrink and move the window into its screen's available area (a smaller screen than last time)."""
        w = self.window
        area = available(w.screen())
        if w.isMaximized() or w.isFullScreen():
            return
        frame = w.frameGeometry()
        extra_w, extra_h = max(0, frame.width() - w.width()), max(0, frame.height() - w.height())
        # The minimum size gives way on a tiny screen: the window must fit, whatever its parts wish.
        w.setMinimumSize(min(w.minimumWidth(), area.width() - extra_w), min(w.minimumHeight(), area.height() - extra_h))
        frame = w.frameGeometry()
        wanted = fit(frame, area)
        if wanted != frame:
            w.resize(max(1, wanted.width() - extra_w), max(1, wanted.height() - extra_h))
            w.move(wanted.topLeft())
        self.sized = w.size()
        docks = self.docks
        if docks is not None and area.width() < w.minimumSizeHint().width() and docks.raised() is not None:
            # A screen too narrow for the threads, the conversation and the inspector side by side: the
            # inspector closes (Ctrl+I opens it over the conversation's room), nothing overlaps.
            docks.toggle_inspector()

    def restore_splitter(self) -> None:
        value = settings().value("window/splitter")
        if self.splitter is None:
            return
        if isinstance(value, QByteArray | bytes):
            self.splitter.restoreState(QByteArray(value))

    def restore_docks(self) -> None:
        """The docks' layout and the inspector's tabs (after every dock exists)."""
        w, docks = self.window, self.docks
        if docks is None:
            return
        store = settings()
        state = store.value("window/docks")
        if isinstance(state, QByteArray | bytes):
            w.restoreState(QByteArray(state), STATE_VERSION)
            docks.keep_tab_names()
        current = store.value("inspector/dock")
        if isinstance(current, str) and current in docks and docks[current].toggleViewAction().isChecked():
            docks[current].raise_()
        pane = docks.tool_pane
        tab = store.value("inspector/tool_tab")
        if pane is not None and tab is not None:
            try:
                pane.tabs.setCurrentIndex(int(str(tab)))
            except ValueError:
                pass

    def last_folder(self) -> Path | None:
        """The folder that was open when the window was last closed (None: none, or it is gone). Reads the
        settings file and the disk, no widget: start-up asks it in its worker thread."""
        value = settings().value("session/folder")
        if not isinstance(value, str) or not value:
            return None
        folder = Path(value)
        return folder if folder.is_dir() else None

    # -- at close -------------------------------------------------------------------------------------
    def save(self, *, folder: Path | None = None) -> None:
        """Keep the geometry, the layout and the folder that is open (reopened by the next start)."""
        w = self.window
        store = settings()
        store.setValue("window/geometry", w.saveGeometry())
        normal = w.normalGeometry()
        store.setValue("window/rect", [normal.x(), normal.y(), normal.width(), normal.height()])
        area = available(w.screen())
        store.setValue("window/screen", [area.x(), area.y(), area.width(), area.height()])
        store.setValue("session/folder", str(folder) if folder is not None else "")
        docks, splitter = self.docks, self.splitter
        if docks is None or splitter is None:  # not built yet
            store.sync()
            return
        store.setValue("window/docks", w.saveState(STATE_VERSION))
        store.setValue("window/splitter", splitter.saveState())
        raised = docks.raised()
        if raised is not None:
            store.setValue("inspector/dock", raised)
        if docks.tool_pane is not None:
            store.setValue("inspector/tool_tab", docks.tool_pane.tabs.currentIndex())
        store.sync()


__all__ = ["WindowMemory", "available", "first_size", "fit", "settings_file", "size_to_screen"]
