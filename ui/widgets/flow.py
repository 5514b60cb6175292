"""Layout pieces that never widen the conversation: a row that wraps (:class:`FlowRow`), a tool
button whose text ends in "…" when narrow (:class:`ElidedToolButton`), and word-wrapping labels
that give way (:func:`shrinkable`). Used by the cards and the chat's empty state."""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QEvent, QRect, QSize, Qt
from PySide6.QtWidgets import QLabel, QLayout, QLayoutItem, QSizePolicy, QToolButton, QWidget

from ui.widgets.eliding import ElidesOnResize, elide_text


def shrinkable(label: QLabel) -> QLabel:
    """A word-wrapping label that never widens its card (a long word is cut, not the card)."""
    policy = QSizePolicy(QSizePolicy.Policy.Ignored, label.sizePolicy().verticalPolicy())
    policy.setHeightForWidth(True)  # its height follows its width (a new policy would drop that)
    label.setSizePolicy(policy)
    label.setWordWrap(True)
    return label


class FlowRow(QLayout):
    """Widgets in a row that wraps onto more rows when narrow (so buttons never fall off the card).

    Each widget takes its preferred width; a horizontally *expanding* one (a text field, a hint)
    is placed at its minimum width and then takes the rest of its row. Rows without one are
    right-aligned when ``align_right``. The minimum width is the widest single widget's.
    """

    def __init__(self, parent: QWidget | None = None, *, spacing: int = 8, align_right: bool = False,
                 center: bool = False) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._gap = spacing
        self._align_right = align_right
        self._center = center
        self.setContentsMargins(0, 0, 0, 0)

    # -- QLayout ------------------------------------------------------------------------------
    def addItem(self, item: QLayoutItem) -> None:
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:
        return Qt.Orientation.Horizontal

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._arrange(QRect(0, 0, width, 0), apply=False)

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        self._arrange(rect, apply=True)

    def sizeHint(self) -> QSize:
        items = self._visible()
        m = self.contentsMargins()
        width = sum(i.sizeHint().width() for i in items) + self._gap * max(0, len(items) - 1)
        height = max((i.sizeHint().height() for i in items), default=0)
        return QSize(width + m.left() + m.right(), height + m.top() + m.bottom())

    def minimumSize(self) -> QSize:
        items = self._visible()
        m = self.contentsMargins()
        width = max((i.minimumSize().width() if self._expands(i) else i.sizeHint().width() for i in items),
                    default=0)
        height = max((i.minimumSize().height() for i in items), default=0)
        return QSize(width + m.left() + m.right(), height + m.top() + m.bottom())

    # -- placement ----------------------------------------------------------------------------
    def _visible(self) -> list[QLayoutItem]:
        # Qt may delete an item behind Python's back while the layout is torn down (its widget destroyed
        # first): such an item is dropped, not touched.
        self._items = [i for i in self._items if shiboken6.isValid(i)]
        return [i for i in self._items if not i.isEmpty()]

    @staticmethod
    def _expands(item: QLayoutItem) -> bool:
        widget = item.widget()
        policy = widget.sizePolicy().horizontalPolicy() if widget is not None else QSizePolicy.Policy.Fixed
        return bool(policy.value & QSizePolicy.PolicyFlag.ExpandFlag.value)

    def _arrange(self, rect: QRect, *, apply: bool) -> int:
        m = self.contentsMargins()
        area = rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom())
        room = max(1, area.width())
        rows: list[list[tuple[QLayoutItem, int]]] = []
        row: list[tuple[QLayoutItem, int]] = []
        used = 0
        for item in self._visible():
            width = item.minimumSize().width() if self._expands(item) else item.sizeHint().width()
            width = min(max(width, item.minimumSize().width()), room)
            if row and used + self._gap + width > room:
                rows.append(row)
                row, used = [], 0
            used += (self._gap if row else 0) + width
            row.append((item, width))
        if row:
            rows.append(row)
        y = area.top()
        for index, line in enumerate(rows):
            height = max(item.sizeHint().height() for item, _w in line)
            if apply:
                spare = room - (sum(w for _i, w in line) + self._gap * (len(line) - 1))
                growers = [item for item, _w in line if self._expands(item)]
                shift = spare if self._align_right else spare // 2 if self._center else 0
                x = area.left() + (shift if not growers else 0)
                for item, width in line:
                    if growers and item is growers[0]:
                        width += spare
                    item_height = min(height, item.sizeHint().height()) if not self._expands(item) else height
                    item.setGeometry(QRect(x, y + (height - item_height) // 2, width, item_height))
                    x += width + self._gap
            y += height + (self._gap if index < len(rows) - 1 else 0)
        return y - area.top() + m.top() + m.bottom()


class ElidedToolButton(ElidesOnResize, QToolButton):
    """A tool button (icon and one line) whose text ends in "…" when narrow; ``text()`` is the full text.

    It asks for its whole text but needs only ``min_text`` (e.g. "Result…"): a long preview never
    makes the card wider than the conversation.
    """

    def __init__(self, parent: QWidget | None = None, *, min_text: str = "") -> None:
        super().__init__(parent)
        self._full = ""
        self._min_text = min_text
        #: Texts' widths in its font, kept (a few): a card's layout asks the size hints again and again in a step,
        #: and a result's preview (300 characters) was measured each time.
        self._widths: dict[str, int] = {}

    def _width(self, text: str) -> int:
        width = self._widths.get(text)
        if width is None:
            if len(self._widths) >= 8:
                self._widths.clear()
            width = self._widths[text] = self.fontMetrics().horizontalAdvance(text)
        return width

    def changeEvent(self, event: QEvent) -> None:
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._widths.clear()  # (before the eliding the mixin does then)
        super().changeEvent(event)

    def setText(self, text: str) -> None:
        self._full = text
        self.setAccessibleName(text)
        self._elide()
        self.updateGeometry()

    def text(self) -> str:
        return self._full

    @property
    def shown_text(self) -> str:
        return QToolButton.text(self)

    def _overhead(self) -> int:
        return max(0, super().sizeHint().width() - self._width(QToolButton.text(self)))  # (as text_overhead)

    def sizeHint(self) -> QSize:
        return QSize(self._overhead() + self._width(self._full) + 2, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:
        part = self._min_text if len(self._min_text) < len(self._full) else self._full
        return QSize(self._overhead() + self._width(part) + 2, super().minimumSizeHint().height())

    def _elide(self) -> None:
        shown = elide_text(self.fontMetrics(), self._full, self.width() - self._overhead() - 2,
                           width=self._width(self._full))
        if shown != QToolButton.text(self):
            super().setText(shown)


__all__ = ["ElidedToolButton", "FlowRow", "shrinkable"]
