"""Command palette (Ctrl+K): fuzzy search over every action of the window, the robots and networks (choosing
one switches to it) and the threads (choosing one opens it). "No matches" says when nothing fits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QAction, QColor, QKeyEvent, QKeySequence, QPainter
from PySide6.QtWidgets import (
    QFrame,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from ui import theme

ShortcutRole = Qt.ItemDataRole.UserRole + 1


@dataclass(frozen=True)
class PaletteEntry:
    """Something the palette offers besides the window's actions: a robot, a network, a thread."""

    #: What the list shows ("Robot: assistant", "Thread: plan the garden").
    label: str
    #: What choosing it does.
    run: Callable[[], object]
    #: A muted word on the right (where an action shows its shortcut).
    detail: str = ""


class _CommandDelegate(QStyledItemDelegate):
    """The command on the left, its shortcut muted on the right."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> None:
        super().paint(painter, option, index)
        shortcut = index.data(ShortcutRole)
        if shortcut:
            painter.save()
            painter.setPen(QColor(theme.colors().muted))
            rect = option.rect.adjusted(0, 0, -10, 0)
            painter.drawText(rect, int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter), str(shortcut))
            painter.restore()


def _score(query: str, text: str) -> int:
    """Subsequence match score (0 = no match); word starts and contiguity score higher."""
    q = query.lower().strip()
    t = text.lower()
    if not q:
        return 1
    if q in t:
        return 1000 - t.index(q)
    pos = -1
    score = 0
    for ch in q:
        nxt = t.find(ch, pos + 1)
        if nxt < 0:
            return 0
        score += 10 if nxt == pos + 1 else (5 if nxt == 0 or t[nxt - 1] in " ›/-" else 1)
        pos = nxt
    return score


class CommandPalette(QFrame):
    """A floating list of actions filtered as you type; Enter runs, Esc closes."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("Palette")
        self.setWindowFlags(Qt.WindowType.Widget)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        self.input = QLineEdit(self)
        self.input.setAccessibleName("Command")
        self.input.setPlaceholderText("Type a command…")
        self.input.textChanged.connect(self._filter)
        self.input.installEventFilter(self)
        layout.addWidget(self.input)
        self.empty_note = QLabel("", self)
        self.empty_note.setObjectName("Muted")
        self.empty_note.setWordWrap(True)
        self.empty_note.setContentsMargins(8, 6, 8, 6)
        self.empty_note.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.empty_note.setVisible(False)
        layout.addWidget(self.empty_note)
        self.list = QListWidget(self)
        self.list.setObjectName("PaletteList")
        self.list.setAccessibleName("Commands")
        self.list.setItemDelegate(_CommandDelegate(self.list))
        self.list.itemActivated.connect(self._run_item)
        layout.addWidget(self.list, 1)
        self._actions: list[QAction] = []
        self._entries: list[PaletteEntry] = []
        self.hide()

    def open_with(self, actions: list[QAction], entries: list[PaletteEntry] | None = None) -> None:
        """Show the window's ``actions`` (those with a text) and ``entries`` (robots, threads), the input empty."""
        self._actions = [a for a in actions if a.text()]
        self._entries = list(entries or [])
        self.input.clear()
        self._filter("")
        self.fit()
        self.show()
        self.raise_()
        self.input.setFocus()

    def fit(self) -> None:
        """Fit the window it floats in (opened, or the window resized), keeping what is typed."""
        parent = self.parentWidget()
        if parent is not None:
            width = min(560, parent.width() - 40)
            self.setFixedWidth(width)
            self.setFixedHeight(min(420, parent.height() - 80))
            self.move((parent.width() - width) // 2, 60)

    def _filter(self, text: str) -> None:
        self.list.clear()
        # (score, group, order, label, what it runs, detail): commands first (by name), then the entries in
        # their order (robots, networks, threads: the newest first); typed text puts the best match first.
        scored: list[tuple[int, int, int, str, QAction | PaletteEntry, str]] = []
        for action in self._actions:
            label = action.text().replace("&&", "\0").replace("&", "").replace("\0", "&")
            s = _score(text, label)
            if s and action.isEnabled():
                scored.append((-s, 0, 0, label, action,
                               action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)))
        for order, entry in enumerate(self._entries):
            s = _score(text, entry.label)
            if s:
                scored.append((-s, 1, order, entry.label, entry, entry.detail))
        scored.sort(key=lambda row: (row[0], row[1], row[2], row[3]) if text.strip() else (row[1], row[2], row[3]))
        for _s, _group, _order, label, target, detail in scored:
            item = QListWidgetItem(label)
            item.setData(Qt.ItemDataRole.UserRole, target)
            item.setData(ShortcutRole, detail)
            self.list.addItem(item)
        nothing = not scored
        self.empty_note.setText(f"No matches for “{text.strip()}”. Commands, robots and thread titles are searched; "
                                "Ctrl+F searches inside the threads." if nothing else "")
        self.empty_note.setVisible(nothing)
        self.list.setVisible(not nothing)
        if self.list.count():
            self.list.setCurrentRow(0)

    def labels(self) -> list[str]:
        return [self.list.item(i).text() for i in range(self.list.count())]

    def _run_item(self, item: QListWidgetItem) -> None:
        target = item.data(Qt.ItemDataRole.UserRole)
        self.hide()
        if isinstance(target, QAction):
            target.trigger()
        elif isinstance(target, PaletteEntry):
            target.run()

    def run_current(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self._run_item(item)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if obj is self.input and event.type() == QEvent.Type.KeyPress:
            assert isinstance(event, QKeyEvent)
            key = event.key()
            if key == Qt.Key.Key_Escape:
                self.hide()
                return True
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                self.run_current()
                return True
            if key in (Qt.Key.Key_Down, Qt.Key.Key_Up):
                row = self.list.currentRow() + (1 if key == Qt.Key.Key_Down else -1)
                if 0 <= row < self.list.count():
                    self.list.setCurrentRow(row)
                return True
        return super().eventFilter(obj, event)
