"""A banner for problems that need reading (a broken database) and a toast with Undo."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QPoint, QRect, Qt, QTimer, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QWidget,
)

from ui import theme
from ui.widgets.common import ElidedLabel

#: The fewest characters' width a line of the banner's whole text has beside its buttons; with less, the buttons go
#: under the text (a text shorter than that stays beside them when it fits whole).
TEXT_ROOM = 40


class Banner(QFrame):
    """A dismissable message across the top of the chat."""

    dismissed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Banner")
        # A grid: the icon, the text, the buttons ("More"/"Less" and the action) and the close button on a row; the
        # buttons move under the text when the whole text shows and the row leaves it too little room
        # (:meth:`_place_buttons`).
        layout = QGridLayout(self)
        layout.setContentsMargins(12, 8, 8, 8)
        layout.setHorizontalSpacing(10)
        layout.setVerticalSpacing(6)
        self._grid = layout
        self.icon = QLabel(self)
        layout.addWidget(self.icon, 0, 0, Qt.AlignmentFlag.AlignTop)
        self.label = QLabel("", self)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.label, 0, 1)
        #: The text on one line ending in "…" (whole in its tooltip), in place of :attr:`label` while compact.
        self.line = ElidedLabel("", self, tooltip=True)
        self.line.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.line.setVisible(False)
        layout.addWidget(self.line, 0, 1, Qt.AlignmentFlag.AlignVCenter)
        layout.setColumnStretch(1, 1)
        #: "More"/"Less" and the action's button, beside the text or under it.
        self.buttons = QWidget(self)
        row = QHBoxLayout(self.buttons)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(10)
        #: "More" / "Less": the whole text, or one line again, while compact.
        self.more = QPushButton("More", self.buttons)
        self.more.setCursor(Qt.CursorShape.PointingHandCursor)
        self.more.setToolTip("Show the whole message")
        self.more.clicked.connect(self._toggle_more)
        self.more.setVisible(False)
        row.addWidget(self.more)
        #: One line at most unless "More" was pressed (a window too low for a message of several lines above the
        #: conversation: :meth:`set_compact`).
        self.compact = False
        self._expanded = False
        self.action_button = QPushButton("", self.buttons)
        self.action_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.action_button.clicked.connect(self._run_action)
        self.action_button.setVisible(False)
        self._action: Callable[[], object] | None = None
        row.addWidget(self.action_button)
        #: Whether the buttons are under the text (else beside it).
        self.buttons_under = False
        layout.addWidget(self.buttons, 0, 2, Qt.AlignmentFlag.AlignTop)
        close = QToolButton(self)
        close.setObjectName("GhostButton")
        self._close = close
        close.setIcon(theme.icon("close", theme.colors().muted, 14))
        close.setToolTip("Dismiss")
        close.setAccessibleName("Dismiss the message")
        close.clicked.connect(self.dismiss)
        layout.addWidget(close, 0, 3, Qt.AlignmentFlag.AlignTop)
        self.setVisible(False)

    def show_message(self, text: str, *, kind: str = "error", action: tuple[str, Callable[[], object]] | None = None,
                     ) -> None:
        """Show ``text``; ``action`` adds a button (label, callback) next to it."""
        self._action = action[1] if action else None
        self.action_button.setText(action[0] if action else "")
        self.action_button.setVisible(action is not None)
        c = theme.colors()
        self.setProperty("kind", kind)
        self.style().unpolish(self)
        self.style().polish(self)
        color = c.error if kind == "error" else c.accent
        self.icon.setPixmap(theme.icon("warning" if kind == "error" else "chat", color, 18).pixmap(18, 18))
        if text != self.label.text():
            self._expanded = False
        self.label.setText(text)
        self.line.setText(text)
        self._fit_lines()
        self.setVisible(True)

    def set_compact(self, compact: bool) -> None:
        """Show the message on one line ending in "…" (whole in its tooltip, and under "More"): a low window keeps
        its height for the conversation (at 1024×640 a message of four lines took a sixth of it)."""
        if compact != self.compact:
            self.compact = compact
            self._expanded = False
            self._fit_lines()

    def _toggle_more(self) -> None:
        self._expanded = not self._expanded
        self._fit_lines()

    def _fit_lines(self) -> None:
        """The whole text, or one line and "More" (compact); "More" only when the line does not show it all."""
        one_line = self.compact and not self._expanded
        self.label.setVisible(not one_line)
        self.line.setVisible(one_line)
        self.more.setText("Less" if self._expanded else "More")
        self.more.setToolTip("Show the message on one line" if self._expanded else "Show the whole message")
        self.more.setVisible(self.compact and (self._expanded or self.line.elided))
        self.buttons.setVisible(not self.more.isHidden() or not self.action_button.isHidden())
        self._place_buttons()

    def _place_buttons(self) -> None:
        """The buttons beside the text, or under it when the whole text shows and beside them it would have less
        than :data:`TEXT_ROOM` characters' width on a line (at 1024×640 "More" left the trust message a column
        ~100 px wide, 13 short lines, beside "Less" and "Review and trust…"). Only the banner's width decides:
        moving the buttons changes its height, never the width the choice was made at."""
        under = False
        if self.label.isVisibleTo(self) and self.buttons.isVisibleTo(self):
            grid = self._grid
            margins = grid.contentsMargins()
            spacing = grid.horizontalSpacing()
            beside = (self.width() - margins.left() - margins.right() - self.icon.sizeHint().width()
                      - self.buttons.sizeHint().width() - self._close.sizeHint().width() - 3 * spacing)
            fm = self.label.fontMetrics()
            needed = min(fm.horizontalAdvance(self.label.text()), TEXT_ROOM * fm.averageCharWidth())
            under = beside < needed
        if under == self.buttons_under:
            return
        self.buttons_under = under
        grid = self._grid
        grid.removeWidget(self.label)
        grid.removeWidget(self.buttons)
        if under:
            grid.addWidget(self.label, 0, 1, 1, 2)
            grid.addWidget(self.buttons, 1, 1, 1, 2, Qt.AlignmentFlag.AlignRight)
        else:
            grid.addWidget(self.label, 0, 1)
            grid.addWidget(self.buttons, 0, 2, Qt.AlignmentFlag.AlignTop)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._place_buttons()
        if self.compact:
            QTimer.singleShot(0, self, self._fit_lines)  # (the line elided at its new width first)

    def _run_action(self) -> None:
        if self._action is not None:
            self._action()

    def retheme(self) -> None:
        self._close.setIcon(theme.icon("close", theme.colors().muted, 14))
        if self.isVisible():
            action = (self.action_button.text(), self._action) if self._action is not None else None
            self.show_message(self.label.text(), kind=str(self.property("kind") or "error"), action=action)

    def dismiss(self) -> None:
        self.setVisible(False)
        self.dismissed.emit()

    @property
    def text(self) -> str:
        return self.label.text() if self.isVisible() else ""


class Toast(QFrame):
    """A short message at the bottom of the window, with an optional action (Undo).

    It sits just above the message box (never over the send button), centred on the conversation,
    and wraps to stay inside the window; it follows the window when it is resized.
    """

    #: Space kept between the toast and the window's edges or the message box.
    MARGIN = 12
    #: The widest a toast gets (longer messages wrap).
    MAX_WIDTH = 560

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("Toast")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(14, 8, 8, 8)
        self.label = QLabel("", self)
        self.label.setWordWrap(True)
        self.label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        layout.addWidget(self.label, 1)
        self.button = QPushButton("", self)
        self.button.setCursor(Qt.CursorShape.PointingHandCursor)
        layout.addWidget(self.button, 0, Qt.AlignmentFlag.AlignVCenter)
        self._action: Callable[[], None] | None = None
        self.button.clicked.connect(self._run)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.hide)
        self._watched: set[int] = set()
        self._watch(parent)
        self.hide()

    def show_message(self, text: str, *, action: str | None = None, callback: Callable[[], None] | None = None,
                     seconds: float = 8.0) -> None:
        self.label.setText(text)
        self.label.setToolTip("")
        self._action = callback
        self.button.setText(action or "")
        self.button.setVisible(bool(action))
        self.show()
        self._place()
        self.raise_()
        self._timer.start(int(seconds * 1000))

    # -- placement ---------------------------------------------------------------------------
    def _watch(self, widget: QWidget) -> None:
        """Place the toast again when ``widget`` (the window, the message box) moves or resizes."""
        if id(widget) not in self._watched:
            self._watched.add(id(widget))
            widget.installEventFilter(self)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() in (QEvent.Type.Resize, QEvent.Type.Move, QEvent.Type.Show, QEvent.Type.Hide) \
                and self.isVisible():
            self._place()
        return super().eventFilter(obj, event)

    def _composer(self) -> QWidget | None:
        """The message box below the conversation (the window's ``composer``), when it shows."""
        parent = self.parentWidget()
        composer = getattr(parent, "composer", None)
        if isinstance(composer, QWidget) and parent is not None and composer.isVisibleTo(parent):
            self._watch(composer)
            return composer
        return None

    def _place(self) -> None:
        """Size the toast to its text (wrapping to fit) and put it above the message box."""
        parent = self.parentWidget()
        if parent is None:
            return
        margin = self.MARGIN
        bounds = parent.rect().adjusted(margin, margin, -margin, -margin)
        area = QRect(bounds)
        bottom = bounds.bottom() - 78
        composer = self._composer()
        if composer is not None:  # centred on the conversation, above the message box and its send button
            top_left = composer.mapTo(parent, QPoint(0, 0))
            area = QRect(top_left.x() + margin, bounds.top(), composer.width() - 2 * margin, bounds.height())
            bottom = top_left.y() - 6
        width_room = max(120, min(area.width(), bounds.width(), self.MAX_WIDTH))
        layout = self.layout()
        assert layout is not None
        margins = layout.contentsMargins()
        extra = margins.left() + margins.right()
        if self.button.isVisibleTo(self):
            extra += layout.spacing() + self.button.sizeHint().width()
        one_line = self.label.fontMetrics().horizontalAdvance(self.label.text()) + 4
        width = min(one_line + extra, width_room)
        label_width = max(20, width - extra)
        height = max(self.label.heightForWidth(label_width), self.label.fontMetrics().height())
        height = max(height + margins.top() + margins.bottom(), self.button.sizeHint().height()
                     + margins.top() + margins.bottom() if self.button.isVisibleTo(self) else 0)
        self.resize(width, height)
        x = area.left() + (area.width() - width) // 2
        x = max(bounds.left(), min(x, bounds.right() - width + 1))
        y = max(bounds.top(), bottom - height)
        self.move(x, y)

    def _run(self) -> None:
        action, self._action = self._action, None
        self.hide()
        if action is not None:
            action()

    def trigger(self) -> None:
        """Run the action now (keyboard: Ctrl+Z while the toast shows)."""
        if self.isVisible() and self._action is not None:
            self._run()
