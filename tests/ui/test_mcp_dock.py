"""The MCP servers dock against a real server (the reference 'everything' server over stdio)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fakes.app_window import close_app, wait_until


@pytest.fixture
def mcp_config(mcp_bin: Path, robotlab_home: Path) -> Path:
    config = robotlab_home / "config" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        "mcpServers:\n"
        f"  everything:\n    command: {mcp_bin / 'mcp-server-everything'}\n"
        "  broken:\n    command: /nonexistent/mcp-server\n",
        encoding="utf-8",
    )
    return config


async def test_mcp_dock_start_tools_toggle_and_failure(mcp_config: Path, provider: Any, db_path: Path) -> None:
    from ui.app import Application
    from workspace.mcp import set_default_manager

    set_default_manager(None)  # a fresh manager for this test's configuration
    root = Application(provider=provider, db_path=db_path)
    root.window.show()
    try:
        pane = root.window.docks.mcp_pane
        names = [s.name for s in pane.model.statuses]
        assert names == ["everything", "broken"]
        assert pane.model.index(0, 1).data() == "stopped"
        pane.table.selectRow(0)
        pane.start_button.click()
        await wait_until(lambda: pane.model.index(0, 1).data() == "ready", timeout=30, what="the server to start")
        await wait_until(lambda: pane.tools.count() > 3, what="the tool list")
        first = pane.tools.item(0)
        tool_name = first.data(0x0100)
        assert "The model sees it as everything__" in first.toolTip()
        cost = first.text().split("  ~", 1)[1].split(" tokens", 1)[0]  # each tool's schema cost
        assert int(cost.replace(",", "")) > 0 and "tokens of the model's window" in first.toolTip()
        first.setCheckState(first.checkState().Unchecked)
        assert not root.window.docks.mcp_pane.manager.is_tool_enabled("everything", tool_name)
        first = pane.tools.item(0)
        first.setCheckState(first.checkState().Checked)
        assert pane.manager.is_tool_enabled("everything", tool_name)
        pane.table.selectRow(1)
        pane.start_button.click()
        await wait_until(lambda: pane.model.index(1, 1).data() == "failed", timeout=30, what="the failure")
        assert pane.current().reason and "nonexistent" in pane.info.text() + pane.current().reason
    finally:
        await close_app(root)
        set_default_manager(None)


async def _first_server_started(root: Any) -> Any:
    """The MCP dock's pane, its first server started from the dock (ready)."""
    pane = root.window.docks.mcp_pane
    pane.table.selectRow(0)
    pane.start_button.click()
    await wait_until(lambda: pane.model.index(0, 1).data() == "ready", timeout=30, what="the server to start")
    return pane


async def test_mcp_dock_log_with_levels(mcp_config: Path, provider: Any, db_path: Path) -> None:
    """The server's log notifications show in the dock's Log tab, filtered by level."""
    from ui.app import Application
    from workspace.mcp import set_default_manager

    set_default_manager(None)
    root = Application(provider=provider, db_path=db_path)
    root.window.show()
    try:
        pane = await _first_server_started(root)
        # The real server logs once at once, then every 5 s, at random levels.
        await pane.manager.call_tool("everything", "toggle-simulated-logging", {})
        await wait_until(lambda: pane.log_view.toPlainText().strip() != "", timeout=20, what="a log notification")
        await pane.manager.call_tool("everything", "toggle-simulated-logging", {})
        assert pane.output_tabs.tabText(1).startswith("Log (")
        conn = pane.manager.connection("everything")
        conn.log.clear()
        for level in ("debug", "info", "notice", "warning", "error", "critical"):
            conn.add_log(level, f"a {level} line", "tests")
        await wait_until(lambda: "a critical line" in pane.log_view.toPlainText(), what="the log lines")
        assert pane.output_tabs.tabText(1) == "Log (6)"
        assert len(pane.log_view.toPlainText().splitlines()) == 6
        pane.log_level.setCurrentIndex(pane.log_level.findData("warning"))
        shown = pane.log_view.toPlainText().splitlines()
        assert [line.split()[1] for line in shown] == ["WARNING", "ERROR", "CRITICAL"]
        assert "tests: a warning line" in shown[0]
        assert pane.log_count.text() == "3 shown · 3 below this level"
        pane.log_level.setCurrentIndex(pane.log_level.findData("error"))
        assert len(pane.log_view.toPlainText().splitlines()) == 2
        assert "[warning] tests: a warning line" in "\n".join(pane.manager.status("everything").stderr)
    finally:
        await close_app(root)
        set_default_manager(None)


async def test_the_mcp_dock_cuts_no_button_on_a_small_screen(mcp_config: Path, provider: Any, db_path: Path) -> None:
    # At 1024x640 the dock is about 300 px wide: "Manage servers…", Start, Restart and Stop in one row did not fit,
    # and "Manage servers…" showed as "age serv". The row wraps instead.
    from tests.ui.a11y import clipped_texts
    from ui.app import Application
    from workspace.mcp import set_default_manager

    set_default_manager(None)
    root = Application(provider=provider, db_path=db_path)
    root.window.resize(1024, 640)
    root.window.show()
    try:
        root.window.docks.focus_dock("mcp")
        pane = root.window.docks.mcp_pane
        await wait_until(lambda: pane.isVisible() and pane.width() > 0, what="the MCP servers dock in front")
        assert pane.width() < 420, pane.width()  # a narrow dock, as on a small screen
        assert pane.manage_button.isVisible()
        assert clipped_texts(pane) == []
    finally:
        await close_app(root)
        set_default_manager(None)


async def test_the_mcp_dock_says_when_a_server_lists_too_many_tools(robotlab_home: Path, provider: Any,
                                                                    db_path: Path) -> None:
    """A server listing 2,500 tools: the dock lists its first MAX_TOOLS and says the others were left out."""
    import sys

    from tests.fakes.mcp_servers import BAD_SERVER
    from ui.app import Application
    from workspace.mcp import set_default_manager
    from workspace.mcp.catalogue import MAX_TOOLS

    config = robotlab_home / "config" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"mcpServers:\n  big:\n    command: {sys.executable}\n    args: [{BAD_SERVER}, many, '2500']\n",
                      encoding="utf-8")
    set_default_manager(None)
    root = Application(provider=provider, db_path=db_path)
    root.window.show()
    try:
        pane = await _first_server_started(root)
        await wait_until(lambda: pane.tools.count() == MAX_TOOLS, what="the tool list")
        info = pane.info.text()
        assert "lists more than 1,500 tools" in info and f"first {MAX_TOOLS:,}" in info, info
        assert pane.model.index(0, 2).data() == f"{MAX_TOOLS}/{MAX_TOOLS}"
    finally:
        await close_app(root)
        set_default_manager(None)
