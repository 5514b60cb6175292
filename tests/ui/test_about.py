"""Help > About shows the version and every place the app keeps data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QLabel

from workspace import __version__, paths


async def test_about_lists_version_and_data_locations(desktop: Any, robotlab_home: Path) -> None:
    window = desktop.window
    window.commands.by_name["about"].trigger()
    dialog = window.settings_flow.about_dialog
    assert dialog.isVisible() and not dialog.isModal()
    texts = {label.text() for label in dialog.findChildren(QLabel)}
    assert __version__ in texts
    for path in paths.all_paths().values():
        assert str(path) in texts
    assert str(paths.database_path()).startswith(str(robotlab_home))
    dialog.close()
