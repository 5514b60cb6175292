"""Every dock follows the open thread and its state: the count of changes
waiting for review is always in sight (the Changes tab, the status bar, the change card); after Undo
nothing says "applied" (the Changes dock, the chat's card, the same thread reopened); the Memory and
Tool calls details forget the last thread."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.app_window import close_app, turns_made, wait_until
from ui.chat.view.change_card import ChangeCard
from workspace.providers.testing import ToolCall

NOTES = "alpha\nbeta\ngamma\ndelta\nepsilon\nzeta\neta\ntheta\niota\nkappa\nlambda\nmu\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text(NOTES, encoding="utf-8")
    return root


@pytest.fixture
async def app(provider: Any, db_path: Path, folder: Path) -> AsyncIterator[Any]:
    from ui.app import Application

    root = Application(provider=provider, db_path=db_path, theme_name="light", folder=folder)
    root.controller.set_robot("file-helper")
    root.window.resize(1300, 850)
    root.window.show()
    try:
        yield root
    finally:
        await close_app(root)


async def _idle(root: Any) -> None:
    await wait_until(lambda: root.controller.idle, what="the run to end")
    await asyncio.sleep(0.05)


async def _settled(pane: Any) -> None:
    await asyncio.sleep(0)
    await pane.commands.wait_idle()
    await asyncio.sleep(0.02)


def _card(window: Any) -> ChangeCard:
    return next(w for w in window.chat.items() if isinstance(w, ChangeCard))


async def test_pending_changes_are_counted_where_they_always_show_and_undo_shows_everywhere(
        app: Any, provider: Any, folder: Path) -> None:
    window = app.window
    pane = window.docks.changes_pane
    provider.enqueue(
        [ToolCall("edit_file", {"path": "notes.txt", "search": "beta", "replace": "BETA"}, id="e1"),
         ToolCall("edit_file", {"path": "notes.txt", "search": "kappa", "replace": "KAPPA"}, id="e2")],
        "Two edits proposed.")
    window.runs.send("shout two words")
    await _idle(app)
    # the count: the dock's tab (second, so it shows at the default width), the status bar, the card
    assert window.docks["changes"].windowTitle() == "Changes · 2"
    tabs = window.tabifiedDockWidgets(window.docks["tools"])
    assert tabs[0] is window.docks["changes"]
    assert window.status.review.isVisible() and window.status.review.text() == "2 changes to review"
    card = _card(window)
    assert card._pill is not None and card._pill.text() == "2 changes to review"
    # the badge opens the dock
    window.status.review.click()
    assert window.docks.in_front(window.docks["changes"])
    pane.model.accept_all()
    pane.apply_button.click()
    await _settled(pane)
    assert not window.status.review.isVisible() and window.docks["changes"].windowTitle() == "Changes"
    assert "applied" in pane.file_label.text() or pane.model.state_of(pane.model.file(0)) == "applied"
    assert card._pill is not None and card._pill.text() == "applied"
    # Undo: the dock, its files and the card say undone, not applied
    pane.undo_button.click()
    await _settled(pane)
    await wait_until(lambda: pane.model.undone, what="the history to say undone")
    assert (folder / "notes.txt").read_text(encoding="utf-8") == NOTES
    assert pane.model.state_of(pane.model.file(0)) == "undone"
    assert "applied" not in pane.summary.text().lower().replace("undone", "")
    assert "Undone" in pane.summary.text()
    assert card._pill is not None and card._pill.text() == "undone"
    # reopened, the thread still says undone (from the folder's change history)
    thread = app.controller.thread_id
    window.threads.new()
    await asyncio.sleep(0.05)
    window.threads.open(thread)
    await turns_made(window.chat)
    await wait_until(lambda: _card(window)._pill is not None and _card(window)._pill.text() == "undone",
                     what="the reopened card to say undone")
    item = window.chat.presenter.all_change_items()[0]
    assert item.undone


async def test_the_memory_and_tool_details_forget_the_last_thread(desktop: Any, provider: Any) -> None:
    window = desktop.window
    await wait_until(lambda: window.docks.memory_pane is not None, what="the inspector")
    provider.enqueue([ToolCall("remember", {"key": "color", "value": "teal"}, id="m1")], "Noted.")
    window.runs.send("remember teal")
    await wait_until(lambda: desktop.controller.idle, what="the run")
    await asyncio.sleep(0.05)
    memory, tools = window.docks.memory_pane, window.docks.tool_pane
    memory.table.selectRow(0)
    tools.table.selectRow(0)
    assert "teal" in memory.detail.toPlainText()
    assert "color" in tools.args_view.toPlainText()
    window.threads.new()
    await asyncio.sleep(0.05)
    assert memory.detail.toPlainText() == ""
    assert tools.args_view.toPlainText() == "" and tools.raw_view.toPlainText() == ""
