"""The main window: threads on the left, the conversation in the middle, the inspector on the right."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QResizeEvent
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QDockWidget,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTabBar,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ui import theme

if TYPE_CHECKING:
    from ui.controller import Controller
    from ui.widgets.chat import UserMessage

log = logging.getLogger("ui.main_window")

EXAMPLES = ["list the files", "search for TODO", "remember that color is teal"]

#: The smallest window: every part shrinks to fit it (long titles and previews end in "…", docks
#: narrow down to DOCK_MIN_WIDTH). Set explicitly, so the window never grows by itself when some
#: part's minimum size hint grows (a long thread title, a network's graph).
WINDOW_MIN_WIDTH = 900
WINDOW_MIN_HEIGHT = 600
#: The narrowest a dock's pane gets (its content elides, wraps or scrolls below its wish).
DOCK_MIN_WIDTH = 260
#: The docks' width at start (the chat keeps the rest).
DOCK_WIDTH = 410
#: The narrowest the conversation gets (its cards fit in it; below, the docks narrow first).
CHAT_MIN_WIDTH = 440
SIDEBAR_MIN_WIDTH = 180
SIDEBAR_WIDTH = 220


class MainWindow(QMainWindow):
    #: The window was closed (the app shuts down).
    closed = Signal()

    def __init__(self, controller: Controller, *, theme_name: str = "light", parent: QWidget | None = None,
                 build: bool = True) -> None:
        super().__init__(parent)
        self.controller = controller
        self.bridge = controller.bridge
        self.theme_name = theme_name
        self._shown_robot_problems: list[str] = []
        self._thread_title: str | None = None
        self.setWindowTitle("RobotLab Workspace")
        self.setWindowIcon(theme.app_icon())
        self.resize(1400, 900)
        self.setDockOptions(QMainWindow.DockOption.AllowTabbedDocks | QMainWindow.DockOption.AnimatedDocks)
        self.setTabPosition(Qt.DockWidgetArea.AllDockWidgetAreas, QTabWidget.TabPosition.North)
        self.actions_by_name: dict[str, QAction] = {}
        self.docks: dict[str, QDockWidget] = {}
        self._thread_usage: Any = None
        self._connection = "idle"
        self._probed: tuple[str, str | None] | None = None
        self._server_problem: str | None = None
        self._settings_dialog: Any = None
        self.built = False
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
        """Make every widget (the slow part of startup: run after the first paint)."""
        if self.built:
            return
        self.built = True
        from ui.models.memory import MemoryModel
        from ui.models.network import ChatTargetModel, NetworkModel
        from ui.models.threads import ThreadListModel
        from ui.models.tool_calls import ToolCallsModel
        from ui.models.trace import TraceModel
        from ui.widgets.notices import Toast
        from ui.widgets.palette import CommandPalette

        # models (no widgets inside)
        self.thread_model = ThreadListModel(self)
        self.robot_model = ChatTargetModel(self)  # robots, then networks
        self.network_model = NetworkModel(self)
        self.tool_model = ToolCallsModel(self)
        self.trace_model = TraceModel(self)
        self.memory_model = MemoryModel(self)

        self._build_central()
        self.command_palette = CommandPalette(self)
        self.toast = Toast(self)
        self._build_docks()
        self._build_status()
        self._build_actions()
        self._connect()
        self._update_actions()

    # -- construction -----------------------------------------------------------------------------
    def _build_central(self) -> None:
        from ui.widgets.chat import ChatView
        from ui.widgets.composer import Composer
        from ui.widgets.lanes import ElidedLabel
        from ui.widgets.notices import Banner
        from ui.widgets.sidebar import Sidebar

        self.setMinimumSize(WINDOW_MIN_WIDTH, WINDOW_MIN_HEIGHT)
        self.sidebar = Sidebar(self.thread_model, self)
        self.sidebar.setMinimumWidth(SIDEBAR_MIN_WIDTH)
        area = QWidget(self)
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
        self.model_label = ElidedLabel("", header, min_chars=6, tooltip=True)
        self.model_label.setObjectName("ModelLabel")
        model_row.addWidget(self.model_label)
        self.connect_link = QPushButton("Connect a model…", header)
        self.connect_link.setObjectName("ConnectLink")
        self.connect_link.setCursor(Qt.CursorShape.PointingHandCursor)
        self.connect_link.setToolTip("Open Settings to choose a provider and model (Ctrl+,)")
        self.connect_link.clicked.connect(self.open_settings)
        model_row.addWidget(self.connect_link)
        model_row.addStretch(1)
        titles.addLayout(model_row)
        hl.addLayout(titles, 1)
        robot_label = ElidedLabel("Robot", header, whole=True)  # gives way first when the chat is narrow
        robot_label.setObjectName("Muted")
        hl.addWidget(robot_label)
        self.robot_picker = QComboBox(header)
        self.robot_picker.setObjectName("RobotPicker")
        self.robot_picker.setAccessibleName("Robot")
        self.robot_picker.setModel(self.robot_model)
        # As wide as about 12 characters whatever the names (a long one is elided in the box, whole in the list).
        self.robot_picker.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.robot_picker.setMinimumContentsLength(9)
        self.robot_picker.setToolTip("The robot or network for new threads (a thread keeps its robot or network)")
        self.robot_picker.currentIndexChanged.connect(self._on_robot_picked)
        hl.addWidget(self.robot_picker)
        self.inspector_button = QToolButton(header)
        self.inspector_button.setObjectName("GhostButton")
        self.inspector_button.setIcon(theme.icon("inspector", theme.colors().muted, 18))
        self.inspector_button.setToolTip("Show or hide the inspector (Ctrl+I)")
        self.inspector_button.clicked.connect(self.toggle_inspector)
        hl.addWidget(self.inspector_button)
        layout.addWidget(header)

        self.banner = Banner(area)
        banner_holder = QHBoxLayout()
        banner_holder.setContentsMargins(16, 8, 16, 0)
        banner_holder.addWidget(self.banner)
        layout.addLayout(banner_holder)

        self.chat = ChatView(area)
        layout.addWidget(self.chat, 1)
        self.composer = Composer(area)
        layout.addWidget(self.composer)

        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.splitter.addWidget(self.sidebar)
        self.splitter.addWidget(area)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([SIDEBAR_WIDTH, 900])
        self.splitter.setChildrenCollapsible(False)
        self.setCentralWidget(self.splitter)

    def register_dock(self, key: str, title: str, widget: QWidget, *, icon: str | None = None,
                      area: Qt.DockWidgetArea = Qt.DockWidgetArea.RightDockWidgetArea,
                      shortcut: str | None = None) -> QDockWidget:
        """Add an inspector dock (tabbed with the others on the right) and a View action for it.

        Other parts (Changes, Network, MCP servers) register their docks the same way.
        """
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock-{key}")
        # The dock area is as wide as its widest pane's minimum (tabbed docks too): a set minimum keeps
        # one pane's long text or hidden page from making the window wider; panes elide or wrap below it.
        widget.setMinimumWidth(DOCK_MIN_WIDTH)
        dock.setWidget(widget)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetClosable
                         | QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetFloatable)
        dock.setTitleBarWidget(QWidget(dock))  # tabbed docks: the tab is the title
        existing = [d for d in self.docks.values() if self.dockWidgetArea(d) == area]
        self.addDockWidget(area, dock)
        if existing:
            self.tabifyDockWidget(existing[0], dock)
            # In a narrow dock area the tabs keep their names and scroll ("T…" for Trace says nothing).
            for bar in self.findChildren(QTabBar):
                bar.setElideMode(Qt.TextElideMode.ElideNone)
                bar.setUsesScrollButtons(True)
        self.docks[key] = dock
        action = dock.toggleViewAction()
        action.setText(f"Show {title}")
        if icon:
            action.setIcon(theme.icon(icon, theme.colors().muted, 16))
            action.setProperty("iconName", icon)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
        self.actions_by_name[f"dock.{key}"] = action
        if hasattr(self, "view_menu"):
            self.view_menu.addAction(action)
        return dock

    def _build_docks(self) -> None:
        """The inspector docks, empty: :meth:`build_inspector` fills them (after the first paint)."""
        for key, title, icon, shortcut in (("tools", "Tool calls", "tool", "Ctrl+Shift+T"),
                                           ("memory", "Memory", "memory", "Ctrl+Shift+M"),
                                           ("trace", "Trace", "trace", "Ctrl+Shift+R")):
            placeholder = QWidget(self)
            placeholder.setObjectName("InspectorPane")
            self.register_dock(key, title, placeholder, icon=icon, shortcut=shortcut)
        self.docks["tools"].raise_()
        self.resizeDocks([self.docks["tools"]], [DOCK_WIDTH], Qt.Orientation.Horizontal)

    def build_inspector(self) -> None:
        """Put the inspector panes in their docks (and add the MCP servers dock when MCP is there)."""
        if hasattr(self, "tool_pane"):
            return
        from ui.docks.inspector import MemoryPane, ToolCallsPane, TracePane

        self.tool_pane = ToolCallsPane(self.tool_model, self)
        self.memory_pane = MemoryPane(self.memory_model, self)
        self.trace_pane = TracePane(self.trace_model, self)
        for key, pane in (("tools", self.tool_pane), ("memory", self.memory_pane), ("trace", self.trace_pane)):
            old = self.docks[key].widget()
            self.docks[key].setWidget(pane)
            if old is not None:
                old.deleteLater()
        self._add_mcp_dock()
        self._add_network_dock()
        self._add_changes_dock()
        self.docks["tools"].raise_()
        self._sync_network_dock()

    def _add_network_dock(self) -> None:
        from ui.docks.network import NetworkPane
        from ui.widgets.lanes import network_icon

        self.network_pane = NetworkPane(self.network_model, self)
        self.network_pane.reveal_requested.connect(self.chat.reveal_task)
        dock = self.register_dock("network", "Network", self.network_pane, shortcut="Ctrl+Shift+N")
        dock.toggleViewAction().setIcon(network_icon(theme.colors().muted, 16))

    def _sync_network_dock(self, *, reveal: bool = False) -> None:
        """Draw the network of the open thread (or the picked network) in the Network dock."""
        pane = getattr(self, "network_pane", None)
        if pane is None:
            return
        network, note = self.controller.network_for_dock()
        pane.set_network(network, note=note)
        dock = self.docks.get("network")
        if reveal and network is not None and dock is not None and any(
                d.toggleViewAction().isChecked() for d in self.docks.values()):
            dock.show()
            dock.raise_()

    def _add_changes_dock(self) -> None:
        """The Changes dock (review of proposed file changes) and its actions (full-size review, compare)."""
        from ui.docks.changes import ChangesPane

        self.changes_pane = ChangesPane(self.controller, self, window=self)
        self.register_dock("changes", "Changes", self.changes_pane, icon="diff", shortcut="Ctrl+Shift+D")
        self.changes_pane.install_actions(self)

    def _add_mcp_dock(self) -> None:
        try:
            from ui.docks.mcp import McpPane, manager_for
        except ImportError:  # the MCP manager has not landed: no dock
            return
        manager = manager_for(self.controller)
        if manager is None:
            return
        self.mcp_pane = McpPane(manager, self.controller.tasks, self)
        self.register_dock("mcp", "MCP servers", self.mcp_pane, icon="server", shortcut="Ctrl+Shift+S")

    def _build_status(self) -> None:
        bar = self.statusBar()
        bar.setSizeGripEnabled(False)
        self.status_robot = QLabel("", self)
        self.status_model = QLabel("", self)
        self.status_connection = QLabel("", self)
        self.status_usage = QLabel("", self)
        self.status_folder = QPushButton("", self)
        self.status_folder.setObjectName("ConnectLink")
        self.status_folder.setCursor(Qt.CursorShape.PointingHandCursor)
        self.status_folder.clicked.connect(lambda: self.open_folder())
        bar.addWidget(self.status_folder)
        for label in (self.status_robot, self.status_model, self.status_connection):
            bar.addWidget(label)
        bar.addPermanentWidget(self.status_usage)
        self._update_folder()

    def _update_folder(self) -> None:
        folder = self.controller.folder
        if folder is None:
            self.status_folder.setText("No folder open")
            self.status_folder.setToolTip("Robots can't see your files. Open a folder for them to work in (Ctrl+O)")
        else:
            self.status_folder.setText(f"Folder: {Path(folder).name or folder}")
            self.status_folder.setToolTip(f"Robots read and propose changes in {folder}. Open another (Ctrl+O)")
        self._retitle(self._thread_title)

    def _retitle(self, thread_title: str | None) -> None:
        """The window title: the thread, the folder, the app."""
        self._thread_title = thread_title
        folder = self.controller.folder
        parts = [p for p in (thread_title, (Path(folder).name or str(folder)) if folder else None) if p]
        self.setWindowTitle(" — ".join([*parts, "RobotLab Workspace"]))

    def _build_actions(self) -> None:
        menubar = self.menuBar()
        file_menu = menubar.addMenu("&File")
        thread_menu = menubar.addMenu("&Thread")
        self.view_menu = menubar.addMenu("&View")
        help_menu = menubar.addMenu("&Help")
        for dock in self.docks.values():
            self.view_menu.addAction(dock.toggleViewAction())

        def add(name: str, text: str, slot: Any, shortcut: str | QKeySequence.StandardKey | None = None,
                menu: Any = None, icon: str | None = None) -> QAction:
            action = QAction(text, self)
            if shortcut is not None:
                action.setShortcut(QKeySequence(shortcut))
                action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            if icon:
                action.setIcon(theme.icon(icon, theme.colors().muted, 16))
                action.setProperty("iconName", icon)
            action.triggered.connect(lambda _checked=False: slot())
            self.addAction(action)
            if menu is not None:
                menu.addAction(action)
            self.actions_by_name[name] = action
            return action

        add("new_thread", "New thread", self.new_thread, "Ctrl+N", file_menu, "plus")
        add("open_folder", "Open folder…", self.open_folder, "Ctrl+O", file_menu, "folder")
        file_menu.addSeparator()
        add("export_md", "Export thread as Markdown…", lambda: self.export_thread("markdown"), "Ctrl+Shift+E",
            file_menu, "export")
        add("export_json", "Export thread as RobotLab JSON…", lambda: self.export_thread("json"), None, file_menu)
        add("export_jsonl", "Export thread events as JSONL…", lambda: self.export_thread("jsonl"), None, file_menu)
        add("import_json", "Import RobotLab JSON…", self.import_thread, None, file_menu, "import")
        file_menu.addSeparator()
        add("settings", "Settings…", self.open_settings, "Ctrl+,", file_menu, "settings")
        add("quit", "Quit", self.close, "Ctrl+Q", file_menu)

        add("send", "Send message", self.composer.submit, "Ctrl+Return", thread_menu, "send")
        add("stop", "Stop", self.escape, "Esc", thread_menu, "stop")
        add("regenerate", "Regenerate last answer", self.regenerate_last, "Ctrl+R", thread_menu, "regenerate")
        add("edit_last", "Edit last message", self.edit_last, "Ctrl+E", thread_menu, "edit")
        add("prev_branch", "Previous branch of last message", lambda: self.branch_last(-1), "Alt+Left", thread_menu)
        add("next_branch", "Next branch of last message", lambda: self.branch_last(+1), "Alt+Right", thread_menu)
        add("approval", "Go to pending approval", self.focus_approval, "Ctrl+J", thread_menu, "shield")
        thread_menu.addSeparator()
        add("rename", "Rename thread…", self.sidebar.rename_current, "F2", thread_menu, "edit")
        add("delete", "Delete thread", self.delete_current, "Ctrl+Shift+Backspace", thread_menu, "trash")
        add("undo_delete", "Undo delete", self.toast.trigger, "Ctrl+Z")
        add("next_thread", "Next thread", lambda: self.cycle_thread(+1), "Ctrl+Tab", thread_menu)
        add("prev_thread", "Previous thread", lambda: self.cycle_thread(-1), "Ctrl+Shift+Tab", thread_menu)

        self.view_menu.addSeparator()
        add("palette", "Command palette…", self.open_palette, "Ctrl+K", self.view_menu, "command")
        add("search", "Search threads", self.sidebar.focus_search, "Ctrl+F", self.view_menu, "search")
        add("focus_composer", "Focus message box", self.composer.focus, "Ctrl+L", self.view_menu, "chat")
        add("toggle_sidebar", "Show or hide threads", self.toggle_sidebar, "Ctrl+B", self.view_menu, "sidebar")
        add("toggle_inspector", "Show or hide the inspector", self.toggle_inspector, "Ctrl+I", self.view_menu,
            "inspector")
        add("theme_light", "Light theme", lambda: self.set_theme("light"), None, self.view_menu, "sun")
        add("theme_dark", "Dark theme", lambda: self.set_theme("dark"), None, self.view_menu, "moon")
        add("load_earlier", "Show earlier turns", self.chat.load_earlier, None, self.view_menu)
        add("robot_picker", "Choose robot…", self.focus_robot_picker, "Ctrl+Shift+P", self.view_menu, "robot")
        add("about", "About RobotLab Workspace (version, data folders)…", self.open_about, None, help_menu)

    def _connect(self) -> None:
        b, c = self.bridge, self.controller
        b.run_started.connect(self._on_bridge_run_started)
        b.text_appended.connect(self.chat.append_text)
        b.text_completed.connect(lambda e: self.chat.complete_text(e.run_id, e.robot, e.text))
        b.tool_used.connect(self.chat.add_tool_use)
        b.approval_decided.connect(self.chat.approval_decided)
        b.change_proposed.connect(self.chat.add_change)
        b.change_decided.connect(self.chat.change_decided)
        b.tool_finished.connect(self.chat.tool_finished)
        b.usage_reported.connect(self._on_bridge_usage)
        b.run_ended.connect(self._on_bridge_run_ended)
        b.task_changed.connect(self.chat.task_event)
        b.mcp_notice.connect(lambda event: self.toast.show_message(event.message, seconds=10))
        b.events_batched.connect(self._on_bridge_events)
        b.running_changed.connect(self._on_running_changed)
        c.approval_needed.connect(self._on_approval_needed)
        c.thread_opened.connect(self._on_thread_opened)
        c.threads_changed.connect(self.refresh_threads)
        c.problem.connect(lambda text: self.banner.show_message(text))
        c.notice.connect(lambda text: self.toast.show_message(text))
        c.usage_changed.connect(self._on_usage_changed)
        c.robot_changed.connect(self._on_controller_robot_changed)
        self.composer.send_requested.connect(self.send)
        self.composer.stop_requested.connect(self.controller.stop)
        self.chat.edit_submitted.connect(self._on_edit_submitted)
        self.chat.regenerate_requested.connect(self._on_regenerate)
        self.chat.review_requested.connect(self.review_changes)
        self.chat.branch_requested.connect(self.controller.switch_branch)
        self.chat.example_clicked.connect(self.send)
        self.chat.connect_requested.connect(self.open_settings)
        self.sidebar.new_thread_requested.connect(self.new_thread)
        self.sidebar.thread_selected.connect(self.open_thread)
        self.sidebar.search_changed.connect(self._on_search)
        self.sidebar.rename_requested.connect(self.controller.rename_thread)
        self.sidebar.delete_requested.connect(self.delete_thread)
        self.sidebar.export_requested.connect(lambda tid: self.export_thread("markdown", tid))

    # -- robots and models --------------------------------------------------------------------------
    def refresh_robots(self) -> None:
        from ui.widgets.lanes import network_icon

        self.robot_model.default_model = self.controller.config.get("llm.model")
        muted = theme.colors().muted
        self.robot_model.icons = {"robot": theme.icon("robot", muted, 16), "network": network_icon(muted, 16)}
        from ui.widgets.common import signals_blocked

        with signals_blocked(self.robot_picker):
            self.robot_model.set_robots(self.controller.robots(refresh=True))
            self.robot_model.set_networks(self.controller.networks(refresh=True))
            row = self.robot_model.row_of(self.controller.robot_name, self.controller.target_kind)
            self.robot_picker.setCurrentIndex(max(0, row))
        self._update_model_label()
        problems = self.controller.robot_problems
        if problems and problems != self._shown_robot_problems:
            count = f"{len(problems)} robot file{'s' if len(problems) > 1 else ''}"
            details = "\n\n".join(problems)
            self.toast.show_message(f"{count} could not be read and {'are' if len(problems) > 1 else 'is'} "
                                    "not in the list.", action="Details", seconds=15,
                                    callback=lambda: self.banner.show_message(details))
        self._shown_robot_problems = list(problems)

    def _on_robot_picked(self, row: int) -> None:
        if row < 0:
            return
        kind, name = self.robot_model.key_at(row)
        if kind is None:  # a heading ("Robots", "Networks"): keep the current choice
            self._on_controller_robot_changed(self.controller.robot_name)
            return
        session = self.controller.session
        thread = getattr(session, "thread", None) if session is not None else None
        thread_robot = getattr(thread, "robot", None)
        same = thread_robot == name and getattr(thread, "kind", "robot") == kind
        if kind == "network":
            self.controller.set_network(name)
        else:
            self.controller.set_robot(name)
        if session is not None and thread_robot and not same and not self.controller.running:
            # A thread keeps its robot: another robot starts a new thread (the old one stays in the list).
            self.controller.new_thread()
            self.toast.show_message(f"New thread with {name}. “{session.thread.display_title}” stays with "
                                    f"{thread_robot}.")
        self._update_model_label()
        if self.controller.session is None:
            self._show_empty()
            self._sync_network_dock(reveal=kind == "network")

    def _on_controller_robot_changed(self, name: str) -> None:
        from ui.widgets.common import signals_blocked

        with signals_blocked(self.robot_picker):
            row = self.robot_model.row_of(name, self.controller.target_kind)
            if row >= 0:
                self.robot_picker.setCurrentIndex(row)
        self._update_model_label()

    def focus_robot_picker(self) -> None:
        if not self.robot_picker.isEnabled():
            self.toast.show_message("Stop the run (Esc) to choose another robot or network.")
            return
        self.robot_picker.setFocus()
        self.robot_picker.showPopup()

    def _update_model_label(self) -> None:
        label, is_lm = self.controller.model_label()
        self.model_label.setText(label)
        self.connect_link.setVisible(not is_lm)
        self.composer.set_robot(self.controller.robot_name)
        what = "Network" if self.controller.target_kind == "network" else "Robot"
        self.status_robot.setText(f"{what}: {self.controller.robot_name}")
        self.status_model.setText(f"Model: {label}")
        self._update_connection()
        self._probe_server()

    def _probe_server(self, *, again: bool = False) -> None:
        """Check (off the event loop's critical path) that a local model server is listening, so the
        status bar does not say "Ready" while Ollama is not running."""
        c = self.controller
        label, is_lm = c.model_label()
        api_base = c.config.get("llm.api_base") if c.provider is None else None
        key = (label, api_base) if c.provider is None and is_lm else None
        if key == self._probed and not again:
            return
        self._probed = key
        self._server_problem = None
        if key is None:
            return
        from workspace.providers import probe_local_server

        async def probe() -> None:
            problem = await probe_local_server(label, api_base)
            if self._probed == key:
                self._server_problem = problem
                self._update_connection()

        c.tasks.spawn(probe(), name="probe-model-server")

    def _update_connection(self) -> None:
        c = theme.colors()
        _label, is_lm = self.controller.model_label()
        tip = ""
        if self._connection == "running":
            text, color = "● Running", c.accent
        elif self._connection == "error":
            text, color = "● Last run failed", c.error
        elif not is_lm:
            text, color = "● Offline (no model connected)", c.warning
        elif self._server_problem:
            text, color, tip = "● Model server not reachable", c.warning, self._server_problem
        else:
            text, color = "● Ready", c.success
        self.status_connection.setText(text)
        self.status_connection.setToolTip(tip)
        self.status_connection.setStyleSheet(f"color: {color};")

    # -- threads ------------------------------------------------------------------------------------
    def refresh_threads(self) -> None:
        query = self.sidebar.search.text().strip()
        if query:
            self.thread_model.set_hits(self.controller.search(query))
        else:
            self.thread_model.set_threads(self.controller.list_threads())
        self.sidebar.select_thread(self.controller.thread_id)
        thread = getattr(self.controller.session, "thread", None) if self.controller.session else None
        if thread is not None:
            self.title_label.setText(getattr(thread, "display_title", None) or "Untitled thread")
            self._retitle(self.title_label.text())

    def _on_search(self, query: str) -> None:
        self.refresh_threads()

    def new_thread(self) -> None:
        self.controller.new_thread()
        self.composer.focus()

    def open_thread(self, thread_id: str) -> None:
        if self.controller.running and thread_id != self.controller.thread_id:
            self.toast.show_message("The running answer was stopped to open another thread.")
        self.controller.open_thread(thread_id)
        self.composer.focus()

    def cycle_thread(self, step: int) -> None:
        items = self.thread_model.items
        if not items:
            return
        current = self.controller.thread_id
        ids = [i.thread_id for i in items]
        index = ids.index(current) + step if current in ids else (0 if step > 0 else len(ids) - 1)
        self.open_thread(ids[index % len(ids)])

    def delete_current(self) -> None:
        if self.controller.thread_id:
            self.delete_thread(self.controller.thread_id)

    def delete_thread(self, thread_id: str) -> None:
        title = next((i.title for i in self.thread_model.items if i.thread_id == thread_id), "Thread")
        if self.controller.delete_thread(thread_id):
            self.toast.show_message(f"Deleted “{title}”", action="Undo",
                                    callback=lambda: self._undo_delete(thread_id))

    def _undo_delete(self, thread_id: str) -> None:
        self.controller.restore_thread(thread_id)
        self.open_thread(thread_id)

    def _show_empty(self) -> None:
        label, is_lm = self.controller.model_label()
        self.title_label.setText("New thread")
        self._retitle(None)
        examples = EXAMPLES
        if self.controller.target_kind == "network":
            from ui.models.network import network_examples

            examples = network_examples(self.controller.robot_name)
            label = f"A network of robots · {label}"
        self.chat.show_empty(robot=self.controller.robot_name, model_label=label, is_language_model=is_lm,
                             examples=examples)

    def _on_thread_opened(self, session: Any) -> None:
        for model in (self.tool_model, self.trace_model, self.memory_model):
            model.clear()
        self._sync_network_dock(reveal=bool(getattr(session, "is_network", False)))
        if session is None:
            self._show_empty()
            self.sidebar.select_thread(None)
            return
        self.render_session(session)
        self.refresh_threads()

    def render_session(self, session: Any) -> None:
        """Show a stored thread: its last turns now, earlier ones on demand; the inspector too."""
        from ui.transcript import LazyTranscript

        thread_id = self.controller.thread_id or ""
        try:
            lazy = LazyTranscript(self.controller.store, thread_id)
        except Exception as exc:
            self.banner.show_message(f"Could not read the thread: {exc}")
            self.chat.clear()
            return
        self.chat.set_turns(lazy.turns, lambda info: self._render_turn(lazy.view(info)))
        self._load_inspector(lazy)
        thread = session.thread
        self.title_label.setText(thread.display_title)
        self._retitle(thread.display_title)

    def _load_inspector(self, lazy: Any) -> None:
        """Fill the inspector with the thread's events: at once for short threads, else read
        in a worker thread (events that arrive meanwhile are kept)."""
        if len(lazy) <= 200 or self.controller.running:
            self._set_inspector_events(lazy.all_events())
            return
        self._inspector_buffer: list[Any] | None = []
        thread_id = lazy.thread_id

        async def load() -> None:
            import asyncio

            try:
                events = await asyncio.to_thread(lazy.all_events)
            except Exception as exc:
                self.banner.show_message(f"Could not read the thread's events for the inspector: {exc}")
                return
            if self.controller.thread_id != thread_id:
                return
            buffered, self._inspector_buffer = self._inspector_buffer or [], None
            seen = {(e.run_id, e.seq) for e in events}
            self._set_inspector_events(events + [e for e in buffered if (e.run_id, e.seq) not in seen])

        self.controller.tasks.spawn(load(), name="inspector-load")

    def _set_inspector_events(self, events: list[Any]) -> None:
        self.trace_model.set_events(events)
        self.tool_model.set_events(events)
        self.memory_model.set_events(events)
        if self.network_model.has_graph:
            self.network_model.set_events(events)

    def _render_turn(self, turn: Any) -> None:
        chat = self.chat
        chat.add_user(turn.user_text, turn_id=turn.id, sibling_index=turn.sibling_index,
                      sibling_count=turn.sibling_count)
        terminal = None
        run_id, robot = None, None
        for event in turn.events:
            kind = event.kind
            run_id, robot = event.run_id, event.robot
            if kind == "run_started":
                chat.start_run(event.run_id, event.robot, turn_id=turn.id, task=event.task)
            elif kind in ("task_started", "task_finished"):
                chat.task_event(event)
            elif kind == "text":
                chat.complete_text(event.run_id, event.robot, event.text)
            elif kind == "text_delta":
                chat.append_text(event.run_id, event.robot, event.text)
            elif kind == "tool_use":
                chat.add_tool_use(event)
            elif kind in ("tool_result", "tool_error"):
                chat.tool_finished(event)
            elif kind == "approval_decided":
                chat.approval_decided(event)
            elif kind == "change_proposed":
                chat.add_change(event)
            elif kind == "change_decided":
                chat.change_decided(event)
            elif kind == "usage":
                chat.add_usage(event)
            elif event.terminal:
                terminal = event
                chat.end_run(event)
        if terminal is None and run_id is not None and turn.status == "interrupted":
            from workspace import events as ev

            chat.end_run(ev.RunCancelled(run_id=run_id, robot=robot or "",
                                         reason="interrupted: the app closed before the run finished"))

    # -- running --------------------------------------------------------------------------------------
    def send(self, text: str) -> None:
        if self.controller.running:
            self.toast.show_message("A run is in progress: press Esc to stop it first.")
            self.composer.set_text(text)
            return
        if self.controller.session is None:
            self.chat.clear()
        message = self.chat.add_user(text)
        if not self.controller.send(text):
            self.chat.remove(message)  # nothing was sent: the text goes back to the box
            self.composer.set_text(text)
            return
        run = self.controller.last_run
        turn_id = getattr(run, "turn_id", None)
        message.set_turn(turn_id)
        note_for = getattr(getattr(self, "changes_pane", None), "note_for", None)
        if callable(note_for):  # the review outcome that went in front of the message
            message.set_note(note_for(turn_id))
        if run is not None:
            self.chat.start_run(run.run_id, self.controller.robot_name, turn_id=turn_id)
        self.refresh_threads()

    def escape(self) -> None:
        """Esc: close the palette or an edit box first; otherwise stop the run."""
        if self.command_palette.isVisible():
            self.command_palette.hide()
            return
        if self.controller.running or self.controller.pending_approvals:
            self.controller.stop()
            return
        for msg in self.chat.user_messages():
            if msg.editor is not None:
                msg._edit_finish(False)
                return

    def _on_edit_submitted(self, turn_id: str, text: str) -> None:
        self.controller.edit_and_resend(turn_id, text)

    def _on_regenerate(self, turn_id: str) -> None:
        self.controller.regenerate(turn_id)

    def _last_user(self) -> UserMessage | None:
        users = [m for m in self.chat.user_messages() if m.turn_id]
        return users[-1] if users else None

    def regenerate_last(self) -> None:
        last = self._last_user()
        if last is not None and last.turn_id:
            self.controller.regenerate(last.turn_id)

    def edit_last(self) -> None:
        last = self._last_user()
        if last is not None:
            self.chat.ensureWidgetVisible(last)
            last.begin_edit()

    def branch_last(self, direction: int) -> None:
        forked = [m for m in self.chat.user_messages() if m.sibling_count > 1 and m.turn_id]
        if forked:
            self.controller.switch_branch(forked[-1].turn_id or "", direction)

    def review_changes(self, change_set_id: str = "") -> None:
        """Show the Changes dock (registered by the change review part) for a proposed change set."""
        dock = self.docks.get("changes")
        if dock is None:
            self.toast.show_message("Change review is not available in this window yet: the proposed changes "
                                    "are kept; `robotlab run --folder` reviews them in the terminal.")
            return
        dock.show()
        dock.raise_()
        show = getattr(dock.widget(), "show_change_set", None)
        if callable(show) and change_set_id:
            show(change_set_id)

    def focus_approval(self) -> None:
        panel = self.chat.pending_approval()
        if panel is not None:
            self.chat.ensureWidgetVisible(panel)
            panel.setFocus()

    def _on_approval_needed(self, request: Any, future: Any) -> None:
        self.chat.ask_approval(request, future)

    def _on_bridge_run_started(self, event: Any) -> None:
        self.chat.start_run(event.run_id, event.robot, task=event.task)

    def _on_bridge_usage(self, event: Any) -> None:
        self.chat.add_usage(event)
        self.controller.on_usage_event(event)

    def _on_bridge_run_ended(self, event: Any) -> None:
        self.chat.end_run(event)
        self._connection = "error" if event.kind == "run_failed" else "idle"
        self._update_connection()
        self._probe_server(again=True)  # the server may have been started (or stopped) since
        # Sibling counts and turn ids of the last user message (a fork shows "‹ 2/2 ›").
        session = self.controller.session
        last = self._last_user()
        if session is not None and last is not None:
            try:
                turns = session.transcript()
            except Exception:
                turns = []
            if turns:
                t = turns[-1]
                last.set_turn(t.id, t.sibling_index, t.sibling_count)

    def _on_bridge_events(self, events: list[Any]) -> None:
        buffer = getattr(self, "_inspector_buffer", None)
        if buffer is not None:
            buffer.extend(events)
        self.trace_model.append_events(events)
        self.tool_model.add_events(events)
        self.memory_model.add_events(events)
        if self.network_model.has_graph:
            self.network_model.add_events(events)

    def _on_running_changed(self, running: bool) -> None:
        self.composer.set_running(running)
        if running:
            self._connection = "running"
        elif self._connection == "running":
            self._connection = "idle"
        self._update_connection()
        self._update_actions()

    def _update_actions(self) -> None:
        running = self.controller.running
        self.actions_by_name["stop"].setEnabled(True)
        for name in ("regenerate", "edit_last", "prev_branch", "next_branch"):
            self.actions_by_name[name].setEnabled(not running)
        # The running thread keeps its robot: picking another one mid-run would only mislead.
        self.robot_picker.setEnabled(not running)
        self.robot_picker.setToolTip("Stop the run (Esc) to choose another robot or network" if running else
                                     "The robot or network for new threads (a thread keeps its robot or network)")

    def _on_usage_changed(self, usage: Any) -> None:
        self._thread_usage = usage
        if usage is None:
            self.status_usage.setText("")
            return
        tokens = usage.input_tokens + usage.output_tokens
        cost = f"${usage.cost:.4f}" if usage.cost else "$0.00"
        self.status_usage.setText(f"Thread: {tokens:,} tokens · {cost}")
        self.status_usage.setToolTip(f"{usage.input_tokens:,} input + {usage.output_tokens:,} output tokens")

    # -- view ----------------------------------------------------------------------------------------
    def open_palette(self) -> None:
        actions = [a for a in self.actions_by_name.values() if a.text()]
        self.command_palette.open_with(actions)

    def toggle_sidebar(self) -> None:
        self.sidebar.setVisible(not self.sidebar.isVisible())

    def toggle_inspector(self) -> None:
        visible = any(d.isVisible() for d in self.docks.values())
        for dock in self.docks.values():
            dock.setVisible(not visible)
        if not visible and "tools" in self.docks:
            self.docks["tools"].raise_()

    def set_theme(self, name: str) -> None:
        app = QApplication.instance()
        if not isinstance(app, QApplication):
            return
        theme.apply_theme(app, name)
        self.theme_name = name
        from ui.settings import save_user_setting

        save_user_setting("ui.theme", name)
        self._retheme_chrome()
        session = self.controller.session
        if session is not None and not self.controller.running:
            self.render_session(session)
        elif session is None:
            self._show_empty()
        self.toast.show_message(f"{name.capitalize()} theme.")

    def _retheme_chrome(self) -> None:
        """Icons drawn in the old theme's colours: draw them again (messages re-render themselves)."""
        muted = theme.colors().muted
        for action in self.actions_by_name.values():
            name = action.property("iconName")
            if name:
                action.setIcon(theme.icon(str(name), muted, 16))
        self.inspector_button.setIcon(theme.icon("inspector", muted, 18))
        self.sidebar.retheme()
        self.composer.set_running(self.composer.running)
        self.banner.retheme()
        from ui.widgets.lanes import network_icon

        self.robot_model.icons = {"robot": theme.icon("robot", muted, 16), "network": network_icon(muted, 16)}
        if "network" in self.docks:
            self.docks["network"].toggleViewAction().setIcon(network_icon(muted, 16))
        for pane in (getattr(self, "tool_pane", None), getattr(self, "mcp_pane", None),
                     getattr(self, "network_pane", None), getattr(self, "changes_pane", None)):
            retheme = getattr(pane, "retheme", None)
            if callable(retheme):
                retheme()

    def open_about(self) -> None:
        from ui.about import AboutDialog

        if getattr(self, "_about_dialog", None) is None:
            self._about_dialog = AboutDialog(self)
        self._about_dialog.show()
        self._about_dialog.raise_()

    def open_settings(self) -> None:
        from ui.settings import SettingsDialog

        if self._settings_dialog is None:
            self._settings_dialog = SettingsDialog(self.controller, self)
            self._settings_dialog.saved.connect(self._on_settings_saved)
        self._settings_dialog.load()
        self._settings_dialog.open()

    def _on_settings_saved(self, changes: dict[str, Any]) -> None:
        self.controller.reload_config()
        self.refresh_robots()
        if changes.get("ui.theme") and changes["ui.theme"] != self.theme_name:
            self.set_theme(str(changes["ui.theme"]))
        if self.controller.session is None:
            self._show_empty()
        self.toast.show_message("Settings saved.")

    # -- a database that did not open ------------------------------------------------------------
    def offer_store_retry(self) -> None:
        """The banner for a database that could not be opened, with the action that fixes it."""
        c = self.controller
        if not c.store_error:
            return
        corrupt = c.store_error_reason == "corrupt"
        action = ("Move aside and start fresh", lambda: self.retry_store(recover=True)) if corrupt else (
            "Try again", lambda: self.retry_store(recover=False))
        self.banner.show_message(f"{c.store_error}\n\nThe app is running with a temporary database: conversations "
                                 "in this session will not be kept after you quit.", action=action)

    def retry_store(self, *, recover: bool) -> None:
        if not self.controller.retry_store(recover=recover):
            if self.controller.store_error:
                self.offer_store_retry()
            return
        self.banner.dismiss()
        self.refresh_threads()
        self._show_empty()
        self.toast.show_message("Your database is open." if not recover else
                                "The damaged database was kept aside; a fresh one is open.")

    # -- folder trust (workspace.trust) -------------------------------------------------------
    def offer_trust(self) -> None:
        """A banner when the folder's .robotlab/ settings are withheld until the user trusts it."""
        withheld = getattr(self.controller.config, "withheld", None)
        if not withheld:
            return
        from workspace.trust import describe

        items = describe(withheld)
        more = f" and {len(items) - 2} more" if len(items) > 2 else ""
        self.banner.show_message(
            "This folder's .robotlab/ settings are not used until you trust the folder: "
            + "; ".join(items[:2]) + more + ".",
            kind="info", action=("Review and trust…", self.trust_folder))

    def trust_folder(self) -> QMessageBox | None:
        """Ask (non-modally) whether to trust the folder; on yes, its settings take effect at once."""
        withheld = getattr(self.controller.config, "withheld", None)
        folder = self.controller.folder
        if not withheld or folder is None:
            return None
        from workspace.trust import describe

        box = QMessageBox(QMessageBox.Icon.Warning, "Trust this folder?",
                          f"{folder} asks for these settings:", QMessageBox.StandardButton.Cancel, self)
        box.setInformativeText("\n".join(f"• {line}" for line in describe(withheld))
                               + "\n\nTrust the folder only if you know who wrote them. They apply until they "
                               "change; “robotlab trust --revoke” forgets.")
        trust_button = box.addButton("Trust folder", QMessageBox.ButtonRole.AcceptRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)

        def done(button: Any) -> None:
            if button is trust_button:
                self.apply_trust()

        box.buttonClicked.connect(done)
        box.open()
        return box

    def apply_trust(self) -> None:
        from workspace import trust

        folder = self.controller.folder
        if folder is None:
            return
        shown = getattr(self.controller.config, "withheld", None) or {}
        try:
            trust.trust(folder, expected=shown)
        except trust.TrustChanged as exc:
            self.controller.reload_config()
            self.banner.show_message(str(exc), action=("Review and trust…", self.trust_folder))
            return
        except OSError as exc:
            self.banner.show_message(f"Could not record the folder's trust: {exc}")
            return
        self.banner.dismiss()
        self.controller.reload_config()
        pane = getattr(self, "mcp_pane", None)
        if pane is not None:
            pane.reload()
        self.refresh_robots()
        self.toast.show_message("Folder trusted: its settings apply now.")

    def open_folder(self) -> QFileDialog:
        """File > Open Folder: robots read and propose changes there from the next message on."""
        dialog = QFileDialog(self, "Open a folder for the robots to work in")
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
        if self.controller.folder is not None:
            dialog.setDirectory(str(self.controller.folder))
        dialog.fileSelected.connect(lambda path: self.switch_folder(Path(path)))
        dialog.open()
        self._folder_dialog = dialog
        return dialog

    def switch_folder(self, folder: Path | None) -> bool:
        """Work in ``folder`` now; on a problem, say what to do and keep the current folder."""
        try:
            self.controller.set_folder(folder)
        except Exception as exc:
            self.banner.show_message(f"Could not open {folder}: {exc}")
            return False
        self.banner.dismiss()
        pane = getattr(self, "mcp_pane", None)
        if pane is not None:
            pane.manager.folder = self.controller.folder
            pane.reload()
        self._update_folder()
        self.refresh_robots()
        changes_pane = getattr(self, "changes_pane", None)
        if changes_pane is not None:
            changes_pane.sync()  # the open thread's changes waiting in this folder, if any
        if self.controller.session is None:
            self._show_empty()
        self.toast.show_message(f"Robots now work in {self.controller.folder}." if folder is not None
                                else "No folder open: robots can't see your files.")
        self.offer_trust()
        return True

    # -- export / import --------------------------------------------------------------------------------
    def export_thread(self, fmt: str, thread_id: str | None = None) -> None:
        thread_id = thread_id or self.controller.thread_id
        if not thread_id:
            self.toast.show_message("Open a thread to export it.")
            return
        suffix = {"markdown": "md", "json": "json", "jsonl": "jsonl"}[fmt]
        dialog = QFileDialog(self, "Export thread")
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.setDefaultSuffix(suffix)
        dialog.selectFile(f"thread.{suffix}")
        dialog.fileSelected.connect(lambda path: self._write_export(fmt, thread_id, Path(path)))
        dialog.open()

    def _write_export(self, fmt: str, thread_id: str, path: Path) -> None:
        try:
            from workspace import exports

            store = self.controller.store
            if fmt == "markdown":
                text = exports.export_markdown(store, thread_id)
            elif fmt == "json":
                text = exports.export_results_json(store, thread_id)
            else:
                text = exports.export_events_jsonl(store, thread_id)
            path.write_text(text, encoding="utf-8")
        except Exception as exc:
            self.banner.show_message(f"Export failed: {exc}")
            return
        self.toast.show_message(f"Exported to {path}")

    def import_thread(self) -> None:
        dialog = QFileDialog(self, "Import RobotLab JSON results")
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.setNameFilter("JSON (*.json)")
        dialog.fileSelected.connect(lambda path: self._read_import(Path(path)))
        dialog.open()

    def _read_import(self, path: Path) -> None:
        try:
            from workspace import exports

            result = exports.import_results_json(self.controller.store, path.read_text(encoding="utf-8"))
        except Exception as exc:
            self.banner.show_message(f"Import failed: {exc}")
            return
        self.refresh_threads()
        thread_id = getattr(result, "id", None) or (result if isinstance(result, str) else None)
        if thread_id:
            self.open_thread(str(thread_id))
        self.toast.show_message(f"Imported {path.name}")

    # -- Qt --------------------------------------------------------------------------------------------
    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if self.built and self.command_palette.isVisible():
            self.command_palette.open_with(list(self.actions_by_name.values()))

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.built:
            self.controller.stop()
        super().closeEvent(event)
        self.closed.emit()

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        if self.built:
            QTimer.singleShot(0, self.composer.focus)
