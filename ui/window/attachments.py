"""Attachments in the window: the composer's folder, limits and MCP resources, files dropped anywhere on
the window, problems said in a toast, opening a chip (before sending: the composer's Attachment; on a
sent message: its content read back from the thread's database), and the editor of a sent message (its
attachments as removable chips, read back from the database)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QDragEnterEvent, QDropEvent

if TYPE_CHECKING:
    from PySide6.QtWidgets import QDialog

    from ui.chat.composer.composer import Composer
    from ui.chat.composer.message_editor import MessageEditor
    from ui.chat.model.state import AttachmentChip
    from ui.chat.view.chat import ChatView
    from ui.services import Services
    from workspace.attachments import Attachment, AttachmentLimits


class _Drops(QObject):
    """Files or an image dropped anywhere on the window go to the composer."""

    def __init__(self, window: QObject, composer: Composer) -> None:
        super().__init__(window)
        self.window = window
        self.composer = composer

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        from ui.chat.composer.attachments import has_attachable

        if obj is self.window and isinstance(event, QDragEnterEvent | QDropEvent):
            mime = event.mimeData()
            if not has_attachable(mime):
                return False
            if isinstance(event, QDropEvent) and event.type() == QEvent.Type.Drop:
                self.composer.attach_mime(mime)
                self.composer.focus()
            event.acceptProposedAction()
            return True
        return super().eventFilter(obj, event)


class Attachments:
    """What the window does for attachments (see the module docstring)."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.drops: _Drops | None = None
        #: The viewer opened last (tests look at it).
        self.viewer: QDialog | None = None

    def connect(self, composer: Composer, chat: ChatView) -> None:
        """Attach in ``composer`` (and in ``chat``'s message editor), open what was sent; a drop anywhere on the
        window attaches to ``composer``."""
        s = self.services
        composer.folder_of = lambda: s.session.folder
        composer.limits_of = self.limits
        composer.resource_reader = self.read_resource
        composer.attachment_problem.connect(lambda text: s.notices.toast(text))
        composer.attachment_open_requested.connect(self.open)
        chat.attachment_open_requested.connect(self.open_sent)
        chat.editor_opened.connect(self.prepare_editor)
        self.drops = _Drops(s.shell, composer)
        s.shell.setAcceptDrops(True)
        s.shell.installEventFilter(self.drops)

    def limits(self) -> AttachmentLimits:
        """How large an attachment may be: the configuration's ``attachments.*`` (read again after a change)."""
        from workspace.attachments import AttachmentLimits

        return AttachmentLimits.from_config(self.services.session.config)

    # -- MCP resources -----------------------------------------------------------------------------------
    async def read_resource(self, server: str, uri: str) -> Attachment:
        from ui.mcp.pane import manager_for
        from workspace.attachments import AttachmentError, read_resource_attachment

        manager = manager_for(self.services.session)
        if manager is None:
            raise AttachmentError(f"Cannot read the resource {uri}: MCP support is not installed")
        return await read_resource_attachment(manager, server, uri, **self.limits().options())

    # -- editing a sent message ----------------------------------------------------------------------------
    def prepare_editor(self, editor: MessageEditor, chips: list[AttachmentChip]) -> None:
        """A sent message's editor: the message's attachments as removable chips (their content from the
        thread's database), files of the opened folder within the configuration's limits, problems in a
        toast, images checked against the model before the message goes."""
        s = self.services
        editor.folder_of = lambda: s.session.folder
        editor.limits_of = self.limits
        editor.attachment_problem.connect(lambda text: s.notices.toast(text))
        editor.attachment_open_requested.connect(self.open)
        editor.accepts = self._resendable
        if not chips:
            return
        store: Any = s.session.store
        try:
            editor.set_attachments(store.load_attachments([chip.ref() for chip in chips]))
        except Exception as exc:  # a database that cannot be read now: nothing is edited, nothing is lost
            s.notices.banner(f"Could not read the attachments of the message to edit it: {exc}")
            editor.finished.emit(False)

    def _resendable(self, attachments: list[Attachment]) -> bool:
        """A model that cannot see the images: said in the banner, the editor stays open (as for a new message)."""
        problem = self.services.session.attachment_problem(attachments)
        if problem:
            self.services.notices.banner(problem)
        return not problem

    # -- opening ----------------------------------------------------------------------------------------------
    def open(self, attachment: Attachment) -> None:
        from ui.chat.composer.attachments import open_attachment

        folder = self.services.session.folder
        self.viewer = open_attachment(self.services.shell, attachment, folder=Path(folder) if folder is not None else None)

    def open_sent(self, chip: AttachmentChip) -> None:
        """A sent message's chip: its content from the thread's database."""
        store: Any = self.services.session.store
        if store is None:
            return
        try:
            attachment = store.load_attachments([chip.ref()])[0]
        except Exception as exc:  # a database that cannot be read now: say so, nothing else changes
            self.services.notices.toast(f"Could not open {chip.name}: {exc}")
            return
        self.open(attachment)
