"""Folders in the desktop: trust (an untrusted folder's MCP servers and api_base withheld until the
user trusts it, from a banner), Open Folder at runtime, and notices for unreadable robot files and
ignored environment variables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QMessageBox

from tests.fakes.app_window import close_app, wait_until
from workspace import paths, trust


def write_project_config(folder: Path, text: str) -> Path:
    """The folder's .robotlab/config.yaml with ``text``."""
    config = paths.project_config_file(folder)
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text, encoding="utf-8")
    return config

async def test_trust_banner_then_servers_appear(tmp_path: Path, robotlab_home: Path, provider: Any,
                                                db_path: Path) -> None:
    from ui.app import Application
    from workspace.mcp import set_default_manager

    folder = tmp_path / "cloned"
    write_project_config(folder, "mcpServers:\n  helper: {command: /nonexistent/helper-server}\n")
    set_default_manager(None)
    root = Application(folder=folder, provider=provider, db_path=db_path)
    root.window.show()
    try:
        window = root.window
        banner = window.banner
        assert banner.isVisible() and "MCP server 'helper': runs /nonexistent/helper-server" in banner.text
        assert banner.action_button.isVisible() and banner.action_button.text() == "Review and trust…"
        assert root.controller.config.mcp_servers == {}
        assert [s.name for s in window.docks.mcp_pane.model.statuses] == []
        # Cancel changes nothing.
        box = window.folder_flow.trust_folder()
        assert isinstance(box, QMessageBox) and "/nonexistent/helper-server" in box.informativeText()
        box.button(QMessageBox.StandardButton.Cancel).click()
        assert not trust.is_trusted(folder) and banner.isVisible()
        # Trust applies the servers without a restart.
        box = window.folder_flow.trust_folder()
        assert box is not None
        next(b for b in box.buttons() if b.text() == "Trust folder").click()
        assert trust.is_trusted(folder) and not banner.isVisible()
        assert root.controller.config.mcp_servers == {"helper": {"command": "/nonexistent/helper-server"}}
        await wait_until(lambda: [s.name for s in window.docks.mcp_pane.model.statuses] == ["helper"],
                         what="the folder's server in the MCP dock")
    finally:
        await close_app(root)
        set_default_manager(None)


async def test_unreadable_robot_files_are_reported(robotlab_home: Path, provider: Any, db_path: Path) -> None:
    from ui.app import Application

    broken = paths.user_robots_dir() / "broken.md"
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.write_text("---\nname: [unclosed\n---\nHi", encoding="utf-8")
    root = Application(provider=provider, db_path=db_path)
    root.window.show()
    try:
        toast = root.window.toast
        assert toast.isVisible() and "1 robot file could not be read" in toast.label.text()
        toast.button.click()
        assert str(broken) in root.window.banner.text
    finally:
        await close_app(root)


async def test_open_folder_switches_where_robots_work(tmp_path: Path, desktop: Any, provider: Any) -> None:
    import asyncio

    from workspace.providers.testing import ToolCall

    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello from the folder\n", encoding="utf-8")
    window = desktop.window
    assert window.status.folder.text() == "No folder open"
    dialog = window.folder_flow.open_folder()
    dialog.fileSelected.emit(str(folder))  # what choosing the folder in the dialog does
    dialog.close()
    assert desktop.controller.folder == folder.resolve()
    assert window.status.folder.text() == "Folder: project" and window.windowTitle().endswith("project — RobotLab Workspace")
    assert "file-helper" in desktop.controller.robot_names()
    desktop.controller.set_robot("file-helper")
    provider.enqueue([ToolCall("read_file", {"path": "notes.txt"}, id="r1")], "It says hello.")
    window.runs.send("read notes.txt")
    await wait_until(lambda: desktop.controller.idle, what="the run to end")
    await asyncio.sleep(0.05)
    card = window.chat.tool_cards()[0]
    assert card.status == "ok" and "hello from the folder" in str(card.result)
    # A folder that is gone: a message, and the current folder stays.
    assert not window.folder_flow.switch_folder(tmp_path / "missing")
    assert "no such folder" in window.banner.text and desktop.controller.folder == folder.resolve()


async def test_trust_changes_elsewhere_reach_the_running_app(tmp_path: Path, robotlab_home: Path, provider: Any,
                                                            db_path: Path) -> None:
    import os

    from ui.app import Application

    folder = tmp_path / "mine"
    config = write_project_config(folder, "llm:\n  api_base: http://127.0.0.1:11434/v1\n")
    trust.trust(folder)
    root = Application(folder=folder, provider=provider, db_path=db_path)
    root.window.show()
    try:
        assert root.controller.config.trusted and root.controller.config.llm.api_base
        # Shown, then changed on disk before the click: the click does not trust what was not shown.
        trust.revoke(folder)
        config.write_text("llm:\n  api_base: http://127.0.0.1:9999/v1\n", encoding="utf-8")
        stamp = trust.trust_file().stat().st_mtime
        os.utime(trust.trust_file(), (stamp + 5, stamp + 5))  # a coarse clock must still see the change
        provider.enqueue("Hello.")
        root.window.runs.send("hi")  # robotlab trust --revoke ran meanwhile: the next message sees it
        await wait_until(lambda: root.controller.idle, what="the run to end")
        assert not root.controller.config.trusted and root.controller.config.llm.api_base is None
        root.controller._config.withheld = {"llm.api_base": "http://127.0.0.1:11434/v1"}  # what was shown
        root.window.folder_flow.apply_trust()
        assert not trust.is_trusted(folder) and "changed after you were shown" in root.window.banner.text
    finally:
        await close_app(root)


async def test_ignored_environment_variables_are_pointed_out(robotlab_home: Path, provider: Any, db_path: Path,
                                                             monkeypatch: Any) -> None:
    from ui.app import Application

    monkeypatch.setenv("ROBOT_LAB_LLM_MODEL", "openai/gpt-4o-mini")
    root = Application(provider=provider, db_path=db_path)
    try:
        text = root.window.toast.label.text()
        assert "ROBOT_LAB_LLM_MODEL" in text and "ROBOT_LAB_LLM__MODEL" in text
    finally:
        await close_app(root)


async def test_changes_waiting_in_another_folder_say_where(tmp_path: Path, provider: Any, db_path: Path,
                                                           robotlab_home: Path) -> None:
    import asyncio

    from ui.app import Application
    from workspace.providers.testing import ToolCall

    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        (folder / "a.txt").write_text("one\n", encoding="utf-8")
    root = Application(folder=first, provider=provider, db_path=db_path)
    root.window.show()
    try:
        window = root.window
        root.controller.set_robot("file-helper")
        provider.enqueue([ToolCall("edit_file", {"path": "a.txt", "search": "one", "replace": "ONE"})], "Proposed.")
        window.runs.send("capitalise")
        await wait_until(lambda: root.controller.idle, what="the run to end")
        await asyncio.sleep(0.05)
        change_set_id = root.controller.session.changes.id
        assert window.folder_flow.switch_folder(second)
        window.docks.review_changes(change_set_id)
        assert f"wait in {first.resolve()}" in window.docks.changes_pane.message.text()
        assert window.folder_flow.switch_folder(first)
        window.docks.review_changes(change_set_id)
        assert window.docks.changes_pane.model.change_set is not None
        assert window.docks.changes_pane.model.change_set.id == change_set_id
    finally:
        await close_app(root)


async def test_a_local_model_server_that_is_not_running_is_shown(robotlab_home: Path, db_path: Path) -> None:
    import socket

    from ui.app import Application
    from workspace.config import load_config

    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    config = load_config(overrides={"llm": {"model": "openai/local", "api_base": f"http://127.0.0.1:{port}/v1"}},
                         env={})
    root = Application(config=config, db_path=db_path)
    root.window.show()
    try:
        status = root.window.status.connection
        await wait_until(lambda: "not reachable" in status.text(), what="the probe")
        assert f"127.0.0.1:{port}" in status.toolTip()
    finally:
        await close_app(root)


async def test_reopening_a_thread_whose_robot_is_gone_keeps_new_threads_working(
        robotlab_home: Path, provider: Any, db_path: Path) -> None:
    from ui.app import Application

    robot_file = paths.user_robots_dir() / "zzbot.md"
    robot_file.parent.mkdir(parents=True, exist_ok=True)
    robot_file.write_text("---\ntools: []\n---\nYou help.", encoding="utf-8")
    first = Application(provider=provider, db_path=db_path)
    try:
        first.controller.set_robot("zzbot")
        provider.enqueue("Hi.")
        first.window.runs.send("hello")
        await wait_until(lambda: first.controller.idle, what="the run")
    finally:
        await close_app(first)
    robot_file.unlink()
    second = Application(provider=provider, db_path=db_path)
    try:
        assert second.controller.thread_id is not None  # the old thread is back, readable
        assert second.controller.robot_name in second.controller.robot_names()
        second.window.threads.new()
        provider.enqueue("Still fine.")
        assert second.window.runs.send("and now?") is not False
        await wait_until(lambda: second.controller.idle, what="the new run")
        assert second.controller.session.transcript()[-1].text == "Still fine."
    finally:
        await close_app(second)


async def test_an_api_base_with_a_bad_port_is_a_status_not_a_crash(robotlab_home: Path, db_path: Path) -> None:
    from ui.app import Application
    from workspace.config import load_config

    config = load_config(overrides={"llm": {"model": "openai/local", "api_base": "http://localhost:99999/v1"}},
                         env={})
    root = Application(config=config, db_path=db_path)
    try:
        status = root.window.status.connection
        await wait_until(lambda: "not reachable" in status.text(), what="the probe")
        assert "not a valid address" in status.toolTip() and not root.window.banner.isVisible()
    finally:
        await close_app(root)
