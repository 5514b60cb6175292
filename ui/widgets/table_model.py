"""RowsTableModel: the table boilerplate the inspector's models share.

A table is a list of row objects and a tuple of column titles. The base answers Qt's questions
(``rowCount``, ``columnCount``, ``headerData``, ``data`` for a valid index) and keeps the rows;
a model says what a cell shows (:meth:`RowsTableModel.cell`) and, when it finds rows by a key,
how to index them (:meth:`RowsTableModel.reindex`, called after every reset).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

Index = QModelIndex | QPersistentModelIndex
Row = TypeVar("Row")


class RowsTableModel(QAbstractTableModel, Generic[Row]):
    """A table of ``Row`` objects under the titles :attr:`COLUMNS`."""

    COLUMNS: tuple[str, ...] = ()

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._rows: list[Row] = []

    # -- Qt -----------------------------------------------------------------------------
    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.COLUMNS[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self._rows):
            return None
        return self.cell(self._rows[index.row()], index.column(), role)

    def cell(self, row: Row, column: int, role: int) -> Any:
        """What ``role`` of ``row``'s ``column`` is (None: nothing)."""
        raise NotImplementedError

    # -- rows -----------------------------------------------------------------------------
    def reindex(self) -> None:
        """Rebuild what finds a row by its key (after a reset); nothing by default."""

    @contextmanager
    def resetting(self) -> Iterator[None]:
        """Change the rows wholesale inside: views hear one reset, and the index is rebuilt after."""
        self.beginResetModel()
        try:
            yield
        finally:
            self.reindex()
            self.endResetModel()

    def set_rows(self, rows: Iterable[Row]) -> None:
        """Replace every row (one reset)."""
        with self.resetting():
            self._rows = list(rows)

    def clear(self) -> None:
        self.set_rows(())

    def append_rows(self, rows: list[Row]) -> None:
        """Add ``rows`` at the end (one insertion); the caller indexes them."""
        if not rows:
            return
        first = len(self._rows)
        self.beginInsertRows(QModelIndex(), first, first + len(rows) - 1)
        self._rows.extend(rows)
        self.endInsertRows()

    def row_changed(self, row: int) -> None:
        """Tell the views every cell of ``row`` changed."""
        self.dataChanged.emit(self.index(row, 0), self.index(row, len(self.COLUMNS) - 1))
