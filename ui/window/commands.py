"""The window's commands: the menu bar, every QAction (by name) and the command palette."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu

from ui import theme

if TYPE_CHECKING:
    from collections.abc import Mapping

    from PySide6.QtWidgets import QDockWidget, QMainWindow, QWidget

    from ui.controller import Controller
    from ui.widgets.palette import CommandPalette, PaletteEntry

Shortcut = str | QKeySequence.StandardKey
#: The threads the command palette lists (the newest first); the sidebar's search finds the others.
PALETTE_THREADS = 200


class Commands(QObject):
    """Every action of the window, by name (``by_name["new_thread"]``), in its menus.

    Docks register their View actions here too (``dock.<key>``), so the command palette and the
    shortcut list see all of them, in the order they were added.
    """

    #: A robot or network chosen in the palette: (kind, name).
    target_chosen = Signal(str, str)
    #: A thread chosen in the palette (its id).
    thread_chosen = Signal(str)

    def __init__(self, window: QMainWindow, session: Controller) -> None:
        super().__init__(window)
        self.window = window
        self.session = session
        self.by_name: dict[str, QAction] = {}
        self.palette: CommandPalette | None = None
        self.sidebar: QWidget | None = None
        #: The menus (None until :meth:`build`).
        self.file_menu: QMenu | None = None
        self.thread_menu: QMenu | None = None
        self.help_menu: QMenu | None = None
        #: The View menu (None until :meth:`build`): docks added later put their action in it.
        self.view_menu: QMenu | None = None
        #: View > Go to: the docks' shortcuts (None until :meth:`build`).
        self.docks_menu: QMenu | None = None
        #: Where each command is listed (its menu's name, "Window" for commands in no menu).
        self.groups: dict[str, str] = {}
        #: Commands whose icon is not drawn yet: drawn when a menu first shows (:meth:`draw_icons`), not at start-up.
        self.undrawn: list[QAction] = []

    def add(self, name: str, text: str, slot: Callable[[], object], shortcut: Shortcut | None = None,
            menu: QMenu | None = None, icon: str | None = None) -> QAction:
        """A window action named ``name`` that calls ``slot``, in ``menu`` when given."""
        action = QAction(text, self.window)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        if icon:  # drawn when a menu shows it (drawing the icons of every command was most of start-up's step)
            action.setProperty("iconName", icon)
            self.undrawn.append(action)
        action.triggered.connect(lambda _checked=False: slot())
        self.window.addAction(action)
        if menu is not None:
            menu.addAction(action)
        self.by_name[name] = action
        self.groups[name] = _menu_name(menu) if menu is not None else "Window"
        return action

    def add_view_action(self, name: str, action: QAction) -> None:
        """An action made elsewhere (a dock's show/hide), listed under ``name`` and in the View menu."""
        self.by_name[name] = action
        self.groups[name] = "View"
        if self.view_menu is not None:
            self.view_menu.addAction(action)

    def build(self, docks: Mapping[str, QDockWidget]) -> None:
        """The menu bar, its menus empty (the window adds its commands), and ``docks``' View actions."""
        menubar = self.window.menuBar()
        self.file_menu = menubar.addMenu("&File")
        self.thread_menu = menubar.addMenu("&Thread")
        view_menu = self.view_menu = menubar.addMenu("&View")
        self.help_menu = menubar.addMenu("&Help")
        for menu in (self.file_menu, self.thread_menu, view_menu, self.help_menu):
            menu.aboutToShow.connect(self.draw_icons)
        for dock in docks.values():
            view_menu.addAction(dock.toggleViewAction())
        docks_menu = self.docks_menu = view_menu.addMenu("&Go to")
        for name, action in self.by_name.items():
            if name.startswith("go."):
                docks_menu.addAction(action)
                self.groups[name] = "Go to"

    def attach(self, *, palette: CommandPalette, sidebar: QWidget) -> None:
        """The command palette (Ctrl+K) and the thread list (shown or hidden with Ctrl+B)."""
        self.palette, self.sidebar = palette, sidebar

    def update(self) -> None:
        """Enable what can be done now (a run going disables the branch and regenerate commands)."""
        running = self.session.running
        self.by_name["stop"].setEnabled(True)
        for name in ("regenerate", "edit_last", "prev_branch", "next_branch"):
            self.by_name[name].setEnabled(not running)

    def show_shortcuts(self) -> None:
        """Help > Keyboard shortcuts: every command with its keys (from the actions themselves)."""
        from ui.widgets.shortcuts import ShortcutsDialog

        dialog = getattr(self, "_shortcuts", None)
        if dialog is None:
            dialog = self._shortcuts = ShortcutsDialog(self.window)
        dialog.show_commands(self.sheet())
        dialog.show()
        dialog.raise_()
        dialog.activateWindow()

    def sheet(self) -> list[tuple[str, str, str]]:
        """(group, command, keys) for every command that has keys, then the keys of the chat's parts."""
        rows = []
        for name, action in self.by_name.items():
            keys = action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
            if keys and action.text():
                rows.append((self.groups.get(name, "Window"), action.text().replace("&&", "&").replace("&", ""),
                             keys))
        from ui.widgets.shortcuts import PART_KEYS

        return rows + PART_KEYS

    def open_palette(self) -> None:
        """Ctrl+K: every command, then the robots and networks, then the threads (the newest first)."""
        assert self.palette is not None
        self.palette.open_with([a for a in self.by_name.values() if a.text()], self.palette_entries())

    def palette_entries(self) -> list[PaletteEntry]:
        from ui.widgets.palette import PaletteEntry

        c = self.session
        choose, open_thread = self.target_chosen.emit, self.thread_chosen.emit
        entries = [PaletteEntry(f"Robot: {name}", partial(choose, "robot", name), "robot") for name in c.robot_names()]
        entries += [PaletteEntry(f"Network: {name}", partial(choose, "network", name), "network")
                    for name in (str(getattr(n, "name", n)) for n in c.networks())]
        threads = [t for t in c.list_threads() if not getattr(t, "is_deleted", False)][:PALETTE_THREADS]
        entries += [PaletteEntry(f"Thread: {t.display_title}", partial(open_thread, t.id), t.robot) for t in threads]
        return entries

    def refit_palette(self) -> None:
        """The window was resized: an open palette fits itself to the new size (what is typed stays)."""
        palette = self.palette  # None while the window is being built
        if palette is not None and palette.isVisible():
            palette.fit()

    def toggle_sidebar(self) -> None:
        sidebar = self.sidebar
        assert sidebar is not None
        sidebar.setVisible(not sidebar.isVisible())

    def draw_icons(self) -> None:
        """The icons of the commands that have none drawn yet (a menu is about to show them)."""
        undrawn, self.undrawn = self.undrawn, []
        muted = theme.colors().muted
        for action in undrawn:
            action.setIcon(theme.icon(str(action.property("iconName")), muted, 16))

    def retheme(self) -> None:
        """Icons drawn in the old theme's colours: draw them again (those not drawn yet wait for their menu)."""
        muted = theme.colors().muted
        undrawn = set(map(id, self.undrawn))
        for action in self.by_name.values():
            name = action.property("iconName")
            if name and id(action) not in undrawn:
                action.setIcon(theme.icon(str(name), muted, 16))


def _menu_name(menu: QMenu) -> str:
    return menu.title().replace("&", "")
