"""docs/ARCHITECTURE.md's "A dock" recipe is true: a pane module with a factory and one line in DOCKS
make a dock with its tab, its View action, its shortcut and the live events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes.app_window import close_app, wait_until


async def test_a_dock_is_its_pane_module_and_one_line(provider: Any, db_path: Path, tmp_path: Path,
                                                      monkeypatch: Any) -> None:
    from ui.app import Application
    from ui.window import docks

    line = docks.DockSpec("notes", "Notes", "tests.ui.notes_pane:make_pane", "note", "Ctrl+Shift+O")
    monkeypatch.setattr(docks, "DOCKS", (*docks.DOCKS, line))
    app = Application(provider=provider, db_path=db_path, theme_name="light", folder=tmp_path)
    try:
        window = app.window
        window.show()
        window.docks.build_inspector()
        assert "notes" in window.docks
        pane = window.docks.panes["notes"]
        assert window.docks["notes"].widget() is pane
        actions = {a.text() for a in window.findChildren(type(window.docks["notes"].toggleViewAction()))}
        assert "Show Notes" in actions
        assert any(a.shortcut().toString() == "Ctrl+Shift+O" for a in window.findChildren(
            type(window.docks["notes"].toggleViewAction())))
        provider.enqueue("Hello.")
        window.runs.send("hi")
        await wait_until(lambda: "run_finished" in pane.seen, what="the pane to see the run end")
        assert pane.seen[0] == "run_started"
    finally:
        await close_app(app)
