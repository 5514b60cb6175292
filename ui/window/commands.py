"""The window's commands: the menu bar, every QAction (by name) and the command palette."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu

from ui import theme

if TYPE_CHECKING:
    from ui.main_window import MainWindow
    from ui.widgets.palette import PaletteEntry

Shortcut = str | QKeySequence.StandardKey
#: The threads the command palette lists (the newest first); the sidebar's search finds the others.
PALETTE_THREADS = 200


class Commands:
    """Every action of the window, by name (``by_name["new_thread"]``), in its menus.

    Docks register their View actions here too (``dock.<key>``), so the command palette and the
    shortcut list see all of them, in the order they were added.
    """

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        self.by_name: dict[str, QAction] = {}
        #: The View menu (None until :meth:`build`): docks added later put their action in it.
        self.view_menu: QMenu | None = None
        #: View > Go to: the docks' shortcuts (None until :meth:`build`).
        self.docks_menu: QMenu | None = None
        #: Where each command is listed (its menu's name, "Window" for commands in no menu).
        self.groups: dict[str, str] = {}

    def add(self, name: str, text: str, slot: Callable[[], object], shortcut: Shortcut | None = None,
            menu: QMenu | None = None, icon: str | None = None) -> QAction:
        """A window action named ``name`` that calls ``slot``, in ``menu`` when given."""
        action = QAction(text, self.window)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        if icon:
            action.setIcon(theme.icon(icon, theme.colors().muted, 16))
            action.setProperty("iconName", icon)
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

    def build(self) -> None:
        """The menu bar and the window's actions (the widgets they call exist by now)."""
        w = self.window
        menubar = w.menuBar()
        file_menu = menubar.addMenu("&File")
        thread_menu = menubar.addMenu("&Thread")
        view_menu = self.view_menu = menubar.addMenu("&View")
        help_menu = menubar.addMenu("&Help")
        for dock in w.docks.values():
            view_menu.addAction(dock.toggleViewAction())
        docks_menu = self.docks_menu = view_menu.addMenu("&Go to")
        for name, action in self.by_name.items():
            if name.startswith("go."):
                docks_menu.addAction(action)
                self.groups[name] = "Go to"
        add = self.add
        threads, runs, settings, transfer = w.threads, w.runs, w.settings_flow, w.transfer

        add("new_thread", "New thread", threads.new, "Ctrl+N", file_menu, "plus")
        add("open_folder", "Open folder…", w.folder_flow.open_folder, "Ctrl+O", file_menu, "folder")
        file_menu.addSeparator()
        add("export_md", "Export thread as Markdown…", lambda: transfer.export_thread("markdown"), "Ctrl+Shift+E",
            file_menu, "export")
        add("export_json", "Export thread as RobotLab JSON…", lambda: transfer.export_thread("json"), None, file_menu)
        add("export_jsonl", "Export thread events as JSONL…", lambda: transfer.export_thread("jsonl"), None,
            file_menu)
        add("import_json", "Import RobotLab JSON…", transfer.import_thread, None, file_menu, "import")
        file_menu.addSeparator()
        add("settings", "Settings…", settings.open_settings, "Ctrl+,", file_menu, "settings")
        add("quit", "Quit", w.close, "Ctrl+Q", file_menu)

        add("send", "Send message", w.composer.submit, "Ctrl+Return", thread_menu, "send")
        add("stop", "Stop", runs.escape, "Esc", thread_menu, "stop")
        add("regenerate", "Regenerate last answer", runs.regenerate_last, "Ctrl+R", thread_menu, "regenerate")
        add("edit_last", "Edit last message", runs.edit_last, "Ctrl+E", thread_menu, "edit")
        add("copy_answer", "Copy last answer as Markdown", runs.copy_last_answer, "Ctrl+Shift+C", thread_menu,
            "copy")
        add("prev_branch", "Previous branch of last message", lambda: runs.branch_last(-1), "Alt+Left", thread_menu)
        add("next_branch", "Next branch of last message", lambda: runs.branch_last(+1), "Alt+Right", thread_menu)
        add("approval", "Go to pending approval", runs.focus_approval, "Ctrl+J", thread_menu, "shield")
        thread_menu.addSeparator()
        add("rename", "Rename thread…", w.sidebar.rename_current, "F2", thread_menu, "edit")
        add("delete", "Delete thread", threads.delete_current, "Ctrl+Shift+Backspace", thread_menu, "trash")
        add("undo_delete", "Undo delete", w.toast.trigger, "Ctrl+Z")
        add("next_thread", "Next thread", lambda: threads.cycle(+1), "Ctrl+Tab", thread_menu)
        add("prev_thread", "Previous thread", lambda: threads.cycle(-1), "Ctrl+Shift+Tab", thread_menu)

        view_menu.addSeparator()
        add("palette", "Command palette…", self.open_palette, "Ctrl+K", view_menu, "command")
        add("search", "Search threads", w.sidebar.focus_search, "Ctrl+F", view_menu, "search")
        add("focus_composer", "Focus message box", w.composer.focus, "Ctrl+L", view_menu, "chat")
        add("toggle_sidebar", "Show or hide threads", self.toggle_sidebar, "Ctrl+B", view_menu, "sidebar")
        add("toggle_inspector", "Show or hide the inspector", w.docks.toggle_inspector, "Ctrl+I", view_menu,
            "inspector")
        add("theme_light", "Light theme", lambda: settings.set_theme("light"), None, view_menu, "sun")
        add("theme_dark", "Dark theme", lambda: settings.set_theme("dark"), None, view_menu, "moon")
        add("load_earlier", "Show earlier turns", w.chat.load_earlier, None, view_menu)
        add("robot_picker", "Choose robot…", w.robots.focus_picker, "Ctrl+Shift+P", view_menu, "robot")
        add("robot_editor", "Edit robots…", w.robots.open_editor, "Ctrl+Alt+R", view_menu, "edit")
        add("new_robot", "New robot…", lambda: w.robots.open_editor(new=True), None, view_menu, "plus")
        add("shortcuts", "Keyboard shortcuts", self.show_shortcuts, "Ctrl+/", help_menu, "command")
        add("about", "About RobotLab Workspace (version, data folders)…", settings.open_about, None, help_menu)

    def update(self) -> None:
        """Enable what can be done now (a run going disables the branch and regenerate commands)."""
        running = self.window.controller.running
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
        self.window.command_palette.open_with([a for a in self.by_name.values() if a.text()], self.palette_entries())

    def palette_entries(self) -> list[PaletteEntry]:
        from ui.widgets.palette import PaletteEntry

        c = self.window.controller
        choose, open_thread = self.choose_target, self.window.threads.open
        entries = [PaletteEntry(f"Robot: {name}", partial(choose, "robot", name), "robot") for name in c.robot_names()]
        entries += [PaletteEntry(f"Network: {name}", partial(choose, "network", name), "network")
                    for name in (str(getattr(n, "name", n)) for n in c.networks())]
        threads = [t for t in c.list_threads() if not getattr(t, "is_deleted", False)][:PALETTE_THREADS]
        entries += [PaletteEntry(f"Thread: {t.display_title}", partial(open_thread, t.id), t.robot) for t in threads]
        return entries

    def choose_target(self, kind: str, name: str) -> None:
        """A robot or network chosen in the palette: as if picked in the header (a thread keeps its robot, so
        another one starts a new thread with it); then the keyboard is in the message box."""
        from ui.widgets.common import signals_blocked

        w = self.window
        if not w.robot_picker.isEnabled():
            w.toast.show_message("Stop the run (Esc) to choose another robot or network.")
            return
        row = w.robot_model.row_of(name, kind)
        if row < 0:
            return
        with signals_blocked(w.robot_picker):
            w.robot_picker.setCurrentIndex(row)
        w.robots.on_picked(row)
        w.composer.focus()

    def refit_palette(self) -> None:
        """The window was resized: an open palette fits itself to the new size (what is typed stays)."""
        palette = getattr(self.window, "command_palette", None)  # None while the window is being built
        if palette is not None and palette.isVisible():
            palette.fit()

    def toggle_sidebar(self) -> None:
        sidebar = self.window.sidebar
        sidebar.setVisible(not sidebar.isVisible())

    def retheme(self) -> None:
        """Icons drawn in the old theme's colours: draw them again."""
        muted = theme.colors().muted
        for action in self.by_name.values():
            name = action.property("iconName")
            if name:
                action.setIcon(theme.icon(str(name), muted, 16))


def _menu_name(menu: QMenu) -> str:
    return menu.title().replace("&", "")
