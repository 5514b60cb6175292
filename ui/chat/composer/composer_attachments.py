"""The composer's attachments, apart from the message box itself (so the composer stays small):
the paper-clip button, the chips under the box, dropped and pasted files and images, ``@`` completion
(:mod:`ui.chat.composer.mentions`) and MCP resources. :class:`ComposerAttachments` is mixed into
:class:`ui.chat.composer.composer.Composer` and into the editor of a sent message
(:class:`ui.chat.composer.message_editor.MessageEditor`), which hold the signals (``attachment_problem``,
``attachment_open_requested``); :class:`AttachmentInput` into their text boxes. The limits are the
configuration's (``attachments.max_text_bytes``, ``attachments.max_image_bytes``: ``limits_of``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from PySide6.QtCore import QEvent, QMimeData, QSize, Qt
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QKeyEvent
from PySide6.QtWidgets import QFileDialog, QToolButton, QVBoxLayout, QWidget

from ui import theme
from ui.chat.composer.attachments import ChipRow, dropped_files, has_attachable, pasted_image, relative_name
from ui.chat.composer.mentions import MentionCompleter
from workspace.attachments import Attachment, AttachmentLimits

if TYPE_CHECKING:
    from PySide6.QtWidgets import QFrame

    from ui.chat.composer.composer import ComposerEdit
    from ui.chat.composer.message_editor import EditBox

#: The keys of the ``@`` list while it is open (not the window's shortcuts then).
_LIST_KEYS = (Qt.Key.Key_Escape, Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Tab, Qt.Key.Key_Up, Qt.Key.Key_Down)


class AttachmentInput:
    """What a message's text box does for attachments (mixed into a ``QPlainTextEdit``): dropped or pasted
    files and images go to ``take_attachments`` (text stays text), and the ``@`` list (``mentions``) sees
    its keys first while it is open."""

    #: The ``@`` completion (ui/chat/composer/mentions.py): it sees the keys first while its list is open.
    mentions: MentionCompleter | None = None
    #: Dropped or pasted files and images (the attachments' owner); text stays text.
    take_attachments: Callable[[QMimeData], bool] | None = None

    def _mention_event(self, event: QEvent) -> bool:
        """For ``event()``: True when the ``@`` list took ``event`` (its keys before the window's shortcuts,
        Tab before it moves the focus)."""
        if (event.type() == QEvent.Type.ShortcutOverride and self.mentions is not None and self.mentions.active
                and isinstance(event, QKeyEvent) and event.key() in _LIST_KEYS):
            event.accept()
            return True
        return (event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent)
                and event.key() == Qt.Key.Key_Tab and self.mentions is not None and self.mentions.handle_key(event))

    def _mention_key(self, event: QKeyEvent) -> bool:
        """For ``keyPressEvent``: True when the ``@`` list took the key."""
        return self.mentions is not None and self.mentions.handle_key(event)

    def canInsertFromMimeData(self, source: QMimeData) -> bool:
        return has_attachable(source) or bool(super().canInsertFromMimeData(source))  # type: ignore[misc]

    def insertFromMimeData(self, source: QMimeData) -> None:
        """Paste and drop: files and image data become attachments; text is inserted as usual."""
        if self.take_attachments is not None and has_attachable(source) and self.take_attachments(source):
            return
        super().insertFromMimeData(source)  # type: ignore[misc]


class ComposerAttachments:
    """What goes with the next message, and the ways to add it (see the module docstring)."""

    edit: ComposerEdit | EditBox
    frame: QFrame
    attachment_problem: Any
    attachment_open_requested: Any

    def _fit(self) -> None:  # pragma: no cover - the composer's
        raise NotImplementedError

    @property
    def _widget(self) -> QWidget:
        return cast("QWidget", self)

    def _make_attach_button(self) -> QToolButton:
        button = QToolButton(self.frame)
        button.setObjectName("AttachButton")
        button.setAccessibleName("Attach files")
        button.setToolTip("Attach files or images (or drop them here, paste them, or type @ for a file of the folder)")
        button.setIcon(theme.icon("paperclip", theme.colors().muted, 18))
        button.setIconSize(QSize(18, 18))
        button.setFixedSize(30, 34)
        button.setAutoRaise(True)
        button.setCursor(Qt.CursorShape.PointingHandCursor)
        button.clicked.connect(self.choose_files)
        return button

    def _setup_attachments(self, column: QVBoxLayout) -> None:
        #: What goes with the next message (the core's Attachment objects).
        self.pending: list[Attachment] = []
        #: The opened folder (files are read inside it; ``@`` lists it): the window's, asked each time.
        self.folder_of: Callable[[], Path | None] = lambda: None
        #: How large a file may be (the window gives the configuration's, asked each time).
        self.limits_of: Callable[[], AttachmentLimits] = AttachmentLimits
        #: Reads an MCP resource as an Attachment (set by the window: the MCP manager's).
        self.resource_reader: Callable[[str, str], Awaitable[Attachment]] | None = None
        self._reading: asyncio.Future[None] | None = None
        # (made in the column's widget: moved into it, it would have the style sheet worked out anew)
        self.chips = ChipRow(removable=True, parent=column.parentWidget() or self._widget)
        self.chips.remove_requested.connect(self.remove_attachment)
        self.chips.open_requested.connect(self.attachment_open_requested)
        column.addWidget(self.chips)
        self.edit.take_attachments = self.attach_mime
        self.edit.mentions = MentionCompleter(self.edit, folder_of=lambda: self.folder, choose=self._mentioned)
        self._widget.setAcceptDrops(True)

    def _mentioned(self, path: str) -> None:
        self.add_paths([path])

    @property
    def folder(self) -> Path | None:
        folder = self.folder_of()
        return Path(folder) if folder is not None else None

    def set_folder(self, folder: Path | None) -> None:
        """Use ``folder`` from now on (the window passes a function giving its folder instead)."""
        self.folder_of = lambda: folder

    def attachments(self) -> list[Attachment]:
        """What goes with the next message."""
        return list(self.pending)

    def add_attachment(self, attachment: Attachment) -> None:
        if not any(a.sha256 == attachment.sha256 and a.name == attachment.name for a in self.pending):
            self.pending.append(attachment)
        self._show_chips()

    def remove_attachment(self, attachment: Attachment) -> None:
        self.pending = [a for a in self.pending if a is not attachment]
        self._show_chips()

    def clear_attachments(self) -> None:
        self.pending = []
        self._show_chips()

    def _show_chips(self) -> None:
        self.chips.set_items(self.pending)
        self._fit()

    def add_paths(self, paths: Sequence[str]) -> list[str]:
        """Attach files (relative to the opened folder, or absolute inside it); the problems, each also
        emitted as ``attachment_problem`` (nothing else is lost: the other files are attached)."""
        from workspace.errors import Error

        problems: list[str] = []
        for path in paths:
            try:
                self.add_attachment(Attachment.from_path(relative_name(path, self.folder), folder=self.folder,
                                                         **self.limits_of().options()))
            except (Error, OSError) as exc:
                problems.append(str(exc))
                self.attachment_problem.emit(str(exc))
        return problems

    def attach_mime(self, mime: QMimeData) -> bool:
        """Dropped or pasted data: files attached, image data as a PNG; False when it holds neither."""
        files = dropped_files(mime)
        if files:
            self.add_paths(files)
            return True
        try:
            image = pasted_image(mime, max_image_bytes=self.limits_of().max_image_bytes)
        except Exception as exc:  # an image too large, say: the message names the limit
            self.attachment_problem.emit(str(exc))
            return True
        if image is not None:
            self.add_attachment(image)
            return True
        return False

    def choose_files(self) -> None:
        """The attach button: a file dialog in the opened folder."""
        start = str(self.folder) if self.folder is not None else str(Path.home())
        paths, _ = QFileDialog.getOpenFileNames(self._widget, "Attach files", start,
                                                "All files (*);;Images (*.png *.jpg *.jpeg *.gif *.webp);;"
                                                "Text (*.txt *.md *.py *.json *.yaml *.csv *.log);;PDF (*.pdf)")
        if paths:
            self.add_paths(paths)

    def add_resource_attachment(self, server: str, uri: str) -> None:
        """Attach an MCP server's resource (the MCP dock's "Attach to message"): read through
        ``resource_reader``, then a chip like a file's."""
        reader = self.resource_reader
        if reader is None:
            self.attachment_problem.emit(f"Cannot read the resource {uri}: no MCP servers are connected")
            return
        async def read() -> None:
            try:
                attachment = await reader(server, uri)
            except Exception as exc:  # the message names the server and the fix
                self.attachment_problem.emit(str(exc))
                return
            self.add_attachment(attachment)

        self._reading = asyncio.ensure_future(read())

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if has_attachable(event.mimeData()):
            event.acceptProposedAction()
            return
        super().dragEnterEvent(event)  # type: ignore[misc]

    def dropEvent(self, event: QDropEvent) -> None:
        if self.attach_mime(event.mimeData()):
            event.acceptProposedAction()
            return
        super().dropEvent(event)  # type: ignore[misc]

