"""The MCP servers dock: status per server, its stderr tail and its log (filtered by level), start / restart /
stop, per-tool on/off, and its resources (``ui/mcp/resources.py``: browse, preview, subscribe, attach)."""

from __future__ import annotations

import html
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QMetaMethod, Qt, Signal
from PySide6.QtGui import QGuiApplication, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDockWidget,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ui import theme
from ui.mcp.model import McpServersModel, since_text
from ui.mcp.parts import LogPage, SignInRow, wrapping
from ui.widgets.common import signals_blocked
from ui.widgets.flow import FlowRow
from ui.widgets.staged import StagedBuild

if TYPE_CHECKING:
    from ui.controller import Controller
    from ui.mcp.resources import ResourcesPanel
    from ui.services import DockContext
    from ui.tasks import TaskOwner
    from workspace.mcp import MCPManager
    from workspace.mcp.status import ServerStatus

log = logging.getLogger("ui.mcp.pane")


def manager_for(controller: Controller) -> MCPManager | None:
    """The process-wide MCP manager, configured from the controller's configuration (None without MCP)."""
    try:
        from workspace.mcp import default_manager
    except ImportError:
        return None
    manager = default_manager()
    if manager.folder is None and controller.folder is not None:
        manager.folder = Path(controller.folder)  # Reload reads this folder's settings too
    try:
        manager.configure(controller.config)
    except Exception as exc:  # a bad mcpServers section: the dock shows the servers it could read
        log.warning("MCP configuration: %s", exc)
    return manager


def open_in_browser(server: str, url: str) -> None:
    """A remote server's sign-in page, in the system browser (the dock shows its address too)."""
    from PySide6.QtCore import QUrl
    from PySide6.QtGui import QDesktopServices

    if not QDesktopServices.openUrl(QUrl(url)):
        log.warning("could not open the browser for the sign-in of MCP server '%s'", server)


def _swap_tab(tabs: QTabWidget, index: int, page: QWidget) -> None:
    """Put ``page`` in tab ``index`` in place of its placeholder (same title, the same tab in front)."""
    old, title, current = tabs.widget(index), tabs.tabText(index), tabs.currentIndex()
    with signals_blocked(tabs):  # (the tab is swapped: no "shown" for the placeholder's removal)
        tabs.removeTab(index)
        tabs.insertTab(index, page, title)
        tabs.setCurrentIndex(current)
    if old is not None:
        old.deleteLater()


class McpPane(QWidget, StagedBuild):
    """Servers in a table; the selected one's details, tools, resources, stderr tail and log below."""

    #: "Attach to message" in the Resources tab: (server, uri). The button shows only once this is connected.
    attach_requested = Signal(str, str)

    def __init__(self, manager: MCPManager, tasks: TaskOwner, parent: QWidget | None = None, *,
                 on_manage: Callable[[], Any] | None = None, on_config: Callable[[Any], Any] | None = None,
                 watch_interval: float | None = 1.0, staged: bool = False) -> None:
        """``staged``: made in parts, the buttons now, then the servers' table, then the selected server's details,
        each by :meth:`build_steps` (a start-up step each: whole, the pane held the window more than a frame); the
        pane follows the manager from its last part. Else whole."""
        super().__init__(parent)
        self.setObjectName("InspectorPane")
        self.manager = manager
        self.tasks = tasks
        self._on_manage = on_manage
        self._on_config = on_config
        self._watch_interval = watch_interval
        self.model = McpServersModel(self)
        self._start_build(staged=staged)

    def _construct(self) -> Iterator[None]:
        manager, on_manage, parent = self.manager, self._on_manage, self.parentWidget()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.setSpacing(6)
        # Two short rows (summary and Reload; the server's buttons) rather than one: the pane stays narrow.
        top = QHBoxLayout()
        self.summary = QLabel("", self)
        self.summary.setObjectName("Muted")
        self.summary.setWordWrap(True)
        top.addWidget(self.summary, 1)
        self.reload_button = QPushButton("Reload config", self)
        self.reload_button.setToolTip("Read mcpServers from the configuration files again (no app restart needed)")
        top.addWidget(self.reload_button, 0, Qt.AlignmentFlag.AlignTop)
        layout.addLayout(top)
        bar = FlowRow(spacing=6)  # wraps onto two rows in a narrow dock: no button cut
        self.manage_button = QPushButton("Manage servers…", self)
        self.manage_button.setToolTip("Add, edit, test or import MCP servers (Settings › MCP servers)")
        self.manage_button.setVisible(on_manage is not None)
        self.manage_button.clicked.connect(lambda: self._on_manage() if self._on_manage is not None else None)
        bar.addWidget(self.manage_button)
        self.start_button = QPushButton("Start", self)
        self.restart_button = QPushButton("Restart", self)
        self.restart_button.setIcon(theme.icon("restart", theme.colors().muted, 16))
        self.stop_button = QPushButton("Stop", self)
        for b in (self.start_button, self.restart_button, self.stop_button):
            bar.addWidget(b)
        layout.addLayout(bar)
        # A remote server that wants a sign-in (OAuth): its row (:attr:`sign_in_box`) is made when one needs it.
        self._layout = layout
        self._sign_in_at = layout.count()
        self._sign_in: SignInRow | None = None
        if hasattr(manager, "sign_in_opener") and getattr(manager, "sign_in_opener", None) is None:
            manager.sign_in_opener = open_in_browser
        yield
        splitter = QSplitter(Qt.Orientation.Vertical, self)
        self.table = QTableView(splitter)
        self.table.setAccessibleName("MCP servers")
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.setShowGrid(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        splitter.addWidget(self.table)
        layout.addWidget(splitter, 1)
        yield
        details = QWidget(splitter)
        dl = QVBoxLayout(details)
        dl.setContentsMargins(0, 0, 0, 0)
        self.info = QLabel("", details)
        self.info.setWordWrap(True)
        self.info.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # long paths: cut, not wider
        self.info.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        dl.addWidget(self.info)
        # The server's tools and its resources, each in a tab.
        self.server_tabs = QTabWidget(details)
        tools_page = QWidget(self.server_tabs)
        tl = QVBoxLayout(tools_page)
        tl.setContentsMargins(0, 4, 0, 0)
        tl.addWidget(wrapping("Uncheck a tool to hide it from every robot:", tools_page))
        self.tools = QListWidget(tools_page)
        self.tools.setAccessibleName("The server's tools (unchecked: hidden from every robot)")
        self.tools.itemChanged.connect(self._on_tool_toggled)
        tl.addWidget(self.tools, 1)
        self.server_tabs.addTab(tools_page, "Tools")
        # The Resources tab (its browser, preview and forms: a third of the pane) is made when first shown or
        # asked for (:attr:`resources`): the dock is built at start-up, behind the inspector's tabs.
        self._resources: ResourcesPanel | None = None
        self._resources_status: ServerStatus | None = None
        self._resources_placeholder = QWidget(self.server_tabs)
        self.server_tabs.addTab(self._resources_placeholder, "Resources")
        self.server_tabs.currentChanged.connect(self._server_tab_shown)
        dl.addWidget(self.server_tabs, 2)
        # The server's output (stderr, our notes) and its log notifications, each in a tab: a tab's page is made
        # when it first shows or is asked for (:attr:`stderr`, :attr:`log_page`); the pane is built at start-up,
        # behind the inspector's tabs, and these text views were a third of its cost.
        self.output_tabs = QTabWidget(details)
        self._stderr: QPlainTextEdit | None = None
        self._log: LogPage | None = None
        self.output_tabs.addTab(QWidget(self.output_tabs), "Output")
        self.output_tabs.addTab(QWidget(self.output_tabs), "Log")
        self.output_tabs.currentChanged.connect(self._output_tab_shown)
        if isinstance(parent, QDockWidget):  # made in its dock: the output tab in front is made when the dock shows
            parent.visibilityChanged.connect(self._dock_shown)
        dl.addWidget(self.output_tabs, 1)
        splitter.addWidget(details)
        splitter.setSizes([140, 320])

        self.start_button.clicked.connect(lambda: self._run("start"))
        self.restart_button.clicked.connect(lambda: self._run("restart"))
        self.stop_button.clicked.connect(lambda: self._run("stop"))
        self.reload_button.clicked.connect(self.reload)
        self.table.selectionModel().currentRowChanged.connect(lambda *_: self._show())
        self.model.dataChanged.connect(lambda *_: self._show())
        self._remove_listener = manager.add_listener(self._on_status)
        # Any reload (this dock, the Settings page, the file edited on disk) reaches the robots too.
        add_reload = getattr(manager, "add_reload_listener", None)

        def reloaded(config: Any) -> None:
            self.refresh()  # the servers as configured now (a removed server's last status is not one)
            if self._on_config is not None:
                self._on_config(config)

        self._remove_reload = add_reload(reloaded) if add_reload is not None else None
        interval = self._watch_interval
        if interval is not None and hasattr(manager, "start_watching"):
            async def watch() -> None:
                manager.start_watching(interval=interval)

            self.tasks.spawn(watch(), name="mcp-watch")
        self.refresh()
        yield  # (the pane is whole: what made it in steps goes on in a step of its own)

    def _attach_connected(self) -> bool:
        return self.isSignalConnected(QMetaMethod.fromSignal(self.attach_requested))

    def retheme(self) -> None:
        self.restart_button.setIcon(theme.icon("restart", theme.colors().muted, 16))
        self._show()

    # -- data ------------------------------------------------------------------------------------
    def refresh(self) -> None:
        try:
            statuses = self.manager.statuses()
        except Exception as exc:
            statuses = []
            self.summary.setText(f"MCP: {exc}")
        self.model.set_statuses(statuses)
        if statuses and not self.table.currentIndex().isValid():
            self.table.selectRow(0)
        self._update_summary()
        self._show()

    def _on_status(self, status: ServerStatus) -> None:
        self.model.update(status)
        self._update_summary()

    def _update_summary(self) -> None:
        statuses = self.model.statuses
        if not statuses:
            self.summary.setText("No MCP servers configured yet. Add them with Manage servers… (or under "
                                 "mcpServers in your config file, the Claude Desktop / Cursor format).")
        else:
            ready = sum(1 for s in statuses if str(s.state) == "ready")
            failed = sum(1 for s in statuses if str(s.state) == "failed")
            self.summary.setText(f"{len(statuses)} servers · {ready} ready" + (f" · {failed} failed" if failed else ""))
        for b in (self.start_button, self.restart_button, self.stop_button):
            b.setEnabled(bool(statuses))

    @property
    def resources(self) -> ResourcesPanel:
        """The Resources tab's panel (made now if its tab was never shown)."""
        if self._resources is None:
            from ui.mcp.resources import ResourcesPanel

            tabs = self.server_tabs
            panel = ResourcesPanel(self.manager, self.tasks, tabs, can_attach=self._attach_connected)
            panel.attach_requested.connect(self.attach_requested)
            _swap_tab(tabs, tabs.indexOf(self._resources_placeholder), panel)
            self._resources = panel
            panel.set_server(self._resources_status)
        return self._resources

    def _server_tab_shown(self, index: int) -> None:
        if self._resources is None and self.server_tabs.widget(index) is self._resources_placeholder:
            self.resources  # noqa: B018 - made as its tab is shown

    # -- the parts made when first needed ---------------------------------------------------------------
    @property
    def sign_in_box(self) -> SignInRow:
        """The sign-in row of a remote server (made when a server first needs it; hidden for the others)."""
        if self._sign_in is None:
            row = self._sign_in = SignInRow(self)
            row.setVisible(False)
            row.note.linkActivated.connect(self._open_sign_in_link)
            row.sign_in_button.clicked.connect(self.sign_in)
            row.sign_out_button.clicked.connect(self.sign_out)
            row.copy_link_button.clicked.connect(self._copy_sign_in_link)
            self._layout.insertWidget(self._sign_in_at, row)
        return self._sign_in

    @property
    def sign_in_note(self) -> QLabel:
        return self.sign_in_box.note

    @property
    def sign_in_button(self) -> QPushButton:
        return self.sign_in_box.sign_in_button

    @property
    def copy_link_button(self) -> QPushButton:
        return self.sign_in_box.copy_link_button

    @property
    def sign_out_button(self) -> QPushButton:
        return self.sign_in_box.sign_out_button

    @property
    def stderr(self) -> QPlainTextEdit:
        """The Output tab: what the selected server wrote to stderr (made when its tab first shows)."""
        if self._stderr is None:
            view = self._stderr = QPlainTextEdit(self.output_tabs)
            view.setReadOnly(True)
            view.setFont(theme.mono_font(-1))
            view.setAccessibleName("Server output (stderr, last lines)")
            view.setToolTip("What the server wrote to stderr (last lines), and RobotLab's notes about it")
            _swap_tab(self.output_tabs, 0, view)
            self._show_stderr(self.current())
        return self._stderr

    @property
    def log_page(self) -> LogPage:
        """The Log tab (made when its tab first shows)."""
        if self._log is None:
            page = self._log = LogPage(self.output_tabs)
            _swap_tab(self.output_tabs, 1, page)
            page.level.currentIndexChanged.connect(lambda _i: self._show_log(self.current()))
            self._show_log(self.current())
        return self._log

    @property
    def log_view(self) -> QPlainTextEdit:
        return self.log_page.view

    @property
    def log_level(self) -> QComboBox:
        return self.log_page.level

    @property
    def log_count(self) -> QLabel:
        return self.log_page.count

    def _output_tab_shown(self, index: int) -> None:
        if index == 0:
            self.stderr  # noqa: B018 - made as its tab is shown
        elif index == 1:
            self.log_page  # noqa: B018 - made as its tab is shown

    def _dock_shown(self, visible: bool) -> None:
        if visible:
            self._output_tab_shown(self.output_tabs.currentIndex())

    def showEvent(self, event: QShowEvent) -> None:
        """Shown outside a dock: the output tab in front is made (in a dock, when the dock's tab is the one in front:
        a dock behind another's tab is visible to Qt too)."""
        super().showEvent(event)
        if not isinstance(self.parentWidget(), QDockWidget):
            self._output_tab_shown(self.output_tabs.currentIndex())

    def current(self) -> ServerStatus | None:
        index = self.table.currentIndex()
        return self.model.statuses[index.row()] if index.isValid() else None

    def _show(self) -> None:
        status = self.current()
        c = theme.colors()
        self._show_sign_in(status)
        self._resources_status = status
        if self._resources is not None:
            self._resources.set_server(status)
        if status is None:
            self.info.setText("")
            self.tools.clear()
            self._show_stderr(None)
            self._show_log(None)
            return
        state = str(status.state)
        color = {"ready": c.success, "failed": c.error, "starting": c.accent}.get(state, c.muted)
        lines = [f"<b>{status.name}</b> · <span style='color:{color}'>{state}</span>"
                 f"{' · ' + since_text(status) if since_text(status) else ''}"]
        if status.reason:
            lines.append(f"<span style='color:{c.error if state == 'failed' else c.muted}'>{status.reason}</span>")
        if status.tools_note:
            lines.append(f"<span style='color:{c.warning}'>{html.escape(status.tools_note)}</span>")
        if status.target:
            lines.append(f"<span style='color:{c.muted}'>{status.transport}: {status.target}</span>")
        if status.server_info:
            lines.append(f"<span style='color:{c.muted}'>{status.server_info}"
                         f"{f' · connected in {status.connect_seconds:.2f} s' if status.connect_seconds else ''}</span>")
        if status.trust_annotations:
            lines.append(f"<span style='color:{c.muted}'>Annotations trusted: its read-only tools run without "
                         "asking (Manage servers… to change)</span>")
        else:
            lines.append(f"<span style='color:{c.muted}'>Annotations not trusted: each of its tools is asked about "
                         "unless a rule or autoApprove allows it (Manage servers… to change)</span>")
        self.info.setText("<br>".join(lines))
        try:  # the names robots' models see (unique across servers), for the tooltips
            model_names = self.manager.model_tool_names().get(status.name, {})
        except Exception:  # a manager without it (or a config being reloaded): the server's names only
            model_names = {}
        from workspace.context import tool_costs

        costs = tool_costs(status.tools)
        with signals_blocked(self.tools):
            self.tools.clear()
            for tool in status.tools:
                cost = costs.get(tool.name, 0)
                item = QListWidgetItem(f"{tool.original}  ~{cost:,} tokens"
                                       + (f" — {tool.description[:80]}" if tool.description else ""))
                item.setData(Qt.ItemDataRole.UserRole, tool.name)
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                item.setCheckState(Qt.CheckState.Checked if tool.enabled else Qt.CheckState.Unchecked)
                hints = [k[:-4] for k, v in dict(tool.annotations).items() if v is True and k.endswith("Hint")]
                seen_as = model_names.get(tool.original, tool.name)
                item.setToolTip(f"The model sees it as {seen_as}\nIts schema takes ~{cost:,} tokens of the model's window "
                                f"in every request while it is on.\n{tool.description}"
                                + (f"\nhints: {', '.join(hints)}"
                                   + ("" if status.trust_annotations else " (the server's claims, not trusted)")
                                   if hints else ""))
                self.tools.addItem(item)
        self._show_stderr(status)
        self._show_log(status)

    def _show_sign_in(self, status: ServerStatus | None) -> None:
        """The sign-in row of a remote server (hidden for the others)."""
        auth = getattr(status, "auth", None) if status is not None else None
        if auth is None or status is None:
            if self._sign_in is not None:
                self._sign_in.setVisible(False)
            return
        self.sign_in_box.setVisible(True)
        url = getattr(status, "sign_in_url", None)
        self.copy_link_button.setVisible(auth == "signing-in" and bool(url))
        self.sign_out_button.setVisible(auth == "signed-in")
        self.sign_in_button.setVisible(auth != "signed-in")
        self.sign_in_button.setText({"sign-in-again": "Sign in again", "signing-in": "Cancel sign-in"}.get(
            auth, "Sign in"))
        primary = "PrimaryButton" if auth != "signing-in" else ""
        if self.sign_in_button.objectName() != primary:
            self.sign_in_button.setObjectName(primary)
            self.sign_in_button.style().unpolish(self.sign_in_button)
            self.sign_in_button.style().polish(self.sign_in_button)
        self.sign_in_button.setAccessibleName(f"{self.sign_in_button.text()} to {status.name}")
        c = theme.colors()
        if auth == "signing-in" and url:
            link = html.escape(url, quote=True)
            self.sign_in_note.setText(
                f"Waiting for you to sign in to <b>{html.escape(status.name)}</b> in your browser. If it did not "
                f"open, <a href=\"{link}\">open the sign-in page</a> or copy its link.")
        elif auth == "signed-in":
            self.sign_in_note.setText(f"<span style='color:{c.success}'>Signed in</span> (the sign-in is kept in "
                                      "your system's keyring).")
        elif auth == "sign-in-again":
            self.sign_in_note.setText(f"<span style='color:{c.warning}'>The sign-in to {html.escape(status.name)} was "
                                      "revoked or has expired.</span> Sign in again to use its tools.")
        else:
            self.sign_in_note.setText(f"<b>{html.escape(status.name)}</b> needs you to sign in before its tools can be "
                                      "used (your browser opens its sign-in page).")

    def sign_in(self) -> None:
        """Sign in to the selected server (or cancel the sign-in going on)."""
        status = self.current()
        if status is None:
            return
        if getattr(status, "auth", None) == "signing-in":
            self.tasks.spawn(self.manager.stop(status.name), name=f"mcp-sign-in-cancel-{status.name}")
            return
        self.tasks.spawn(self.manager.sign_in(status.name), name=f"mcp-sign-in-{status.name}")

    def sign_out(self) -> None:
        status = self.current()
        if status is not None:
            self.tasks.spawn(self.manager.sign_out(status.name), name=f"mcp-sign-out-{status.name}")

    def _copy_sign_in_link(self) -> None:
        status = self.current()
        url = getattr(status, "sign_in_url", None) if status is not None else None
        if url:
            QGuiApplication.clipboard().setText(url)

    def _open_sign_in_link(self, url: str) -> None:
        status = self.current()
        if status is not None and url == getattr(status, "sign_in_url", None):
            open_in_browser(status.name, url)

    def _show_log(self, status: ServerStatus | None) -> None:
        """The selected server's log notifications at the chosen level and above (their count in the tab's title,
        made or not)."""
        entries = tuple(getattr(status, "log", ()) or ())
        if self._log is not None:
            self._log.show_entries(entries)
        self.output_tabs.setTabText(1, f"Log ({len(entries)})" if entries else "Log")

    def _show_stderr(self, status: ServerStatus | None) -> None:
        view = self._stderr
        if view is None:
            return
        view.setPlainText("\n".join(status.stderr) if status is not None else "")
        view.verticalScrollBar().setValue(view.verticalScrollBar().maximum())

    # -- actions ---------------------------------------------------------------------------------
    def _run(self, action: str) -> None:
        status = self.current()
        if status is None:
            return
        method = getattr(self.manager, action)
        self.tasks.spawn(method(status.name), name=f"mcp-{action}-{status.name}")

    def _on_tool_toggled(self, item: QListWidgetItem) -> None:
        status = self.current()
        if status is None:
            return
        name = str(item.data(Qt.ItemDataRole.UserRole))
        enabled = item.checkState() == Qt.CheckState.Checked
        try:
            self.manager.set_tool_enabled(status.name, name, enabled)
        except Exception as exc:
            self.summary.setText(f"Could not switch {name}: {exc}")

    def reload(self) -> None:
        folder = getattr(self.manager, "folder", None)
        set_roots = getattr(self.manager, "set_roots", None)

        async def go() -> None:
            try:
                if set_roots is not None:  # the opened folder is the client's root; servers are told
                    set_roots([folder] if folder is not None else [])
                await self.manager.reload()
            except Exception as exc:
                self.summary.setText(f"Reloading the MCP configuration failed: {exc}")
            self.refresh()

        self.tasks.spawn(go(), name="mcp-reload")

    async def aclose(self) -> None:
        self._remove_listener()
        if self._remove_reload is not None:
            self._remove_reload()
        await self.manager.aclose()


def make_pane(context: DockContext) -> McpPane | None:
    """The MCP servers dock's pane (None without MCP: the window then has no such dock)."""
    manager = manager_for(context.services.session)
    if manager is None:
        return None
    session = context.services.session
    return McpPane(manager, context.services.tasks, context.parent, on_manage=lambda: context.open_mcp_servers(),
                   on_config=session.apply_config, staged=True)
