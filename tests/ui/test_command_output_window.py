"""A running command's output in the window, end to end: the scripted model calls ``run_command``,
the person approves it, a real command runs in the real sandbox, its output shows live in the tool card
and stays once it ends; the inspector has the whole output; the reopened thread shows the same; Esc stops a
command and the card says so."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from tests.fakes.app_window import running_app, wait_until
from tests.ui.chat_dump import assert_same, reopen, snapshot
from workspace.isolation import SandboxUnavailable, sandbox_for_platform
from workspace.providers.testing import ToolCall

try:
    sandbox_for_platform()
except SandboxUnavailable as exc:  # pragma: no cover - the suite's machine has bubblewrap
    pytest.skip(f"no sandbox on this machine: {exc}", allow_module_level=True)

pytestmark = pytest.mark.timeout(180)

#: Three coloured lines, a pause after each: the card shows the first while the command still runs.
SLOW_LINES = r"for i in 1 2 3; do printf '\033[32mline %s\033[0m\n' $i; sleep 0.4; done; echo end"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\n", encoding="utf-8")
    return root


async def _idle(root: Any) -> None:
    await wait_until(lambda: root.controller.idle, timeout=60, what="the run to end")
    await asyncio.sleep(0.05)


def _card(root: Any, call_id: str) -> Any:
    return next(c for c in root.window.chat.tool_cards() if c.call_id == call_id)


async def test_a_command_streams_into_its_card_the_inspector_has_it_and_a_reopened_thread_shows_it(
        provider: Any, db_path: Path, folder: Path) -> None:
    from workspace.config import load_config

    config = load_config(folder, overrides={"review": {"mode": "review"}})
    async with running_app(provider=provider, db_path=db_path, theme_name="light", folder=folder, config=config,
                           size=(1280, 720)) as root:
        window, chat = root.window, root.window.chat
        root.controller.set_robot("file-helper")
        root.controller.workspace.approval.policy.set_rule("ask", tool="run_command")
        provider.enqueue([ToolCall("run_command", {"command": SLOW_LINES}, id="c1")], "It printed three lines.")
        window.runs.send("print three lines")
        await wait_until(lambda: chat.pending_approval() is not None, what="the command's approval")
        chat.pending_approval().approve()
        # live: the first line shows while the command still runs, without its colour codes
        await wait_until(lambda: "line 1" in (_card(root, "c1").output.text if _card(root, "c1").output else ""),
                         timeout=30, what="the first line in the card")
        card = _card(root, "c1")
        assert card.status == "running" and "line 3" not in card.output.text
        assert "\x1b" not in card.output.text and "running" in card.output.toggle.text()
        await _idle(root)
        assert card.output.text == "line 1\nline 2\nline 3\nend\n"
        assert card.status == "ok" and card._result_toggle is not None
        assert card.output.expanded  # four lines: short, it stays open
        assert "4 lines" in card.output.toggle.text() and "running" not in card.output.toggle.text()
        # the inspector: the call's whole output, from its events
        pane = window.docks.tool_pane
        pane.select_call("c1")
        assert "line 1\nline 2\nline 3\nend" in pane.output_view.toPlainText()
        from PySide6.QtGui import QColor

        from ui import theme
        from ui.ansi import palette

        green = QColor(palette(theme.colors().name)[2])
        for view in (pane.output_view, card.output.view):  # the inspector and the card paint the colour
            found = view.document().find("line 2")
            assert not found.isNull() and found.charFormat().foreground().color() == green
        assert "\x1b" not in pane.output_view.toPlainText()
        # reopened: the same card, the same state
        live = snapshot(root)
        assert "output='line 1\\nline 2\\nline 3\\nend\\n'" in live["state"]
        assert_same(live, await reopen(root))
        again = _card(root, "c1")
        assert again.output is not None and again.output.text == "line 1\nline 2\nline 3\nend\n"


async def test_esc_stops_a_running_command_and_the_card_says_it_was_stopped(
        provider: Any, db_path: Path, folder: Path) -> None:
    from workspace.config import load_config

    config = load_config(folder, overrides={"review": {"mode": "review"}})
    async with running_app(provider=provider, db_path=db_path, theme_name="light", folder=folder, config=config,
                           size=(1280, 720)) as root:
        window = root.window
        root.controller.set_robot("file-helper")
        root.controller.workspace.approval.policy.set_rule("allow", tool="run_command")
        provider.enqueue([ToolCall("run_command", {"command": "echo started; sleep 60; echo never"}, id="s1")],
                         "never")
        window.runs.send("wait a minute")
        await wait_until(lambda: any(c.call_id == "s1" and c.output is not None and "started" in c.output.text
                                     for c in window.chat.tool_cards()), timeout=30, what="the command's output")
        QTest.keyClick(QApplication.focusWidget() or window, Qt.Key.Key_Escape)
        await _idle(root)
        card = _card(root, "s1")
        assert card.status == "stopped"
        assert card.output is not None and card.output.text.startswith("started\n")
        assert card.output.text == "started\n\n[stopped: the command and everything it started were killed]\n"
        assert card._error_box is not None and card._error_box.toPlainText().startswith("Stopped")
        assert root.controller.session.transcript()[-1].status == "cancelled"
