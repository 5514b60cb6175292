"""Settings › MCP servers with real servers: add (stdio form), test (tools listed; a failure shows the
error and stderr), paste a Claude Desktop block, disable, remove; each change saved to the file with
the user's comments kept, reaching the MCP dock and the next message at once."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import yaml
from PySide6.QtCore import QPoint

from tests.fakes.app_window import close_app, wait_until

SCREENSHOTS = Path(__file__).resolve().parent.parent.parent / "build" / "screenshots"


async def test_settings_page_adds_tests_pastes_and_removes_servers(mcp_bin: Path, robotlab_home: Path,
                                                                   provider: Any, db_path: Path) -> None:
    from ui.app import Application
    from workspace.mcp import set_default_manager

    config = robotlab_home / "config" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("# my own notes\nui:\n  theme: light   # keep\nmcpServers: {}\n", encoding="utf-8")
    set_default_manager(None)
    root = Application(provider=provider, db_path=db_path)
    root.window.show()
    try:
        dock = root.window.docks.mcp_pane
        assert dock.manage_button.isVisible()
        dock.manage_button.click()
        dialog = root.window.settings_flow.dialog
        page = dialog.mcp_page
        assert dialog.tabs.currentWidget() is page
        # Add a stdio server through the form.
        page.add_button.click()
        page.name.setText("everything")
        page.command.setText(str(mcp_bin / "mcp-server-everything"))
        page.env.add_row("GREETING", "hello")
        dialog.resize(880, 662)  # its size on a 1280×720 screen
        await asyncio.sleep(0.05)
        assert page.env.height() >= 4 * page.env.verticalHeader().defaultSectionSize()  # room for a few variables
        page.test_button.click()
        await wait_until(lambda: "tools" in page.output.toPlainText(), timeout=40, what="the test to connect")
        # The output is in view below the form (scrolled to), with room for lines of it.
        await asyncio.sleep(0.05)
        viewport = page.form_scroll.viewport()
        top = page.output.mapTo(viewport, QPoint(0, 0)).y()
        assert top >= 0 and top + 8 * page.output.fontMetrics().lineSpacing() <= viewport.height(), (
            top, viewport.height(), page.output.height(), page.form_scroll.verticalScrollBar().value(),
            page.form_scroll.verticalScrollBar().maximum(), page.form_scroll.widget().height())
        status_top = page.status.mapTo(viewport, QPoint(0, 0)).y()
        assert 0 <= status_top < viewport.height()
        assert "echo" in page.output.toPlainText() and "prompts" in page.output.toPlainText()
        assert page.save_button.isEnabled()
        page.save_button.click()
        assert page.names() == ["everything"]
        text = config.read_text(encoding="utf-8")
        assert "# my own notes" in text and "# keep" in text
        assert yaml.safe_load(text)["mcpServers"]["everything"]["env"] == {"GREETING": "hello"}
        await wait_until(lambda: [s.name for s in dock.model.statuses] == ["everything"], what="the dock to reload")
        # Added from the window, it starts without a separate Start; the page says so.
        await wait_until(lambda: "everything started:" in page.status.text(), timeout=40, what="the server to start")
        assert [s.state for s in dock.model.statuses] == ["ready"]
        # The controller's configuration (the robots' next run) has it too.
        await wait_until(lambda: "everything" in root.window.controller.config.mcp_servers, what="the robots")
        # A broken server: the error and its stderr.
        page.add_button.click()
        page.name.setText("broken")
        page.command.setText(sys.executable)
        page.args.setText("-c \"import sys; sys.stderr.write('cannot start: missing key\\n'); sys.exit(3)\"")
        page.test_button.click()
        await wait_until(lambda: "could not connect" in page.output.toPlainText(), timeout=30, what="the failure")
        assert "missing key" in page.output.toPlainText()
        assert "did not connect" in page.status.text()
        # Saved anyway: it is started, and the page says why it did not start.
        page.save_button.click()
        await wait_until(lambda: "broken did not start:" in page.status.text(), timeout=40, what="the failed start")
        page.list.setCurrentRow(page.names().index("broken"))
        page.remove_button.click()
        assert page.names() == ["everything"]
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        dialog.resize(900, 640)
        dialog.grab().save(str(SCREENSHOTS / "settings-mcp-servers.png"))
        # Paste a Claude Desktop block.
        added = page.paste('{"mcpServers": {"memory": {"command": "%s"}}}' % (mcp_bin / "mcp-server-memory"))
        assert added == ["memory"] and page.names() == ["everything", "memory"]
        # Disable, then remove.
        item = page.list.item(1)
        item.setCheckState(item.checkState().Unchecked)
        assert yaml.safe_load(config.read_text(encoding="utf-8"))["mcpServers"]["memory"]["disabled"] is True
        page.list.setCurrentRow(1)
        page.remove_button.click()
        assert page.names() == ["everything"]
        assert "# my own notes" in config.read_text(encoding="utf-8")
        await wait_until(lambda: [s.name for s in dock.model.statuses] == ["everything"],
                         what=f"the removal {[(s.name, s.state, s.reason) for s in dock.model.statuses]}")
        dialog.close()
    finally:
        await close_app(root)
        set_default_manager(None)
