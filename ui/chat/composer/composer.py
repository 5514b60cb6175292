"""The message box: grows with its text, Ctrl+Enter sends; the send button becomes Stop while running.

Attachments: the paper-clip button (a file dialog in the opened folder), files dropped on it or pasted
(image data becomes a PNG), ``@`` completing the folder's files (ui/chat/composer/mentions.py) and MCP
resources (:meth:`Composer.add_resource_attachment`) add chips under the box (ui/chat/composer/attachments.py);
they go with the next message (:meth:`Composer.attachments`).

Typing ``/`` at the start opens the completion list of ``/`` commands (``ui/chat/composer/slash.py``): the
window sets :attr:`Composer.slash_source` (what there is to offer) and handles :attr:`Composer.command_chosen`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator

from PySide6.QtCore import QEvent, QObject, QSize, Qt, Signal
from PySide6.QtGui import QKeyEvent, QResizeEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QPlainTextEdit, QToolButton, QVBoxLayout, QWidget

from ui import theme
from ui.chat.composer.composer_attachments import AttachmentInput, ComposerAttachments
from ui.chat.composer.slash import SlashItem, SlashList, matching
from ui.widgets.common import ElidedLabel
from ui.widgets.staged import StagedBuild

MIN_LINES = 1
#: The room around the box (left, top, right, bottom), and in a low window (:meth:`Composer.set_compact`).
MARGINS = (24, 8, 24, 12)
COMPACT_MARGINS = (24, 4, 24, 4)
MAX_LINES = 10
#: The text that opens the ``/`` completion: a slash at the start and one word.
SLASH = re.compile(r"^/(\S*)$")
_SLASH_KEYS = (Qt.Key.Key_Up, Qt.Key.Key_Down, Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Tab,
               Qt.Key.Key_Escape)


class ComposerEdit(AttachmentInput, QPlainTextEdit):
    submitted = Signal()
    #: Its width changed (the window or a dock was resized).
    width_changed = Signal()
    #: Keys for the ``/`` completion while it shows (returns True when it took the key).
    completion_keys: Callable[..., bool] | None = None

    def event(self, event: QEvent) -> bool:
        # While the file list is open its keys (Esc, Enter, Tab, arrows) are the list's, not the window's shortcuts.
        if self._mention_event(event):
            return True
        # Before Tab moves the focus and before the window's shortcuts (Esc stops a run) see the key.
        if event.type() in (QEvent.Type.KeyPress, QEvent.Type.ShortcutOverride) and self.completion_keys is not None:
            key_event = event if isinstance(event, QKeyEvent) else None
            if key_event is not None and key_event.key() in _SLASH_KEYS and \
                    not key_event.modifiers() & Qt.KeyboardModifier.ControlModifier:
                if event.type() == QEvent.Type.ShortcutOverride:
                    if self.completion_keys(key_event, peek=True):  # the key press that follows is ours
                        event.accept()
                        return True
                elif self.completion_keys(key_event, peek=False):
                    return True
        return super().event(event)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self.width_changed.emit()  # the lines wrap again: the box fits them

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if self._mention_key(event):
            return
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and (
            event.modifiers() & Qt.KeyboardModifier.ControlModifier
        ):
            self.submitted.emit()
            return
        super().keyPressEvent(event)


class Composer(ComposerAttachments, QWidget, StagedBuild):
    """Message input with a send / stop button."""

    send_requested = Signal(str)
    stop_requested = Signal()
    #: A file or resource that could not be attached: the message names the limit or the fix.
    attachment_problem = Signal(str)
    #: A chip under the message box was clicked (the Attachment).
    attachment_open_requested = Signal(object)
    #: A ``/`` command was chosen (a :class:`~ui.chat.composer.slash.SlashItem`); the box is emptied.
    command_chosen = Signal(object)
    #: The ``/`` completion opened: the window may look for more to offer (then calls :meth:`refresh_slash`).
    slash_opened = Signal()

    def __init__(self, parent: QWidget | None = None, *, staged: bool = False) -> None:
        """``staged``: made in two parts, the box with its text and buttons now, the ``/`` completion, the
        attachments' row and the hint under the box by :meth:`build_steps` (a start-up step each: whole, with Qt's
        polish of it, the message box held the window more than a frame); else whole."""
        super().__init__(parent)
        self.setObjectName("ComposerArea")
        self._start_build(staged=staged)

    def _construct(self) -> Iterator[None]:
        #: Compact (:meth:`set_compact`): no hint under the box, less room around it.
        self.compact = False
        outer = self._outer = QHBoxLayout(self)
        outer.setContentsMargins(*MARGINS)
        outer.addStretch(1)
        # The column is its holder's from the start: its widgets are made in it, never moved into it (a widget moved
        # has the style sheet worked out anew, and the box is polished in the step after its own).
        holder = QWidget(self)
        column = QVBoxLayout(holder)
        column.setSpacing(4)
        self.frame = QFrame(holder)
        self.frame.setObjectName("Composer")
        self.frame.setMaximumWidth(820)
        # The text has the box's whole width; the buttons and the model picker are on a row of their own
        # under it (beside the text they left a few characters a line in a narrow window).
        box = QVBoxLayout(self.frame)
        box.setContentsMargins(10, 8, 8, 6)
        box.setSpacing(2)
        self.edit = ComposerEdit(self.frame)
        self.edit.setObjectName("ComposerEdit")
        self.edit.setAccessibleName("Message")
        self.edit.setPlaceholderText("Message the robot…")
        self.edit.setTabChangesFocus(True)
        self.edit.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.edit.submitted.connect(self.submit)
        self.edit.textChanged.connect(self._fit)
        self.edit.width_changed.connect(self._fit)
        self.edit.textChanged.connect(self.refresh_slash)
        self.edit.textChanged.connect(self._background_text)
        self.edit.completion_keys = self._slash_key
        self.edit.installEventFilter(self)
        self.frame.installEventFilter(self)
        box.addWidget(self.edit)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(6)
        self.attach_button = self._make_attach_button()
        row.addWidget(self.attach_button, 0, Qt.AlignmentFlag.AlignVCenter)
        row.addStretch(1)
        self.button = QToolButton(self.frame)
        self.button.setObjectName("SendButton")
        self.button.setAccessibleName("Send or stop")
        self.button.setIconSize(QSize(18, 18))
        self.button.setFixedSize(34, 34)
        self.button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.button.clicked.connect(self._on_button)
        row.addWidget(self.button, 0, Qt.AlignmentFlag.AlignVCenter)
        box.addLayout(row)
        #: The row under the text: the attach button, side widgets (the model picker), room, Send.
        self._row = row
        column.addWidget(self.frame)
        holder.setMaximumWidth(820)
        outer.addWidget(holder, 100)
        outer.addStretch(1)
        self.running = False
        #: Work the open thread's robots delegated in the background still runs (its run ended): while the box
        #: is empty, the button stops it.
        self.background = False
        self._update_button()
        yield

        self.slash = SlashList(holder)
        #: What the ``/`` completion offers now (set by the window); None: no completion.
        self.slash_source: Callable[[], tuple[list[SlashItem], str]] | None = None
        self.slash.itemClicked.connect(lambda _item: self._choose(self.slash.current()))
        column.insertWidget(0, self.slash)  # above the box
        self._setup_attachments(column)
        # The hint gives way ("…") when the column is narrow: it never widens the window.
        self.hint = ElidedLabel("Ctrl+Enter to send · Esc to stop · Ctrl+K for every command", holder, tooltip=True)
        self.hint.setObjectName("ComposerHint")
        self.hint.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        column.addWidget(self.hint)
        self.hint.setVisible(not self.compact)
        self._fit()

    def set_compact(self, compact: bool) -> None:
        """A low window: the hint under the box goes (its keys are in the menus and Ctrl+K's list) and the room
        around the box shrinks, so the conversation keeps the height (about 30 px at 1024×640)."""
        if compact == self.compact:
            return
        self.compact = compact
        self._outer.setContentsMargins(*(COMPACT_MARGINS if compact else MARGINS))
        hint: ElidedLabel | None = getattr(self, "hint", None)  # (made by the second start-up step)
        if hint is not None:
            hint.setVisible(not compact)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if obj is self.frame and event.type() == QEvent.Type.MouseButtonPress:
            self.edit.setFocus(Qt.FocusReason.MouseFocusReason)  # the box's room beside its buttons is the box too
            return False
        if obj is self.edit and event.type() in (QEvent.Type.FocusIn, QEvent.Type.FocusOut):
            self.frame.setProperty("focused", event.type() == QEvent.Type.FocusIn)
            self.frame.style().unpolish(self.frame)
            self.frame.style().polish(self.frame)
        return super().eventFilter(obj, event)

    def _fit(self) -> None:
        """As tall as its lines (at its width now: a resize may wrap them again), up to MAX_LINES."""
        edit = self.edit
        lines = max(MIN_LINES, min(MAX_LINES, int(edit.document().size().height()) or 1))
        # Around the lines: the document's margin, and the box's frame and padding (the style sheet's).
        around = edit.height() - edit.viewport().height() if edit.viewport().height() > 0 else 8
        layout = edit.document().firstBlock().layout()
        line = layout.lineAt(0).height() if layout is not None and layout.lineCount() else 0.0
        line_height = max(edit.fontMetrics().lineSpacing(), math.ceil(line))  # a laid-out line may be a pixel taller
        height = line_height * lines + math.ceil(2 * edit.document().documentMargin()) + around
        edit.setFixedHeight(max(30, height))
        if not self.stopping:
            self.button.setEnabled(bool(self.edit.toPlainText().strip()))

    @property
    def stopping(self) -> bool:
        """The button stops (a run going, or background work with nothing typed) rather than sends."""
        return self.running or (self.background and not self.edit.toPlainText().strip())

    def _update_button(self) -> None:
        c = theme.colors()
        fg = c.accent_text
        stopping = self.stopping
        if stopping:
            self.button.setIcon(theme.icon("stop", c.surface if c.name == "light" else c.window, 18))
            self.button.setToolTip("Stop (Esc)" if self.running else
                                   "Stop the work delegated in the background (Esc)")
            self.button.setEnabled(True)
        else:
            self.button.setIcon(theme.icon("send", fg, 18))
            self.button.setToolTip("Send (Ctrl+Enter)")
            self.button.setEnabled(bool(self.edit.toPlainText().strip()))
        self.button.setProperty("running", stopping)
        self.button.style().unpolish(self.button)
        self.button.style().polish(self.button)

    def set_running(self, running: bool) -> None:
        self.running = running
        self._update_button()

    def set_background(self, background: bool) -> None:
        """Whether work delegated in the background still runs in the open thread (see :attr:`background`)."""
        if background != self.background:
            self.background = background
            self._update_button()

    def _background_text(self) -> None:
        if self.background and not self.running:  # typing makes it Send again; an empty box, Stop
            self._update_button()

    def add_side_widget(self, widget: QWidget) -> None:
        """Put ``widget`` (the model picker) on the row under the text, after the attach button (and any side
        widget added before): the text keeps the box's whole width."""
        widget.setParent(self.frame)
        self._row.insertWidget(self._row.count() - 2, widget, 0, Qt.AlignmentFlag.AlignVCenter)

    def set_robot(self, robot: str) -> None:
        text = f"Message {robot}…"
        if text != self.edit.placeholderText():
            self.edit.setPlaceholderText(text)
            # Qt repaints the placeholder only when it shows or hides, not when its text changes: drawn again here.
            self.edit.viewport().update()

    def _on_button(self) -> None:
        if self.stopping:
            self.stop_requested.emit()
        else:
            self.submit()

    # -- the / completion --------------------------------------------------------------------------------
    def slash_query(self) -> str | None:
        """What follows the ``/`` while the text is a ``/`` command being typed, else None."""
        found = SLASH.match(self.edit.toPlainText())
        return found.group(1) if found else None

    def refresh_slash(self) -> None:
        """Show (or hide) the completion for the text as it is now."""
        query = self.slash_query()
        if query is None or self.slash_source is None:
            self.slash.setVisible(False)
            return
        items, note = self.slash_source()
        found = matching(items, query)
        opening = not self.slash.isVisible()
        self.slash.show_items(found, note=note if note or found else f"No command or prompt matches /{query}")
        self.slash.setVisible(True)
        if opening:
            self.slash_opened.emit()

    def _slash_key(self, event: QKeyEvent, *, peek: bool = False) -> bool:
        """A key while the completion shows: True when it is the completion's (``peek``: only say so)."""
        if not self.slash.isVisible():
            return False
        if peek:
            return True
        key = event.key()
        if key == Qt.Key.Key_Escape:
            self.slash.setVisible(False)
        elif key == Qt.Key.Key_Up:
            self.slash.step(-1)
        elif key == Qt.Key.Key_Down:
            self.slash.step(1)
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Tab):
            item = self.slash.current()
            if item is None:
                return key != Qt.Key.Key_Tab  # nothing to choose: Enter does nothing, Tab moves on
            self._choose(item)
        return True

    def _choose(self, item: SlashItem | None) -> None:
        if item is None:
            return
        self.slash.setVisible(False)
        self.edit.clear()
        self.command_chosen.emit(item)

    def submit(self) -> None:
        text = self.edit.toPlainText().strip()
        if not text or self.running:
            return
        query = self.slash_query()
        if query is not None and self.slash_source is not None:  # "/compact" typed whole, then Ctrl+Enter
            item = next((i for i in self.slash_source()[0] if i.name == query), None)
            if item is not None:
                self._choose(item)
                return
        self.edit.clear()
        self.send_requested.emit(text)

    def text(self) -> str:
        return self.edit.toPlainText()

    def set_text(self, text: str) -> None:
        self.edit.setPlainText(text)
        self.edit.moveCursor(self.edit.textCursor().MoveOperation.End)

    def focus(self) -> None:
        self.edit.setFocus()
