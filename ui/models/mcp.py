"""McpServersModel: one row per MCP server, from the manager's ServerStatus snapshots."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt

if TYPE_CHECKING:
    from collections.abc import Sequence

    from workspace.mcp.status import ServerStatus

Index = QModelIndex | QPersistentModelIndex

STATE_LABELS = {"starting": "starting…", "ready": "ready", "failed": "failed", "stopped": "stopped"}
#: A remote server's sign-in, when it is why the server is not up.
AUTH_LABELS = {"sign-in": "sign in", "sign-in-again": "sign in again", "signing-in": "signing in…"}


class McpServersModel(QAbstractTableModel):
    COLUMNS = ("Server", "State", "Tools", "Transport")
    StatusRole = Qt.ItemDataRole.UserRole

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._rows: list[ServerStatus] = []
        self._by_name: dict[str, int] = {}

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.COLUMNS[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        status = self._rows[index.row()]
        if role == self.StatusRole:
            return status
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if col == 0:
                return status.name
            if col == 1:
                state = STATE_LABELS.get(str(status.state), str(status.state))
                auth = AUTH_LABELS.get(str(getattr(status, "auth", None)))
                if auth is not None and str(status.state) != "ready":
                    state = auth  # a remote server waiting for the person to sign in says so
                return "disabled" if getattr(status, "disabled", False) else state
            if col == 2:
                tools = list(getattr(status, "tools", ()) or ())
                if not tools:
                    return "—"
                enabled = sum(1 for t in tools if getattr(t, "enabled", True))
                return f"{enabled}/{len(tools)}"
            if col == 3:
                return status.transport or "—"
        if role == Qt.ItemDataRole.ToolTipRole:
            return status.reason or status.target or status.name
        return None

    @property
    def statuses(self) -> list[ServerStatus]:
        return list(self._rows)

    def status(self, name: str) -> ServerStatus | None:
        row = self._by_name.get(name)
        return self._rows[row] if row is not None else None

    def set_statuses(self, statuses: Sequence[ServerStatus]) -> None:
        self.beginResetModel()
        self._rows = list(statuses)
        self._by_name = {s.name: i for i, s in enumerate(self._rows)}
        self.endResetModel()

    def update(self, status: ServerStatus) -> None:
        """Insert or replace one server's status (called for every manager change)."""
        row = self._by_name.get(status.name)
        if row is None:
            row = len(self._rows)
            self.beginInsertRows(QModelIndex(), row, row)
            self._rows.append(status)
            self._by_name[status.name] = row
            self.endInsertRows()
            return
        self._rows[row] = status
        self.dataChanged.emit(self.index(row, 0), self.index(row, len(self.COLUMNS) - 1))


def since_text(status: ServerStatus, now: float | None = None) -> str:
    since = getattr(status, "since", None)
    if not since:
        return ""
    delta = max(0, int((now or time.time()) - since))
    if delta < 60:
        return f"{delta} s ago"
    if delta < 3600:
        return f"{delta // 60} min ago"
    return time.strftime("%H:%M", time.localtime(since))
