"""The editor of a sent message (its "Edit and resend"): the text in a box, the message's attachments as
the composer's removable chips, and the composer's ways to add more (the paper-clip button, files or an
image dropped on it or pasted, ``@`` for a file of the folder). Save & resend (Ctrl+Enter) sends the text
with exactly the attachments the chips show, as a new branch of the thread; Cancel (Esc) leaves the message
as it was.

The window prepares each editor (:attr:`ui.chat.view.chat.ChatView.editor_opened`): the opened folder, the
configuration's limits, the message's attachments read back from the thread's database, where problems
are said (``ui/window/attachments.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from ui.chat.composer.composer_attachments import AttachmentInput, ComposerAttachments
from ui.widgets.common import SubmitEdit
from workspace.attachments import Attachment


class EditBox(AttachmentInput, SubmitEdit):
    """The editor's text box: Ctrl+Enter resends, Esc cancels (unless the ``@`` list is open: then its
    keys are the list's), files and images dropped or pasted become chips."""

    def event(self, event: QEvent) -> bool:
        if self._mention_event(event):
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if self._mention_key(event):
            return
        super().keyPressEvent(event)


class MessageEditor(ComposerAttachments, QFrame):
    """A sent message's text and attachments, editable (see the module docstring)."""

    #: Save & resend (True) or Cancel (False): the message reads :meth:`text` and :meth:`attachments`.
    finished = Signal(bool)
    #: A file or resource that could not be attached: the message names the limit or the fix.
    attachment_problem = Signal(str)
    #: A chip was clicked (the Attachment).
    attachment_open_requested = Signal(object)

    def __init__(self, text: str, *, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("EditBox")
        self.frame = self
        column = QVBoxLayout(self)
        column.setContentsMargins(10, 8, 10, 8)
        column.setSpacing(6)
        self.edit = EditBox(self)
        self.edit.setObjectName("EditMessage")
        self.edit.setAccessibleName("Edit the message (Ctrl+Enter resends, Esc cancels)")
        self.edit.setTabChangesFocus(True)
        self.edit.setPlainText(text)
        lines = text.count("\n") + 3
        self.edit.setFixedHeight(max(70, min(220, self.edit.fontMetrics().lineSpacing() * lines + 16)))
        column.addWidget(self.edit)
        self._setup_attachments(column)
        self.chips.setAccessibleName("Attachments that go with the edited message")
        row = QHBoxLayout()
        self.attach_button = self._make_attach_button()
        self.attach_button.setToolTip("Attach files or images (or drop them here, paste them, or type @ for a file "
                                      "of the folder); × on a chip leaves it out")
        row.addWidget(self.attach_button, 0, Qt.AlignmentFlag.AlignVCenter)
        note = QLabel("Ctrl+Enter resends · Esc cancels", self)
        note.setWordWrap(True)
        note.setObjectName("Muted")
        row.addWidget(note, 1)
        self.cancel_button = QPushButton("Cancel", self)
        self.send_button = QPushButton("Save && resend", self)
        self.send_button.setObjectName("PrimaryButton")
        self.send_button.setToolTip("Resend as a new branch of the thread (Ctrl+Enter); the original stays one click "
                                    "away (‹ › on the message)")
        row.addWidget(self.cancel_button)
        row.addWidget(self.send_button)
        column.addLayout(row)
        #: Whether the text and attachments may go (the window checks that the model sees the images and says
        #: why not); False keeps the editor open.
        self.accepts: Callable[[list[Attachment]], bool] = lambda _attachments: True
        self.cancel_button.clicked.connect(lambda: self.finished.emit(False))
        self.send_button.clicked.connect(lambda: self.finished.emit(True))
        self.edit.submitted.connect(lambda: self.finished.emit(True))
        self.edit.cancelled.connect(lambda: self.finished.emit(False))

    def _fit(self) -> None:
        self.updateGeometry()

    def text(self) -> str:
        return self.edit.toPlainText().strip()

    def set_attachments(self, attachments: Sequence[Attachment]) -> None:
        """What goes with the message now (its own, when the editor opens)."""
        self.pending = []
        for attachment in attachments:
            self.add_attachment(attachment)
