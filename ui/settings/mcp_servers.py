"""The "MCP servers" page of Settings (also opened from the MCP dock's "Manage servers…").

List, add, edit, duplicate, remove, enable/disable the ``mcpServers`` of the user's config file;
stdio (command, args, env, working folder), streamable HTTP and SSE (URL, headers). "Test"
connects to the entry as shown in the form, lists its tools, resources and prompts, and shows the
error and the server's stderr when it fails. "Paste…" takes a Claude Desktop / Cursor / VS Code /
Zed JSON block; "Import…" reads those apps' files (the same code as ``robotlab mcp import``).

Every change is saved at once (:class:`workspace.mcp.edit.ServersFile`: only the mcpServers entries
are edited, comments and other sections stay, the write is atomic), env values and headers ticked
"secret" go to the OS keyring, and the manager reloads: every robot and the next run see it.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ui import theme
from workspace.errors import ConfigurationError

if TYPE_CHECKING:
    from workspace.mcp import MCPManager

log = logging.getLogger("ui.settings.dialog")

TRANSPORTS = (("stdio", "Local program (stdio)"), ("http", "Streamable HTTP"), ("sse", "SSE (older HTTP)"))
SAMPLING = (("ask", "Ask me each time"), ("allow", "Allow without asking"), ("deny", "Never"))
#: Files of other clients offered by "Import…" (the dialog starts in the first that exists).
CLIENT_FILES = (
    "~/.config/Claude/claude_desktop_config.json",
    "~/Library/Application Support/Claude/claude_desktop_config.json",
    "~/.cursor/mcp.json",
    "~/.vscode/mcp.json",
    "~/.config/Code/User/settings.json",
    "~/.config/zed/settings.json",
)


class PairsTable(QTableWidget):
    """Name / value / secret rows (env entries, headers)."""

    def __init__(self, what: str, parent: QWidget | None = None) -> None:
        super().__init__(0, 3, parent)
        self.setHorizontalHeaderLabels([what, "Value", "Secret"])
        header = self.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self.verticalHeader().setVisible(False)
        self.setMinimumHeight(84)

    def set_pairs(self, values: dict[str, Any], secret: set[str]) -> None:
        self.setRowCount(0)
        for key, value in values.items():
            self.add_row(str(key), "" if key in secret else str(value), key in secret)

    def add_row(self, key: str = "", value: str = "", secret: bool = False) -> None:
        row = self.rowCount()
        self.insertRow(row)
        self.setItem(row, 0, QTableWidgetItem(key))
        item = QTableWidgetItem(value)
        if secret:
            item.setToolTip("Kept in the OS keyring; type a new value to replace it")
            item.setData(Qt.ItemDataRole.UserRole, "kept")
        self.setItem(row, 1, item)
        box = QTableWidgetItem()
        box.setFlags(Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled)
        box.setCheckState(Qt.CheckState.Checked if secret else Qt.CheckState.Unchecked)
        self.setItem(row, 2, box)

    def remove_current(self) -> None:
        if self.currentRow() >= 0:
            self.removeRow(self.currentRow())

    def pairs(self, old: dict[str, Any]) -> tuple[dict[str, str], set[str]]:
        """``({name: value}, {secret names})``; a kept secret left empty keeps its keyring reference."""
        values: dict[str, str] = {}
        secret: set[str] = set()
        for row in range(self.rowCount()):
            key_item, value_item, box = self.item(row, 0), self.item(row, 1), self.item(row, 2)
            key = key_item.text().strip() if key_item else ""
            if not key:
                continue
            value = value_item.text() if value_item else ""
            is_secret = box is not None and box.checkState() == Qt.CheckState.Checked
            if is_secret and not value and value_item is not None and value_item.data(Qt.ItemDataRole.UserRole):
                value = str(old.get(key, ""))  # unchanged: the ${keyring:...} reference stays
            values[key] = value
            if is_secret:
                secret.add(key)
        return values, secret


class McpServersPage(QWidget):
    """See the module. ``manager``: the MCP manager (reloaded after each change); ``spawn``: runs a
    coroutine on the app's loop; ``path``: the config file (default: the user's)."""

    changed = Signal()

    def __init__(self, manager: MCPManager, spawn: Callable[..., Any], parent: QWidget | None = None, *,
                 path: Path | None = None) -> None:
        super().__init__(parent)
        from workspace import paths

        self.manager = manager
        self.spawn = spawn
        self.path = Path(path) if path is not None else paths.user_config_file()
        self._file: Any = None
        self._current: str | None = None
        self._test_task: Any = None
        #: The reload after a change, and the start of the servers it added.
        self.start_task: Any = None
        self._changes = 0  # changes saved so far: a start waits for no later change (it would reload again)
        layout = QVBoxLayout(self)
        intro = QLabel(f"MCP servers give robots tools, resources and prompts. Saved in {self.path} "
                       "(only the mcpServers section is touched); secret values go to your system keyring.", self)
        intro.setWordWrap(True)
        intro.setObjectName("Muted")
        layout.addWidget(intro)
        splitter = QSplitter(Qt.Orientation.Horizontal, self)
        left = QWidget(splitter)
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        self.list = QListWidget(left)
        self.list.setAccessibleName("MCP servers")
        self.list.currentItemChanged.connect(lambda *_: self._select())
        self.list.itemChanged.connect(self._on_checked)
        ll.addWidget(self.list, 1)
        buttons = QHBoxLayout()
        self.add_button = QPushButton("Add", left)
        self.duplicate_button = QPushButton("Duplicate", left)
        self.remove_button = QPushButton("Remove", left)
        for b in (self.add_button, self.duplicate_button, self.remove_button):
            buttons.addWidget(b)
        ll.addLayout(buttons)
        more = QHBoxLayout()
        self.paste_button = QPushButton("Paste JSON…", left)
        self.paste_button.setToolTip("Add servers from a Claude Desktop / Cursor / VS Code / Zed JSON block")
        self.import_button = QPushButton("Import…", left)
        self.import_button.setToolTip("Add the servers of Claude Desktop, Cursor, VS Code, Zed or Goose")
        more.addWidget(self.paste_button)
        more.addWidget(self.import_button)
        ll.addLayout(more)

        right = QWidget(splitter)
        form = QFormLayout(right)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.name = QLineEdit(right)
        self.name.setPlaceholderText("e.g. everything (its tools become everything__<tool>)")
        form.addRow("Name", self.name)
        self.transport = QComboBox(right)
        for value, label in TRANSPORTS:
            self.transport.addItem(label, value)
        self.transport.currentIndexChanged.connect(lambda *_: self._show_transport())
        form.addRow("Type", self.transport)
        self.command = QLineEdit(right)
        self.command.setPlaceholderText("npx, uvx, python, or a full path")
        self.args = QLineEdit(right)
        self.args.setPlaceholderText('-y @modelcontextprotocol/server-everything   (quote "with spaces")')
        self.cwd = QLineEdit(right)
        self.cwd.setPlaceholderText("Working folder (optional)")
        self.env = PairsTable("Variable", right)
        self.url = QLineEdit(right)
        self.url.setPlaceholderText("https://example.com/mcp")
        self.headers = PairsTable("Header", right)
        self._stdio_rows = [("Command", self.command), ("Arguments", self.args), ("Folder", self.cwd),
                            ("Environment", self._with_buttons(self.env, right))]
        self._http_rows = [("URL", self.url), ("Headers", self._with_buttons(self.headers, right))]
        for label, widget in self._stdio_rows + self._http_rows:
            form.addRow(label, widget)
        self._form = form
        self.sampling = QComboBox(right)
        for value, label in SAMPLING:
            self.sampling.addItem(label, value)
        self.sampling.setToolTip("When this server asks for a completion from the thread's model (sampling)")
        form.addRow("Sampling", self.sampling)
        self.trust_annotations = QCheckBox("Trust its tool annotations (read-only tools run without asking)", right)
        self.trust_annotations.setAccessibleName("Trust this server's tool annotations")
        self.trust_annotations.setToolTip(
            "A server says which of its tools only read (readOnlyHint). Those are claims: unless you trust this "
            "server, every tool of it is asked about before it runs. Approval rules still apply either way.")
        form.addRow("Annotations", self.trust_annotations)
        self.enabled = QCheckBox("Enabled", right)
        form.addRow("", self.enabled)
        actions = QHBoxLayout()
        self.save_button = QPushButton("Save server", right)
        self.test_button = QPushButton("Test", right)
        self.test_button.setToolTip("Connect with these settings and list what the server offers")
        actions.addWidget(self.save_button)
        actions.addWidget(self.test_button)
        actions.addStretch(1)
        form.addRow(actions)
        self.status = QLabel("", right)
        self.status.setWordWrap(True)
        self.status.setAccessibleName("MCP server status")
        form.addRow(self.status)
        self.output = QPlainTextEdit(right)
        self.output.setReadOnly(True)
        self.output.setFont(theme.mono_font(-1))
        self.output.setPlaceholderText("Test results and the server's output appear here.")
        self.output.setAccessibleName("Test output")
        form.addRow(self.output)
        # The server's form scrolls on a short screen; the list and its buttons stay in view.
        self.form_scroll = form_scroll = QScrollArea(splitter)
        form_scroll.setWidgetResizable(True)
        form_scroll.setFrameShape(QFrame.Shape.NoFrame)
        form_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        form_scroll.setWidget(right)
        splitter.addWidget(left)
        splitter.addWidget(form_scroll)
        splitter.setSizes([200, 460])
        layout.addWidget(splitter, 1)

        self.add_button.clicked.connect(self.add_server)
        self.duplicate_button.clicked.connect(self.duplicate_server)
        self.remove_button.clicked.connect(self.remove_server)
        self.save_button.clicked.connect(self.save_server)
        self.test_button.clicked.connect(self.test_server)
        self.paste_button.clicked.connect(self.paste_dialog)
        self.import_button.clicked.connect(self.import_dialog)
        self.load()

    @staticmethod
    def _with_buttons(table: PairsTable, parent: QWidget) -> QWidget:
        box = QWidget(parent)
        bl = QVBoxLayout(box)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.addWidget(table)
        row = QHBoxLayout()
        add = QPushButton("+", box)
        add.setAccessibleName("Add a row")
        add.clicked.connect(lambda: table.add_row())
        minus = QPushButton("−", box)
        minus.setAccessibleName("Remove the selected row")
        minus.clicked.connect(table.remove_current)
        row.addWidget(add)
        row.addWidget(minus)
        row.addStretch(1)
        bl.addLayout(row)
        return box

    # -- the list ---------------------------------------------------------------------------------------
    def load(self, select: str | None = None) -> None:
        """Read the file again and show its servers."""
        from workspace.mcp.edit import ServersFile

        try:
            self._file = ServersFile(self.path)
        except ConfigurationError as exc:
            self._file = None
            self._say(str(exc), error=True)
            return
        current = select or self._current
        self.list.blockSignals(True)
        self.list.clear()
        for name, entry in self._file.entries().items():
            item = QListWidgetItem(name, self.list)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            disabled = bool(entry.get("disabled")) or entry.get("enabled") is False
            item.setCheckState(Qt.CheckState.Unchecked if disabled else Qt.CheckState.Checked)
            item.setToolTip("Checked: enabled")
        self.list.blockSignals(False)
        names = self._file.names()
        if current in names:
            self.list.setCurrentRow(names.index(current))
        elif names:
            self.list.setCurrentRow(0)
        else:
            self._current = None
            self._fill("", {})
        for b in (self.duplicate_button, self.remove_button):
            b.setEnabled(bool(names))

    def names(self) -> list[str]:
        return [self.list.item(i).text() for i in range(self.list.count())]

    def _select(self) -> None:
        item = self.list.currentItem()
        if item is None or self._file is None:
            return
        self._current = item.text()
        try:
            self._fill(self._current, self._file.entry(self._current))
        except KeyError:
            pass

    def _fill(self, name: str, entry: dict[str, Any]) -> None:
        from workspace.mcp.config import normalize_type
        from workspace.mcp.edit import secret_keys

        self.name.setText(name)
        try:
            kind = normalize_type(entry["type"], where="type") if entry.get("type") else (
                "stdio" if entry.get("command") or not entry.get("url") else
                "sse" if str(entry.get("url", "")).rstrip("/").endswith("/sse") else "http")
        except ConfigurationError:
            kind = "stdio"
        self.transport.setCurrentIndex([t for t, _ in TRANSPORTS].index(kind))
        self.command.setText(str(entry.get("command") or ""))
        self.args.setText(shlex.join(str(a) for a in entry.get("args") or []))
        self.cwd.setText(str(entry.get("cwd") or ""))
        self.url.setText(str(entry.get("url") or entry.get("serverUrl") or ""))
        secret = secret_keys(entry)
        self.env.set_pairs(dict(entry.get("env") or {}), secret["env"])
        self.headers.set_pairs(dict(entry.get("headers") or {}), secret["headers"])
        policy = str(entry.get("sampling") or "ask")
        self.sampling.setCurrentIndex(max(0, [s for s, _ in SAMPLING].index(policy) if policy in
                                          [s for s, _ in SAMPLING] else 0))
        self.enabled.setChecked(not (entry.get("disabled") or entry.get("enabled") is False))
        from workspace.mcp.config import trusts_annotations

        self.trust_annotations.setChecked(trusts_annotations(entry))
        self._show_transport()

    def _show_transport(self) -> None:
        stdio = self.transport.currentData() == "stdio"
        for rows, visible in ((self._stdio_rows, stdio), (self._http_rows, not stdio)):
            for _label, widget in rows:
                self._form.setRowVisible(widget, visible)

    # -- the form ---------------------------------------------------------------------------------------
    def form_entry(self) -> tuple[str, dict[str, Any], dict[str, set[str]]]:
        """``(name, entry, secret names)`` from the form; the entry keeps keys the form does not show."""
        name = self.name.text().strip()
        old: dict[str, Any] = {}
        if self._file is not None and self._current in self._file.names():
            old = self._file.entry(self._current or "")
        entry = {k: v for k, v in old.items() if k not in (
            "command", "args", "cwd", "env", "url", "serverUrl", "headers", "type", "transportType", "disabled",
            "enabled", "sampling", "trustAnnotations")}
        kind = str(self.transport.currentData())
        secret: dict[str, set[str]] = {"env": set(), "headers": set()}
        if kind == "stdio":
            entry["command"] = self.command.text().strip()
            try:
                args = shlex.split(self.args.text())
            except ValueError as exc:
                raise ConfigurationError(f"Arguments: {exc} (close the quote)") from None
            if args:
                entry["args"] = args
            if self.cwd.text().strip():
                entry["cwd"] = self.cwd.text().strip()
            env, secret["env"] = self.env.pairs(dict(old.get("env") or {}))
            if env:
                entry["env"] = env
        else:
            entry["url"] = self.url.text().strip()
            if kind == "sse":
                entry["type"] = "sse"
            headers, secret["headers"] = self.headers.pairs(dict(old.get("headers") or {}))
            if headers:
                entry["headers"] = headers
        if self.sampling.currentData() != "ask":
            entry["sampling"] = self.sampling.currentData()
        if self.trust_annotations.isChecked():
            entry["trustAnnotations"] = True
        if not self.enabled.isChecked():
            entry["disabled"] = True
        return name, entry, secret

    def _checked_entry(self) -> tuple[str, dict[str, Any]]:
        """The form's entry with secrets stored, checked the way the manager will read it."""
        from workspace.mcp.config import parse_server
        from workspace.mcp.edit import store_secrets

        name, entry, secret = self.form_entry()
        if not name:
            raise ConfigurationError("Give the server a name")
        entry = store_secrets(name, entry, secret)

        class _Any(dict[str, str]):
            def get(self, key: str, default: Any = None) -> str:
                return "x"

        parse_server(name, entry, source=str(self.path), environ=_Any())  # the shape; variables at start
        return name, entry

    def save_server(self) -> bool:
        if self._file is None:
            return False
        try:
            name, entry = self._checked_entry()
            self._file.reload()
            new = name not in self._file.names()
            self._file.set(name, entry, rename_from=self._current if self._current != name else None)
            self._file.save()
        except ConfigurationError as exc:
            self._say(str(exc), error=True)
            return False
        self._current = name
        # A server added here starts at once (no separate Start): the page says how that went.
        self._saved(f"Saved {name}.", start=[name] if new and not entry.get("disabled") else [])
        return True

    def add_server(self) -> None:
        if self._file is None:
            return
        taken = set(self._file.names())
        name, n = "new-server", 2
        while name in taken:
            name, n = f"new-server-{n}", n + 1
        self._current = None
        self._fill(name, {"command": ""})
        self.name.setFocus()
        self._say("Fill in the command (or choose HTTP and give the URL), then Save server.")

    def duplicate_server(self) -> None:
        if self._file is None or self._current is None:
            return
        try:
            self._file.reload()
            new = self._file.duplicate(self._current)
            self._file.save()
        except (ConfigurationError, KeyError) as exc:
            self._say(str(exc), error=True)
            return
        self._current = new
        self._saved(f"Copied to {new}.")

    def remove_server(self) -> None:
        if self._file is None or self._current is None:
            return
        from workspace.mcp.edit import forget_secrets

        name = self._current
        try:
            self._file.reload()
            entry = self._file.remove(name)
            self._file.save()
        except (ConfigurationError, KeyError) as exc:
            self._say(str(exc), error=True)
            return
        forget_secrets(entry)
        self._current = None
        self._saved(f"Removed {name}.")

    def _on_checked(self, item: QListWidgetItem) -> None:
        if self._file is None:
            return
        try:
            self._file.reload()
            self._file.set_disabled(item.text(), item.checkState() != Qt.CheckState.Checked)
            self._file.save()
        except (ConfigurationError, KeyError) as exc:
            self._say(str(exc), error=True)
            return
        self._current = item.text()
        self._saved(f"{item.text()} {'enabled' if item.checkState() == Qt.CheckState.Checked else 'disabled'}.")

    def add_servers(self, servers: dict[str, dict[str, Any]], *, source: str) -> list[str]:
        """Add servers read elsewhere (pasted, imported); names taken are skipped. Returns the added."""
        if self._file is None:
            return []
        added: list[str] = []
        try:
            self._file.reload()
            taken = set(self._file.names())
            for name, entry in servers.items():
                if name not in taken:
                    self._file.set(name, entry)
                    added.append(name)
            if added:
                self._file.save()
        except ConfigurationError as exc:
            self._say(str(exc), error=True)
            return []
        skipped = [n for n in servers if n not in added]
        message = f"Added {', '.join(added) or 'nothing'} from {source}."
        if skipped:
            message += f" Already there (kept as they were): {', '.join(skipped)}."
        if added:
            self._current = added[0]
        self._saved(message, start=[n for n in added if not servers[n].get("disabled")])
        return added

    def paste(self, text: str) -> list[str]:
        from workspace.mcp.importers import parse_pasted

        try:
            servers = parse_pasted(text)
        except ConfigurationError as exc:
            self._say(str(exc), error=True)
            return []
        return self.add_servers(servers, source="the pasted block")

    def paste_dialog(self) -> None:
        dialog = QInputDialog(self)
        dialog.setWindowTitle("Paste MCP servers")
        dialog.setLabelText("Paste a JSON block from Claude Desktop, Cursor, VS Code or Zed:")
        dialog.setOption(QInputDialog.InputDialogOption.UsePlainTextEditForTextInput)
        dialog.textValueSelected.connect(self.paste)
        dialog.open()

    def import_file(self, path: Path) -> list[str]:
        from workspace.mcp.importers import read_client_file

        try:
            result = read_client_file(path)
        except ConfigurationError as exc:
            self._say(str(exc), error=True)
            return []
        added = self.add_servers(result.servers, source=str(path))
        if result.notes:
            self.output.setPlainText("\n".join(result.notes))
        return added

    def import_dialog(self) -> None:
        start = next((Path(p).expanduser() for p in CLIENT_FILES if Path(p).expanduser().exists()), Path.home())
        dialog = QFileDialog(self, "Import MCP servers from another app", str(start),
                             "Configuration files (*.json *.jsonc *.yaml *.yml);;All files (*)")
        dialog.fileSelected.connect(lambda chosen: self.import_file(Path(chosen)) if chosen else None)
        dialog.open()

    # -- testing and reloading ---------------------------------------------------------------------------
    def test_server(self) -> None:
        try:
            name, entry, _secret = self.form_entry()
        except ConfigurationError as exc:
            self._say(str(exc), error=True)
            return
        self._say(f"Connecting to {name or 'the server'}…")
        self.output.setPlainText("")
        self.test_button.setEnabled(False)
        self._reveal_output()
        self._test_task = self.spawn(self._test(name or "server", entry), name="mcp-settings-test")

    def _reveal_output(self) -> None:
        """Scroll the form (on a short screen) so that the status and the test's output are in view (once
        the form is laid out again: the status's new text may take more lines)."""
        def reveal() -> None:
            bar = self.form_scroll.verticalScrollBar()
            bar.setValue(bar.maximum())  # the output is the form's last row, the status just above it

        QTimer.singleShot(0, reveal)

    async def _test(self, name: str, entry: dict[str, Any]) -> Any:
        from workspace.mcp.probe import probe

        try:
            report = await probe(name, entry)
        finally:
            self.test_button.setEnabled(True)
        self._say(f"{name}: connected; {len(report.tools)} tools." if report.ok else
                  f"{name} did not connect: {report.error}", error=not report.ok)
        self.output.setPlainText(report.summary())
        self._reveal_output()
        return report

    def _saved(self, message: str, *, start: list[str] | None = None) -> None:
        """``start``: servers just added, started once the manager has reloaded (the page says how it went)."""
        self.load(select=self._current)
        self._say(message)
        self.changed.emit()
        reload = getattr(self.manager, "reload", None)
        self._changes += 1
        if reload is not None:
            self.start_task = self.spawn(self._reload_and_start(reload, start or [], message, self._changes),
                                         name="mcp-settings-reload")

    async def _reload_and_start(self, reload: Callable[[], Any], names: list[str], message: str,
                                change: int) -> None:
        await reload()
        start = getattr(self.manager, "start", None)
        if not names or start is None or change != self._changes:
            return  # nothing added, or changed again since (disabled, removed): that change's reload decides
        self._say(f"{message} Starting {', '.join(names)}…")
        said, failed = [], False
        for name in names:
            try:
                status = await start(name)
            except ConfigurationError:  # removed (or disabled) again meanwhile: nothing to start
                continue
            if status.state == "ready":
                said.append(f"{name} started: {len(status.tools)} tools")
            else:
                failed = True
                said.append(f"{name} did not start: {status.reason or status.state} (see the MCP dock)")
        try:
            if said:
                self._say(f"{message} {'; '.join(said)}.", error=failed)
        except RuntimeError:  # the dialog was closed meanwhile: the MCP dock shows the state too
            pass

    def _say(self, text: str, *, error: bool = False) -> None:
        c = theme.colors()
        self.status.setStyleSheet(f"color: {c.error};" if error else "")
        self.status.setText(text)


__all__ = ["McpServersPage", "PairsTable"]
