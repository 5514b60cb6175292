"""RobotListModel: the robots a user can pick (shipped, user and project robots)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QAbstractListModel, QModelIndex, QObject, QPersistentModelIndex, Qt

if TYPE_CHECKING:
    from collections.abc import Sequence

    from workspace.catalog import RobotInfo

Index = QModelIndex | QPersistentModelIndex

DEMO_LABEL = "Offline demo (no language model)"


class RobotListModel(QAbstractListModel):
    NameRole = Qt.ItemDataRole.UserRole
    InfoRole = Qt.ItemDataRole.UserRole + 1
    ModelRole = Qt.ItemDataRole.UserRole + 2

    def __init__(self, parent: QObject | None = None, *, default_model: str | None = None) -> None:
        super().__init__(parent)
        self._robots: list[RobotInfo] = []
        self.default_model = default_model

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._robots)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        info = self._robots[index.row()]
        if role in (Qt.ItemDataRole.DisplayRole, self.NameRole):
            return info.name
        if role == self.InfoRole:
            return info
        if role == self.ModelRole:
            return self.model_label(info)
        if role == Qt.ItemDataRole.ToolTipRole:
            source = info.source
            desc = info.description or ""
            return f"{info.name} ({source}) — {desc}\nModel: {self.model_label(info)}"
        return None

    def model_label(self, info: RobotInfo) -> str:
        from workspace.providers import is_offline

        model = info.model or self.default_model
        return DEMO_LABEL if not model or is_offline(str(model)) else str(model)  # "demo", "offline-demo": the demo

    def set_robots(self, robots: Sequence[RobotInfo]) -> None:
        self.beginResetModel()
        self._robots = list(robots)
        self.endResetModel()

    def names(self) -> list[str]:
        return [r.name for r in self._robots]

    def row_of(self, name: str) -> int:
        for row, info in enumerate(self._robots):
            if info.name == name:
                return row
        return -1
