"""The MCP dock's Resources tab against real servers: server-everything (Markdown documents,
templates, subscriptions it updates every 5 s) and our Python server (an image, JSON, 20 MB of text)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.app_window import wait_until
from tests.fakes.mcp_servers import BAD_SERVER, EVERYTHING, require_servers

DYNAMIC = Path(__file__).resolve().parent.parent / "fakes" / "mcp_dynamic_server.py"
pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def pane(qapp_instance: Any, tmp_path: Path) -> AsyncIterator[Any]:
    from ui.mcp.pane import McpPane
    from ui.tasks import TaskOwner
    from workspace.mcp.manager import MCPManager

    require_servers()
    manager = MCPManager({"mcpServers": {
        "everything": {"command": str(EVERYTHING)},
        "dynamic": {"command": sys.executable, "args": [str(DYNAMIC)], "env": {"BIG_RESOURCE_MB": "20"}},
        "plain": {"command": sys.executable, "args": [str(BAD_SERVER), "ok"]},
    }}, state_file=tmp_path / "mcp-tools.json")
    tasks = TaskOwner()
    widget = McpPane(manager, tasks, watch_interval=None)
    widget.resize(500, 900)
    widget.show()
    try:
        yield widget
    finally:
        await tasks.shutdown()
        await widget.aclose()
        widget.deleteLater()


async def start(pane: Any, row: int) -> None:
    pane.table.selectRow(row)
    pane.start_button.click()
    await wait_until(lambda: pane.model.index(row, 1).data() == "ready", timeout=30, what="the server to start")
    pane.server_tabs.setCurrentWidget(pane.resources)
    await wait_until(lambda: pane.resources.items() or "no resources" in pane.resources.status.text(),
                     timeout=20, what="the resource list")


async def test_the_resources_tab_is_made_when_first_shown_with_the_selected_server(pane: Any) -> None:
    # The pane is built at start-up behind the inspector's tabs: its Resources tab waits until a person opens it.
    assert pane._resources is None
    pane.table.selectRow(0)
    pane.start_button.click()
    await wait_until(lambda: pane.model.index(0, 1).data() == "ready", timeout=30, what="the server to start")
    assert pane._resources is None
    pane.server_tabs.setCurrentIndex(1)  # the tab clicked
    panel = pane._resources
    assert panel is not None and pane.server_tabs.currentWidget() is panel
    assert pane.server_tabs.tabText(1) == "Resources" and pane.server_tabs.count() == 2
    await wait_until(lambda: panel.items(), timeout=20, what="the selected server's resources")
    assert pane.resources is panel


def preview_text(pane: Any) -> str:
    return str(pane.resources.text_view.toPlainText())


async def test_browse_preview_fill_a_template_and_subscribe(pane: Any) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    panel = pane.resources
    await start(pane, 0)
    assert "resources" in panel.status.text() and "2 templates" in panel.status.text()
    doc = next(it for it in panel.items() if str(it.data(0, Qt.ItemDataRole.UserRole + 1)).endswith("architecture.md"))
    panel.tree.setCurrentItem(doc)
    await wait_until(lambda: panel.content is not None, timeout=20, what="the preview")
    assert panel.content.mime_type == "text/markdown" and preview_text(pane).strip()
    assert "#" not in preview_text(pane).splitlines()[0]  # rendered Markdown, not its source
    assert not panel.attach_button.isVisible()  # nobody listens yet: hidden
    # A template: a form for its argument, then the filled-in resource.
    template = panel.item_for("demo://resource/dynamic/text/{resourceId}")
    assert template is not None
    panel.tree.setCurrentItem(template)
    assert panel.form_box.isVisible() and list(panel.fields) == ["resourceId"]
    panel.read_button.click()  # empty: named, nothing asked
    assert "needs 1 more argument: resourceId" in preview_text(pane)
    panel.fields["resourceId"].setFocus()
    QTest.keyClicks(panel.fields["resourceId"], "5")
    QTest.keyClick(panel.fields["resourceId"], Qt.Key.Key_Return)
    await wait_until(lambda: "Resource 5" in preview_text(pane), timeout=20, what="the template's resource")
    assert panel.shown == ("everything", "demo://resource/dynamic/text/5")
    # Subscribe to the document; the server's updates mark it until it is viewed again.
    panel.tree.setCurrentItem(doc)
    await wait_until(lambda: panel.shown is not None and panel.shown[1].endswith("architecture.md"), timeout=20,
                     what="the document again")
    panel.subscribe_button.click()
    await wait_until(lambda: panel.subscribe_button.text() == "Subscribed", timeout=20, what="the subscription")
    panel.tree.setCurrentItem(template)  # look elsewhere while it changes
    await pane.manager.call_tool("everything", "toggle-subscriber-updates", {})
    try:
        await wait_until(lambda: doc.text(0).startswith("● "), timeout=20, what="the change mark")
    finally:
        await pane.manager.call_tool("everything", "toggle-subscriber-updates", {})
    assert doc.font(0).bold() and "changed at " in doc.toolTip(0)
    panel.tree.setCurrentItem(doc)  # viewed: no longer marked
    await wait_until(lambda: not doc.text(0).startswith("● "), timeout=20, what="the mark to clear")
    panel.subscribe_button.click()
    await wait_until(lambda: panel.subscribe_button.text() == "Subscribe", timeout=20, what="the unsubscription")
    assert pane.manager.status("everything").subscriptions == ()
    await pane.manager.aclose()  # inside the test (see tests/ui/test_slash_commands.py: stop_servers)


async def test_images_json_a_20_mb_text_and_attach(pane: Any) -> None:
    from PySide6.QtCore import QCoreApplication

    panel = pane.resources
    attached: list[tuple[str, str]] = []
    pane.attach_requested.connect(lambda server, uri: attached.append((server, uri)))
    await start(pane, 1)
    panel.tree.setCurrentItem(panel.item_for("image://dot.png"))
    await wait_until(lambda: panel.preview.currentIndex() == 1, timeout=20, what="the image")
    pixmap = panel.image_label.pixmap()
    assert not pixmap.isNull() and pixmap.width() >= 32  # scaled up from 4x4
    assert panel.attach_button.isVisible() and panel.attach_button.isEnabled()
    panel.attach_button.click()
    assert attached == [("dynamic", "image://dot.png")]
    panel.tree.setCurrentItem(panel.item_for("json://data"))
    await wait_until(lambda: '"robotlab"' in preview_text(pane), timeout=20, what="the JSON")
    assert '"tags": [' in preview_text(pane)  # pretty-printed
    # 20 MB: the preview is cut (with a note) and the window keeps answering while it is read.
    ticks = 0

    def tick() -> None:
        nonlocal ticks
        ticks += 1

    from PySide6.QtCore import QTimer

    timer = QTimer()
    timer.timeout.connect(tick)
    timer.start(20)
    panel.tree.setCurrentItem(panel.item_for("big://text"))
    await wait_until(lambda: "cut here" in preview_text(pane), timeout=60, what="the big preview")
    timer.stop()
    assert ticks > 1
    assert len(preview_text(pane)) < 300_000 and "20,971,520 characters" in preview_text(pane)
    assert panel.content.size == 20 * 1024 * 1024  # read whole
    QCoreApplication.processEvents()
    await pane.manager.aclose()


async def test_unknown_uri_and_a_server_without_resources(pane: Any) -> None:
    panel = pane.resources
    await start(pane, 1)
    panel.show_resource("nope://x")
    await wait_until(lambda: "could not read the resource 'nope://x'" in preview_text(pane), timeout=20,
                     what="the error")
    await start(pane, 2)
    assert panel.status.text() == "This server offers no resources." and panel.items() == []
    await pane.manager.aclose()
