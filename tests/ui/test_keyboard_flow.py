"""The whole chat flow without a mouse: send, approve, review and apply,
stop; every control has an accessible name and shows keyboard focus; real key events (QTest) go to
whatever has the keyboard, as a person's keys would."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QWidget

from tests.fakes.app_window import close_app, wait_until
from tests.ui.a11y import unnamed_controls
from workspace.providers.testing import Pause, ToolCall

CTRL = Qt.KeyboardModifier.ControlModifier
SHIFT = Qt.KeyboardModifier.ShiftModifier


def focused() -> QWidget:
    widget = QApplication.focusWidget()
    assert widget is not None, "nothing has the keyboard"
    return widget


def keys(text: str) -> None:
    QTest.keyClicks(focused(), text)


def key(k: Qt.Key, mods: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier) -> None:
    QTest.keyClick(focused(), k, mods)


@pytest.fixture
async def app(provider: Any, db_path: Path, tmp_path: Path) -> AsyncIterator[Any]:
    from ui.app import Application

    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("alpha\nbeta\ngamma\n", encoding="utf-8")
    root = Application(provider=provider, db_path=db_path, theme_name="light", folder=folder)
    root.controller.set_robot("file-helper")
    root.window.resize(1300, 850)
    root.window.show()
    root.window.activateWindow()
    await wait_until(lambda: root.window.docks.changes_pane is not None, what="the docks")
    try:
        yield root
    finally:
        await close_app(root)


async def _idle(root: Any) -> None:
    await wait_until(lambda: root.controller.idle, what="the run to end")
    await asyncio.sleep(0.05)


async def test_send_approve_review_apply_and_stop_with_the_keyboard_only(app: Any, provider: Any,
                                                                        tmp_path: Path) -> None:
    w = app.window
    folder = tmp_path / "project"
    app.controller.workspace.approval.policy.set_rule("ask", tool="edit_file")
    provider.enqueue([ToolCall("edit_file", {"path": "notes.txt", "search": "beta", "replace": "BETA"}, id="e1")],
                     "I proposed the edit.")
    w.composer.focus()
    assert focused() is w.composer.edit
    keys("shout beta")
    key(Qt.Key.Key_Return, CTRL)  # send
    await wait_until(lambda: w.chat.pending_approval() is not None, what="the approval")
    assert focused() is w.composer.edit  # never taken from someone typing
    key(Qt.Key.Key_J, CTRL)  # go to the approval
    assert focused() is w.chat.pending_approval()
    key(Qt.Key.Key_Y)  # approve
    await _idle(app)
    assert (folder / "notes.txt").read_text(encoding="utf-8") == "alpha\nbeta\ngamma\n"  # waits for review
    assert w.status.review.isVisible()
    key(Qt.Key.Key_D, CTRL | SHIFT)  # to the Changes dock: the keyboard is in the diff
    pane = w.docks.changes_pane
    assert focused() is pane.view
    key(Qt.Key.Key_A)  # accept the hunk
    key(Qt.Key.Key_Return, CTRL)  # apply
    await asyncio.sleep(0)
    await pane.commands.wait_idle()
    await asyncio.sleep(0.05)
    assert (folder / "notes.txt").read_text(encoding="utf-8") == "alpha\nBETA\ngamma\n"
    assert not w.status.review.isVisible()
    key(Qt.Key.Key_D, CTRL | SHIFT)  # again: back to the message box
    assert focused() is w.composer.edit
    # stop a run with Esc
    provider.enqueue([Pause(5), "never"])
    keys("a long one")
    key(Qt.Key.Key_Return, CTRL)
    await wait_until(lambda: app.controller.running, what="the run to start")
    key(Qt.Key.Key_Escape)
    await _idle(app)
    assert app.controller.session.transcript()[-1].status == "cancelled"


async def test_every_control_is_named_and_tab_reaches_the_chat_controls(app: Any, provider: Any) -> None:
    w = app.window
    assert unnamed_controls(w) == []
    app.controller.workspace.approval.policy.set_rule("ask", tool="edit_file")
    provider.enqueue([ToolCall("edit_file", {"path": "notes.txt", "search": "beta", "replace": "BETA"}, id="e1")],
                     "Done.")
    w.runs.send("shout beta")
    await wait_until(lambda: w.chat.pending_approval() is not None, what="the approval")
    assert unnamed_controls(w) == []
    w.chat.pending_approval().approve()
    await _idle(app)
    for message in w.chat.user_messages():
        message._set_hover(True)
    assert unnamed_controls(w) == []
    w.settings_flow.open_settings()
    await asyncio.sleep(0.05)
    assert unnamed_controls(w.settings_flow.dialog) == []
    w.settings_flow.dialog.close()
    w.commands.by_name["shortcuts"].trigger()
    assert unnamed_controls(w.commands._shortcuts) == []
    w.commands._shortcuts.close()
    # Tab from the message box goes on to the send button: the box does not swallow Tab
    w.activateWindow()
    await asyncio.sleep(0.05)
    w.composer.set_text("something to send")
    w.composer.focus()
    key(Qt.Key.Key_Tab)
    assert focused() is not w.composer.edit


def test_the_style_shows_keyboard_focus_on_every_kind_of_control() -> None:
    from ui import theme

    for name in theme.THEMES:
        qss = theme.style_sheet(name)
        for selector in ("QToolButton:focus", "QPushButton:focus", "#ExampleChip:focus", "QListView:focus",
                         "QTableView:focus", "QTabBar::tab:focus", "QLineEdit:focus", "#ThreadList:focus",
                         "QCheckBox:focus", "#SendButton:focus"):
            assert selector in qss, (name, selector)
