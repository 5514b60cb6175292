"""The conversation: a centred, readable column of user messages, robot text and tool cards.

Streaming text is rendered incrementally: a robot message is a stack of rich-text
segments; finished Markdown blocks are frozen into a segment once it is big enough, and
only the last (live) segment is re-rendered when text arrives. Nothing above the tail
moves while text streams. Long threads render their last turns first and load earlier
ones on demand (a button at the top, or scrolling up to it).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QEnterEvent, QGuiApplication
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QTextEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ui import markdown, theme
from ui.models.tool_calls import format_duration
from ui.widgets.cards import ApprovalPanel, ChangeCard, ToolCard
from ui.widgets.common import RichLabel
from ui.widgets.lanes import LaneGroup, TaskLane, lane_of
from ui.widgets.stream import MarkdownStream

if TYPE_CHECKING:
    import asyncio

#: Turns rendered when a thread opens; earlier ones load on demand.
INITIAL_TURNS = 10
LOAD_MORE_TURNS = 40
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

    edit_submitted = Signal(str, str)  # turn id, new text
    branch_requested = Signal(str, int)  # turn id, +1 / -1

    def resizeEvent(self, event: Any) -> None:
        # The bubble's label is as wide as its longest line, up to what the row has room for.
        room = max(60, self.width() - 80)
        natural = getattr(self, "_natural", 0)
        if natural:
            self.label.setMinimumWidth(min(natural, room))
        super().resizeEvent(event)

    def __init__(self, text: str, *, turn_id: str | None = None, sibling_index: int = 0, sibling_count: int = 1,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("UserRow")
        from workspace.changes import split_user_message

        # The review outcome sent in front of the message shows as its own small block (set_note).
        note, text = split_user_message(text)
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
            from ui.review.note import ReviewNoteBlock

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
        self.branch_label = QLabel("", self.action_row)
        self.branch_label.setObjectName("Muted")
        self.next_button = _icon_button("chevron-right", "Next version", self.action_row)
        self.prev_button.clicked.connect(lambda: self._branch(-1))
        self.next_button.clicked.connect(lambda: self._branch(+1))
        for w in (self.prev_button, self.branch_label, self.next_button):
            al.addWidget(w)
        self.copy_button = _icon_button("copy", "Copy", self.action_row)
        self.copy_button.clicked.connect(lambda: QGuiApplication.clipboard().setText(self.text))
        self.edit_button = _icon_button("edit", "Edit and resend (forks the thread)", self.action_row)
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
        """Replace the bubble with an editor: Save & resend forks the thread."""
        if self.editor is not None or self.turn_id is None:
            return
        editor = QFrame(self)
        editor.setObjectName("EditBox")
        el = QVBoxLayout(editor)
        el.setContentsMargins(10, 8, 10, 8)
        box = QPlainTextEdit(editor)
        box.setPlainText(self.text)
        box.setFixedHeight(max(70, min(220, box.fontMetrics().lineSpacing() * (self.text.count("\n") + 3) + 16)))
        el.addWidget(box)
        row = QHBoxLayout()
        note = QLabel("Sending creates a new branch; the original stays one click away.", editor)
        note.setObjectName("Muted")
        row.addWidget(note)
        row.addStretch(1)
        cancel = QPushButton("Cancel", editor)
        send = QPushButton("Save && resend", editor)
        send.setObjectName("PrimaryButton")
        row.addWidget(cancel)
        row.addWidget(send)
        el.addLayout(row)
        layout = self.layout()
        assert isinstance(layout, QVBoxLayout)
        layout.insertWidget(0, editor)
        self.bubble.parentWidget()  # keep the bubble; hide it while editing
        self.bubble.setVisible(False)
        self.editor = editor
        box.setFocus()

        def finish(submit: bool) -> None:
            text = box.toPlainText().strip()
            editor.deleteLater()
            self.editor = None
            self.bubble.setVisible(True)
            if submit and text and self.turn_id is not None:
                from workspace.changes import compose_user_message

                # the fork replaces this message: it carries the same review outcome to the model
                self.edit_submitted.emit(self.turn_id, compose_user_message(self.note, text))

        cancel.clicked.connect(lambda: finish(False))
        send.clicked.connect(lambda: finish(True))
        self._edit_box = box
        self._edit_finish = finish


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
        name.setStyleSheet(f"color: {color}; font-weight: 600;")
        layout.addWidget(name)
        layout.addStretch(1)


class RunFooter(QWidget):
    """Under a robot's answer: usage (tokens, cost, time), copy, regenerate."""

    regenerate_requested = Signal(str)  # user turn id

    def __init__(self, *, turn_id: str | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.turn_id = turn_id
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 6)
        layout.setSpacing(4)
        self.status = QLabel("", self)
        self.status.setObjectName("Muted")
        layout.addWidget(self.status)
        layout.addStretch(1)
        self.usage = QLabel("", self)
        self.usage.setObjectName("Muted")
        layout.addWidget(self.usage)
        self.copy_button = _icon_button("copy", "Copy the answer", self)
        self.regen_button = _icon_button("regenerate", "Regenerate the answer (forks the thread)", self)
        self.regen_button.clicked.connect(self._regen)
        layout.addWidget(self.copy_button)
        layout.addWidget(self.regen_button)
        self.regen_button.setEnabled(turn_id is not None)

    def _regen(self) -> None:
        if self.turn_id is not None:
            self.regenerate_requested.emit(self.turn_id)

    def set_usage(self, input_tokens: int, output_tokens: int, cost: float | None, duration: float | None,
                  *, calls: list[Any] | None = None) -> None:
        parts = [f"{input_tokens + output_tokens:,} tokens"] if input_tokens or output_tokens else []
        if cost:
            parts.append(f"${cost:.4f}")
        if duration:
            parts.append(format_duration(duration))
        self.usage.setText("  ·  ".join(parts))
        tip = [f"This answer: {input_tokens:,} input + {output_tokens:,} output tokens"
               + (f", ${cost:.6f}" if cost else "")]
        for i, call in enumerate(calls or [], 1):
            tip.append(f"model call {i}: {call.input_tokens:,} in, {call.output_tokens:,} out"
                       + (f", ${call.cost:.6f}" if call.cost else ""))
        self.usage.setToolTip("\n".join(tip))

    def set_status(self, text: str, color: str | None = None) -> None:
        self.status.setText(text)
        if color:
            self.status.setStyleSheet(f"color: {color};")


@dataclass
class RunBlock:
    """The widgets of one run in the column."""

    run_id: str
    robot: str
    turn_id: str | None = None
    text: MarkdownStream | None = None
    texts: list[MarkdownStream] = field(default_factory=list)
    cards: dict[str, ToolCard] = field(default_factory=dict)
    footer: RunFooter | None = None
    last_robot: str | None = None
    started: float = field(default_factory=time.monotonic)
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    ended: bool = False
    calls: list[Any] = field(default_factory=list)
    #: The task lane this run's widgets go into (a task of a network run), else None.
    lane: TaskLane | None = None


class ChatView(QScrollArea):
    """The transcript column. Fed by the bridge (live) or by a stored transcript (replay)."""

    edit_submitted = Signal(str, str)
    review_requested = Signal(str)  # change set id
    change_undo_requested = Signal(str, str, bool)  # change set id, checkpoint id, redo
    regenerate_requested = Signal(str)
    branch_requested = Signal(str, int)
    example_clicked = Signal(str)
    connect_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ChatView")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        canvas = QWidget(self)
        canvas.setObjectName("ChatCanvas")
        row = QHBoxLayout(canvas)
        row.setContentsMargins(24, 12, 24, 24)
        row.addStretch(1)
        self.column = QWidget(canvas)
        self.column.setObjectName("ChatColumn")
        self.column.setMaximumWidth(COLUMN_MAX_WIDTH)
        self.column.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Minimum)
        row.addWidget(self.column, 100)
        row.addStretch(1)
        self._layout = QVBoxLayout(self.column)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(6)
        self._layout.addStretch(1)  # keeps content at the top
        self.setWidget(canvas)
        self._stick = True
        bar = self.verticalScrollBar()
        bar.rangeChanged.connect(self._on_range_changed)
        bar.valueChanged.connect(self._on_scrolled)
        self._runs: dict[str, RunBlock] = {}
        self._users: list[UserMessage] = []
        self._pending_turns: list[Any] = []
        self._turn_renderer: Callable[[Any], None] | None = None
        self._more_button: QPushButton | None = None
        self._empty: QWidget | None = None
        self._last_user_turn: str | None = None
        self.approvals: list[ApprovalPanel] = []
        self._waiting_approvals: dict[str, tuple[Any, asyncio.Future[Any]]] = {}
        #: Network runs shown (lanes by task), by the network run's id; the latest one.
        self.lane_groups: dict[str, LaneGroup] = {}
        self._lane_group: LaneGroup | None = None

    # -- items -----------------------------------------------------------------------------
    def _add(self, widget: QWidget, *, at_top: bool = False) -> QWidget:
        if self._empty is not None:
            self._empty.deleteLater()
            self._empty = None
        if at_top:
            index = 1 if self._more_button is not None else 0
            self._layout.insertWidget(index, widget)
        else:
            self._layout.insertWidget(self._layout.count() - 1, widget)
        return widget

    def items(self) -> list[QWidget]:
        out = []
        for i in range(self._layout.count()):
            item = self._layout.itemAt(i)
            widget = item.widget() if item is not None else None
            if widget is not None and widget is not self._more_button and widget is not self._empty:
                out.append(widget)
        return out

    def remove(self, widget: QWidget) -> None:
        self._layout.removeWidget(widget)
        if widget in self._users:
            self._users.remove(widget)
        widget.deleteLater()

    def tool_cards(self) -> list[ToolCard]:
        cards: list[ToolCard] = []
        for w in self.items():
            if isinstance(w, ToolCard):
                cards.append(w)
            elif isinstance(w, TaskLane):
                cards += w.tool_cards()
        return cards

    def lanes(self) -> list[TaskLane]:
        """Every task lane shown, in order."""
        return [w for w in self.items() if isinstance(w, TaskLane)]

    def user_messages(self) -> list[UserMessage]:
        return [w for w in self.items() if isinstance(w, UserMessage)]

    def clear(self) -> None:
        for widget in self.items():
            self._layout.removeWidget(widget)
            widget.deleteLater()
        if self._more_button is not None:
            self._more_button.deleteLater()
            self._more_button = None
        if self._empty is not None:
            self._empty.deleteLater()
            self._empty = None
        self._runs.clear()
        self._users.clear()
        for group in self.lane_groups.values():
            group.deleteLater()
        self.lane_groups.clear()
        self._lane_group = None
        self._pending_turns = []
        self.approvals = []
        self._waiting_approvals = {}
        self._stick = True

    def show_empty(self, *, robot: str, model_label: str, is_language_model: bool, examples: list[str]) -> None:
        self.clear()
        c = theme.colors()
        box = QFrame(self.column)
        box.setObjectName("EmptyState")
        layout = QVBoxLayout(box)
        layout.setContentsMargins(24, 60, 24, 24)
        layout.setSpacing(10)
        icon = QLabel(box)
        icon.setPixmap(theme.app_icon().pixmap(72, 72))
        icon.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        layout.addWidget(icon)
        title = QLabel(f"Chat with <b>{markdown._esc(robot)}</b>", box)
        title.setObjectName("EmptyTitle")
        title.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        layout.addWidget(title)
        sub = QLabel(model_label, box)
        sub.setObjectName("Muted")
        sub.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        layout.addWidget(sub)
        if not is_language_model:
            hint = RichLabel(
                f'<div align="center" style="color:{c.muted};">No language model is connected, so replies come from '
                "a small rule-based demo that still uses real tools. "
                f'<a href="settings:" style="color:{c.accent};">Connect a model</a> — an API key (OpenAI, '
                "Anthropic, …) or a local server such as Ollama.</div>", box)
            hint.setOpenExternalLinks(False)
            hint.linkActivated.connect(lambda _link: self.connect_requested.emit())
            hint.setAlignment(Qt.AlignmentFlag.AlignHCenter)
            layout.addWidget(hint)
        from ui.widgets.cards import FlowRow

        chips = FlowRow(spacing=8, center=True)  # wraps onto more rows in a narrow column
        for example in examples:
            chip = QPushButton(example, box)
            chip.setObjectName("ExampleChip")
            chip.setCursor(Qt.CursorShape.PointingHandCursor)
            chip.clicked.connect(lambda _=False, text=example: self.example_clicked.emit(text))
            chips.addWidget(chip)
        layout.addLayout(chips)
        layout.addStretch(1)
        self._layout.insertWidget(0, box)
        self._empty = box

    # -- user turns -------------------------------------------------------------------------
    def add_user(self, text: str, *, turn_id: str | None = None, sibling_index: int = 0, sibling_count: int = 1,
                 at_top: bool = False) -> UserMessage:
        msg = UserMessage(text, turn_id=turn_id, sibling_index=sibling_index, sibling_count=sibling_count,
                          parent=self.column)
        msg.edit_submitted.connect(self.edit_submitted)
        msg.branch_requested.connect(self.branch_requested)
        self._add(msg, at_top=at_top)
        self._users.append(msg)
        self._last_user_turn = turn_id
        if not at_top:
            self._stick = True
        return msg

    # -- live run events ----------------------------------------------------------------------
    def _block(self, run_id: str, robot: str) -> RunBlock:
        block = self._runs.get(run_id)
        if block is None:
            block = RunBlock(run_id=run_id, robot=robot, turn_id=self._last_user_turn)
            self._runs[run_id] = block
            group = self._lane_group
            if group is not None and not group.ended and run_id not in self.lane_groups:
                block.lane = group.lane_for_robot(robot)  # a task's run: into the task's lane
        return block

    def _add_to(self, block: RunBlock, widget: QWidget) -> None:
        """Add a run's widget; the run's footer (usage) stays below everything of the run."""
        if block.lane is not None:  # a task of a network run: into its lane
            block.lane.add_widget(widget)
            return
        self._add(widget)
        if block.footer is not None:
            self._layout.removeWidget(block.footer)
            self._add(block.footer)

    def _header(self, block: RunBlock, robot: str) -> None:
        if block.lane is not None:  # the lane's header names the robot
            return
        if block.last_robot != robot:
            self._add_to(block, RobotHeader(robot, self.column))
            block.last_robot = robot

    def start_run(self, run_id: str, robot: str, *, turn_id: str | None = None,
                  task: str | None = None) -> RunBlock:
        block = self._block(run_id, robot)
        if turn_id is not None:
            block.turn_id = turn_id
        if task and block.lane is None and self._lane_group is not None:
            block.lane = self._lane_group.lane(task) or self._lane_group.lane_for_robot(robot)
        return block

    # -- network runs: one lane per task ----------------------------------------------------
    def task_event(self, event: Any) -> TaskLane | None:
        """A ``task_started`` / ``task_finished`` of a network run: the task's lane starts or ends."""
        group = self.lane_groups.get(event.run_id)
        if group is None:
            network = self._block(event.run_id, event.robot)
            group = LaneGroup(event.run_id, network.robot, add=functools.partial(self._add_to, network),
                              parent=self.column)
            self.lane_groups[event.run_id] = group
            self._lane_group = group
        return group.on_task_event(event)

    def lane(self, task: str, run_id: str | None = None) -> TaskLane | None:
        """The lane of ``task`` in network run ``run_id`` (default: the latest network run)."""
        group = self.lane_groups.get(run_id) if run_id else self._lane_group
        return group.lane(task) if group is not None else None

    def reveal_task(self, task: str) -> bool:
        """Open the task's lane (latest network run) and scroll to it."""
        lane = self.lane(task)
        if lane is None:
            return False
        lane.expand()
        QTimer.singleShot(0, lambda: self.ensureWidgetVisible(lane, 0, 60))
        return True

    def append_text(self, run_id: str, robot: str, text: str) -> None:
        block = self._block(run_id, robot)
        if block.text is None:
            self._header(block, robot)
            block.text = MarkdownStream("", self.column)
            block.texts.append(block.text)
            self._add_to(block, block.text)
        block.text.append(text)

    def complete_text(self, run_id: str, robot: str, text: str) -> None:
        """A model turn's text is complete: make sure it shows exactly ``text``; later text starts anew."""
        block = self._block(run_id, robot)
        if block.text is None:
            self.append_text(run_id, robot, text)
        elif block.text.text != text:
            block.text.set_text(text)
        block.text = None

    def add_tool_use(self, event: Any) -> ToolCard:
        block = self._block(event.run_id, event.robot)
        self._header(block, event.robot)
        block.text = None
        existing = block.cards.get(event.id)
        if existing is not None:
            return existing
        card = ToolCard(call_id=event.id, tool=event.name, robot=event.robot, server=getattr(event, "server", None),
                        arguments=event.input, parent=self.column)
        block.cards[event.id] = card
        self._add_to(block, card)
        waiting = self._waiting_approvals.pop(event.id, None)
        if waiting is not None:
            self._attach_approval(*waiting)
        return card

    def add_change(self, event: Any) -> ChangeCard:
        """A ``change_proposed`` event: a card listing the files, with a way to review them."""
        existing = self.change_card(event.change_set_id)
        if existing is not None and existing.status == "pending":
            existing.add_files(list(event.files))
            return existing
        block = self._block(event.run_id, event.robot)
        self._header(block, event.robot)
        block.text = None
        card = ChangeCard(change_set_id=event.change_set_id, robot=event.robot, files=list(event.files),
                          parent=self.column)
        card.review_requested.connect(self.review_requested)
        card.undo_requested.connect(self.change_undo_requested)
        self._add_to(block, card)
        return card

    def change_card(self, change_set_id: str) -> ChangeCard | None:
        for w in reversed(self.items()):
            if isinstance(w, ChangeCard) and w.change_set_id == change_set_id:
                return w
        return None

    def change_decided(self, event: Any) -> None:
        card = self.change_card(event.change_set_id)
        if card is not None:
            card.set_outcome(list(event.outcome), checkpoint_id=getattr(event, "checkpoint_id", None))

    def card(self, call_id: str) -> ToolCard | None:
        for block in self._runs.values():
            if call_id in block.cards:
                return block.cards[call_id]
        return None

    def _card_in_run(self, call_id: str, run_id: str | None) -> ToolCard | None:
        """The card of a call, looked up in its own run first (call ids repeat across a network's tasks)."""
        block = self._runs.get(run_id) if run_id else None
        found = block.cards.get(call_id) if block is not None else None
        return found or self.card(call_id)

    def tool_finished(self, event: Any) -> None:
        card = self._card_in_run(event.id, event.run_id) or self.add_tool_use(event)
        if event.kind == "tool_result":
            card.set_result(event.payload, event.duration)
        else:
            denied = str(event.error).startswith("Denied by the user") or "approval policy denies" in str(event.error)
            card.set_error(event.error, event.duration, denied=denied)

    def approval_decided(self, event: Any) -> None:
        card = self._card_in_run(event.id, event.run_id)
        if card is not None and card.approval is None:
            card.mark_decided(event.decision, event.reason, event.scope)

    def ask_approval(self, request: Any, future: asyncio.Future[Any]) -> None:
        """Show the approval inline in the tool's card (once its tool_use has arrived)."""
        if self._card_in_run(request.call_id, getattr(request, "run_id", None)) is not None:
            self._attach_approval(request, future)
            return
        # The gate asks before the bridge has delivered the tool_use event: wait for the card.
        self._waiting_approvals[request.call_id] = (request, future)
        QTimer.singleShot(400, lambda: self._approval_fallback(request.call_id))

    def _approval_fallback(self, call_id: str) -> None:
        waiting = self._waiting_approvals.pop(call_id, None)
        if waiting is None:
            return
        request, future = waiting
        if future.done():
            return
        fake = _Shim(id=request.call_id, name=request.tool, robot=request.robot, server=request.server,
                     input=request.input, run_id=request.run_id or "approval")
        self.add_tool_use(fake)

    def _attach_approval(self, request: Any, future: asyncio.Future[Any]) -> ApprovalPanel | None:
        card = self._card_in_run(request.call_id, getattr(request, "run_id", None))
        if card is None or future.done():
            return None
        lane = lane_of(card)
        if lane is not None:  # a robot of a network asks: open its lane
            lane.expand()
        panel = card.ask_approval(request, future)
        self.approvals.append(panel)
        panel.finished.connect(lambda _d, p=panel: self.approvals.remove(p) if p in self.approvals else None)
        def reveal() -> None:
            self.ensureWidgetVisible(panel, 0, 40)
            # Never take the keyboard from someone typing (their "y" would approve unseen):
            # the card gets focus only when no text field has it; Ctrl+J goes to it otherwise.
            if not _is_text_entry(QApplication.focusWidget()):
                panel.setFocus()

        QTimer.singleShot(0, reveal)
        return panel

    def pending_approval(self) -> ApprovalPanel | None:
        for panel in self.approvals:
            if not panel.done:
                return panel
        return None

    def add_usage(self, event: Any) -> None:
        block = self._block(event.run_id, event.robot)
        block.input_tokens = event.total_input_tokens
        block.output_tokens = event.total_output_tokens
        block.cost = event.total_cost
        block.calls.append(event)
        if block.lane is not None:  # a task's usage shows in its lane's header
            block.lane.set_usage(block.input_tokens, block.output_tokens, block.cost)
            return
        footer = self._footer(block)
        footer.set_usage(block.input_tokens, block.output_tokens, block.cost, None, calls=block.calls)

    def _footer(self, block: RunBlock) -> RunFooter:
        if block.footer is None:
            block.footer = RunFooter(turn_id=block.turn_id, parent=self.column)
            block.footer.regenerate_requested.connect(self.regenerate_requested)
            texts = block.texts

            def copy() -> None:
                QGuiApplication.clipboard().setText("\n\n".join(t.text for t in texts))

            block.footer.copy_button.clicked.connect(copy)
        else:
            self._layout.removeWidget(block.footer)
        self._add(block.footer)
        return block.footer

    def end_run(self, event: Any, *, duration: float | None = None) -> None:
        block = self._block(event.run_id, event.robot)
        if block.lane is not None:  # an interrupted task's run: the end belongs to its network run
            block.text = None
            group = next((g for g in self.lane_groups.values() if block.lane in g.lanes.values()), None)
            if group is None:
                return
            block = self._block(group.run_id, group.network)
            event = event.replace(run_id=group.run_id, robot=group.network) if hasattr(event, "replace") else event
        group = self.lane_groups.get(event.run_id)
        if group is not None:
            group.finish(event)
        block.text = None
        block.ended = True
        c = theme.colors()
        footer = self._footer(block)
        result = getattr(event, "result", None) or getattr(event, "partial", None)
        usage = getattr(result, "usage", None)
        if usage is not None and (usage.input_tokens or usage.output_tokens):
            block.input_tokens, block.output_tokens, block.cost = usage.input_tokens, usage.output_tokens, usage.cost
        took = duration if duration is not None else getattr(result, "duration", None)
        footer.set_usage(block.input_tokens, block.output_tokens, block.cost, took, calls=block.calls)
        if event.kind == "run_cancelled":
            reason = event.reason or "stopped by the user"
            footer.set_status("■ Stopped by you" if reason == "stopped by the user" else f"■ Stopped — {reason}",
                              c.muted)
            footer.status.setWordWrap(True)
            for card in block.cards.values():
                if card.approval is not None and not card.approval.done:
                    card.approval.future.cancel()
        elif event.kind == "run_failed":
            footer.set_status(f"Failed — {event.error}", c.error)
            footer.status.setWordWrap(True)
        elif getattr(result, "stop_reason", None) == "max_turns":
            footer.set_status("■ Stopped at the turn limit — the robot wanted to go on (raise agent.max_turns in "
                              "config.yaml, or send “continue” to let it go on)", c.warning)
            footer.status.setWordWrap(True)

    # -- replay of stored turns -------------------------------------------------------------
    def set_turns(self, turns: list[Any], render_turn: Callable[[Any], None], *,
                  initial: int = INITIAL_TURNS) -> None:
        """Show ``turns`` (oldest first) with ``render_turn``; only the last ``initial`` now."""
        self.clear()
        self._turn_renderer = render_turn
        self._pending_turns = list(turns[:-initial]) if len(turns) > initial else []
        for turn in turns[-initial:]:
            render_turn(turn)
        self._update_more_button()
        self._stick = True
        QTimer.singleShot(0, self.scroll_to_bottom)

    def _update_more_button(self) -> None:
        if self._pending_turns and self._more_button is None:
            self._more_button = QPushButton("", self.column)
            self._more_button.setObjectName("LoadMore")
            self._more_button.clicked.connect(self.load_earlier)
            self._layout.insertWidget(0, self._more_button)
        if self._more_button is not None:
            if self._pending_turns:
                self._more_button.setText(f"Show {min(LOAD_MORE_TURNS, len(self._pending_turns))} earlier turns "
                                          f"({len(self._pending_turns)} not shown)")
            else:
                self._more_button.deleteLater()
                self._more_button = None

    @property
    def hidden_turns(self) -> int:
        return len(self._pending_turns)

    def load_earlier(self) -> None:
        if not self._pending_turns or self._turn_renderer is None:
            return
        bar = self.verticalScrollBar()
        from_bottom = bar.maximum() - bar.value()
        chunk = self._pending_turns[-LOAD_MORE_TURNS:]
        self._pending_turns = self._pending_turns[:-LOAD_MORE_TURNS]
        # Render the chunk at the end, then move its widgets to the top (keeps one code path).
        before = set(map(id, self.items()))
        runs_before = dict(self._runs)
        for turn in chunk:
            self._turn_renderer(turn)
        new = [w for w in self.items() if id(w) not in before]
        for offset, widget in enumerate(new):
            self._layout.removeWidget(widget)
            self._layout.insertWidget(offset + (1 if self._pending_turns else 0), widget)
        self._runs = {**{k: v for k, v in self._runs.items() if k not in runs_before}, **runs_before}
        self._update_more_button()
        self._stick = False
        QTimer.singleShot(0, lambda: bar.setValue(bar.maximum() - from_bottom))

    # -- scrolling ----------------------------------------------------------------------------
    def _on_range_changed(self, _lo: int, hi: int) -> None:
        if self._stick:
            self.verticalScrollBar().setValue(hi)

    def _on_scrolled(self, value: int) -> None:
        bar = self.verticalScrollBar()
        self._stick = value >= bar.maximum() - 24
        if value == 0 and self._pending_turns and bar.maximum() > 0:
            QTimer.singleShot(0, self.load_earlier)

    def scroll_to_bottom(self) -> None:
        self._stick = True
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())


class _Shim:
    """A tool_use-shaped object for an approval whose card is not shown yet."""

    kind = "tool_use"

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


def _is_text_entry(widget: QWidget | None) -> bool:
    if isinstance(widget, QTextEdit | QPlainTextEdit):
        return not widget.isReadOnly()
    if isinstance(widget, QComboBox):
        return widget.isEditable()
    return isinstance(widget, QLineEdit | QAbstractSpinBox)
