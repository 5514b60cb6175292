"""The main window: threads on the left, the conversation in the middle, the inspector on the right.

The window makes the widgets and the models; small parts it owns do the work (ui/window/): each gets
the typed services (:class:`ui.services.Services`) and the widgets it works on, never the window.
What one part tells another is connected here, in :meth:`MainWindow._wire`, and every command is
declared in :meth:`MainWindow._add_commands`. Only the entry point (``ui.app``) imports this module.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QFontMetrics, QKeySequence, QResizeEvent, QShowEvent
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QMainWindow,
    QPushButton,
    QSplitter,
    QStyle,
    QStyleOptionComboBox,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ui import theme
from ui.services import Services
from ui.window.attachments import Attachments
from ui.window.commands import Commands
from ui.window.compare import Comparisons
from ui.window.docks import Docks
from ui.window.early_keys import EarlyKeys
from ui.window.folder_flow import FolderFlow
from ui.window.geometry import WindowMemory
from ui.window.models import ModelChoice
from ui.window.notify import Notifier
from ui.window.robots import PICKER_TIP, Robots
from ui.window.runs import Runs
from ui.window.settings_flow import SettingsFlow
from ui.window.slash import SlashCommands
from ui.window.status import StatusLine
from ui.window.threads import Threads
from ui.window.transfer import Transfer

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from PySide6.QtWidgets import QMessageBox

    from ui.controller import Controller
    from ui.review.pane import ChangesPane
    from workspace.events import ModelChanged, TerminalEvent

#: The smallest window: every part shrinks to fit it (long titles and previews end in "…", docks
#: narrow down to DOCK_MIN_WIDTH). Set explicitly, so the window never grows by itself when some
#: part's minimum size hint grows (a long thread title, a network's graph).
#: The modules :meth:`MainWindow.build` imports (with theirs, about a second on a busy machine): a staged
#: start-up imports them in a worker thread first (``import_build_modules``), so the window's thread does not.
BUILD_MODULES = ("workspace.session", "ui.threads.model", "ui.threads.sidebar", "ui.network.model",
                 "ui.inspector.memory", "ui.inspector.tool_calls", "ui.inspector.trace", "ui.widgets.notices",
                 "ui.widgets.palette", "ui.chat.composer.composer", "ui.chat.composer.model_picker",
                 "ui.chat.composer.context_meter", "ui.chat.view.chat", "ui.chat.view.chat_parts",
                 "ui.chat.view.virtual")


def import_build_modules(more: Sequence[str] = ()) -> None:
    """Import :data:`BUILD_MODULES` and ``more`` (modules that define classes and make no Qt object at import:
    any thread), and read the font database."""
    import importlib

    from PySide6.QtGui import QFontDatabase

    for name in (*BUILD_MODULES, *more):
        importlib.import_module(name)
    QFontDatabase.families()  # (thread-safe): most of the first text measured's cost, off the window's thread


WINDOW_MIN_WIDTH = 900
WINDOW_MIN_HEIGHT = 600
#: The narrowest the conversation gets (its cards fit in it; below, the docks narrow first).
CHAT_MIN_WIDTH = 440
SIDEBAR_MIN_WIDTH = 180
SIDEBAR_WIDTH = 220
#: The robot picker's width in characters: at least, and at most (a longer name ends in "…").
PICKER_CHARS = (9, 24)


class MainWindow(QMainWindow):
    #: The window was closed (the app shuts down).
    closed = Signal()

    def __init__(self, controller: Controller, *, theme_name: str = "light", parent: QWidget | None = None,
                 build: bool = True) -> None:
        super().__init__(parent)
        self.controller = controller
        self.bridge = controller.bridge
        self.setWindowTitle("RobotLab Workspace")
        self.setWindowIcon(theme.app_icon())
        self.memory = WindowMemory(self)
        self.memory.size_window()  # the last geometry, or one that fits the screen
        self.setDockOptions(QMainWindow.DockOption.AllowTabbedDocks | QMainWindow.DockOption.AnimatedDocks)
        self.setTabPosition(Qt.DockWidgetArea.AllDockWidgetAreas, QTabWidget.TabPosition.North)
        self.commands = Commands(self, controller)
        #: What the parts share (the parts converted so far receive it, not the window).
        self.services = Services(session=controller, shell=self, commands=self.commands)
        self.docks = Docks(self.services)
        self.status = StatusLine(self.services)
        self.robots = Robots(self.services)
        self.models = ModelChoice(self.services)
        self.threads = Threads(self.services)
        self.runs = Runs(self.services)
        self.comparisons = Comparisons(self.services)
        self.attachments = Attachments(self.services)
        self.slash = SlashCommands(self.services)  # the composer's / commands: /compact and MCP prompts
        self.settings_flow = SettingsFlow(self.services, theme_name=theme_name)
        self.folder_flow = FolderFlow(self.services)
        self.transfer = Transfer(self.services)
        self.notifier = Notifier(self.services)
        #: Every widget made (:meth:`build`); the steps of a staged start-up until then.
        self.built = False
        self._build: Iterator[None] | None = None
        #: Keys typed at the frame before start-up filled it in (None: the window takes its keys itself).
        self.early_keys = EarlyKeys(self)
        #: Quitting with runs going: the question, once asked; and whether Quit was the answer.
        self.quit_box: QMessageBox | None = None
        self._quit_confirmed = False
        # Until build(): a themed frame (sidebar strip and an empty conversation), painted at once.
        shell = QSplitter(Qt.Orientation.Horizontal, self)
        left = QFrame(shell)
        left.setObjectName("Sidebar")
        right = QFrame(shell)
        right.setObjectName("ChatView")
        shell.setSizes([260, 900])
        self.setCentralWidget(shell)
        if build:
            self.build()

    def build(self) -> None:
        """Make every widget (the slow part of startup: run after the first paint): what
        :meth:`build_steps` has not made yet, at once."""
        for _ in self.build_steps():
            pass

    def build_steps(self) -> Iterator[None]:
        """:meth:`build` a part per step: a staged start-up runs one step per turn of the event loop, so the
        window paints in between. The same iterator each time: a part is never made twice."""
        if self._build is None:
            self._build = self._build_parts()
        return self._build

    def _build_parts(self) -> Iterator[None]:
        from ui.inspector.memory import MemoryModel
        from ui.inspector.tool_calls import ToolCallsModel
        from ui.inspector.trace import TraceModel
        from ui.network.model import ChatTargetModel, NetworkModel
        from ui.threads.model import ThreadListModel
        from ui.widgets.notices import Toast
        from ui.widgets.palette import CommandPalette

        # models (no widgets inside)
        self.thread_model = ThreadListModel(self)
        self.robot_model = ChatTargetModel(self)  # robots, then networks
        self.network_model = NetworkModel(self)
        self.tool_model = ToolCallsModel(self)
        self.trace_model = TraceModel(self)
        self.memory_model = MemoryModel(self)
        # The first text measured loads the font: in this light step, not in the sidebar's (its search box).
        QFontMetrics(self.font()).horizontalAdvance("RobotLab")

        yield
        yield from self._build_central()
        yield
        self.models.build(self.composer)
        yield
        self.memory.attach(self.splitter, self.docks)
        self.docks.attach(tool_model=self.tool_model, memory_model=self.memory_model, trace_model=self.trace_model,
                          network_model=self.network_model, composer=self.composer,
                          open_mcp_servers=self.settings_flow.open_mcp_servers)
        self.threads.attach(sidebar=self.sidebar, model=self.thread_model, title_label=self.title_label,
                            chat=self.chat, composer=self.composer)
        self.robots.attach(picker=self.robot_picker, model=self.robot_model, edit_button=self.robot_edit_button,
                           model_label=self.model_label, connect_link=self.connect_link, composer=self.composer)
        yield
        self.memory.fit_to_screen()  # the minimum size of the parts may not fit a small screen
        self.memory.restore_splitter()
        yield
        self.command_palette = CommandPalette(self)
        self.runs.attach(composer=self.composer, chat=self.chat, palette=self.command_palette)
        self.toast = Toast(self)
        self.services.notices.attach(self.toast, self.banner)
        yield
        yield from self.docks.build_steps()
        # The docks are there (empty): on a screen too narrow for the inspector beside the chat it closes now, before
        # its panes come (made in closed docks, they are not laid out nor painted; closed when whole, they were, and
        # the window was laid out again).
        self.memory.fit_when_shown()
        yield
        self.status.build()
        yield
        self.commands.build(self.docks)
        self.commands.attach(palette=self.command_palette, sidebar=self.sidebar)
        yield
        yield from self._add_commands()
        yield
        self._wire()
        for part in (self.docks, self.status):
            part.connect()
        yield  # (nothing is loaded before the last step: no signal the parts follow comes in between)
        self.robots.follow()
        self.models.follow()
        self.threads.follow()
        self.runs.follow()
        self.comparisons.attach(chat=self.chat, composer=self.composer, send_one=self.runs.send,
                                ask_one=self.runs.on_approval_needed, docks=self.docks,
                                listing=lambda: self.models.listing, load_listing=self.models.load,
                                inspector=self.docks)
        self.comparisons.follow()
        self.slash.connect(self.composer)
        self.notifier.connect()
        self.attachments.connect(self.composer, self.chat)
        self.commands.update()
        self.robots.update_picker()
        self.built = True
        self.fit_height()  # (resized before it was built: a low window is compact from the start)
        if not self.isVisible():  # built before it was shown: nothing was typed at it
            self.early_keys.keys = None

    def showEvent(self, event: QShowEvent) -> None:
        if not self.built:  # shown as a frame: keep what is typed at it
            self.early_keys.install()
        self._show(event)

    def building(self) -> contextlib.AbstractContextManager[None]:
        """Around a start-up step: the early keys' filter is off meanwhile (:meth:`EarlyKeys.paused`)."""
        return self.early_keys.paused()

    def take_early_keys(self) -> None:
        """Start-up has filled the window in: the message box gets the focus (the frame was shown with nothing
        to focus) and the keys typed at the frame before (a command's shortcut runs the command)."""
        keys = self.early_keys.take()
        if keys is None or not self.built:
            return
        self.composer.focus()
        actions = [a for a in self.findChildren(QAction) if a.shortcuts()]
        for key in keys:
            pressed = QKeySequence(key.keyCombination())
            command = next((a for a in actions if pressed in a.shortcuts()), None)
            if command is not None:  # a command's shortcut (Ctrl+L, Ctrl+N, ...): the command
                if command.isEnabled():
                    command.trigger()
                continue
            QApplication.sendEvent(QApplication.focusWidget() or self.composer.edit, key)

    def _replay_with(self) -> None:
        """"Replay with…" on the open thread, offering the composer's list of models."""
        from ui.replay.dialog import open_replay

        listing = self.models.listing
        open_replay(self.services, models=[(m.id, m.api_base) for m in listing.models] if listing is not None else [])
        self.models.load()  # (the list for next time, when it was not asked for yet)

    def _run_evals(self) -> None:
        """"Run evals…": the evals view (the person picks the eval file)."""
        from ui.evals.view import open_evals

        open_evals(self.services.shell, store_of=lambda: self.services.session.store,
                   open_thread=self.threads.open)

    def _save_as_test_case(self) -> None:
        """"Save as test case": the open thread's first turn as a case of an eval file."""
        from ui.evals.save_case import open_save_case

        open_save_case(self.services)

    def _add_commands(self) -> Iterator[None]:
        """Every command of the window, in its menu (the parts do the work): File and Thread, then View and Help."""
        commands = self.commands
        add = commands.add
        file_menu, thread_menu = commands.file_menu, commands.thread_menu
        view_menu, help_menu = commands.view_menu, commands.help_menu
        assert file_menu is not None and thread_menu is not None and view_menu is not None and help_menu is not None
        threads, runs, settings, transfer = self.threads, self.runs, self.settings_flow, self.transfer

        add("new_thread", "New thread", threads.new, "Ctrl+N", file_menu, "plus")
        add("open_folder", "Open folder…", self.folder_flow.open_folder, "Ctrl+O", file_menu, "folder")
        file_menu.addSeparator()
        add("export_md", "Export thread as Markdown…", lambda: transfer.export_thread("markdown"), "Ctrl+Shift+E",
            file_menu, "export")
        add("export_json", "Export thread as RobotLab JSON…", lambda: transfer.export_thread("json"), None, file_menu)
        add("export_jsonl", "Export thread events as JSONL…", lambda: transfer.export_thread("jsonl"), None,
            file_menu)
        add("import_json", "Import RobotLab JSON…", transfer.import_thread, None, file_menu, "import")
        file_menu.addSeparator()
        add("settings", "Settings…", settings.open_settings, "Ctrl+,", file_menu, "settings")
        add("quit", "Quit", self.close, "Ctrl+Q", file_menu)

        add("send", "Send message", self.composer.submit, "Ctrl+Return", thread_menu, "send")
        add("stop", "Stop", self._escape, "Esc", thread_menu, "stop")
        add("compare", "Compare with… (the next message to several models or robots)", self.comparisons.choose, None,
            thread_menu)
        add("regenerate", "Regenerate last answer", runs.regenerate_last, "Ctrl+R", thread_menu, "regenerate")
        add("edit_last", "Edit last message", runs.edit_last, "Ctrl+E", thread_menu, "edit")
        add("copy_answer", "Copy last answer as Markdown", runs.copy_last_answer, "Ctrl+Shift+C", thread_menu,
            "copy")
        add("prev_branch", "Previous branch of last message", lambda: runs.branch_last(-1), "Alt+Left", thread_menu)
        add("next_branch", "Next branch of last message", lambda: runs.branch_last(+1), "Alt+Right", thread_menu)
        add("approval", "Go to the oldest approval waiting (any thread)", self._go_to_approval, "Ctrl+J", thread_menu,
            "shield")
        add("replay_with", "Replay with…", self._replay_with, None, thread_menu, "regenerate")
        add("save_test_case", "Save as test case…", self._save_as_test_case, None, thread_menu)
        add("run_evals", "Run evals…", self._run_evals, None, thread_menu)
        thread_menu.addSeparator()
        add("rename", "Rename thread…", self.sidebar.rename_current, "F2", thread_menu, "edit")
        add("delete", "Delete thread", threads.delete_current, "Ctrl+Shift+Backspace", thread_menu, "trash")
        add("undo_delete", "Undo delete", self.toast.trigger, "Ctrl+Z")
        add("next_thread", "Next thread", lambda: threads.cycle(+1), "Ctrl+Tab", thread_menu)
        add("prev_thread", "Previous thread", lambda: threads.cycle(-1), "Ctrl+Shift+Tab", thread_menu)
        yield

        view_menu.addSeparator()
        add("palette", "Command palette…", commands.open_palette, "Ctrl+K", view_menu, "command")
        add("search", "Search threads", self.sidebar.focus_search, "Ctrl+F", view_menu, "search")
        add("focus_composer", "Focus message box", self.composer.focus, "Ctrl+L", view_menu, "chat")
        add("toggle_sidebar", "Show or hide threads", commands.toggle_sidebar, "Ctrl+B", view_menu, "sidebar")
        add("toggle_inspector", "Show or hide the inspector", self.docks.toggle_inspector, "Ctrl+I", view_menu,
            "inspector")
        add("theme_light", "Light theme", lambda: settings.set_theme("light"), None, view_menu, "sun")
        add("theme_dark", "Dark theme", lambda: settings.set_theme("dark"), None, view_menu, "moon")
        add("load_earlier", "Show earlier turns", self.chat.load_earlier, None, view_menu)
        add("robot_picker", "Choose robot…", self.robots.focus_picker, "Ctrl+Shift+P", view_menu, "robot")
        add("robot_editor", "Edit robots…", self.robots.open_editor, "Ctrl+Alt+R", view_menu, "edit")
        add("new_robot", "New robot…", lambda: self.robots.open_editor(new=True), None, view_menu, "plus")
        add("shortcuts", "Keyboard shortcuts", commands.show_shortcuts, "Ctrl+/", help_menu, "command")
        add("about", "About RobotLab Workspace (version, data folders)…", settings.open_about, None, help_menu)

    def _wire(self) -> None:
        """What one part tells another (the parts never hold each other)."""
        self.transfer.imported.connect(lambda _thread_id: self.threads.refresh())
        self.transfer.imported.connect(self.threads.open)
        self.models.switched.connect(self._model_switched)
        self.models.picker.compare_wanted.connect(self.comparisons.choose)
        self.robots.target_shown.connect(self._target_shown)
        self.robots.picked_without_thread.connect(self._picked_without_thread)
        self.settings_flow.reloaded.connect(self._settings_reloaded)
        self.settings_flow.theme_changed.connect(self._theme_changed)
        self.settings_flow.store_reopened.connect(self._store_reopened)
        self.folder_flow.folder_switched.connect(self._folder_switched)
        self.threads.opening.connect(self._thread_opening)
        self.commands.target_chosen.connect(self.robots.choose_target)
        self.commands.thread_chosen.connect(self.threads.open)
        self.runs.ended.connect(self._run_ended)
        self.bridge.running_changed.connect(self._running_changed)
        self.controller.run_states_changed.connect(self._run_states_changed)
        self.chat.review_requested.connect(self.docks.review_changes)
        self.chat.connect_requested.connect(self.settings_flow.open_settings)
        self.docks.when_made("changes", lambda pane: self.runs.set_review_notes(pane.note_for))
        self.threads.transcript_shown.connect(self.docks.load_inspector)
        self.threads.title_shown.connect(self.status.retitle)
        self.sidebar.export_requested.connect(lambda thread_id: self.transfer.export_thread("markdown", thread_id))
        self.folder_flow.trusted.connect(self._folder_trusted)
        self.folder_flow.recovered.connect(self._sync_changes)
        self.status.folder.clicked.connect(lambda: self.folder_flow.open_folder())
        self.status.review.clicked.connect(lambda: self.docks.focus_dock("changes"))
        self.status.waiting.clicked.connect(self._go_to_waiting)
        self.chat.activity_changed.connect(self.status.set_activity)
        docks = self.docks
        docks.when_built(self.memory.restore_docks)
        docks.when_built(self.memory.fit_when_shown)  # the inspector may not fit a narrow screen beside the chat
        # The tabs across, or down the side of a narrow window (once the restored layout is laid out).
        docks.when_built(lambda: QTimer.singleShot(0, self, lambda: docks.refit_tabs(widen=True)))
        # "Attach to message" on an MCP resource: a chip in the message box, like a file's.
        docks.when_made("mcp", lambda pane: pane.attach_requested.connect(self.composer.add_resource_attachment))
        docks.when_made("mcp", lambda pane: self.slash.set_manager(pane.manager))
        docks.when_made("network", lambda pane: pane.reveal_requested.connect(self.chat.reveal_task))
        docks.when_made("changes", self._wire_changes)

    def _escape(self) -> None:
        """Esc: stop a comparison's candidates, else what the runs' Esc does."""
        if not self.comparisons.stop():
            self.runs.escape()

    def _run_ended(self, event: TerminalEvent) -> None:
        from workspace import events as ev

        self.status.set_connection("error" if isinstance(event, ev.RunFailed) else "idle")
        self.status.probe_server(again=True)  # the server may have been started (or stopped) since

    def _running_changed(self, running: bool) -> None:
        status = self.status
        if running:
            status.connection_state = "running"
        elif status.connection_state == "running":
            status.connection_state = "idle"
        status.update_connection()
        self._follow_running()
        if running:  # a message went out: its thread comes first in the list (a new one appears there)
            self.threads.refresh()

    def _go_to_approval(self) -> None:
        """Ctrl+J: the approval waiting longest, in whichever thread it was asked: open that thread, focus its card."""
        c = self.controller
        thread_id = c.oldest_approval_thread()
        if thread_id is None:
            if not self.runs.focus_approval():
                self.services.notices.toast("No approval is waiting.", seconds=3)
            return
        if thread_id != c.thread_id:
            self.threads.open(thread_id)
        if not self.runs.focus_approval():  # its card shows once its tool call is drawn: focus it then
            QTimer.singleShot(0, self.runs.focus_approval)

    def _go_to_waiting(self) -> None:
        """The status bar's "waiting for you": the oldest approval, else a thread whose changes wait for review."""
        c = self.controller
        if c.oldest_approval_thread() is None:
            review = next((t for t, state in c.run_states().items() if state == "review"), None)
            if review is not None:
                self.threads.open(review)
                self.docks.focus_dock("changes")
                return
        self._go_to_approval()

    def _run_states_changed(self) -> None:
        """The sidebar's state icons and the status bar's count of what waits for you follow the runs; so do the
        commands and the pickers a run holds: the run's end is told by the bridge (its events fed) and by the runs
        (its record's task done), in either order, and only the later one finds it over."""
        c = self.controller
        self.thread_model.set_run_states(c.run_states())
        self.status.set_waiting(c.waiting_for_you())
        self._follow_running()
        self.models.update()

    def _follow_running(self) -> None:
        """The commands and the robot picker that a run going in the open thread holds (Stop, no other robot)."""
        self.commands.update()
        self.robots.update_picker()

    def _thread_opening(self, session: Any) -> None:
        self.robots.update_model_label()  # the message box names the robot its messages go to
        self.docks.clear_inspector()
        self.docks.sync_network(reveal=bool(getattr(session, "is_network", False)))

    def _folder_switched(self) -> None:
        mcp_pane = self.docks.mcp_pane
        if mcp_pane is not None:
            mcp_pane.manager.folder = self.controller.folder
            mcp_pane.reload()
        self.status.update_folder()
        self.robots.refresh()
        self._sync_changes()  # the open thread's changes waiting in this folder, if any
        if self.controller.session is None:
            self.threads.show_empty()

    def _folder_trusted(self) -> None:
        if self.docks.mcp_pane is not None:
            self.docks.mcp_pane.reload()
        self.robots.refresh()

    def _sync_changes(self) -> None:
        if self.docks.changes_pane is not None:
            self.docks.changes_pane.sync()

    def _picked_without_thread(self, kind: str) -> None:
        self.threads.show_empty()
        self.docks.sync_network(reveal=kind == "network")

    def _settings_reloaded(self) -> None:
        self.robots.refresh()
        if self.controller.session is None:
            self.threads.show_empty()

    def _theme_changed(self, _name: str) -> None:
        """Icons drawn in the old theme's colours are drawn again (messages re-render themselves), and the thread."""
        self.commands.retheme()
        self.inspector_button.setIcon(theme.icon("inspector", theme.colors().muted, 18))
        self.sidebar.retheme()
        self.composer.set_running(self.composer.running)
        self.banner.retheme()
        self.robots.retheme()
        self.docks.retheme()
        self.status.update_connection()  # "● Ready" in the new theme's colour
        session = self.controller.session
        if session is not None and not self.controller.running:
            self.threads.render_session(session)
        elif session is None:
            self.threads.show_empty()

    def _store_reopened(self) -> None:
        self.threads.refresh()
        self.threads.show_empty()

    def _model_switched(self, event: ModelChanged | None) -> None:
        if event is not None:
            self.chat.presenter.feed(event)  # "Model changed to X", where the stored event will replay it
        self.robots.update_model_label()

    def _wire_changes(self, pane: ChangesPane) -> None:
        """The Changes dock: the chat's cards follow it (through their owner, never the pane), the status bar
        counts what waits, and its actions (full-size review, compare)."""
        from ui.window.change_cards import ChangeCards

        self.change_cards = ChangeCards(self.chat)
        self.change_cards.follow(pane)
        pane.notice.connect(lambda text: self.services.notices.toast(text))
        pane.pending_changed.connect(self.status.set_pending)
        pane.refresh_title()
        commands = self.commands
        commands.add("review_full", "Review changes (full size)…", lambda: self._review_full(pane),
                     menu=commands.view_menu, icon="diff")
        commands.add("compare_answers", "Compare the last two answers…", pane.compare_answers,
                     menu=commands.view_menu, icon="diff")

    def _review_full(self, pane: ChangesPane) -> None:
        """The full-size review of the thread's changes; during a comparison its candidates' changes are in the
        combined review (the Changes dock): there, not an empty review of the thread's own."""
        if self.comparisons.review is not None:
            self.docks.focus_dock("changes")
            self.services.notices.toast("A comparison's changes are reviewed in the Changes dock: every "
                                        "candidate's hunks, taken from any.")
            return
        pane.open_review()

    def _build_central(self) -> Iterator[None]:
        """The sidebar, and the conversation: its header (two steps: its titles, then the robot picker and its
        buttons), the banner, the chat and the composer (two steps), a step each."""
        from ui.chat.composer.composer import Composer
        from ui.chat.view.chat import ChatView
        from ui.threads.sidebar import Sidebar
        from ui.widgets.common import ElidedLabel
        from ui.widgets.notices import Banner

        self.setMinimumSize(WINDOW_MIN_WIDTH, WINDOW_MIN_HEIGHT)
        # The sidebar and the conversation are made in the splitter that holds them (the window's central widget at
        # the last step, hidden till then): moved into it, each of their widgets had the style sheet worked out anew.
        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.splitter.hide()
        self.sidebar = Sidebar(self.thread_model, self.splitter, staged=True)
        self.sidebar.setMinimumWidth(SIDEBAR_MIN_WIDTH)
        yield
        yield from self.sidebar.build_steps()  # its search box, then its thread list
        yield
        area = QWidget(self.splitter)
        area.setObjectName("ChatArea")
        area.setMinimumWidth(CHAT_MIN_WIDTH)  # docks and the sidebar give way before the conversation
        layout = QVBoxLayout(area)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)

        header = QFrame(area)
        header.setObjectName("ChatHeader")
        hl = QHBoxLayout(header)
        hl.setContentsMargins(16, 8, 12, 8)
        hl.setSpacing(10)
        titles = QVBoxLayout()
        titles.setSpacing(0)
        # Long thread titles and model names end in "…" (full text in the tooltip): never wider than the chat.
        self.title_label = ElidedLabel("New thread", header, min_chars=8, tooltip=True)
        self.title_label.setObjectName("ThreadTitle")
        titles.addWidget(self.title_label)
        model_row = QHBoxLayout()
        model_row.setSpacing(6)
        self.model_label = ElidedLabel("", header, min_chars=3, tooltip=True)
        self.model_label.setObjectName("ModelLabel")
        model_row.addWidget(self.model_label)
        self.connect_link = QPushButton("Connect a model…", header)
        self.connect_link.setObjectName("ConnectLink")
        self.connect_link.setCursor(Qt.CursorShape.PointingHandCursor)
        self.connect_link.setToolTip("Open Settings to choose a provider and model (Ctrl+,)")
        self.connect_link.setAccessibleName("Connect a model (opens Settings)")
        self.connect_link.clicked.connect(self.settings_flow.open_settings)
        model_row.addWidget(self.connect_link)
        model_row.addStretch(1)
        titles.addLayout(model_row)
        hl.addLayout(titles, 1)
        layout.addWidget(header)
        yield
        robot_label = ElidedLabel("Robot", header, whole=True)  # gives way first when the chat is narrow
        robot_label.setObjectName("Muted")
        hl.addWidget(robot_label)
        self.robot_picker = QComboBox(header)
        self.robot_picker.setObjectName("RobotPicker")
        self.robot_picker.setAccessibleName("Robot")
        self.robot_picker.setModel(self.robot_model)
        # As wide as about 12 characters whatever the names (a long one is elided in the box, whole in the list).
        self.robot_picker.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.robot_picker.setMinimumContentsLength(PICKER_CHARS[0])
        self.robot_picker.setToolTip(PICKER_TIP)
        # The picked name shows whole (up to PICKER_CHARS[1] characters): the thread's title gives way first.
        self.robot_picker.currentIndexChanged.connect(lambda _i: self.fit_robot_picker())
        hl.addWidget(self.robot_picker)
        self.robot_edit_button = QToolButton(header)
        self.robot_edit_button.setObjectName("GhostButton")
        self.robot_edit_button.setIcon(theme.icon("edit", theme.colors().muted, 16))
        self.robot_edit_button.setToolTip("Edit robots: create, duplicate, edit (Ctrl+Alt+R)")
        self.robot_edit_button.setAccessibleName("Edit robots")
        self.robot_edit_button.clicked.connect(lambda _c=False: self.robots.open_editor())
        hl.addWidget(self.robot_edit_button)
        self.inspector_button = QToolButton(header)
        self.inspector_button.setObjectName("GhostButton")
        self.inspector_button.setIcon(theme.icon("inspector", theme.colors().muted, 18))
        self.inspector_button.setToolTip("Show or hide the inspector (Ctrl+I)")
        self.inspector_button.setAccessibleName("Show or hide the inspector")
        self.inspector_button.clicked.connect(self.docks.toggle_inspector)
        hl.addWidget(self.inspector_button)
        yield

        self.banner = Banner(area)
        banner_holder = QHBoxLayout()
        banner_holder.setContentsMargins(16, 8, 16, 0)
        banner_holder.addWidget(self.banner)
        layout.addLayout(banner_holder)
        yield

        self.chat = ChatView(area)
        layout.addWidget(self.chat, 1)
        yield
        self.composer = Composer(area, staged=True)
        layout.addWidget(self.composer)
        yield
        yield from self.composer.build_steps()  # the completion, the attachments' row and the hint under the box
        yield
        self.splitter.addWidget(self.sidebar)
        self.splitter.addWidget(area)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([SIDEBAR_WIDTH, 900])
        self.splitter.setChildrenCollapsible(False)
        self.setCentralWidget(self.splitter)
        self.splitter.show()

    def _target_shown(self, what: str, name: str, label: str) -> None:
        """The robot or network new messages go to: the status bar says it, the picker shows it whole."""
        self.status.show_target(what=what, name=name, model_label=label)
        self.fit_robot_picker()  # the picker may have been set with its signals blocked

    def fit_robot_picker(self) -> None:
        """Size the robot picker to the picked name (from 9 to 24 characters): "garden-helper" shows whole
        at 1024 wide instead of "garden-he…"; a longer name ends in "…" (whole in the list and tooltip)."""
        low, high = PICKER_CHARS
        picker = self.robot_picker
        fm = picker.fontMetrics()
        text = fm.horizontalAdvance(picker.currentText())
        text = max(fm.horizontalAdvance("x") * low, min(text, fm.horizontalAdvance("x") * high))
        option = QStyleOptionComboBox()
        picker.initStyleOption(option)
        # A hard minimum: the header's layout squeezed the picker below its size hint before its title.
        contents = QSize(text + picker.iconSize().width() + 10, fm.height())
        picker.setMinimumWidth(picker.style().sizeFromContents(QStyle.ContentsType.CT_ComboBox, option, contents,
                                                               picker).width())

    # -- Qt --------------------------------------------------------------------------------------------
    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if self.built:
            self.commands.refit_palette()
            self.docks.refit_tabs(widen=True)  # (across the top while their names fit, else down the side)
            self.fit_height()

    def fit_height(self) -> None:
        """A window lower than :data:`~ui.window.geometry.COMPACT_HEIGHT`: the banner on one line, the message box
        without its hint, a comparison's headers in two rows, so the conversation (a comparison's columns) keeps the
        height; taller, each as usual."""
        from ui.window.geometry import COMPACT_HEIGHT

        compact = self.height() < COMPACT_HEIGHT
        self.banner.set_compact(compact)
        self.composer.set_compact(compact)
        self.comparisons.set_compact(compact)

    def closeEvent(self, event: QCloseEvent) -> None:
        try:
            self.memory.save(folder=self.controller.folder)
        except Exception as exc:  # never stop the window from closing
            import logging

            logging.getLogger("ui.main_window").warning("could not save the window's layout: %s", exc)
        if self.built and not self._quit_confirmed and self._ask_to_quit():
            event.ignore()
            return
        if self.built:
            self.controller.stop_all()
        super().closeEvent(event)
        self.closed.emit()

    def quit_question(self) -> str | None:
        """What quitting would stop, for the question before it ("2 runs are going: …", "‘Title’: 1 delegated task
        still running"); None: nothing going."""
        from ui.controller import quit_question

        c, store = self.controller, self.controller.store
        if store is None or store.closed:
            return None
        titles = {i.thread_id: i.title for i in self.thread_model.items}
        return quit_question(c.runs_going(), c.delegations_going(), titles)

    def _ask_to_quit(self) -> bool:
        """Runs going: ask (window-modal, without blocking the loop the runs need); True: the close waits for
        the answer — Quit closes again, Cancel keeps them running."""
        from PySide6.QtWidgets import QMessageBox

        text = self.quit_question()
        if text is None:
            return False
        box = self.quit_box
        if box is None:
            box = self.quit_box = QMessageBox(QMessageBox.Icon.Question, "Quit RobotLab Workspace?", "",
                                              QMessageBox.StandardButton.Cancel, self)
            quit_button = box.addButton("Quit and stop them", QMessageBox.ButtonRole.AcceptRole)
            box.setDefaultButton(QMessageBox.StandardButton.Cancel)
            box.setWindowModality(Qt.WindowModality.WindowModal)
            box.finished.connect(lambda _r: self._quit_answered(box.clickedButton() is quit_button))
        box.setText(text)
        box.open()
        return True

    def _quit_answered(self, quit_: bool) -> None:
        if quit_:
            self.close_without_asking()

    def close_without_asking(self) -> bool:
        """Close, stopping the runs going without the question (a signal from the terminal, ``--quit-after``)."""
        self._quit_confirmed = True
        return self.close()

    def _show(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not event.spontaneous():
            # The frame's size is known once shown: the window with its frame fits the screen.
            QTimer.singleShot(0, self.memory.fit_when_shown)
        if self.built:
            QTimer.singleShot(0, self.composer.focus)
