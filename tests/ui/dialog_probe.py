"""Opens each of the window's dialogs on the screen the platform gives (tests choose it with
``offscreen:configfile=``) and prints, as JSON, where each one and its visible buttons are.

    QT_QPA_PLATFORM=offscreen:configfile=screen.json python -m tests.ui.dialog_probe [--shots DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any


def _rect(r: Any) -> list[int]:
    return [r.x(), r.y(), r.width(), r.height()]


async def _settle(n: int = 10) -> None:
    for _ in range(n):
        await asyncio.sleep(0.02)


def _describe(dialog: Any) -> dict[str, Any]:
    """The dialog's frame, its minimum size, and each visible button's place on the screen."""
    from PySide6.QtCore import QPoint, QRect
    from PySide6.QtWidgets import QAbstractButton, QAbstractScrollArea

    buttons = []
    for button in dialog.findChildren(QAbstractButton):
        if not button.isVisibleTo(dialog) or not button.text():
            continue
        # Only the buttons of the page shown: a hidden tab's buttons are not on the screen.
        if not button.isVisible():
            continue
        top_left = button.mapToGlobal(QPoint(0, 0))
        # A button in a scrolling page is reached by scrolling: only the others must be on the screen.
        scrolled = False
        parent = button.parentWidget()
        while parent is not None and parent is not dialog:
            if isinstance(parent, QAbstractScrollArea):
                scrolled = True
                break
            parent = parent.parentWidget()
        buttons.append({"text": button.text(), "rect": _rect(QRect(top_left, button.size())), "scrolled": scrolled})
    hint = dialog.minimumSizeHint()
    return {"frame": _rect(dialog.frameGeometry()), "minimum": [max(hint.width(), dialog.minimumWidth()),
                                                               max(hint.height(), dialog.minimumHeight())],
            "buttons": buttons}


async def _probe(args: argparse.Namespace) -> dict[str, Any]:
    import tempfile
    from pathlib import Path

    from tests.ui.window_probe import _reach, _until
    from ui.app import Application
    from workspace.providers.demo import DemoProvider

    folder = Path(tempfile.mkdtemp()) / "garden"
    folder.mkdir()
    (folder / "notes.txt").write_text("Plant tomatoes in May.\nWater them.\n", encoding="utf-8")
    root = Application(provider=DemoProvider(delay=0.001), db_path=":memory:", theme_name="light", folder=folder)
    window = root.window
    window.show()
    await _settle(20)
    await _until(lambda: window.docks.changes_pane is not None)
    out: dict[str, Any] = {"screen": _rect(window.screen().availableGeometry()), "dialogs": {}}

    async def record(name: str, dialog: Any) -> None:
        await _settle()
        out["dialogs"][name] = _describe(dialog)
        if args.shots:
            dialog.grab().save(str(Path(args.shots) / f"{name}.png"))
        dialog.close()
        await _settle(3)

    window.threads.new()
    await _reach(root, "review")
    review = window.docks.changes_pane.open_review()
    await _settle()
    from PySide6.QtCore import QPoint, QRect

    viewport = review.view.viewport()  # the hunks' Accept / Reject / Edit are painted at its right edge
    diff_view = _rect(QRect(viewport.mapToGlobal(QPoint(0, 0)), viewport.size()))
    await record("review", review)
    out["dialogs"]["review"]["diff_view"] = diff_view
    window.settings_flow.open_settings()
    await record("settings", window.settings_flow.dialog)
    window.settings_flow.open_mcp_servers()
    await record("mcp_settings", window.settings_flow.dialog)
    await record("robot_editor", window.robots.open_editor())
    window.commands.show_shortcuts()
    await record("shortcuts", window.commands._shortcuts)
    window.settings_flow.open_about()
    await record("about", window.settings_flow.about_dialog)
    window.close()
    await root.aclose()
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shots", help="a folder for a PNG of each dialog")
    args = parser.parse_args()
    from ui.app import get_app, new_event_loop

    app = get_app()
    loop = new_event_loop(app)
    with loop:
        out = loop.run_until_complete(_probe(args))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
