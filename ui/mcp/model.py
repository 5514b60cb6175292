"""McpServersModel: one row per MCP server, from the manager's ServerStatus snapshots."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt

from ui.widgets.table_model import RowsTableModel

if TYPE_CHECKING:
    from workspace.mcp.status import ServerStatus

STATE_LABELS = {"starting": "starting…", "ready": "ready", "failed": "failed", "stopped": "stopped"}
#: A remote server's sign-in, when it is why the server is not up.
AUTH_LABELS = {"sign-in": "sign in", "sign-in-again": "sign in again", "signing-in": "signing in…"}


class McpServersModel(RowsTableModel[Any]):
    COLUMNS = ("Server", "State", "Tools", "Transport")
    StatusRole = Qt.ItemDataRole.UserRole

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._by_name: dict[str, int] = {}

    def reindex(self) -> None:
        self._by_name = {s.name: i for i, s in enumerate(self._rows)}

    def cell(self, status: Any, col: int, role: int) -> Any:
        if role == self.StatusRole:
            return status
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
            return status.reason or getattr(status, "tools_note", None) or status.target or status.name
        return None

    @property
    def statuses(self) -> list[ServerStatus]:
        return list(self._rows)

    def status(self, name: str) -> ServerStatus | None:
        row = self._by_name.get(name)
        return self._rows[row] if row is not None else None

    def set_statuses(self, statuses: list[Any]) -> None:
        self.set_rows(statuses)

    def update(self, status: ServerStatus) -> None:
        """Insert or replace one server's status (called for every manager change)."""
        row = self._by_name.get(status.name)
        if row is None:
            self._by_name[status.name] = len(self._rows)
            self.append_rows([status])
            return
        self._rows[row] = status
        self.row_changed(row)


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
