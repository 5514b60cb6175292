"""The MCP dock's Resources tab: the selected server's resources and resource templates, a preview of the
one selected (Markdown and code highlighted, JSON pretty, images scaled), a form for a template's
arguments, Subscribe, and "Attach to message" (the pane's ``attach_requested(server, uri)``).

Everything the server is asked runs as a task of the dock (never blocking the window); an answer that
arrives after the selection moved on is dropped. A subscribed resource the server says changed is shown
bold with a dot and "changed at HH:MM" until it is viewed again (reading it clears the mark).
"""

from __future__ import annotations

import html
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QPixmap
from PySide6.QtWidgets import (
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSplitter,
    QStackedWidget,
    QTextBrowser,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ui import theme

if TYPE_CHECKING:
    from ui.tasks import TaskOwner
    from workspace.mcp import MCPManager
    from workspace.mcp.resources import ResourceContent
    from workspace.mcp.status import ServerStatus

log = logging.getLogger("ui.mcp.pane")

#: The most characters of a resource shown in the preview (the whole is read and kept; the rest is cut here).
PREVIEW_CHARS = 200_000
#: Longer than this, text is shown plain (no Markdown or highlighting: that would take seconds).
RICH_CHARS = 60_000
#: Item data: ("resource", uri) or ("template", uriTemplate).
KIND_ROLE = Qt.ItemDataRole.UserRole
VALUE_ROLE = Qt.ItemDataRole.UserRole + 1
CHANGED_MARK = "● "

_LANGUAGES = {"text/x-python": "python", "application/x-python": "python", "text/x-sh": "bash",
              "application/x-sh": "bash", "text/html": "html", "text/css": "css", "application/javascript": "js",
              "text/javascript": "js", "application/xml": "xml", "text/xml": "xml", "application/yaml": "yaml",
              "text/yaml": "yaml", "text/x-yaml": "yaml", "text/csv": "text"}


def changed_text(changed_at: float) -> str:
    return f"changed at {time.strftime('%H:%M', time.localtime(changed_at))}"


def preview_html(content: ResourceContent) -> tuple[str, str]:
    """``(kind, payload)`` for a :class:`~workspace.mcp.resources.ResourceContent`: ("html", rich text),
    ("plain", text) or ("image", "") — long text cut to :data:`PREVIEW_CHARS` with a note."""
    from ui import markdown

    if content.is_image:
        return "image", ""
    if content.text is None:
        mime = content.mime_type or "unknown type"
        return "html", f"<p>Binary content ({html.escape(mime)}, {content.size:,} bytes): no preview.</p>"
    text: str = content.text
    note = ""
    if len(text) > PREVIEW_CHARS:
        note = (f"\n\n… cut here: the resource has {len(text):,} characters; the first {PREVIEW_CHARS:,} are "
                "shown (attached or read by a robot, it is used whole or cut with a note).")
        text = text[:PREVIEW_CHARS]
    if len(text) > RICH_CHARS:
        return "plain", text + note
    mime = (content.mime_type or "").split(";")[0].strip().lower()
    if content.is_json:
        return "html", markdown.json_html(text, max_chars=PREVIEW_CHARS) + html.escape(note)
    if mime in ("text/markdown", "text/x-markdown") or content.uri.lower().endswith(".md"):
        return "html", markdown.render(text + note)
    language = _LANGUAGES.get(mime)
    if language:
        return "html", markdown.code_block(text, language) + html.escape(note)
    return "plain", text + note


class ResourcesPanel(QWidget):
    """Resources and templates of one server (``set_server``), previewed on selection."""

    #: "Attach to message" was pressed: (server, uri).
    attach_requested = Signal(str, str)

    def __init__(self, manager: MCPManager, tasks: TaskOwner, parent: QWidget | None = None, *,
                 can_attach: Callable[[], bool] | None = None) -> None:
        super().__init__(parent)
        self.manager = manager
        self.tasks = tasks
        self._can_attach = can_attach or (lambda: False)
        self.server: str | None = None
        self._version: tuple[str | None, bool, int] | None = None
        self._subscribed: dict[str, float | None] = {}
        #: What the preview shows: (server, uri), and the content read.
        self.shown: tuple[str, str] | None = None
        self.content: ResourceContent | None = None
        self._pending: tuple[str, str] | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(4)
        row = QHBoxLayout()
        self.status = QLabel("", self)
        self.status.setObjectName("Muted")
        self.status.setWordWrap(True)
        row.addWidget(self.status, 1)
        self.refresh_button = QPushButton("Refresh", self)
        self.refresh_button.setToolTip("List the server's resources again")
        self.refresh_button.clicked.connect(lambda: self.load(force=True))
        row.addWidget(self.refresh_button, 0, Qt.AlignmentFlag.AlignTop)
        layout.addLayout(row)
        splitter = QSplitter(Qt.Orientation.Vertical, self)
        self.tree = QTreeWidget(splitter)
        self.tree.setHeaderHidden(True)
        self.tree.setAccessibleName("The server's resources and resource templates")
        self.tree.currentItemChanged.connect(lambda *_: self._on_select())
        bottom = QWidget(splitter)
        bl = QVBoxLayout(bottom)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.setSpacing(4)
        # A template's arguments: one line each, and Read.
        self.form_box = QWidget(bottom)
        fl = QVBoxLayout(self.form_box)
        fl.setContentsMargins(0, 0, 0, 0)
        self.form = QFormLayout()
        fl.addLayout(self.form)
        self.read_button = QPushButton("Read", self.form_box)
        self.read_button.setObjectName("PrimaryButton")
        self.read_button.setToolTip("Fill the template in with these values and read the resource")
        self.read_button.clicked.connect(self.read_template)
        fl.addWidget(self.read_button, 0, Qt.AlignmentFlag.AlignRight)
        self.form_box.setVisible(False)
        bl.addWidget(self.form_box)
        self.fields: dict[str, QLineEdit] = {}
        buttons = QHBoxLayout()
        self.subscribe_button = QPushButton("Subscribe", bottom)
        self.subscribe_button.setCheckable(True)
        self.subscribe_button.setToolTip("Be told when the server changes this resource (it is marked here)")
        self.subscribe_button.clicked.connect(self._toggle_subscription)
        self.attach_button = QPushButton("Attach to message", bottom)
        self.attach_button.setToolTip("Add this resource to the message you are writing, as context")
        self.attach_button.clicked.connect(self._attach)
        buttons.addWidget(self.subscribe_button)
        buttons.addStretch(1)
        buttons.addWidget(self.attach_button)
        bl.addLayout(buttons)
        self.preview = QStackedWidget(bottom)
        self.text_view = QTextBrowser(self.preview)
        self.text_view.setOpenExternalLinks(False)
        self.text_view.setAccessibleName("Resource preview")
        self.image_label = QLabel(self.preview)
        self.image_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.image_label.setAccessibleName("Resource image")
        image_scroll = QScrollArea(self.preview)
        image_scroll.setWidgetResizable(True)
        image_scroll.setWidget(self.image_label)
        self.preview.addWidget(self.text_view)
        self.preview.addWidget(image_scroll)
        bl.addWidget(self.preview, 1)
        splitter.addWidget(self.tree)
        splitter.addWidget(bottom)
        splitter.setSizes([140, 260])
        layout.addWidget(splitter, 1)
        self._update_buttons()

    # -- the list ------------------------------------------------------------------------------------------
    def set_server(self, status: ServerStatus | None) -> None:
        """The selected server's status (None: nothing selected); lists again when another server is
        selected, it became ready, or it said its list changed; marks changed subscriptions."""
        name = getattr(status, "name", None)
        ready = status is not None and str(status.state) == "ready"
        version = (name, ready, getattr(status, "resources_version", 0))
        self._subscribed = dict(getattr(status, "subscriptions", ()) or ())
        if version != self._version:
            self._version = version
            self.server = name
            if name is None:
                self.tree.clear()
                self.status.setText("")
            elif ready:
                self.load()
            else:
                self.tree.clear()
                self.status.setText("Start the server to see its resources.")
        self._mark_changes()
        self._update_buttons()

    def load(self, *, force: bool = False) -> None:
        server = self.server
        if server is None:
            return
        self.status.setText("Listing resources…")

        async def go() -> None:
            try:
                resources = await self.manager.list_resources(server)
                templates = await self.manager.list_resource_templates(server)
            except Exception as exc:
                if self.server == server:
                    self.status.setText(f"Could not list the resources: {exc}")
                return
            if self.server == server:
                self._fill(resources, templates)

        self.tasks.spawn(go(), name=f"mcp-resources-{server}")

    def _fill(self, resources: list[dict[str, Any]], templates: list[dict[str, Any]]) -> None:
        current = self.tree.currentItem()
        keep = (current.data(0, KIND_ROLE), current.data(0, VALUE_ROLE)) if current is not None else None
        self.tree.clear()
        if not resources and not templates:
            self.status.setText("This server offers no resources.")
            return
        self.status.setText(f"{len(resources)} resource{'s' if len(resources) != 1 else ''} · {len(templates)} "
                            f"template{'s' if len(templates) != 1 else ''}")
        for title, kind, items, key in (("Resources", "resource", resources, "uri"),
                                        ("Templates", "template", templates, "uriTemplate")):
            if not items:
                continue
            group = QTreeWidgetItem(self.tree, [title])
            group.setFlags(group.flags() & ~Qt.ItemFlag.ItemIsSelectable)
            for entry in items:
                value = str(entry.get(key) or "")
                label = str(entry.get("title") or entry.get("name") or value)
                item = QTreeWidgetItem(group, [label])
                item.setData(0, KIND_ROLE, kind)
                item.setData(0, VALUE_ROLE, value)
                tip = [value] + [str(entry[k]) for k in ("mimeType", "description") if entry.get(k)]
                item.setData(0, Qt.ItemDataRole.ToolTipRole, "\n".join(tip))
                item.setData(0, Qt.ItemDataRole.AccessibleTextRole, label)
                if keep == (kind, value):
                    self.tree.setCurrentItem(item)
            group.setExpanded(True)
        self._mark_changes()

    def items(self) -> list[QTreeWidgetItem]:
        out: list[QTreeWidgetItem] = []
        for i in range(self.tree.topLevelItemCount()):
            group = self.tree.topLevelItem(i)
            if group is not None:
                out.extend(c for j in range(group.childCount()) if (c := group.child(j)) is not None)
        return out

    def item_for(self, value: str) -> QTreeWidgetItem | None:
        return next((it for it in self.items() if it.data(0, VALUE_ROLE) == value), None)

    def _mark_changes(self) -> None:
        for item in self.items():
            if item.data(0, KIND_ROLE) != "resource":
                continue
            uri = str(item.data(0, VALUE_ROLE))
            changed = self._subscribed.get(uri)
            label = item.text(0).removeprefix(CHANGED_MARK)
            base_tip = str(item.data(0, Qt.ItemDataRole.ToolTipRole) or "").split("\n— ")[0]
            font = QFont(item.font(0))
            font.setBold(changed is not None)
            item.setFont(0, font)
            item.setText(0, (CHANGED_MARK + label) if changed is not None else label)
            if changed is not None:
                item.setToolTip(0, f"{base_tip}\n— {changed_text(changed)}")
            else:
                item.setToolTip(0, base_tip + ("\n— subscribed" if uri in self._subscribed else ""))

    # -- selection and preview -----------------------------------------------------------------------------
    def selected(self) -> tuple[str, str] | None:
        item = self.tree.currentItem()
        if item is None or item.data(0, KIND_ROLE) is None:
            return None
        return str(item.data(0, KIND_ROLE)), str(item.data(0, VALUE_ROLE))

    def _on_select(self) -> None:
        chosen = self.selected()
        self._clear_form()
        if chosen is None:
            self._update_buttons()
            return
        kind, value = chosen
        if kind == "template":
            self._show_form(value)
        else:
            self.show_resource(value)
        self._update_buttons()

    def show_resource(self, uri: str) -> None:
        """Read ``uri`` of the current server and preview it (in a task; a later selection wins)."""
        server = self.server
        if server is None:
            return
        self._pending = (server, uri)
        self._message(f"Reading {uri}…")
        self.tasks.spawn(self._read(server, uri, lambda: self.manager.read_resource_content(server, uri)),
                         name=f"mcp-resource-read-{server}")

    async def _read(self, server: str, uri: str, fetch: Callable[[], Awaitable[ResourceContent]]) -> None:
        try:
            content = await fetch()
        except Exception as exc:
            if self._pending == (server, uri):
                self.shown, self.content = None, None
                self._message(str(exc), error=True)
                self._update_buttons()
            return
        if self._pending != (server, uri):
            return  # the selection moved on
        self.shown, self.content = (server, content.uri), content
        self._render(content)
        self._update_buttons()

    def _render(self, content: ResourceContent) -> None:
        kind, payload = preview_html(content)
        if kind == "image":
            pixmap = QPixmap()
            if not pixmap.loadFromData(content.data or b""):
                self._message(f"The image ({content.mime_type}) could not be decoded.", error=True)
                return
            self.image_label.setPixmap(pixmap.scaled(
                max(64, min(pixmap.width() * 8, 360)), max(64, min(pixmap.height() * 8, 360)),
                Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.FastTransformation))
            self.image_label.setToolTip(f"{content.label} · {content.mime_type} · {pixmap.width()}×{pixmap.height()}")
            self.preview.setCurrentIndex(1)
            return
        if kind == "plain":
            self.text_view.setPlainText(payload)
        else:
            self.text_view.setHtml(payload)
        self.preview.setCurrentIndex(0)

    def _message(self, text: str, *, error: bool = False) -> None:
        color = theme.colors().error if error else theme.colors().muted
        self.text_view.setHtml(f"<p style='color:{color}'>{html.escape(text)}</p>")
        self.preview.setCurrentIndex(0)

    # -- templates -----------------------------------------------------------------------------------------
    def _clear_form(self) -> None:
        while self.form.rowCount():
            self.form.removeRow(0)
        self.fields = {}
        self.form_box.setVisible(False)

    def _show_form(self, template: str) -> None:
        from workspace.mcp.resources import template_variables

        for name in template_variables(template):
            edit = QLineEdit(self.form_box)
            edit.setAccessibleName(name)
            edit.setPlaceholderText("required")
            edit.returnPressed.connect(self.read_template)
            self.form.addRow(f"{name}*", edit)
            self.fields[name] = edit
        self.form_box.setVisible(True)
        self._message(f"Fill in the template {template} and press Read.")
        if self.fields:
            next(iter(self.fields.values())).setFocus()

    def read_template(self) -> None:
        chosen = self.selected()
        server = self.server
        if chosen is None or chosen[0] != "template" or server is None:
            return
        template = chosen[1]
        from workspace.mcp.resources import TemplateArgumentsMissing, expand_template

        values = {k: e.text().strip() for k, e in self.fields.items()}
        try:
            uri = expand_template(template, values)
        except TemplateArgumentsMissing as exc:
            self._message(str(exc), error=True)
            return
        self._pending = (server, uri)
        self._message(f"Reading {uri}…")
        self.tasks.spawn(self._read(server, uri, lambda: self.manager.read_resource_content(server, uri)),
                         name=f"mcp-template-read-{server}")

    # -- subscribe and attach ------------------------------------------------------------------------------
    def _uri(self) -> str | None:
        chosen = self.selected()
        if chosen is not None and chosen[0] == "resource":
            return chosen[1]
        if self.shown is not None and chosen is not None and chosen[0] == "template":
            return self.shown[1]  # a filled-in template's resource
        return None

    def _update_buttons(self) -> None:
        uri = self._uri()
        chosen = self.selected()
        self.subscribe_button.setEnabled(uri is not None and chosen is not None and chosen[0] == "resource")
        self.subscribe_button.setChecked(uri is not None and uri in self._subscribed)
        self.subscribe_button.setText("Subscribed" if self.subscribe_button.isChecked() else "Subscribe")
        self.attach_button.setVisible(self._can_attach())
        self.attach_button.setEnabled(uri is not None and self.shown is not None and self.shown[1] == uri)

    def _toggle_subscription(self) -> None:
        uri, server = self._uri(), self.server
        if uri is None or server is None:
            return
        on = uri not in self._subscribed

        async def go() -> None:
            try:
                await self.manager.subscribe_resource(server, uri, on=on)
            except Exception as exc:
                self.status.setText(str(exc))
            self._update_buttons()

        self.tasks.spawn(go(), name=f"mcp-subscribe-{server}")

    def _attach(self) -> None:
        uri, server = self._uri(), self.server
        if uri is not None and server is not None:
            self.attach_requested.emit(server, uri)
