"""Command palette (Ctrl+K): fuzzy search over every action of the window."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QAction, QColor, QKeyEvent, QKeySequence, QPainter
from PySide6.QtWidgets import (
    QFrame,
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
        self.list = QListWidget(self)
        self.list.setObjectName("PaletteList")
        self.list.setAccessibleName("Commands")
        self.list.setItemDelegate(_CommandDelegate(self.list))
        self.list.itemActivated.connect(self._run_item)
        layout.addWidget(self.list)
        self._actions: list[QAction] = []
        self.hide()

    def open_with(self, actions: list[QAction]) -> None:
        self._actions = [a for a in actions if a.text()]
        self.input.clear()
        self._filter("")
        parent = self.parentWidget()
        if parent is not None:
            width = min(560, parent.width() - 40)
            self.setFixedWidth(width)
            self.setFixedHeight(min(420, parent.height() - 80))
            self.move((parent.width() - width) // 2, 60)
        self.show()
        self.raise_()
        self.input.setFocus()

    def _filter(self, text: str) -> None:
        self.list.clear()
        scored = []
        for action in self._actions:
            label = action.text().replace("&&", "\0").replace("&", "").replace("\0", "&")
            s = _score(text, label)
            if s and action.isEnabled():
                scored.append((-s, label, action))
        scored.sort(key=lambda item: (item[0], item[1]) if text else (0, item[1]))
        for _s, label, action in scored:
            item = QListWidgetItem(label)
            item.setData(Qt.ItemDataRole.UserRole, action)
            item.setData(ShortcutRole, action.shortcut().toString(QKeySequence.SequenceFormat.NativeText))
            self.list.addItem(item)
        if self.list.count():
            self.list.setCurrentRow(0)

    def labels(self) -> list[str]:
        return [self.list.item(i).text() for i in range(self.list.count())]

    def _run_item(self, item: QListWidgetItem) -> None:
        action = item.data(Qt.ItemDataRole.UserRole)
        self.hide()
        if isinstance(action, QAction):
            action.trigger()

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
