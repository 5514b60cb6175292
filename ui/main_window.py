"""The main window: threads on the left, the conversation in the middle, the inspector on the right.

The window makes the widgets and the models; small controllers it owns do the work (ui/window/):
``commands`` (menus, actions, palette), ``docks``, ``status`` (status bar, title), ``robots``
(the picker), ``threads``, ``runs``, ``slash`` (the composer's / commands), ``settings_flow``, ``folder_flow`` and
``transfer``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QResizeEvent, QShowEvent
from PySide6.QtWidgets import (
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
from ui.window.attachments import Attachments
from ui.window.commands import Commands
from ui.window.docks import Docks
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
    from ui.controller import Controller

#: The smallest window: every part shrinks to fit it (long titles and previews end in "…", docks
#: narrow down to DOCK_MIN_WIDTH). Set explicitly, so the window never grows by itself when some
#: part's minimum size hint grows (a long thread title, a network's graph).
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
        self.theme_name = theme_name
        self.setWindowTitle("RobotLab Workspace")
        self.setWindowIcon(theme.app_icon())
        self.memory = WindowMemory(self)
        self.memory.size_window()  # the last geometry, or one that fits the screen
        self.setDockOptions(QMainWindow.DockOption.AllowTabbedDocks | QMainWindow.DockOption.AnimatedDocks)
        self.setTabPosition(Qt.DockWidgetArea.AllDockWidgetAreas, QTabWidget.TabPosition.North)
        self.commands = Commands(self)
        self.docks = Docks(self)
        self.status = StatusLine(self)
        self.robots = Robots(self)
        self.models = ModelChoice(self)
        self.threads = Threads(self)
        self.runs = Runs(self)
        self.attachments = Attachments(self)
        self.slash = SlashCommands(self)  # the composer's / commands: /compact and MCP prompts
        self.settings_flow = SettingsFlow(self)
        self.folder_flow = FolderFlow(self)
        self.transfer = Transfer(self)
        self.notifier = Notifier(self)
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

        self._build_central()
        self.models.build()
        self.memory.fit_to_screen()  # the minimum size of the parts may not fit a small screen
        self.memory.restore_splitter()
        self.command_palette = CommandPalette(self)
        self.toast = Toast(self)
        self.docks.build()
        self.status.build()
        self.commands.build()
        for part in (self.docks, self.status, self.robots, self.models, self.threads, self.runs, self.slash,
                     self.notifier, self.attachments):
            part.connect()
        self.commands.update()
        self.robots.update_picker()

    def _build_central(self) -> None:
        """The sidebar, and the conversation: its header, the banner, the chat and the composer."""
        from ui.chat.composer.composer import Composer
        from ui.chat.view.chat import ChatView
        from ui.threads.sidebar import Sidebar
        from ui.widgets.common import ElidedLabel
        from ui.widgets.notices import Banner

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
        self.connect_link.setAccessibleName("Connect a model (opens Settings)")
        self.connect_link.clicked.connect(self.settings_flow.open_settings)
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

    def closeEvent(self, event: QCloseEvent) -> None:
        try:
            self.memory.save()
        except Exception as exc:  # never stop the window from closing
            import logging

            logging.getLogger("ui.main_window").warning("could not save the window's layout: %s", exc)
        if self.built:
            self.controller.stop()
        super().closeEvent(event)
        self.closed.emit()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not event.spontaneous():
            # The frame's size is known once shown: the window with its frame fits the screen.
            QTimer.singleShot(0, self.memory.fit_when_shown)
        if self.built:
            QTimer.singleShot(0, self.composer.focus)
