"""The messages of the conversation column: the user's bubble (edit, branches, the review note),
the robot's name above its work, the model's thinking (folded once the answer begins), notices, and
the footer under a run (usage, what it waits for, how it ended, copy, regenerate)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QSize, Qt, Signal
from PySide6.QtGui import QEnterEvent, QGuiApplication
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ui import theme
from ui.chat.model.state import ErrorItem
from ui.formatting import figures_text, format_duration
from ui.widgets.common import ElidedLabel, RichLabel

if TYPE_CHECKING:
    from ui.chat.composer.attachments import ChipRow
    from ui.chat.model.state import ReasoningItem, RunState, UserState

#: The conversation's width at most (the column is centred in wider windows).
COLUMN_MAX_WIDTH = 820


def _icon_button(name: str, tooltip: str, parent: QWidget) -> QToolButton:
    button = QToolButton(parent)
    button.setObjectName("GhostButton")
    button.setIcon(theme.icon(name, theme.colors().muted, 16))
    button.setToolTip(tooltip)
    button.setAutoRaise(True)
    button.setCursor(Qt.CursorShape.PointingHandCursor)
    return button


class UserMessage(QFrame):
    """A user's message: a bubble on the right, with edit and branch navigation."""

    edit_submitted = Signal(str, str, object)  # turn id, new text, the attachments (list of Attachment)
    #: An editor opened (the MessageEditor, the message's chips: ui.chat.model.state.AttachmentChip): the window
    #: prepares it (folder, limits, the attachments' content).
    editor_opened = Signal(object, object)
    branch_requested = Signal(str, int)  # turn id, +1 / -1
    #: A chip of the message's attachments was clicked (its ui.chat.model.state.AttachmentChip).
    attachment_clicked = Signal(object)

    def minimumSizeHint(self) -> QSize:
        """The height of the message laid out at its width (a word-wrapping label's own minimum is
        its height at its narrowest: several times the real one for a long message)."""
        hint = super().minimumSizeHint()
        width = self.width()
        return QSize(hint.width(), self.heightForWidth(width) if width > 0 else self.sizeHint().height())

    def resizeEvent(self, event: Any) -> None:
        # The bubble's label is as wide as its longest line, up to what the row has room for.
        room = max(60, self.width() - 80)
        natural = getattr(self, "_natural", 0)
        if natural:
            self.label.setMinimumWidth(min(natural, room))
        super().resizeEvent(event)

    def __init__(self, text: str, *, note: str | None = None, turn_id: str | None = None, sibling_index: int = 0,
                 sibling_count: int = 1, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("UserRow")
        # The review outcome sent in front of the message shows as its own small block (set_note).
        self.note: str | None = None
        self.note_block: QWidget | None = None
        self.text = text
        self.turn_id = turn_id
        self.sibling_index = sibling_index
        self.sibling_count = sibling_count
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 6, 0, 2)
        outer.setSpacing(2)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addStretch(1)
        self.bubble = QFrame(self)
        self.bubble.setObjectName("UserBubble")
        bl = QVBoxLayout(self.bubble)
        bl.setContentsMargins(14, 9, 14, 9)
        self.label = RichLabel("", self.bubble)
        self.label.set_markdown(text)
        self.label.setObjectName("MessageText")
        bl.addWidget(self.label)
        self.bubble.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Minimum)
        self.bubble.setMaximumWidth(int(COLUMN_MAX_WIDTH * 0.8))
        self.label.ensurePolished()  # the style sheet's message font, not the default one
        longest = max((self.label.fontMetrics().horizontalAdvance(line) for line in text.splitlines()), default=0)
        # Short messages stay on one line; long ones wrap to the column (see resizeEvent), never widen it.
        self._natural = min(longest + 8, int(COLUMN_MAX_WIDTH * 0.8) - 40, 520)
        self.label.setMinimumWidth(min(self._natural, 120))
        row.addWidget(self.bubble)
        outer.addLayout(row)
        if note:
            self.set_note(note)
        # The files, images and resources sent with it, as chips under the bubble (set_attachments).
        self.chips: ChipRow | None = None

        # The action row keeps its height whether or not its buttons show: nothing jumps on hover.
        self.action_row = QWidget(self)
        self.action_row.setFixedHeight(20)
        self._actions_layout = QHBoxLayout(self.action_row)
        self._actions_layout.setContentsMargins(0, 0, 0, 0)
        self._actions_layout.setSpacing(2)
        self._actions_layout.addStretch(1)
        outer.addWidget(self.action_row)
        self.editor: QFrame | None = None
        self._buttons_made = False
        if sibling_count > 1:
            self._update_branch()

    def set_note(self, note: str | None) -> None:
        """Show the ``<change-review>`` note sent with this message as a collapsed block above it."""
        if note == self.note:
            return
        if self.note_block is not None:
            self.note_block.deleteLater()
            self.note_block = None
        self.note = note or None
        if self.note:
            from ui.chat.view.review_note import ReviewNoteBlock

            holder = QHBoxLayout()
            holder.setContentsMargins(0, 0, 0, 0)
            holder.addStretch(1)
            self.note_block = ReviewNoteBlock(self.note, self)
            self.note_block.setMaximumWidth(int(COLUMN_MAX_WIDTH * 0.8))
            holder.addWidget(self.note_block)
            layout = self.layout()
            assert isinstance(layout, QVBoxLayout)
            layout.insertLayout(0, holder)

    def _make_buttons(self) -> None:
        """The row's buttons, made on first need (hover, a fork): long threads open faster."""
        if self._buttons_made:
            return
        self._buttons_made = True
        al = self._actions_layout
        self.prev_button = _icon_button("chevron-left", "Previous version", self.action_row)
        self.prev_button.setAccessibleName("Previous version")
        self.branch_label = QLabel("", self.action_row)
        self.branch_label.setObjectName("Muted")
        self.next_button = _icon_button("chevron-right", "Next version", self.action_row)
        self.next_button.setAccessibleName("Next version")
        self.prev_button.clicked.connect(lambda: self._branch(-1))
        self.next_button.clicked.connect(lambda: self._branch(+1))
        for w in (self.prev_button, self.branch_label, self.next_button):
            al.addWidget(w)
        self.copy_button = _icon_button("copy", "Copy the message as Markdown", self.action_row)
        self.copy_button.setAccessibleName("Copy the message as Markdown")
        self.copy_button.clicked.connect(lambda: QGuiApplication.clipboard().setText(self.text))
        self.edit_button = _icon_button("edit", "Edit and resend (forks the thread)", self.action_row)
        self.edit_button.setAccessibleName("Edit and resend")
        self.edit_button.clicked.connect(self.begin_edit)
        al.addWidget(self.copy_button)
        al.addWidget(self.edit_button)
        self.copy_button.setVisible(False)
        self.edit_button.setVisible(False)
        self._update_branch()

    def _update_branch(self) -> None:
        self._make_buttons()
        show = self.sibling_count > 1
        for w in (self.prev_button, self.branch_label, self.next_button):
            w.setVisible(show)
        self.branch_label.setText(f"{self.sibling_index + 1}/{self.sibling_count}")
        self.prev_button.setEnabled(self.sibling_index > 0)
        self.next_button.setEnabled(self.sibling_index < self.sibling_count - 1)
        self.edit_button.setEnabled(self.turn_id is not None)

    def apply(self, user: UserState) -> None:
        """Show the message's state: its stored turn, its place among its siblings, its note."""
        self.set_turn(user.turn_id, user.sibling_index, user.sibling_count)
        self.set_note(user.note)
        self.set_attachments(user.attachments)

    def set_attachments(self, chips: list[Any]) -> None:
        """Show the attachments' chips under the bubble (right-aligned; click: open)."""
        if not chips and self.chips is None:
            return
        if self.chips is None:
            from ui.chat.composer.attachments import ChipRow

            self.chips = ChipRow(parent=self)
            self.chips.open_requested.connect(self.attachment_clicked)
            layout = self.layout()
            assert isinstance(layout, QVBoxLayout)
            holder = QHBoxLayout()
            holder.setContentsMargins(0, 0, 0, 0)
            holder.addStretch(1)
            holder.addWidget(self.chips, 0)
            layout.insertLayout(1 + (1 if self.note_block is not None else 0), holder)
        self.chips.set_items(chips)

    def set_turn(self, turn_id: str | None, sibling_index: int = 0, sibling_count: int = 1) -> None:
        self.turn_id = turn_id
        self.sibling_index = sibling_index
        self.sibling_count = sibling_count
        if self._buttons_made or sibling_count > 1:
            self._update_branch()

    def _branch(self, direction: int) -> None:
        if self.turn_id is not None:
            self.branch_requested.emit(self.turn_id, direction)

    def _set_hover(self, on: bool) -> None:
        if not on and not self._buttons_made:
            return
        self._make_buttons()
        self.copy_button.setVisible(on)
        self.edit_button.setVisible(on and self.turn_id is not None)

    def enterEvent(self, event: QEnterEvent) -> None:
        self._set_hover(True)
        super().enterEvent(event)

    def leaveEvent(self, event: QEvent) -> None:
        self._set_hover(False)
        super().leaveEvent(event)

    def begin_edit(self) -> None:
        """Replace the bubble with an editor (:class:`~ui.chat.composer.message_editor.MessageEditor`): the text and
        the attachments, removable, more addable; Save & resend forks the thread with exactly what it shows."""
        if self.editor is not None or self.turn_id is None:
            return
        from ui.chat.composer.message_editor import MessageEditor

        editor = MessageEditor(self.text, parent=self)
        layout = self.layout()
        assert isinstance(layout, QVBoxLayout)
        layout.insertWidget(0, editor)
        self.bubble.setVisible(False)  # kept; hidden while editing
        if self.chips is not None:
            self.chips.setVisible(False)  # the editor's own chips say what goes
        self.editor = editor
        box = editor.edit

        def finish(submit: bool) -> None:
            if self.editor is not editor:
                return  # finished already (a key and a click)
            text = editor.text()
            attachments = editor.attachments()
            if submit and text and not editor.accepts(attachments):
                return  # the window said why (a model that does not see the images): the editor stays
            editor.deleteLater()
            self.editor = None
            self.bubble.setVisible(True)
            if self.chips is not None:
                self.chips.setVisible(bool(self.chips.chips))
            composer = getattr(self.window(), "composer", None)
            if composer is not None:
                composer.focus()  # the keyboard goes back to the message box, not nowhere
            if submit and text and self.turn_id is not None:
                from workspace.changes import compose_user_message

                # the fork replaces this message: it carries the same review outcome to the model
                self.edit_submitted.emit(self.turn_id, compose_user_message(self.note, text), attachments)

        editor.finished.connect(finish)
        self._edit_box = box
        self._edit_finish = finish
        self.editor_opened.emit(editor, [chip.item for chip in self.chips.chips] if self.chips is not None else [])
        if self.editor is editor:
            editor.show()  # now, not when the layout gets to it: the box takes the keyboard at once
            box.setFocus()


class RobotHeader(QWidget):
    def __init__(self, robot: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 0)
        layout.setSpacing(8)
        avatar = QLabel(self)
        color = theme.badge_color(robot)
        avatar.setPixmap(theme.icon("robot", color, 18).pixmap(18, 18))
        layout.addWidget(avatar)
        name = QLabel(robot, self)
        name.setObjectName("RobotName")
        name.setProperty("badge", str(theme.badge_index(robot)))  # its colour: ui.theme.chat_rules
        layout.addWidget(name)
        layout.addStretch(1)


class FooterFigures(QLabel):
    """A footer's figures: on one line where the row has room (a wrapping label would ask for less), wrapped
    between the figures in a narrow column (never wider than it)."""

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()
        return QSize(max(hint.width(), self.fontMetrics().horizontalAdvance(self.text()) + 4), hint.height())


class RunFooter(QWidget):
    """Under a robot's answer: usage (tokens, cost, time), copy, regenerate."""

    regenerate_requested = Signal(str)  # user turn id

    def __init__(self, *, turn_id: str | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.turn_id = turn_id
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 6)
        layout.setSpacing(4)
        # How the run ended: it takes the row's free width (a long one wraps across it, not in a narrow
        # column); one line ending in "…" when an error card above says it all.
        self.status = FooterStatus(self)
        self.status.setObjectName("Muted")
        layout.addWidget(self.status, 1)
        self.usage = FooterFigures("", self)
        self.usage.setObjectName("Muted")
        self.usage.setWordWrap(True)  # the speed and times make it long: it wraps rather than widen the column
        self.usage.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        layout.addWidget(self.usage)
        self.copy_button = _icon_button("copy", "Copy the answer as Markdown (Ctrl+Shift+C: the last one)", self)
        self.copy_button.setAccessibleName("Copy the answer as Markdown")
        self.regen_button = _icon_button("regenerate", "Regenerate the answer (forks the thread)", self)
        self.regen_button.setAccessibleName("Regenerate the answer")
        self.regen_button.clicked.connect(self._regen)
        layout.addWidget(self.copy_button)
        layout.addWidget(self.regen_button)
        self.regen_button.setEnabled(turn_id is not None)

    def _regen(self) -> None:
        if self.turn_id is not None:
            self.regenerate_requested.emit(self.turn_id)

    def set_usage(self, input_tokens: int, output_tokens: int, cost: float | None, duration: float | None,
                  *, calls: list[Any] | None = None, estimated: bool = False, priced: bool = False,
                  first_token: float | None = None, speed: float | None = None) -> None:
        """``estimated``: the server reported no usage (the counts are ours: "~N in · ~N out tokens
        (estimated)"); ``priced``: a language model whose cost None means "cost unknown" (never free);
        ``first_token``: seconds to the first token; ``speed``: output tokens a second while it streamed."""
        total = input_tokens + output_tokens
        mark = "~" if estimated else ""
        parts = [f"{mark}{input_tokens:,} in · {mark}{output_tokens:,} out tokens"
                 + (" (estimated)" if estimated else "")] if total else []
        if speed is not None:
            parts.append(f"{mark}{speed:,.1f} tok/s")
        if first_token is not None:
            parts.append(f"{first_token:.2f} s to first token")
        if cost:
            parts.append(f"${cost:.4f}")
        elif cost is None and total and priced:
            parts.append("cost unknown")
        if duration:
            parts.append(format_duration(duration))
        # A narrow column wraps the figures between them, never inside one ("290 in · 162 out tokens").
        self.usage.setText(figures_text(parts, "  ·  "))
        tip = [f"This answer: {mark}{input_tokens:,} input + {mark}{output_tokens:,} output tokens"
               + (f", ${cost:.6f}" if cost else "")]
        if speed is not None:
            tip.append(f"Speed: {mark}{speed:,.1f} output tokens a second while the model wrote "
                       "(from each model call's first token to its end)")
        if first_token is not None:
            tip.append(f"Time to first token: {first_token:.2f} s after the message was sent")
        if estimated:
            tip.append("The server reported no usage: the counts are estimates.")
        for i, call in enumerate(calls or [], 1):
            tip.append(f"model call {i}: {'~' if call.estimated else ''}{call.input_tokens:,} in, "
                       f"{call.output_tokens:,} out" + (f", ${call.cost:.6f}" if call.cost else ""))
        self.usage.setToolTip("\n".join(tip))

    def set_status(self, text: str, tone: str | None = None) -> None:
        """``tone``: "muted", "warning" or "error" (its colour: a rule of the theme, ``ui.theme.chat_rules``)."""
        self.status.setText(text)
        if tone and self.status.property("tone") != tone:
            self.status.setProperty("tone", tone)
            if self.status.testAttribute(Qt.WidgetAttribute.WA_WState_Polished):
                self.status.style().unpolish(self.status)
                self.status.style().polish(self.status)

    def apply(self, run: RunState) -> None:
        """Show a run's footer state: its totals (and time, once ended), how it ended."""
        self.turn_id = run.turn.turn_id
        self.regen_button.setEnabled(self.turn_id is not None)
        totals, end = run.totals, run.end
        self.set_usage(totals.input_tokens, totals.output_tokens, totals.cost, end.duration if end else None,
                       calls=run.model_calls, estimated=totals.estimated, priced=run.language_model,
                       first_token=run.time_to_first_token, speed=run.tokens_per_second)
        if end is None or not end.status_text:  # while it runs, the chat's activity line says what it waits for
            return
        if end.outcome == "failed":
            tone = "error"
        elif end.outcome in ("cancelled", "interrupted"):
            tone = "muted"
        else:
            tone = "warning"
        # A failed run whose error card shows above: one line here (the card has the message and its fix).
        self.status.brief = end.outcome == "failed" and any(
            isinstance(i, ErrorItem) and i.run is run for i in run.turn.items)
        self.set_status(end.status_text, tone)




class FooterStatus(ElidedLabel):
    """A run footer's status: the whole text, wrapped across the row; or (``brief``) one line that ends
    in "…" with the whole text in its tooltip. ``text()`` is always the whole text."""

    def __init__(self, parent: QWidget | None = None) -> None:
        self.brief = False
        super().__init__("", parent, tooltip=True)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

    def setText(self, text: str) -> None:
        self.setWordWrap(not self.brief)
        self._full = ""  # always lay it out again: ``brief`` may have changed
        super().setText(text)

    def _elide(self) -> None:
        if self.brief:
            super()._elide()
            return
        if QLabel.text(self) != self._full:
            QLabel.setText(self, self._full)
        self.setToolTip("")

    def sizeHint(self) -> QSize:
        return super().sizeHint() if self.brief else QLabel.sizeHint(self)

    def minimumSizeHint(self) -> QSize:
        return super().minimumSizeHint() if self.brief else QLabel.minimumSizeHint(self)


class ThinkingBlock(QFrame):
    """The model's thinking above its answer: a "Thinking…" header that opens and closes the text under
    it; open while it streams, folded once the answer begins (the presenter decides: :meth:`apply`)."""

    toggle_requested = Signal(bool)  # collapsed

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ThinkingBlock")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        layout.setSpacing(2)
        self.toggle = QToolButton(self)
        self.toggle.setObjectName("GhostButton")
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setArrowType(Qt.ArrowType.DownArrow)
        self.toggle.setCheckable(True)
        self.toggle.setAutoRaise(True)
        self.toggle.setCursor(Qt.CursorShape.PointingHandCursor)
        self.toggle.setAccessibleName("Show or hide the model's thinking")
        self.toggle.clicked.connect(lambda checked: self.toggle_requested.emit(not checked))
        layout.addWidget(self.toggle, 0, Qt.AlignmentFlag.AlignLeft)
        self.body = QLabel("", self)
        self.body.setObjectName("ThinkingText")
        self.body.setWordWrap(True)
        self.body.setTextFormat(Qt.TextFormat.PlainText)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.body)
        self.collapsed = False

    @property
    def text(self) -> str:
        return self.body.text()

    def apply(self, item: ReasoningItem) -> None:
        self.toggle.setText(item.title)
        if self.body.text() != item.text:
            self.body.setText(item.text)
        self.collapsed = item.collapsed
        self.toggle.setChecked(not item.collapsed)
        self.toggle.setArrowType(Qt.ArrowType.RightArrow if item.collapsed else Qt.ArrowType.DownArrow)
        self.body.setVisible(not item.collapsed)


#: The icon of a notice line of each level.
NOTICE_ICONS = {"info": "info", "warning": "warning", "error": "error"}


class NoticeLine(QWidget):
    """A line about how a run goes (MCP servers starting, a fallback model, a compaction, an answer cut
    off), muted, amber or red by its level; with details, a "Show" link unfolds them under it; with an
    action, a button beside it (``action_requested``)."""

    action_requested = Signal(str)

    def __init__(self, text: str, *, level: str = "info", details: str | None = None, action: str | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("NoticeLine")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        layout.setSpacing(2)
        row = QHBoxLayout()
        row.setSpacing(6)
        c = theme.colors()
        color = {"warning": c.warning, "error": c.error}.get(level, c.muted)
        # A drawn icon, not a symbol character: "ⓘ" is a blank box where the font has no such glyph.
        self.mark = QLabel(self)
        self.mark.setObjectName("NoticeMark")
        size = max(12, self.fontMetrics().height() - 3)
        self.mark.setPixmap(theme.icon(NOTICE_ICONS.get(level, "info"), color, size).pixmap(size, size))
        self.mark.setFixedSize(size, self.fontMetrics().height())
        self.mark.setAlignment(Qt.AlignmentFlag.AlignCenter)
        row.addWidget(self.mark, 0, Qt.AlignmentFlag.AlignTop)
        self.label = QLabel(text, self)
        self.label.setObjectName("NoticeText")
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.label.setProperty("level", level if level in ("warning", "error") else "info")  # ui.theme.chat_rules
        self.label.setAccessibleName(f"{level}: {text}")
        row.addWidget(self.label, 1)
        layout.addLayout(row)
        self.action_button: QPushButton | None = None
        if action:
            from ui.chat.model.state import NOTICE_ACTIONS

            self.action_button = QPushButton(NOTICE_ACTIONS.get(action, action), self)
            self.action_button.setCursor(Qt.CursorShape.PointingHandCursor)
            self.action_button.clicked.connect(lambda: self.action_requested.emit(action))
            row.addWidget(self.action_button, 0, Qt.AlignmentFlag.AlignTop)
        self.details: RichLabel | None = None
        self.toggle: QToolButton | None = None
        if details:
            self.toggle = QToolButton(self)
            self.toggle.setObjectName("GhostButton")
            self.toggle.setText("Show")
            self.toggle.setCheckable(True)
            self.toggle.setAccessibleName("Show the details")
            self.toggle.toggled.connect(self._toggled)
            row.addWidget(self.toggle, 0, Qt.AlignmentFlag.AlignTop)
            self.details = RichLabel("", self)
            self.details.set_markdown(details)
            self.details.setVisible(False)
            layout.addWidget(self.details)

    def _toggled(self, shown: bool) -> None:
        if self.details is not None and self.toggle is not None:
            self.details.setVisible(shown)
            self.toggle.setText("Hide" if shown else "Show")
