"""The conversation: a centred, readable column of user messages, robot text and tool cards.

The column shows a :class:`~ui.chat.presenter.ChatPresenter`'s view state and nothing else: the
presenter reads the events (live from the bridge, or a stored thread) and tells this view what
changed (:class:`~ui.chat.presenter.ChatListener`); the view makes and updates the widgets. So a
reopened thread looks exactly like it did live.

Streaming text is rendered incrementally (:class:`~ui.widgets.stream.MarkdownStream`): nothing
above the tail moves while text streams. Long threads show their last turns first and load
earlier ones on demand (a button at the top, or scrolling up to it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication
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
    QVBoxLayout,
    QWidget,
)

from ui import markdown, theme
from ui.chat.presenter import LOAD_MORE_TURNS, ChatPresenter, TranscriptSource
from ui.chat.state import (
    ChangeItem,
    HeaderItem,
    Item,
    LaneItem,
    NetworkItem,
    NoticeItem,
    RunState,
    TextItem,
    ToolCallItem,
    TurnState,
)
from ui.widgets.cards import ApprovalPanel, ToolCard
from ui.widgets.change_card import ChangeCard
from ui.widgets.common import RichLabel
from ui.widgets.flow import FlowRow
from ui.widgets.lanes import NetworkHeader, TaskLane, robot_color
from ui.widgets.messages import COLUMN_MAX_WIDTH, NoticeLine, RobotHeader, RunFooter, UserMessage
from ui.widgets.stream import MarkdownStream

if TYPE_CHECKING:
    import asyncio

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


class ChatView(QScrollArea):
    """The transcript column: renders its :attr:`presenter`'s state."""

    edit_submitted = Signal(str, str)
    review_requested = Signal(str)  # change set id
    change_undo_requested = Signal(str, str, bool)  # change set id, checkpoint id, redo
    regenerate_requested = Signal(str)
    branch_requested = Signal(str, int)
    example_clicked = Signal(str)
    connect_requested = Signal()

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
        row.addStretch(1)
        self.column = ChatColumn(canvas)
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
        #: The widget showing each turn (its user message), item and run footer.
        self._widgets: dict[Any, QWidget] = {}
        #: Each turn's widgets in the column, in order.
        self._turn_widgets: dict[TurnState, list[QWidget]] = {}
        self._more_button: QPushButton | None = None
        self._empty: QWidget | None = None
        #: The widget to scroll to once laid out (a search result's message).
        self._reveal_target: QWidget | None = None
        #: The outline around the message a search result opened (while it shows).
        self.found_flash: QFrame | None = None
        self.approvals: list[ApprovalPanel] = []
        #: Approvals asked before their call's card came, by (run id, call id).
        self._waiting_approvals: dict[tuple[str, str], tuple[ApprovalRequest, asyncio.Future[Any]]] = {}
        self._lane_timer = QTimer(self)
        self._lane_timer.setInterval(500)
        self._lane_timer.timeout.connect(self._tick_lanes)
        self.presenter = presenter if presenter is not None else ChatPresenter()
        self.presenter.listener = self

    # -- what is shown ------------------------------------------------------------------------------
    def items(self) -> list[QWidget]:
        """The column's widgets, top to bottom (a lane counts as one)."""
        out = []
        for i in range(self._layout.count()):
            item = self._layout.itemAt(i)
            widget = item.widget() if item is not None else None
            if widget is not None and widget is not self._more_button and widget is not self._empty:
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

    def show_thread(self, source: TranscriptSource) -> None:
        """Show a stored thread: its last turns now (scrolled to the end), earlier ones on demand."""
        self.presenter.load_thread(source)
        self._stick = True
        QTimer.singleShot(0, self.scroll_to_bottom)

    def reveal_turn(self, turn_id: str, *, words: list[str] | None = None) -> bool:
        """Scroll to a stored turn of the branch shown (loading earlier turns when it is one of them) and
        flash its message that contains ``words`` (the user's message when none does); False when the
        turn is not on this branch."""
        presenter = self.presenter

        def find() -> TurnState | None:
            return next((t for t in presenter.state.turns if t.turn_id == turn_id), None)

        turn = find()
        if turn is None and any(getattr(info, "id", None) == turn_id for info in presenter.state.hidden):
            while turn is None and presenter.hidden_turns:
                presenter.load_earlier(LOAD_MORE_TURNS)
                turn = find()
        if turn is None:
            return False
        target = self._matching_widget(turn, [w.lower() for w in words or [] if w.strip()])
        if target is None:
            return False
        self._stick = False
        self._reveal_target = target
        QTimer.singleShot(0, self._reveal)
        return True

    def _matching_widget(self, turn: TurnState, words: list[str]) -> QWidget | None:
        """The first of the turn's widgets whose text has one of ``words`` (else its user message)."""
        widgets = [w for w in self._turn_widgets.get(turn, []) if not isinstance(w, RunFooter)]
        for widget in widgets:
            text = ""
            if isinstance(widget, UserMessage | MarkdownStream):
                text = widget.text
            elif isinstance(widget, ToolCard):
                text = f"{widget.tool} {markdown.to_json_text(widget.arguments)}"
            if words and any(word in text.lower() for word in words):
                return widget
        return self._widgets.get(turn) or (widgets[0] if widgets else None)

    def _reveal(self) -> None:
        target = self._reveal_target
        self._reveal_target = None
        if target is None or not _alive(target) or target.parentWidget() is None:
            return
        canvas = self.widget()
        if canvas is None:
            return
        for layout in (self.column.layout(), canvas.layout()):
            if layout is not None:
                layout.activate()
        top = target.mapTo(canvas, target.rect().topLeft()).y()
        self._stick = False
        self.verticalScrollBar().setValue(max(0, top - 24))
        self.flash(target)

    def flash(self, widget: QWidget, *, ms: int = 2200) -> None:
        """Outline ``widget`` for a moment (the message a search result opened)."""
        frame = QFrame(self.column)
        frame.setObjectName("FoundFlash")
        frame.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        frame.setGeometry(widget.geometry().adjusted(-6, -4, 6, 4))
        frame.setStyleSheet(f"QFrame#FoundFlash {{ border: 2px solid {theme.colors().accent}; border-radius: 10px;"
                            " background: transparent; }")
        frame.show()
        frame.raise_()
        self.found_flash = frame
        QTimer.singleShot(ms, frame.deleteLater)

    def load_earlier(self) -> None:
        """Show more of the earlier turns above the first one, keeping what is on screen in place."""
        if not self.presenter.hidden_turns:
            return
        bar = self.verticalScrollBar()
        from_bottom = bar.maximum() - bar.value()
        self.presenter.load_earlier(LOAD_MORE_TURNS)
        self._stick = False
        QTimer.singleShot(0, lambda: bar.setValue(bar.maximum() - from_bottom))

    # -- ChatListener: the presenter's changes --------------------------------------------------------
    def chat_reset(self) -> None:
        for widget in self.items():
            self._layout.removeWidget(widget)
            widget.deleteLater()
        if self._more_button is not None:
            self._more_button.deleteLater()
            self._more_button = None
        self._drop_empty()
        if self.found_flash is not None and _alive(self.found_flash):
            self.found_flash.deleteLater()
        self.found_flash = None
        self._reveal_target = None
        self._widgets.clear()
        self._turn_widgets.clear()
        self.approvals = []
        self._waiting_approvals = {}
        self._lane_timer.stop()
        self._stick = True

    def turn_added(self, turn: TurnState) -> None:
        self._turn_widgets[turn] = []
        user = turn.user
        if user is None:
            return
        message = UserMessage(user.text, note=user.note, turn_id=user.turn_id, sibling_index=user.sibling_index,
                              sibling_count=user.sibling_count, parent=self.column)
        message.edit_submitted.connect(self.edit_submitted)
        message.branch_requested.connect(self.branch_requested)
        self._widgets[turn] = message
        self._place(turn, message)
        if turn is self.presenter.state.turns[-1]:
            self._stick = True

    def turn_removed(self, turn: TurnState) -> None:
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
        widget = self._make(item)
        self._widgets[item] = widget
        parent = item.parent
        if isinstance(parent, LaneItem):
            lane = self._widgets.get(parent)
            if isinstance(lane, TaskLane):
                lane.add_widget(widget)
        else:
            self._place(parent, widget, run=item.run)
        if isinstance(item, ToolCallItem) and item.run is not None:
            waiting = self._waiting_approvals.pop((item.run.run_id, item.call_id), None)
            if waiting is not None:  # the approval was asked before the card came
                self._attach_approval(*waiting)

    def item_changed(self, item: Item) -> None:
        widget = self._widgets.get(item)
        match item:
            case TextItem():
                if isinstance(widget, MarkdownStream) and widget.text != item.text:
                    widget.set_text(item.text)
            case ToolCallItem():
                if isinstance(widget, ToolCard):
                    widget.apply(item)
            case ChangeItem():
                if isinstance(widget, ChangeCard):
                    widget.apply(item)
            case NetworkItem():
                if isinstance(widget, NetworkHeader):
                    widget.apply(item)
            case LaneItem():
                if isinstance(widget, TaskLane):
                    widget.apply(item)
                    self._follow_lanes()
            case _:
                pass  # a robot's header does not change

    def text_appended(self, item: TextItem, delta: str) -> None:
        widget = self._widgets.get(item)
        if isinstance(widget, MarkdownStream):
            widget.append(delta)

    def run_changed(self, run: RunState) -> None:
        if run.lane is not None or not run.footer:
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
            case ToolCallItem():
                card = ToolCard(call_id=item.call_id, tool=item.tool, robot=item.robot, server=item.server,
                                arguments=item.arguments, parent=self.column)
                card.apply(item)
                return card
            case NoticeItem():
                return NoticeLine(item.text, level=item.level, details=item.details, parent=self.column)
            case ChangeItem():
                change = ChangeCard(change_set_id=item.change_set_id, robot=item.robot, files=list(item.files),
                                    parent=self.column)
                change.review_requested.connect(self.review_requested)
                change.undo_requested.connect(self.change_undo_requested)
                change.apply(item)
                return change
            case NetworkItem():
                header = NetworkHeader(item.network, self.column)
                header.apply(item)
                return header
            case LaneItem():
                lane = TaskLane(item.task, item.robot, self.column, color=robot_color(item.robot, item.group.network))
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
        end = self._layout.count() - 1  # the stretch
        turns = self.presenter.state.turns
        if not turns or turns[-1] is turn:
            return end
        for later in turns[turns.index(turn) + 1:]:
            shown = self._turn_widgets.get(later)
            if shown:
                return self._layout.indexOf(shown[0])
        return end

    def _drop_empty(self) -> None:
        if self._empty is not None:
            self._layout.removeWidget(self._empty)
            self._empty.deleteLater()
            self._empty = None

    def _follow_lanes(self) -> None:
        """Tick the running lanes' durations while any runs."""
        if any(lane.status == "running" for lane in self.lanes()):
            if not self._lane_timer.isActive():
                self._lane_timer.start()
        else:
            self._lane_timer.stop()

    def _tick_lanes(self) -> None:
        import time

        now = time.time()
        running = [lane for lane in self.lanes() if lane.status == "running"]
        for lane in running:
            lane.update_duration(now)
        if not running:
            self._lane_timer.stop()

    # -- approvals (asked live, with a future the card's panel resolves) ---------------------------------
    def ask_approval(self, request: ApprovalRequest, future: asyncio.Future[Any]) -> None:
        """Show the approval inline in the tool's card (once its tool_use has arrived)."""
        run_id = request.run_id or "approval"
        if self.card(request.call_id, run_id) is not None:
            self._attach_approval(request, future)
            return
        # The gate asks before the bridge has delivered the tool_use event: wait for the card.
        key = (run_id, request.call_id)
        self._waiting_approvals[key] = (request, future)
        QTimer.singleShot(400, lambda: self._approval_fallback(key))

    def _approval_fallback(self, key: tuple[str, str]) -> None:
        waiting = self._waiting_approvals.get(key)
        if waiting is None:
            return
        request, future = waiting
        if future.done():
            self._waiting_approvals.pop(key, None)
            return
        from workspace import events as ev

        # Still no card: show the call from the request (its events may never reach this view).
        self.presenter.feed(ev.ToolUse(run_id=request.run_id or "approval", robot=request.robot, task=request.task,
                                       id=request.call_id, name=request.tool, input=dict(request.input or {}),
                                       server=request.server))

    def _attach_approval(self, request: ApprovalRequest, future: asyncio.Future[Any]) -> ApprovalPanel | None:
        call = self.presenter.call(request.call_id, request.run_id or "approval")
        card = self.card(request.call_id, request.run_id or "approval")
        if call is None or card is None or future.done() or card.approval is not None:
            return None
        if isinstance(call.parent, LaneItem):  # a robot of a network asks: open its lane
            self.presenter.set_lane_collapsed(call.parent, False)
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

    # -- scrolling ----------------------------------------------------------------------------------------
    def _on_range_changed(self, _lo: int, hi: int) -> None:
        if self._stick:
            self.verticalScrollBar().setValue(hi)

    def _on_scrolled(self, value: int) -> None:
        bar = self.verticalScrollBar()
        self._stick = value >= bar.maximum() - 24
        if value == 0 and self.presenter.hidden_turns and bar.maximum() > 0:
            QTimer.singleShot(0, self.load_earlier)

    def scroll_to_bottom(self) -> None:
        self._stick = True
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    # -- as text --------------------------------------------------------------------------------------------
    def dump(self) -> str:
        """What the column shows, as text: see :func:`dump_widgets`."""
        return dump_widgets(self)


def _alive(widget: QWidget) -> bool:
    """Whether the C++ side of ``widget`` still exists."""
    from shiboken6 import isValid

    return bool(isValid(widget))


def _is_text_entry(widget: QWidget | None) -> bool:
    if isinstance(widget, QTextEdit | QPlainTextEdit):
        return not widget.isReadOnly()
    if isinstance(widget, QComboBox):
        return widget.isEditable()
    return isinstance(widget, QLineEdit | QAbstractSpinBox)


def dump_widgets(chat: ChatView) -> str:
    """The column's widgets as text, one line each (a lane's widgets indented under it): what a
    person sees — texts, pills, durations, token counts, footers. Tests compare a live run with
    its reopened thread this way."""
    lines: list[str] = []

    def card_line(card: ToolCard) -> str:
        decision = card._decision.text() if card._decision is not None else ""
        error = card._error_box.toPlainText() if card._error_box is not None else ""
        result = card._result_toggle.text() if card._result_toggle is not None else ""
        args = card._args.toPlainText().replace("\n", " ")
        pill = card._status_pill.text() if card._status_pill is not None else ""
        return (f"tool {card.title.text()} [{pill}] {card._duration.text()!r} args={args!r}"
                + (f" decision={decision!r}" if decision else "") + (f" result={result!r}" if result else "")
                + (f" error={error!r}" if error else ""))

    def widget_lines(widget: QWidget, indent: str) -> list[str]:
        if isinstance(widget, UserMessage):
            branch = widget.branch_label.text() if widget._buttons_made and widget.sibling_count > 1 else ""
            return [f"{indent}user {widget.text!r}" + (f" note={widget.note!r}" if widget.note else "")
                    + (f" {branch}" if branch else "")]
        if isinstance(widget, RobotHeader):
            name = widget.findChild(QLabel, "RobotName")
            return [f"{indent}robot {name.text() if name is not None else '?'}"]
        if isinstance(widget, MarkdownStream):
            return [f"{indent}text {widget.text!r}"]
        if isinstance(widget, ToolCard):
            return [indent + card_line(widget)]
        if isinstance(widget, ChangeCard):
            pill = widget._pill.text() if widget._pill is not None else ""
            undo = widget.undo_button.text() if not widget.undo_button.isHidden() else ""
            return [f"{indent}change {widget.title.text()} [{pill}] {widget.listing.text()!r} "
                    f"{widget.note.text()!r} {widget.review_button.text()!r}" + (f" {undo}" if undo else "")]
        if isinstance(widget, NetworkHeader):
            return [f"{indent}network {widget.name.text()} {widget.kind.text()!r}"]
        if isinstance(widget, TaskLane):
            pill = widget._pill.text() if widget._pill is not None else ""
            out = [f"{indent}lane {widget.task} {widget.chip.text()} [{pill}] {widget.usage.text()!r} "
                   f"({widget.usage.toolTip()}) {widget.duration.text()!r} "
                   f"{'folded' if widget.collapsed else 'open'} {widget.summary.text()!r}"
                   + (f" note={widget.note.text()!r}" if not widget.note.isHidden() else "")]
            for inner in widget.widgets():
                out += widget_lines(inner, indent + "    ")
            return out
        if isinstance(widget, RunFooter):
            return [f"{indent}footer {widget.usage.text()!r} ({widget.usage.toolTip()}) {widget.status.text()!r}"]
        return [f"{indent}{type(widget).__name__}"]

    if chat._more_button is not None:
        lines.append(chat._more_button.text())
    for widget in chat.items():
        lines += widget_lines(widget, "")
    return "\n".join(lines)


__all__ = ["ChatView", "dump_widgets"]
