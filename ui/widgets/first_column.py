"""A view whose first column takes the width the others leave, but never less than a minimum: below it the
view scrolls sideways instead of squeezing the column to nothing (a narrow dock at 1024 x 640)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QTreeView


def _header(view: QAbstractItemView) -> QHeaderView:
    if isinstance(view, QTableView):
        return view.horizontalHeader()
    assert isinstance(view, QTreeView)
    return view.header()


class FirstColumnFill(QObject):
    """Keeps ``view``'s first column as wide as the viewport less the other columns, at least ``minimum``
    pixels; the other columns keep the widths they are given (the person can still drag them)."""

    def __init__(self, view: QAbstractItemView, minimum: int) -> None:
        super().__init__(view)
        self.minimum = minimum
        header = _header(view)
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        self._header, self._viewport = header, view.viewport()
        header.sectionResized.connect(self._other_resized)
        self._viewport.installEventFilter(self)
        self.fit()

    def fit(self) -> None:
        header = self._header
        others = sum(header.sectionSize(col) for col in range(1, header.count()))
        header.resizeSection(0, max(self.minimum, self._viewport.width() - others))

    def _other_resized(self, index: int, _old: int, _new: int) -> None:
        if index != 0:
            self.fit()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        # (the event's type first: while the view is taken down its viewport still gets events, and asking the
        # half-deleted view for anything would raise)
        if event.type() == QEvent.Type.Resize and watched is self._viewport:
            self.fit()
        return super().eventFilter(watched, event)
