"""An apply a crash cut short is offered for recovery when the window opens its folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakes.killed_apply import file_states, kill_mid_apply, killed_project, temp_files
from PySide6.QtWidgets import QMessageBox

from tests.fakes.app_window import running_app, wait_until


async def test_the_window_offers_to_roll_an_interrupted_apply_back(tmp_path: Path, provider: Any,
                                                                   db_path: Path) -> None:
    folder = killed_project(tmp_path)
    kill_mid_apply(folder, "-", pause=2)  # the default checkpoint store, as the window uses it
    assert set(file_states(folder).values()) == {"old", "new"}  # mixed: two files were renamed in
    async with running_app(provider=provider, db_path=db_path, folder=folder, size=(1200, 800)) as root:
        window = root.window
        await wait_until(lambda: window.banner.isVisible() and "Recover" in window.banner.action_button.text(),
                         what="the recovery banner")
        assert "stopped while applying" in window.banner.label.text()
        window.banner.action_button.click()
        box = window.folder_flow._recovery_box
        assert isinstance(box, QMessageBox) and box.isVisible()
        back = next(b for b in box.buttons() if b.text() == "Roll back")
        back.click()
        await wait_until(lambda: not window.banner.isVisible(), what="the recovery")
        assert "Rolled back" in window.toast.label.text()
    assert set(file_states(folder).values()) == {"old"} and not temp_files(folder)
