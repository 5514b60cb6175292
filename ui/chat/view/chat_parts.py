"""Parts of the chat's column kept apart from :class:`~ui.chat.view.chat.ChatView`: the empty state of a
new thread, and the :class:`Finder` that scrolls to a search result's message and outlines it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QFrame, QLabel, QPushButton, QVBoxLayout, QWidget

from ui import markdown, theme
from ui.chat.model.presenter import LOAD_MORE_TURNS
from ui.chat.view.cards import ToolCard
from ui.chat.view.messages import RunFooter, UserMessage
from ui.chat.view.stream import MarkdownStream
from ui.widgets.common import RichLabel
from ui.widgets.flow import FlowRow

if TYPE_CHECKING:
    from ui.chat.model.state import TurnState
    from ui.chat.view.chat import ChatView


def empty_state(chat: ChatView, *, robot: str, model_label: str, is_language_model: bool,
                examples: list[str]) -> QFrame:
    """A new thread: "Chat with <robot>", its model, the offline demo's note, and example messages."""
    c = theme.colors()
    box = QFrame(chat.column)
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
    title.setWordWrap(True)
    layout.addWidget(title)
    sub = QLabel(model_label, box)
    sub.setObjectName("Muted")
    sub.setAlignment(Qt.AlignmentFlag.AlignHCenter)
    sub.setWordWrap(True)
    layout.addWidget(sub)
    if not is_language_model:
        hint = RichLabel(
            f'<div align="center" style="color:{c.muted};">No language model is connected, so replies come from '
            "a small rule-based demo that still uses real tools. "
            f'<a href="settings:" style="color:{c.accent};">Connect a model</a> — an API key (OpenAI, '
            "Anthropic, …) or a local server such as Ollama.</div>", box)
        hint.setOpenExternalLinks(False)
        hint.linkActivated.connect(lambda _link: chat.connect_requested.emit())
        hint.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        layout.addWidget(hint)
    chips = FlowRow(spacing=8, center=True)  # wraps onto more rows in a narrow column
    for example in examples:
        chip = QPushButton(example, box)
        chip.setObjectName("ExampleChip")
        chip.setCursor(Qt.CursorShape.PointingHandCursor)
        chip.setAccessibleName(f"Send: {example}")
        chip.setToolTip("Send this message")
        chip.clicked.connect(lambda _=False, text=example: chat.example_clicked.emit(text))
        chips.addWidget(chip)
    layout.addLayout(chips)
    layout.addStretch(1)
    return box


class Finder:
    """Scrolls the chat to a search result's message (once its turn is made, a few widgets a frame, and laid out)
    and outlines it for a moment."""

    def __init__(self, chat: ChatView) -> None:
        self.chat = chat
        #: The outline (while it shows).
        self.flash_frame: QFrame | None = None
        #: Whether a turn revealed is being made (until the screen goes to it).
        self.revealing = False

    def reset(self) -> None:
        from shiboken6 import isValid

        if self.flash_frame is not None and isValid(self.flash_frame):
            self.flash_frame.deleteLater()
        self.flash_frame = None
        self.revealing = False

    def reveal_turn(self, turn_id: str, *, words: list[str] | None = None) -> bool:
        chat = self.chat
        presenter = chat.presenter

        def find() -> TurnState | None:
            return next((t for t in presenter.state.turns if t.turn_id == turn_id), None)

        turn = find()
        if turn is None and any(getattr(info, "id", None) == turn_id for info in presenter.state.hidden):
            with chat.turn_window.deferring():  # pages of data: only the turn found becomes widgets
                while turn is None and presenter.hidden_turns:
                    presenter.load_earlier(LOAD_MORE_TURNS)
                    turn = find()
        if turn is None:
            return False
        chat._stick = False
        self.revealing = True
        lowered = [w.lower() for w in words or [] if w.strip()]
        # its widgets a few a frame, the screen going to it once they are made
        chat.turn_window.make(turn, then=lambda: self._made(turn, lowered))
        return True

    def _made(self, turn: TurnState, words: list[str]) -> None:
        """The turn's widgets are made: scroll to the one matching ``words`` and outline it (unless the chat
        was reset or another turn revealed meanwhile)."""
        from shiboken6 import isValid

        if isValid(self.chat) and self.chat.turn_window.pinned is turn:
            self._reveal(self._matching_widget(turn, words))

    def _matching_widget(self, turn: TurnState, words: list[str]) -> QWidget | None:
        """The first of the turn's widgets whose text has one of ``words`` (else its user message)."""
        chat = self.chat
        widgets = [w for w in chat._turn_widgets.get(turn, []) if not isinstance(w, RunFooter)]
        for widget in widgets:
            text = ""
            if isinstance(widget, UserMessage | MarkdownStream):
                text = widget.text
            elif isinstance(widget, ToolCard):
                text = f"{widget.tool} {markdown.to_json_text(widget.arguments)}"
            if words and any(word in text.lower() for word in words):
                return widget
        return chat._widgets.get(turn) or (widgets[0] if widgets else None)

    def _reveal(self, target: QWidget | None) -> None:
        from shiboken6 import isValid

        chat = self.chat
        self.revealing = False
        if not isValid(chat):  # the chat was closed before the turn's widgets were made (a window closing)
            return
        canvas = chat.widget()
        if target is None or not isValid(target) or target.parentWidget() is None or canvas is None:
            return
        for layout in (chat.column.layout(), canvas.layout()):
            if layout is not None:
                layout.activate()
        top = target.mapTo(canvas, target.rect().topLeft()).y()
        chat._stick = False
        chat.verticalScrollBar().setValue(max(0, top - 24))
        self.flash(target)

    def flash(self, widget: QWidget, *, ms: int = 2200) -> None:
        """Outline ``widget`` for a moment."""
        frame = QFrame(self.chat.column)
        frame.setObjectName("FoundFlash")
        frame.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        frame.setGeometry(widget.geometry().adjusted(-6, -4, 6, 4))
        frame.setStyleSheet(f"QFrame#FoundFlash {{ border: 2px solid {theme.colors().accent}; border-radius: 10px;"
                            " background: transparent; }")
        frame.show()
        frame.raise_()
        self.flash_frame = frame
        QTimer.singleShot(ms, frame.deleteLater)


__all__ = ["Finder", "empty_state"]
