"""The robot picker shows a folder's robot that has the name of a shipped one as the folder's."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def test_the_picker_lists_the_folders_assistant_beside_the_shipped_one(qtbot: Any, tmp_path: Path) -> None:
    from PySide6.QtCore import Qt

    from ui.network.robots import RobotListModel
    from workspace.catalog import list_robots

    folder = tmp_path / "project"
    (folder / ".robotlab" / "robots").mkdir(parents=True)
    (folder / ".robotlab" / "robots" / "assistant.md").write_text(
        "---\nname: assistant\n---\nYou are the folder's robot.\n", encoding="utf-8")
    model = RobotListModel()
    model.set_robots(list_robots(folder))
    shown = [model.data(model.index(row), Qt.ItemDataRole.DisplayRole) for row in range(model.rowCount())]
    assert "assistant" in shown and "assistant · this folder" in shown
    row = model.row_of("assistant · this folder")
    assert "(project)" in model.data(model.index(row), Qt.ItemDataRole.ToolTipRole)
    assert "(shipped)" in model.data(model.index(model.row_of("assistant")), Qt.ItemDataRole.ToolTipRole)
