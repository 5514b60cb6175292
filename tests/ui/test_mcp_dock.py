"""The MCP servers dock against a real server (the reference 'everything' server over stdio)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.ui.conftest import close_app, wait_until


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
