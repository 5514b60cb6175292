"""Approval by effect in the window: Settings › MCP servers has one switch per server to trust its tool
annotations (saved as ``trustAnnotations``), the MCP dock shows whether they are trusted, and Settings ›
Approvals says which rules match no tool (and keeps the empty-write switch)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakes.mcp_servers import BAD_SERVER

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def manager(tmp_path: Path) -> AsyncIterator[Any]:
    from workspace.mcp.manager import MCPManager

    mgr = MCPManager(state_file=tmp_path / "mcp-tools.json")
    yield mgr
    await mgr.aclose()


async def test_the_trust_switch_is_saved_and_shown_in_the_dock(qapp_instance: Any, tmp_path: Path,
                                                              manager: Any) -> None:
    from ui.mcp.pane import McpPane
    from ui.settings.mcp_servers import McpServersPage
    from ui.tasks import TaskOwner

    config = tmp_path / "config.yaml"
    config.write_text(f"# mine\nmcpServers:\n  files:\n    command: {sys.executable}\n    args: [{BAD_SERVER}, ok]\n",
                      encoding="utf-8")
    page = McpServersPage(manager, lambda coro, **_: coro.close(), path=config)
    tasks = TaskOwner()
    pane = McpPane(manager, tasks, watch_interval=None)
    try:
        page.load()
        assert page.trust_annotations.accessibleName()
        assert not page.trust_annotations.isChecked()  # not trusted by default
        manager.configure({"mcpServers": yaml.safe_load(config.read_text())["mcpServers"]})
        pane.refresh()
        pane.table.selectRow(0)
        assert "Annotations not trusted" in pane.info.text()
        page.trust_annotations.setChecked(True)
        assert page.save_server()
        saved = yaml.safe_load(config.read_text(encoding="utf-8"))["mcpServers"]["files"]
        assert saved["trustAnnotations"] is True and "# mine" in config.read_text(encoding="utf-8")
        manager.configure({"mcpServers": {"files": saved}})
        pane.refresh()
        pane.table.selectRow(0)
        pane._show()
        assert "Annotations trusted" in pane.info.text()
        assert manager.status("files").trust_annotations
        # Reopened: the switch shows what the file says; switched off, the key goes.
        page.load(select="files")
        assert page.trust_annotations.isChecked()
        page.trust_annotations.setChecked(False)
        assert page.save_server()
        assert "trustAnnotations" not in yaml.safe_load(config.read_text(encoding="utf-8"))["mcpServers"]["files"]
    finally:
        await tasks.shutdown()
        await pane.aclose()
        pane.deleteLater()
        page.deleteLater()


async def test_settings_shows_rules_that_match_no_tool(desktop: Any) -> None:
    from workspace.approval import ApprovalPolicy, Rule

    window = desktop.window
    workspace = window.controller.workspace
    workspace.approval.policy = ApprovalPolicy([Rule("deny", tool="delete_files"), Rule("ask", tool="write_file")],
                                               empty_write_is_delete=True)
    window.settings_flow.open_settings()
    dialog = window.settings_flow.dialog
    try:
        assert not dialog.rule_problems.isHidden()
        text = dialog.rule_problems.text()
        assert "rule 1 {tool: delete_files, action: deny} matches no tool: did you mean {tool: delete_file}" in text
        assert "rule 2" not in text
        assert dialog.empty_write_is_delete.isChecked()
        # Fixed in the table: the sentence goes.
        dialog.rules.item(0, 2).setText("delete_file")
        assert dialog.rule_problems.isHidden()
    finally:
        dialog.reject()


async def test_settings_keeps_a_rules_command_and_whether_it_is_exact(desktop: Any) -> None:
    """Saving Settings wrote the rules back without their commands: an allow for `git log` became an allow for
    every command."""
    from PySide6.QtCore import Qt

    from workspace import paths
    from workspace.approval import ApprovalPolicy, ApprovalRequest, FileEffect, Rule

    window = desktop.window
    workspace = window.controller.workspace
    workspace.approval.policy = ApprovalPolicy([Rule("allow", tool="run_command", command="git log", exact=True),
                                                Rule("allow", tool="run_command", command="pytest*"),
                                                Rule("deny", tool="run_command", command="git push")])
    window.settings_flow.open_settings()
    dialog = window.settings_flow.dialog
    try:
        assert [dialog.rules.item(row, 3).text() for row in range(3)] == ["git log", "pytest*", "git push"]
        assert dialog.rules.item(0, 3).checkState() == Qt.CheckState.Checked
        assert dialog.rules.item(1, 3).checkState() == Qt.CheckState.Unchecked
        dialog._add_rule("*", "*", "run_command", "allow", "make test", exact=True)
        dialog.save()
    finally:
        dialog.reject()
    saved = ApprovalPolicy.load(paths.approval_policy_file())
    assert [(r.action, r.tool, r.command, r.exact) for r in saved.rules] == [
        ("allow", "run_command", "git log", True), ("allow", "run_command", "pytest*", False),
        ("deny", "run_command", "git push", False), ("allow", "run_command", "make test", True)]

    def run(command: str) -> ApprovalRequest:
        return ApprovalRequest(call_id="c", robot="file-helper", tool="run_command", input={"command": command},
                               annotations={"destructiveHint": True},
                               effects=(FileEffect(kind="run", path=".", command=command),))

    policy = workspace.approval.policy
    assert [policy.decide_one(run(c)) for c in ("git log", "git log --output=x", "rm -rf x", "make test -k y")] == [
        "allow", "ask", "ask", "ask"]


async def test_the_approval_card_says_what_the_call_does_and_what_is_only_claimed(qapp_instance: Any) -> None:
    import asyncio

    from PySide6.QtWidgets import QLabel

    from ui.chat.view.cards import ApprovalPanel
    from workspace.approval import ApprovalRequest, FileEffect

    patch = ApprovalRequest(call_id="c1", robot="helper", tool="apply_patch", input={"patch": "..."},
                            effects=(FileEffect(kind="delete", path="a.txt"),))
    claimed = ApprovalRequest(call_id="c2", robot="helper", tool="files__wipe", input={}, server="files",
                              annotations={"readOnlyHint": True})
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    panels = [ApprovalPanel(request, future) for request in (patch, claimed)]
    try:
        texts = [[label.text() for label in panel.findChildren(QLabel)] for panel in panels]
        assert "That means deleting 'a.txt'." in texts[0]
        assert any("read-only (claimed)" in t for t in texts[1])
    finally:
        for panel in panels:
            panel.deleteLater()
        future.cancel()


async def test_the_exact_box_shows_only_on_a_rule_with_a_command(desktop: Any) -> None:
    """Settings › Approvals showed the "exact" box on every rule's Command cell: on a rule without a command (any
    call of the tool) it did nothing. It shows once a command is typed, and goes when the command is cleared."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QStyleOptionViewItem

    from workspace import paths
    from workspace.approval import ApprovalPolicy, Rule

    window = desktop.window
    workspace = window.controller.workspace
    workspace.approval.policy = ApprovalPolicy([Rule("allow", tool="run_command", command="git log", exact=True),
                                                Rule("deny", tool="delete_file")])
    window.settings_flow.open_settings()
    dialog = window.settings_flow.dialog
    table = dialog.rules

    def box(row: int) -> bool:
        """Whether the cell is drawn with a check box (as the table's delegate paints it), and the user can tick it."""
        option = QStyleOptionViewItem()
        table.itemDelegate().initStyleOption(option, table.model().index(row, 3))
        drawn = bool(option.features & QStyleOptionViewItem.ViewItemFeature.HasCheckIndicator)
        assert drawn == bool(table.item(row, 3).flags() & Qt.ItemFlag.ItemIsUserCheckable)
        return drawn

    try:
        dialog._add_rule("*", "*", "remember", "ask")
        assert [box(row) for row in range(3)] == [True, False, False]
        assert table.item(0, 3).checkState() == Qt.CheckState.Checked
        table.item(1, 3).setText("rm *")  # a command typed: its box shows, unticked
        assert box(1) and table.item(1, 3).checkState() == Qt.CheckState.Unchecked
        table.item(1, 3).setCheckState(Qt.CheckState.Checked)
        table.item(1, 3).setText("")  # cleared: the box goes, and comes back unticked with a command
        assert not box(1)
        table.item(1, 3).setText("rm -rf x")
        assert box(1) and table.item(1, 3).checkState() == Qt.CheckState.Unchecked
        table.item(1, 3).setText(" ")
        dialog.save()
    finally:
        dialog.reject()
    saved = ApprovalPolicy.load(paths.approval_policy_file())
    assert [(r.tool, r.command, r.exact) for r in saved.rules] == [
        ("run_command", "git log", True), ("delete_file", None, False), ("remember", None, False)]
