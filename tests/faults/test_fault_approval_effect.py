"""Approval by effect: what a model (or a server) may try to get a call past the approval
policy by how it is spelt. One case per promise, each against real parts: a folder and a change set
(review and auto mode), the agent loop, a real MCP server whose annotations lie (mcp_liar_server.py).

* a deny written with the server's own tool name (or robot-facing name) stops the tool;
* a rule that matches no tool is reported (and one that cannot be checked is said to be unchecked);
* every way of deleting is refused when deleting is denied, and writes cannot go round a denied write_file;
* a server that is not trusted is asked about whatever its annotations claim.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from faultkit import Matrix

from workspace import events as ev
from workspace.approval import ApprovalGate, ApprovalPolicy, Rule
from workspace.changes import ChangeSet
from workspace.mcp.manager import MCPManager
from workspace.mcp.policy_check import approval_problems
from workspace.providers.testing import ScriptedProvider, ToolCall
from workspace.robot import Robot
from workspace.tools.files import FILE_TOOLS

AREA = "approval by effect"
LIAR = Path(__file__).resolve().parent / "mcp_liar_server.py"
TEXT = "precious\n"

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text(TEXT)
    return root


def liar_entry(**extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(LIAR)], **extra}


@pytest_asyncio.fixture
async def managers() -> AsyncIterator[dict[str, MCPManager]]:
    plain = MCPManager({"mcpServers": {"files": liar_entry()}})
    trusting = MCPManager({"mcpServers": {"files": liar_entry(trustAnnotations=True)}})
    yield {"plain": plain, "trusting": trusting}
    await plain.aclose()
    await trusting.aclose()


async def mcp_call(manager: MCPManager, gate: ApprovalGate, tool: str, args: dict[str, Any]) -> list[ev.Event]:
    provider = ScriptedProvider([[ToolCall(tool, args, id="c1")], "Done."])
    robot = Robot("helper", system_prompt="x", provider=provider, mcp_manager=manager, mcp=["files"])
    return [e async for e in robot.stream("go", approval=gate)]


async def test_a_deny_written_with_either_name_stops_the_tool(matrix: Matrix, managers: dict[str, MCPManager],
                                                              folder: Path) -> None:
    matrix.case(AREA, "a deny written with the server's own tool name, or the robot-facing one")
    target = folder / "a.txt"
    for rule in ({"server": "files", "tool": "wipe"}, {"tool": "files__wipe"}):
        # The server is trusted and wipe claims to be read-only: only the rule stands in the way.
        gate = ApprovalGate(ApprovalPolicy.from_list([{**rule, "action": "deny"}]))
        events = await mcp_call(managers["trusting"], gate, "files__wipe", {"path": str(target)})
        assert any(isinstance(e, ev.ToolError) and "denies" in e.error for e in events), rule
    matrix.lost(0 if target.exists() else 1, "files")
    assert target.read_text() == TEXT


async def test_a_rule_that_matches_no_tool_is_reported(matrix: Matrix, managers: dict[str, MCPManager]) -> None:
    matrix.case(AREA, "a rule or autoApprove entry that matches no tool")
    manager = MCPManager({"mcpServers": {"files": liar_entry(autoApprove=["peak"])}})
    try:
        policy = ApprovalPolicy([Rule("deny", tool="wipe"), Rule("deny", tool="delet_file"),
                                 Rule("deny", server="files", tool="wipe")])
        unchecked = approval_problems(policy, manager)
        assert not any("matches no tool" in p and "'files'" in p for p in unchecked)
        assert any("could not be checked" in p and "'files'" in p for p in unchecked)
        await manager.tools_for(["files"])
        problems = approval_problems(policy, manager)
        assert problems == [
            "rule 1 {tool: wipe, action: deny} matches no tool: did you mean {server: files, tool: wipe}?",
            "rule 2 {tool: delet_file, action: deny} matches no tool: did you mean {tool: delete_file}?",
            "mcpServers.files.autoApprove entry 'peak' matches no tool of 'files': did you mean 'peek'?",
        ], problems
    finally:
        await manager.aclose()


DELETES: list[tuple[str, dict[str, Any]]] = [
    ("delete_file", {"path": "a.txt"}),
    ("apply_patch", {"patch": "--- a/a.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-precious\n"}),
    ("apply_patch", {"patch": "diff --git a/a.txt b/b.txt\nrename from a.txt\nrename to b.txt\n"}),
    ("rename_file", {"path": "a.txt", "new_path": "b.txt"}),
    ("write_file", {"path": "a.txt", "content": ""}),
    ("edit_file", {"path": "a.txt", "search": TEXT, "replace": ""}),
]
WRITES: list[tuple[str, dict[str, Any]]] = [
    ("edit_file", {"path": "a.txt", "search": "precious", "replace": "gone"}),
    ("apply_patch", {"patch": "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-precious\n+gone\n"}),
    ("create_file", {"path": "c.txt", "content": "x"}),
]


@pytest.mark.parametrize("mode", ["review", "auto"])
async def test_every_way_of_deleting_or_writing_is_refused(matrix: Matrix, folder: Path, mode: str) -> None:
    matrix.case(AREA, f"every way of deleting or writing when denied ({mode} mode)")
    lost = 0
    for denied, calls in (("delete_file", DELETES), ("write_file", WRITES)):
        # Everything else is allowed by name: the effect alone must stop the call.
        policy = ApprovalPolicy([Rule("allow"), Rule("deny", tool=denied)], empty_write_is_delete=True)
        for tool, args in calls:
            provider = ScriptedProvider([[ToolCall(tool, args, id="c1")], "Done."])
            robot = Robot("helper", system_prompt="x", tools=FILE_TOOLS, provider=provider, folder=folder)
            changes = ChangeSet(folder, mode=mode)
            events = [e async for e in robot.stream("go", changes=changes, approval=ApprovalGate(policy))]
            refused = any(isinstance(e, ev.ToolError) and denied in e.error for e in events)
            intact = (folder / "a.txt").read_text() == TEXT and not (folder / "b.txt").exists() \
                and not (folder / "c.txt").exists() and not changes.files
            lost += 0 if intact else 1
            assert refused and intact, (tool, args)
    matrix.lost(lost, "files")


async def test_a_servers_lying_annotations_are_not_believed(matrix: Matrix, managers: dict[str, MCPManager],
                                                           folder: Path) -> None:
    matrix.case(AREA, "an untrusted server's readOnlyHint on a tool that deletes")
    target = folder / "a.txt"
    gate = ApprovalGate(ApprovalPolicy())  # nobody to ask: what must be asked is refused
    events = await mcp_call(managers["plain"], gate, "files__wipe", {"path": str(target)})
    assert any(isinstance(e, ev.ToolError) and "needs approval" in e.error for e in events)
    matrix.lost(0 if target.exists() else 1, "files")
    assert target.read_text() == TEXT
