"""The MCP servers dock: status per server, its stderr tail, start / restart / stop, and per-tool on/off."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
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
    QVBoxLayout,
    QWidget,
)

from ui import theme
from ui.models.mcp import McpServersModel, since_text
from ui.widgets.common import signals_blocked

log = logging.getLogger("ui.docks.mcp")


def manager_for(controller: Any) -> Any:
    """The process-wide MCP manager, configured from the controller's configuration (None without MCP)."""
    try:
        from workspace.mcp import default_manager
    except ImportError:
        return None
    manager = default_manager()
    if manager.folder is None and getattr(controller, "folder", None) is not None:
        manager.folder = Path(controller.folder)  # Reload reads this folder's settings too
    try:
        manager.configure(controller.config)
    except Exception as exc:  # a bad mcpServers section: the dock shows the servers it could read
        log.warning("MCP configuration: %s", exc)
    return manager


def _wrapping(text: str, parent: QWidget) -> QLabel:
    """A caption that wraps in a narrow dock instead of widening it."""
    label = QLabel(text, parent)
    label.setWordWrap(True)
    return label


class McpPane(QWidget):
    """Servers in a table; the selected one's details, stderr tail and tools below."""

    def __init__(self, manager: Any, tasks: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("InspectorPane")
        self.manager = manager
        self.tasks = tasks
        self.model = McpServersModel(self)
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
        bar = QHBoxLayout()
        bar.addStretch(1)
        self.start_button = QPushButton("Start", self)
        self.restart_button = QPushButton("Restart", self)
        self.restart_button.setIcon(theme.icon("restart", theme.colors().muted, 16))
        self.stop_button = QPushButton("Stop", self)
        for b in (self.start_button, self.restart_button, self.stop_button):
            bar.addWidget(b)
        layout.addLayout(bar)
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
        details = QWidget(splitter)
        dl = QVBoxLayout(details)
        dl.setContentsMargins(0, 0, 0, 0)
        self.info = QLabel("", details)
        self.info.setWordWrap(True)
        self.info.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # long paths: cut, not wider
        self.info.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        dl.addWidget(self.info)
        dl.addWidget(_wrapping("Tools (uncheck to hide a tool from every robot):", details))
        self.tools = QListWidget(details)
        self.tools.setAccessibleName("The server's tools (unchecked: hidden from every robot)")
        self.tools.itemChanged.connect(self._on_tool_toggled)
        dl.addWidget(self.tools, 2)
        dl.addWidget(_wrapping("Server output (stderr, last lines):", details))
        self.stderr = QPlainTextEdit(details)
        self.stderr.setAccessibleName("Server output")
        self.stderr.setReadOnly(True)
        self.stderr.setFont(theme.mono_font(-1))
        dl.addWidget(self.stderr, 1)
        splitter.addWidget(self.table)
        splitter.addWidget(details)
        splitter.setSizes([140, 320])
        layout.addWidget(splitter, 1)

        self.start_button.clicked.connect(lambda: self._run("start"))
        self.restart_button.clicked.connect(lambda: self._run("restart"))
        self.stop_button.clicked.connect(lambda: self._run("stop"))
        self.reload_button.clicked.connect(self.reload)
        self.table.selectionModel().currentRowChanged.connect(lambda *_: self._show())
        self.model.dataChanged.connect(lambda *_: self._show())
        self._remove_listener = manager.add_listener(self._on_status)
        self.refresh()

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

    def _on_status(self, status: Any) -> None:
        self.model.update(status)
        self._update_summary()

    def _update_summary(self) -> None:
        statuses = self.model.statuses
        if not statuses:
            self.summary.setText("No MCP servers configured yet. Add them under mcpServers in your config file "
                                 "(the Claude Desktop / Cursor format), or run `robotlab mcp import FILE`; "
                                 "then Reload config.")
        else:
            ready = sum(1 for s in statuses if str(s.state) == "ready")
            failed = sum(1 for s in statuses if str(s.state) == "failed")
            self.summary.setText(f"{len(statuses)} servers · {ready} ready" + (f" · {failed} failed" if failed else ""))
        for b in (self.start_button, self.restart_button, self.stop_button):
            b.setEnabled(bool(statuses))

    def current(self) -> Any:
        index = self.table.currentIndex()
        return self.model.statuses[index.row()] if index.isValid() else None

    def _show(self) -> None:
        status = self.current()
        c = theme.colors()
        if status is None:
            self.info.setText("")
            self.tools.clear()
            self.stderr.clear()
            return
        state = str(status.state)
        color = {"ready": c.success, "failed": c.error, "starting": c.accent}.get(state, c.muted)
        lines = [f"<b>{status.name}</b> · <span style='color:{color}'>{state}</span>"
                 f"{' · ' + since_text(status) if since_text(status) else ''}"]
        if status.reason:
            lines.append(f"<span style='color:{c.error if state == 'failed' else c.muted}'>{status.reason}</span>")
        if status.target:
            lines.append(f"<span style='color:{c.muted}'>{status.transport}: {status.target}</span>")
        if status.server_info:
            lines.append(f"<span style='color:{c.muted}'>{status.server_info}"
                         f"{f' · connected in {status.connect_seconds:.2f} s' if status.connect_seconds else ''}</span>")
        self.info.setText("<br>".join(lines))
        try:  # the names robots' models see (unique across servers), for the tooltips
            model_names = self.manager.model_tool_names().get(status.name, {})
        except Exception:  # a manager without it (or a config being reloaded): the server's names only
            model_names = {}
        with signals_blocked(self.tools):
            self.tools.clear()
            for tool in status.tools:
                item = QListWidgetItem(tool.original + (f" — {tool.description[:80]}" if tool.description else ""))
                item.setData(Qt.ItemDataRole.UserRole, tool.name)
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                item.setCheckState(Qt.CheckState.Checked if tool.enabled else Qt.CheckState.Unchecked)
                hints = [k[:-4] for k, v in dict(tool.annotations).items() if v is True and k.endswith("Hint")]
                seen_as = model_names.get(tool.original, tool.name)
                item.setToolTip(f"The model sees it as {seen_as}\n{tool.description}"
                                + (f"\nhints: {', '.join(hints)}" if hints else ""))
                self.tools.addItem(item)
        self.stderr.setPlainText("\n".join(status.stderr))
        self.stderr.verticalScrollBar().setValue(self.stderr.verticalScrollBar().maximum())

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
        async def go() -> None:
            try:
                await self.manager.reload()
            except Exception as exc:
                self.summary.setText(f"Reloading the MCP configuration failed: {exc}")
            self.refresh()

        self.tasks.spawn(go(), name="mcp-reload")

    async def aclose(self) -> None:
        self._remove_listener()
        await self.manager.aclose()
