"""The window opens a cleanly closed database without reading every page first (SQLite's quick_check) and
checks it in a worker after the start: damage found then is said, with the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakes.damaged_stores import filled, garbage_page

from tests.fakes.app_window import close_app, wait_until


async def test_damage_in_a_cleanly_closed_database_is_said_after_the_start(provider: Any, tmp_path: Path) -> None:
    from ui.app import Application

    db = tmp_path / "threads.db"
    filled(db)
    garbage_page(db)
    problems: list[str] = []
    root = Application(provider=provider, db_path=db, defer=True)
    root.controller.problem.connect(problems.append)
    root.window.show()
    try:
        root.finish_startup(staged=True)
        await wait_until(lambda: root.loaded, timeout=30, what="the start-up")
        assert root.controller.store_error is None  # opened at once: the check is not on the window's thread
        assert not root.controller.workspace.store.checked_at_open
        await wait_until(lambda: problems, timeout=30, what="the check in the worker")
        assert "is damaged" in problems[0] and str(db) in problems[0] and "robotlab threads recover" in problems[0]
    finally:
        await close_app(root)
