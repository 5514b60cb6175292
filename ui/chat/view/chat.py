"""The conversation: a centred, readable column of user messages, robot text and tool cards.

The column shows a :class:`~ui.chat.model.presenter.ChatPresenter`'s view state and nothing else: the
presenter reads the events (live from the bridge, or a stored thread) and tells this view what
changed (:class:`~ui.chat.model.presenter.ChatListener`); the view makes and updates the widgets. So a
reopened thread looks exactly like it did live.

Streaming text is rendered incrementally (:class:`~ui.chat.view.stream.MarkdownStream`): nothing
above the tail moves while text streams. Long threads show their last turns first and load
earlier ones on demand (a button at the top, or scrolling up to it). Only the turns near the screen are
widgets (:class:`~ui.chat.view.virtual.TurnWindow`): the others are spacers, their data in the presenter's
state, so the view's cost does not grow with the thread.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QRect, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from ui.chat.model.bus import BusMessageItem
from ui.chat.model.presenter import LOAD_MORE_TURNS, ChatPresenter, TranscriptSource
from ui.chat.model.state import (
    CallLaneItem,
    ChangeItem,
    ErrorItem,
    HeaderItem,
    Item,
    Lane,
    LaneItem,
    NetworkItem,
    NoticeItem,
    ReasoningItem,
    RunState,
    TextItem,
    TurnState,
    UserState,
)
from ui.chat.model.tool_calls import AskUserItem, ElicitationItem, SamplingItem, ToolCallItem
from ui.chat.view.approval_panel import ApprovalPanel
from ui.chat.view.ask_user_card import AskUserCard
from ui.chat.view.bus_card import BusMessageCard
from ui.chat.view.cards import ToolCard
from ui.chat.view.change_card import ChangeCard
from ui.chat.view.elicitation_form import ElicitationForm
from ui.chat.view.lanes import NetworkHeader, TaskLane
from ui.chat.view.messages import (
    COLUMN_MAX_WIDTH,
    NoticeLine,
    RobotHeader,
    RunFooter,
    ThinkingBlock,
    UserMessage,
)
from ui.chat.view.request_card import RequestCard
from ui.chat.view.run_state import ActivityLine, ChatClock, ErrorCard
from ui.chat.view.sampling_card import SamplingCard
from ui.chat.view.stream import MarkdownStream
from ui.widgets.status import robot_color

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable, Iterator

    from workspace.approval import ApprovalRequest


class ChatColumn(QWidget):
    """The conversation's column: as tall as its messages laid out at its width.

    Wrapped text (a user's bubble, a notice) has a height for each width. A word-wrapping label's
    *minimum* height is the one at its narrowest (every word on a line: a long pasted message
    asks for several times its real height), and a layout's minimum is the sum of its children's:
    the scroll area would make the column that tall and show empty space below the messages. Its
    height comes from :meth:`heightForWidth` instead (what the layout lays out at the column's width).
    """

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        if self.hasHeightForWidth():
            return QSize(hint.width(), 0)
        return hint


class ColumnLayout(QVBoxLayout):
    """The column's layout: it never squeezes its widgets into less than the height they take.

    A widget shown in the column (a reply's header, its activity line) makes Qt run the column's layout at once,
    at the column's height of before, which the new widget no longer fits in: the layout squeezed every message a
    few pixels to make room (every widget under them moved), then gave the pixels back when the scroll area grew
    the canvas a moment later. In a chat full to its screen every widget of the column moved and was repainted
    twice at each part a reply adds before its first words (none at turn 1, whose column fits its screen). Laid
    out at the height its widgets take instead, what does not fit yet runs below the column's bottom, hidden,
    until the canvas grows: nothing above it moves (tests/ui/test_chat_column_no_squeeze.py)."""

    def setGeometry(self, rect: QRect) -> None:
        if self.hasHeightForWidth():
            needed = self.heightForWidth(rect.width())
            if needed > rect.height():
                rect = QRect(rect.x(), rect.y(), rect.width(), needed)
        super().setGeometry(rect)


#: Below this width (px) the chat's side margins shrink from 24 to 4.
NARROW_CHAT = 480


class ChatView(QScrollArea):
    """The transcript column: renders its :attr:`presenter`'s state."""

    edit_submitted = Signal(str, str, object)  # turn id, text, attachments (UserMessage.edit_submitted)
    #: A sent message's editor opened (UserMessage.editor_opened): the window prepares it.
    editor_opened = Signal(object, object)
    review_requested = Signal(str)  # change set id
    change_undo_requested = Signal(str, str, bool)  # change set id, checkpoint id, redo
    regenerate_requested = Signal(str)
    branch_requested = Signal(str, int)
    example_clicked = Signal(str)
    #: A chip of a sent message's attachments was clicked (its ui.chat.model.state.AttachmentChip).
    attachment_open_requested = Signal(object)
    connect_requested = Signal()
    #: The Continue of an answer cut off at the token limit (a notice in the last turn).
    continue_requested = Signal()
    #: What the running robot waits for ("" when nothing), for the status bar.
    activity_changed = Signal(str)
    #: An approval that had the keyboard was answered and none other waits: the window gives the keyboard
    #: back to the message box.
    keyboard_released = Signal()
    #: Where the view's streamed Markdown puts a render it leaves for later (a freeze, a backlog's next part):
    #: a comparison's column sets its frame clock's (:func:`ui.chat.view.stream.frame_clock`); None: a timer.
    defer_render: Callable[[Callable[[], None]], bool] | None = None

    def __init__(self, parent: QWidget | None = None, *, presenter: ChatPresenter | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ChatView")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        canvas = QWidget(self)
        canvas.setObjectName("ChatCanvas")
        row = QHBoxLayout(canvas)
        row.setContentsMargins(24, 12, 24, 24)
        self._canvas_row = row
        row.addStretch(1)
        self.column = ChatColumn(canvas)
        self.column.setObjectName("ChatColumn")
        self.column.setMaximumWidth(COLUMN_MAX_WIDTH)
        self.column.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Minimum)
        row.addWidget(self.column, 100)
        row.addStretch(1)
        self._layout = ColumnLayout(self.column)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(6)
        #: What the running robot waits for, under the last message (not one of the column's items).
        self.activity = ActivityLine(self.column)
        self._layout.addWidget(self.activity)
        self._layout.addStretch(1)  # keeps content at the top
        self.setWidget(canvas)
        self._stick = True
        #: What the screen shows at its top when not at the end (a widget, how far below the top): kept there
        #: when what is above it grows or shrinks (widgets made, released, laid out again), as browsers do.
        self._screen_anchor: tuple[QWidget, int] | None = None
        self._anchoring = False
        bar = self.verticalScrollBar()
        bar.rangeChanged.connect(self._on_range_changed)
        bar.valueChanged.connect(self._on_scrolled)
        #: The widget showing each turn (its user message), item and run footer.
        self._widgets: dict[Any, QWidget] = {}
        #: The widgets in the column of each turn shown as widgets, in order (a turn shown as a placeholder,
        #: or far from the screen, has no entry: this holds the screen's few turns, not the thread's).
        self._turn_widgets: dict[TurnState, list[QWidget]] = {}
        self._more_button: QPushButton | None = None
        self._empty: QWidget | None = None
        #: Notices with a button (Continue), by their turn: only the last turn's stay enabled.
        self._action_notices: list[tuple[TurnState, NoticeLine]] = []
        from ui.chat.view.chat_parts import Finder

        #: Finds and shows a search result's message.
        self.finder = Finder(self)
        #: Questions asked live: approval panels of tool cards, and MCP servers' request cards.
        self.approvals: list[ApprovalPanel | RequestCard] = []
        #: Ticks what shows time while it runs: lanes, running tool cards, the activity line.
        self.clock = ChatClock(self)
        from ui.chat.view.virtual import TurnWindow

        #: Only the turns near the screen are widgets (the others placeholders, their data in the state).
        self.turn_window = TurnWindow(self)
        self.presenter = presenter if presenter is not None else ChatPresenter()
        self.presenter.listener = self

    def resizeEvent(self, event: QResizeEvent) -> None:
        """A narrow chat (a comparison's column, a small window) gives its cards the side margins' room."""
        side = 24 if self.viewport().width() >= NARROW_CHAT else 4
        if self._canvas_row.contentsMargins().left() != side:
            self._canvas_row.setContentsMargins(side, 12, side, 24)
        super().resizeEvent(event)
        self.turn_window.schedule()

    # -- what is shown ------------------------------------------------------------------------------
    def items(self) -> list[QWidget]:
        """The column's widgets, top to bottom (a lane counts as one; turns far from the screen, which are
        placeholders, have none)."""
        out = []
        for i in range(self._layout.count()):
            item = self._layout.itemAt(i)
            widget = item.widget() if item is not None else None
            if widget is not None and widget not in (self._more_button, self._empty, self.activity):
                out.append(widget)
        return out

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

    @property
    def lane_groups(self) -> dict[str, NetworkItem]:
        """Network runs shown (their lanes), by the network run's id."""
        return self.presenter.groups()

    def card(self, call_id: str, run_id: str | None = None) -> ToolCard | None:
        call = self.presenter.call(call_id, run_id)
        widget = self._widgets.get(call) if call is not None else None
        return widget if isinstance(widget, ToolCard) else None

    def request_card(self, call_id: str, run_id: str | None = None) -> RequestCard | None:
        """The card of an MCP server's request (a sampling card, an elicitation form)."""
        call = self.presenter.call(call_id, run_id)
        widget = self._widgets.get(call) if call is not None else None
        return widget if isinstance(widget, RequestCard) else None

    def request_cards(self) -> list[RequestCard]:
        """Every MCP server's request card shown (lanes included), in order."""
        cards: list[RequestCard] = []
        for w in self.items():
            if isinstance(w, RequestCard):
                cards.append(w)
            elif isinstance(w, TaskLane):
                cards += [inner for inner in w.widgets() if isinstance(inner, RequestCard)]
        return cards

    def change_card(self, change_set_id: str) -> ChangeCard | None:
        item = self.presenter.change_item(change_set_id)
        widget = self._widgets.get(item) if item is not None else None
        return widget if isinstance(widget, ChangeCard) else None

    def lane(self, task: str, run_id: str | None = None) -> TaskLane | None:
        """The lane of ``task`` in network run ``run_id`` (default: the latest network run)."""
        item = self.presenter.lane(task, run_id)
        widget = self._widgets.get(item) if item is not None else None
        return widget if isinstance(widget, TaskLane) else None

    def reveal_task(self, task: str) -> bool:
        """Open the task's lane (latest network run) and scroll to it."""
        item = self.presenter.lane(task)
        lane = self.lane(task)
        if item is None or lane is None:
            return False
        self.presenter.set_lane_collapsed(item, False)
        QTimer.singleShot(0, lambda: self.ensureWidgetVisible(lane, 0, 60))
        return True

    @property
    def hidden_turns(self) -> int:
        return self.presenter.hidden_turns

    # -- the column ---------------------------------------------------------------------------------
    def clear(self) -> None:
        """Empty the column (through the presenter, whose state it shows)."""
        self.presenter.reset()

    def show_empty(self, *, robot: str, model_label: str, is_language_model: bool, examples: list[str]) -> None:
        """A new thread: whom it talks to, and messages to start with (``examples``)."""
        from ui.chat.view.chat_parts import empty_state

        self.clear()
        box = empty_state(self, robot=robot, model_label=model_label, is_language_model=is_language_model,
                          examples=examples)
        self._layout.insertWidget(0, box)
        self._empty = box

    def show_thread(self, source: TranscriptSource) -> None:
        """Show a stored thread: its last turns' data now, scrolled to the end, and their widgets in the next
        steps, the newest first, within a frame's budget each (:class:`~ui.chat.view.virtual.TurnWindow`);
        earlier turns on demand. Made in this step, the last turns' widgets held the window for 100 ms."""
        with self.turn_window.deferring():
            self.presenter.load_thread(source)
        self.turn_window.opened()  # (their first widgets a frame after this step: the window paints it first)
        self._stick = True
        QTimer.singleShot(0, self.scroll_to_bottom)

    def reveal_turn(self, turn_id: str, *, words: list[str] | None = None) -> bool:
        """Scroll to a stored turn of the branch shown (loading earlier turns when it is one of them) and
        outline its message that contains ``words``; False when the turn is not on this branch."""
        return self.finder.reveal_turn(turn_id, words=words)

    @property
    def found_flash(self) -> QFrame | None:
        """The outline around the message a search result opened (while it shows)."""
        return self.finder.flash_frame

    def load_earlier(self) -> None:
        """Show more of the earlier turns above the first one, keeping what is on screen in place."""
        if not self.presenter.hidden_turns:
            return
        # A page of data, a few turns a frame: its turns become widgets as they near the screen; what is on
        # screen stays.
        self.turn_window.load_earlier(LOAD_MORE_TURNS)
        self._stick = False

    # -- ChatListener: the presenter's changes --------------------------------------------------------
    def chat_reset(self) -> None:
        for widget in self.items():
            self._layout.removeWidget(widget)
            widget.deleteLater()
        if self._more_button is not None:
            self._more_button.deleteLater()
            self._more_button = None
        self._drop_empty()
        self.finder.reset()
        self.turn_window.reset()
        self._widgets.clear()
        self._turn_widgets.clear()
        self._action_notices = []
        self.approvals = []
        self.clock.reset()
        self._stick = True

    def turn_added(self, turn: TurnState) -> None:
        if self.turn_window.is_deferring:
            self._drop_empty()
            self.turn_window.add_placeholder(turn)
            return
        self.build_turn(turn)

    def warm_up_steps(self) -> Iterator[None]:
        """Make a sample of each common kind of a turn's widgets, one kind a step, show it (as the turn window's
        steps do: its style applied, its size asked), hide it in the same step (it is never painted) and delete it.
        The first widget of a kind in the process paid a whole frame or more: its style sheet's fonts loaded and
        measured, its code's lazy imports, a highlighted code block's first layout. Run at idle after start-up
        (``ui.app``), so the first thread opened makes its first widgets at the cost of the second; what each sample
        cost is the turn window's estimate for its kind until it makes one itself. The tool card's sample is made as
        the turn window makes a card: the card, then its arguments' text, then its result's section, each shown
        again (and hidden) in a step of its own."""
        from ui.chat.view.virtual import FOOTER

        turn = TurnState(user=UserState(text="A question: what does `a.py` do?"))
        run = RunState(run_id="", robot="assistant", turn=turn)
        call = ToolCallItem(parent=turn, run=run, call_id="", tool="read_file", robot="assistant",
                            arguments={"path": "a.py"}, status="ok", duration=0.01,
                            result={"data": {"content": "def f():\n    pass\n"}})
        answer = "**a.py** defines `f`:\n\n```python\ndef f():\n    pass\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
        header = HeaderItem(parent=turn, run=run, robot="assistant")
        text = TextItem(parent=turn, run=run, text=answer)

        def card() -> list[QWidget]:  # (its texts left to the steps after it, as the turn window's are)
            self.turn_window.making = True
            try:
                return [self._make(call)]
            finally:
                self.turn_window.making = False

        makers: tuple[tuple[Item | str | None, Callable[[], list[QWidget]]], ...] = (
            (None, lambda: [UserMessage(turn.user.text if turn.user else "", parent=self.column)]),
            (FOOTER, lambda: [RunFooter(turn_id=None, parent=self.column)]),
            (header, lambda: [self._make(header)]),
            (text, lambda: [self._make(text)]),
            (call, card),
        )
        for item, make in makers:
            started = time.perf_counter()
            widgets = make()
            width = max(self.viewport().width(), 400)
            for widget in widgets:
                widget.resize(width, widget.height())
                widget.show()
            # what it cost, for the turn window's budget (with what it paid once: an estimate on the safe side)
            self.turn_window.note_cost(item, time.perf_counter() - started)
            for widget in widgets:
                widget.hide()
            yield
            for widget in widgets:
                while isinstance(widget, ToolCard) and (part := widget.later) is not None:
                    started = time.perf_counter()
                    widget.show()
                    widget.finish()
                    self.turn_window.note_cost(part, time.perf_counter() - started)
                    widget.hide()
                    yield
                widget.deleteLater()

    def build_turn(self, turn: TurnState) -> None:
        """The turn's user message (its items and footers follow through :meth:`item_added` and
        :meth:`run_changed`)."""
        user = turn.user
        if user is None:
            return
        message = UserMessage(user.text, note=user.note, turn_id=user.turn_id, sibling_index=user.sibling_index,
                              sibling_count=user.sibling_count, parent=self.column)
        message.edit_submitted.connect(self.edit_submitted)
        message.editor_opened.connect(self.editor_opened)
        message.branch_requested.connect(self.branch_requested)
        message.attachment_clicked.connect(self.attachment_open_requested)
        if user.attachments:
            message.set_attachments(user.attachments)
        self._widgets[turn] = message
        self._place(turn, message)
        if turn is self.presenter.state.turns[-1]:
            self._stick = True
            self._enable_actions()

    def turn_removed(self, turn: TurnState) -> None:
        self.turn_window.forget(turn)
        gone = self._turn_widgets.pop(turn, [])
        for widget in gone:
            self._layout.removeWidget(widget)
            widget.deleteLater()
        for key in [k for k, w in self._widgets.items() if w in gone]:
            del self._widgets[key]

    def user_changed(self, turn: TurnState) -> None:
        message = self._widgets.get(turn)
        if isinstance(message, UserMessage) and turn.user is not None:
            message.apply(turn.user)
        for run in turn.top_runs:  # Regenerate needs the stored turn
            footer = self._widgets.get(run)
            if isinstance(footer, RunFooter):
                footer.apply(run)

    def item_added(self, item: Item) -> None:
        if self.turn_window.holds(item):
            return  # made with its turn, when the turn nears the screen
        widget = self._make(item)
        self._widgets[item] = widget
        parent = item.parent
        card = self._widgets.get(item.call) if isinstance(item, CallLaneItem) else None
        if isinstance(card, ToolCard):  # a robot used as a tool: its lane inside the call's card
            card.add_lane(widget)
        elif isinstance(parent, Lane):
            lane = self._widgets.get(parent)
            if isinstance(lane, TaskLane):
                lane.add_widget(widget)
        else:
            self._place(parent, widget, run=item.run)
        if isinstance(widget, NoticeLine) and widget.action_button is not None:
            self._action_notices.append((item.turn, widget))
            self._enable_actions()
        if isinstance(item, ToolCallItem) and item.run is not None:
            self.clock.follow_call(item, widget)

    def item_changed(self, item: Item) -> None:
        widget = self._widgets.get(item)
        match item:
            case TextItem():
                if isinstance(widget, MarkdownStream) and widget.text != item.text:
                    widget.set_text(item.text)
            case ReasoningItem():
                if isinstance(widget, ThinkingBlock):
                    widget.apply(item)
            case ToolCallItem():
                if isinstance(widget, ToolCard | RequestCard):
                    widget.apply(item)
                    self.clock.follow_call(item, widget)
            case ChangeItem():
                if isinstance(widget, ChangeCard):
                    widget.apply(item)
            case NetworkItem():
                if isinstance(widget, NetworkHeader):
                    widget.apply(item)
            case LaneItem() | CallLaneItem():
                if isinstance(widget, TaskLane):
                    widget.apply(item)
                    self.clock.follow()
            case _:
                pass  # a robot's header does not change

    def _enable_actions(self) -> None:
        """A notice's button (Continue) works in the last turn only: it acts on the thread's latest answer."""
        turns = self.presenter.state.turns
        last = turns[-1] if turns else None
        self._action_notices = [(turn, line) for turn, line in self._action_notices if turn in turns]
        for turn, line in self._action_notices:
            if line.action_button is not None:
                line.action_button.setEnabled(turn is last)

    def _notice_action(self, action: str) -> None:
        if action == "continue":
            self.continue_requested.emit()

    def text_appended(self, item: TextItem, delta: str) -> None:
        widget = self._widgets.get(item)
        if isinstance(widget, MarkdownStream):
            widget.append(delta)

    def tool_output(self, item: ToolCallItem, text: str) -> None:
        widget = self._widgets.get(item)
        if isinstance(widget, ToolCard) and item.output is not None:
            widget.append_output(item.output, text)

    def run_changed(self, run: RunState) -> None:
        if run.lane is None and (run.activity or run is self.clock.activity_run):
            self.clock.set_activity(run if run.activity else None)
        if run.lane is not None or not run.footer or self.turn_window.holds(run):
            return
        footer = self._widgets.get(run)
        if not isinstance(footer, RunFooter):
            footer = RunFooter(turn_id=run.turn.turn_id, parent=self.column)
            footer.regenerate_requested.connect(self.regenerate_requested)
            footer.copy_button.clicked.connect(lambda: QGuiApplication.clipboard().setText(run.answer_text))
            self._widgets[run] = footer
            self._place(run.turn, footer)
        footer.apply(run)

    def hidden_changed(self) -> None:
        hidden = self.presenter.hidden_turns
        if hidden and self._more_button is None:
            self._more_button = QPushButton("", self.column)
            self._more_button.setObjectName("LoadMore")
            self._more_button.clicked.connect(self.load_earlier)
            self._layout.insertWidget(0, self._more_button)
        if self._more_button is not None:
            if hidden:
                self._more_button.setText(f"Show {min(LOAD_MORE_TURNS, hidden)} earlier turns ({hidden} not shown)")
            else:
                self._more_button.deleteLater()
                self._layout.removeWidget(self._more_button)
                self._more_button = None

    # -- widgets ----------------------------------------------------------------------------------------
    def _make(self, item: Item) -> QWidget:
        match item:
            case HeaderItem():
                return RobotHeader(item.robot, self.column)
            case TextItem():
                return MarkdownStream(item.text, self.column)
            case SamplingItem():
                return SamplingCard(item, self.column)
            case ElicitationItem():
                return ElicitationForm(item, self.column)
            case AskUserItem():
                return AskUserCard(item, self.column)
            case ToolCallItem():
                later = self.turn_window.making  # (its texts, arguments and result: steps of their own)
                card = ToolCard(call_id=item.call_id, tool=item.tool, robot=item.robot, server=item.server,
                                arguments=item.arguments, parent=self.column, later=later)
                card.sandbox_settings_requested.connect(self.connect_requested)  # Settings, where the switch is
                card.apply(item, later=later)
                return card
            case ReasoningItem():
                block = ThinkingBlock(self.column)
                block.toggle_requested.connect(
                    lambda collapsed, it=item: self.presenter.set_reasoning_collapsed(it, collapsed))
                block.apply(item)
                return block
            case NoticeItem():
                line = NoticeLine(item.text, level=item.level, details=item.details, action=item.action,
                                  parent=self.column)
                line.action_requested.connect(self._notice_action)
                return line
            case ErrorItem():
                error = ErrorCard(item.message, fix=item.fix, error_type=item.error_type, parent=self.column)
                error.retry_requested.connect(
                    lambda it=item: self.regenerate_requested.emit(it.turn.turn_id) if it.turn.turn_id else None)
                error.settings_requested.connect(self.connect_requested)
                return error
            case ChangeItem():
                change = ChangeCard(change_set_id=item.change_set_id, robot=item.robot, files=list(item.files),
                                    parent=self.column)
                change.review_requested.connect(self.review_requested)
                change.undo_requested.connect(self.change_undo_requested)
                change.apply(item)
                return change
            case BusMessageItem():
                return BusMessageCard(item, self.column)
            case NetworkItem():
                header = NetworkHeader(item.network, self.column)
                header.apply(item)
                return header
            case LaneItem() | CallLaneItem():
                color = robot_color(item.robot, item.group.network) if isinstance(item, LaneItem) else None
                lane = TaskLane(item.task, item.robot, self.column, color=color)
                lane.toggle_requested.connect(
                    lambda collapsed, it=item: self.presenter.set_lane_collapsed(it, collapsed, by_user=True))
                lane.apply(item)
                return lane
            case _:
                raise TypeError(f"no widget for {item!r}")

    def _place(self, turn: TurnState, widget: QWidget, *, run: RunState | None = None) -> None:
        """Put a turn's widget in the column: after the turn's others, above its run's footer."""
        self._drop_empty()
        widgets = self._turn_widgets.setdefault(turn, [])
        footer = self._widgets.get(run) if run is not None else None
        if footer is not None and footer in widgets:
            widgets.insert(widgets.index(footer), widget)
            self._layout.insertWidget(self._layout.indexOf(footer), widget)
            return
        widgets.append(widget)
        self._layout.insertWidget(self._index_after(turn), widget)

    def _index_after(self, turn: TurnState) -> int:
        """Where the next turn's widgets start in the column (the end, for the last turn)."""
        end = self._layout.indexOf(self.activity)  # the activity line, then the stretch
        turns = self.presenter.state.turns
        if not turns or turns[-1] is turn:
            return end
        for later in turns[turns.index(turn) + 1:]:
            gap = self.turn_window.placeholders.get(later)
            if gap is not None:  # (the gap's first turn: the turns in gaps are in the column's order)
                return self._layout.indexOf(gap)
            shown = self._turn_widgets.get(later)
            if shown:
                return self._layout.indexOf(shown[0])
        return end

    def _drop_empty(self) -> None:
        if self._empty is not None:
            self._layout.removeWidget(self._empty)
            self._empty.deleteLater()
            self._empty = None

    # -- approvals (asked live, with a future the card's panel resolves) ---------------------------------
    def ask_approval(self, request: ApprovalRequest, future: asyncio.Future[Any]) -> None:
        """Show the approval inline in its call's card. The window hands it over once the chat has the call: with
        the event of the run that asks it, which comes after the call's ``tool_use`` (:mod:`ui.window.asked`).
        A call the chat has not got (asked outside any run it follows) gets a card made from the request."""
        if future.done():
            return
        run_id = request.run_id or "approval"
        if self.presenter.call(request.call_id, run_id) is None:
            from workspace import events as ev

            self.presenter.show_asked_call(ev.ToolUse(
                run_id=run_id, robot=request.robot, task=request.task, id=request.call_id, name=request.tool,
                input=dict(request.input or {}), server=request.server))
        self._attach_approval(request, future)

    def _attach_approval(self, request: ApprovalRequest,
                         future: asyncio.Future[Any]) -> ApprovalPanel | RequestCard | None:
        call = self.presenter.call(request.call_id, request.run_id or "approval")
        if call is not None and call.turn is not None and self.turn_window.is_placeholder(call.turn):
            self.turn_window.make_now(call.turn)  # (a thread just opened: its turns' widgets were still to come)
        card = self.card(request.call_id, request.run_id or "approval")
        asker = self.request_card(request.call_id, request.run_id or "approval")
        if call is None or future.done():
            return None
        panel: ApprovalPanel | RequestCard
        if asker is not None:  # an MCP server's request: its card asks
            if asker.asking:
                return None
            panel = asker.ask(request, future)
        elif card is not None and card.approval is None:
            panel = card.ask_approval(request, future)
        else:
            return None
        if isinstance(call.parent, Lane):  # a robot of a network (or used as a tool) asks: open its lane
            self.presenter.set_lane_collapsed(call.parent, False)
        # Its card may have come in this same pass (the tool_use just before the approval): a layout shows a new
        # widget a turn of the event loop later; shown now, the panel can have the keyboard (Ctrl+J) at once.
        widget: QWidget | None = panel
        while widget is not None and widget is not self.column:
            if not widget.isVisible() and not widget.testAttribute(Qt.WidgetAttribute.WA_WState_ExplicitShowHide):
                widget.show()
            widget = widget.parentWidget()
        self.approvals.append(panel)
        panel.finished.connect(lambda _d, p=panel: self._approval_finished(p))

        def reveal() -> None:
            self.ensureWidgetVisible(panel, 0, 40)
            # Never take the keyboard from someone typing (their "y" would approve unseen):
            # the card gets focus only when no text field has it; Ctrl+J goes to it otherwise.
            if not _is_text_entry(QApplication.focusWidget()):
                panel.setFocus()

        QTimer.singleShot(0, reveal)
        return panel

    def _approval_finished(self, panel: ApprovalPanel | RequestCard) -> None:
        """An approval was answered (or the run ended): when the keyboard was in it, it goes on to the next one
        waiting, else back to the message box (``keyboard_released``), not to whatever came next in the tab order."""
        if panel in self.approvals:
            self.approvals.remove(panel)
        if not panel.had_keyboard:
            return
        waiting = self.pending_approval()
        if waiting is not None:
            self.ensureWidgetVisible(waiting, 0, 40)
            waiting.setFocus()
        else:
            self.keyboard_released.emit()

    def pending_approval(self) -> ApprovalPanel | RequestCard | None:
        for panel in self.approvals:
            if not panel.done:
                return panel
        return None

    # -- scrolling ----------------------------------------------------------------------------------------
    def _on_range_changed(self, _lo: int, hi: int) -> None:
        if self._stick:
            self.verticalScrollBar().setValue(hi)
        else:
            self._keep_screen_anchor()
        self.turn_window.schedule()

    def _keep_screen_anchor(self) -> None:
        from shiboken6 import isValid

        anchor = self._screen_anchor
        if anchor is None or not isValid(anchor[0]) or anchor[0].parentWidget() is not self.column:
            return
        widget, offset = anchor
        bar = self.verticalScrollBar()
        value = max(0, widget.geometry().top() - offset)
        if value != bar.value():
            self._anchoring = True
            try:
                bar.setValue(value)
            finally:
                self._anchoring = False

    def _on_scrolled(self, value: int) -> None:
        bar = self.verticalScrollBar()
        if not self._anchoring:
            self._screen_anchor = self.turn_window.anchor_at(value)
        self._stick = value >= bar.maximum() - 24
        self.turn_window.schedule()
        if value == 0 and self.presenter.hidden_turns and bar.maximum() > 0:
            QTimer.singleShot(0, self.load_earlier)

    def scroll_to_bottom(self) -> None:
        self._stick = True
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())


def _is_text_entry(widget: QWidget | None) -> bool:
    if isinstance(widget, QTextEdit | QPlainTextEdit):
        return not widget.isReadOnly()
    if isinstance(widget, QComboBox):
        return widget.isEditable()
    return isinstance(widget, QLineEdit | QAbstractSpinBox)


__all__ = ["ChatColumn", "ChatView"]
