"""Approval decides by what a call does, not by how it is spelt, in the library: a real
folder, a real change set (review and auto mode), the agent loop, and a real MCP server (tests/fakes)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from fakes.mcp_servers import BAD_SERVER

from workspace import events as ev
from workspace.agent.effects import file_effects
from workspace.approval import (
    ApprovalDecision,
    ApprovalGate,
    ApprovalPolicy,
    ApprovalRequest,
    FileEffect,
    KnownTools,
    Rule,
    rule_problems,
)
from workspace.changes import ChangeSet
from workspace.mcp.manager import MCPManager
from workspace.providers.testing import ScriptedProvider, ToolCall
from workspace.robot import Robot
from workspace.tools.files import FILE_TOOLS

pytestmark = pytest.mark.timeout(60)

TEXT = "one\ntwo\n"
DELETE_PATCH = "--- a/a.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n"
EDIT_PATCH = "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-one\n+ONE\n two\n"
RENAME_PATCH = "diff --git a/a.txt b/b.txt\nsimilarity index 100%\nrename from a.txt\nrename to b.txt\n"
EMPTYING_PATCH = "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +0,0 @@\n-one\n-two\n"

#: Every way of deleting a.txt (the empty ones count with ``empty_write_is_delete``).
DELETES: dict[str, tuple[str, dict[str, Any]]] = {
    "delete_file": ("delete_file", {"path": "a.txt"}),
    "patch to /dev/null": ("apply_patch", {"patch": DELETE_PATCH}),
    "rename": ("rename_file", {"path": "a.txt", "new_path": "b.txt"}),
    "patch renaming": ("apply_patch", {"patch": RENAME_PATCH}),
    "empty write": ("write_file", {"path": "a.txt", "content": ""}),
    "edit removing all": ("edit_file", {"path": "a.txt", "search": TEXT, "replace": ""}),
    "patch removing all": ("apply_patch", {"patch": EMPTYING_PATCH}),
}
#: Every way of writing a.txt (or a new file).
WRITES: dict[str, tuple[str, dict[str, Any]]] = {
    "write_file": ("write_file", {"path": "a.txt", "content": "new\n"}),
    "edit_file": ("edit_file", {"path": "a.txt", "search": "one", "replace": "ONE"}),
    "apply_patch": ("apply_patch", {"patch": EDIT_PATCH}),
    "create_file": ("create_file", {"path": "new.txt", "content": "x\n"}),
    "patch creating": ("apply_patch", {"patch": "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+x\n"}),
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text(TEXT)
    return root


class Asking(ApprovalGate):
    """A gate whose person answers ``answer`` and remembers what was asked."""

    def __init__(self, policy: ApprovalPolicy, *, answer: bool) -> None:
        self.asked: list[ApprovalRequest] = []
        self.answer = answer

        async def ask(request: ApprovalRequest) -> ApprovalDecision:
            self.asked.append(request)
            return ApprovalDecision(approved=answer, reason=None if answer else "no, thanks")

        super().__init__(policy, ask)


async def run_call(folder: Path, gate: ApprovalGate, tool: str, args: dict[str, Any], *,
                   mode: str = "review") -> tuple[list[ev.Event], ChangeSet]:
    provider = ScriptedProvider([[ToolCall(tool, args, id="c1")], "Done."])
    robot = Robot("helper", system_prompt="x", tools=FILE_TOOLS, provider=provider, folder=folder)
    changes = ChangeSet(folder, mode=mode)
    events = [e async for e in robot.stream("go", changes=changes, approval=gate)]
    return events, changes


def untouched(folder: Path, changes: ChangeSet) -> bool:
    return (folder / "a.txt").read_text() == TEXT and not (folder / "b.txt").exists() and not changes.files


# -- policy by effect ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["review", "auto"])
@pytest.mark.parametrize("way", list(DELETES))
async def test_a_denied_delete_is_refused_whichever_tool_deletes(folder: Path, way: str, mode: str) -> None:
    policy = ApprovalPolicy([Rule("deny", tool="delete_file")], empty_write_is_delete=True)
    tool, args = DELETES[way]
    events, changes = await run_call(folder, Asking(policy, answer=True), tool, args, mode=mode)
    error = next(e for e in events if isinstance(e, ev.ToolError))
    assert "denies" in error.error and "delete_file" in error.error, error.error
    assert not [e for e in events if isinstance(e, ev.ChangeProposed)]
    assert untouched(folder, changes)


@pytest.mark.parametrize("way", ["patch to /dev/null", "empty write", "patch removing all"])
async def test_deleting_asks_by_default_whichever_tool_deletes(folder: Path, way: str) -> None:
    gate = Asking(ApprovalPolicy(empty_write_is_delete=True), answer=False)
    tool, args = DELETES[way]
    events, changes = await run_call(folder, gate, tool, args)
    (asked,) = [e for e in events if isinstance(e, ev.ApprovalRequested)]
    assert asked.name == tool
    assert {"kind": "delete", "path": "a.txt"} in asked.annotations["effects"] or any(
        e.get("emptied") for e in asked.annotations["effects"])  # type: ignore[union-attr]
    assert [r.tool for r in gate.asked] == [tool]
    assert untouched(folder, changes)


async def test_a_rename_is_a_delete_only_for_an_explicit_rule(folder: Path) -> None:
    # By default a rename keeps the content: nothing is asked (delete_file's default is for lost content).
    gate = Asking(ApprovalPolicy(), answer=False)
    _events, changes = await run_call(folder, gate, "rename_file", {"path": "a.txt", "new_path": "b.txt"})
    assert not gate.asked and changes.pending_paths()
    # An explicit "ask" about delete_file asks about a rename too.
    gate = Asking(ApprovalPolicy([Rule("ask", tool="delete_file")]), answer=False)
    _events, changes = await run_call(folder, gate, "rename_file", {"path": "a.txt", "new_path": "b.txt"})
    assert [r.tool for r in gate.asked] == ["rename_file"]
    assert untouched(folder, changes)


async def test_emptying_a_file_is_a_write_unless_the_policy_says_otherwise(folder: Path) -> None:
    policy = ApprovalPolicy([Rule("deny", tool="delete_file")])
    events, changes = await run_call(folder, Asking(policy, answer=True), "write_file", {"path": "a.txt", "content": ""})
    assert not [e for e in events if isinstance(e, ev.ToolError)]
    assert changes.read_bytes("a.txt") == b""


@pytest.mark.parametrize("mode", ["review", "auto"])
@pytest.mark.parametrize("way", list(WRITES))
async def test_a_denied_write_file_cannot_be_reached_through_another_tool(folder: Path, way: str, mode: str) -> None:
    tool, args = WRITES[way]
    # The tool itself is allowed by name: what it does is denied all the same.
    policy = ApprovalPolicy([Rule("deny", tool="write_file")] + ([Rule("allow", tool=tool)] if tool != "write_file"
                                                                   else []))
    events, changes = await run_call(folder, Asking(policy, answer=True), tool, args, mode=mode)
    error = next(e for e in events if isinstance(e, ev.ToolError))
    assert "write_file" in error.error, error.error
    assert untouched(folder, changes) and not (folder / "new.txt").exists()


async def test_the_strictest_decision_wins_over_a_thread_grant_of_the_tool(folder: Path) -> None:
    policy = ApprovalPolicy([Rule("deny", tool="delete_file"), Rule("allow", tool="apply_patch")])
    gate = Asking(policy, answer=True)
    events, changes = await run_call(folder, gate, "apply_patch", {"patch": EDIT_PATCH})
    assert changes.pending_paths() == {"a.txt": "edited"} or changes.files  # an edit is fine
    events, changes = await run_call(folder, gate, "apply_patch", {"patch": DELETE_PATCH})
    decided = next(e for e in events if isinstance(e, ev.ApprovalDecided))
    assert decided.decision == "deny" and "deleting 'a.txt'" in (decided.reason or "")
    assert untouched(folder, changes)


def test_effects_of_each_tool(folder: Path) -> None:
    changes = ChangeSet(folder)
    assert file_effects("apply_patch", {"patch": DELETE_PATCH}, folder=folder, changes=changes) == (
        FileEffect(kind="delete", path="a.txt"),)
    assert file_effects("apply_patch", {"patch": RENAME_PATCH}, folder=folder, changes=changes) == (
        FileEffect(kind="rename", path="a.txt", new_path="b.txt"),)
    assert file_effects("write_file", {"path": "./a.txt", "content": ""}, folder=folder, changes=changes) == (
        FileEffect(kind="modify", path="a.txt", emptied=True),)
    assert file_effects("write_file", {"path": "c.txt", "content": ""}, folder=folder, changes=changes) == (
        FileEffect(kind="create", path="c.txt"),)
    assert file_effects("read_file", {"path": "a.txt"}, folder=folder, changes=changes) == ()
    assert file_effects("apply_patch", {"patch": "not a patch"}, folder=folder, changes=changes) == ()


def test_the_empty_write_switch_is_kept_in_the_policy_file(tmp_path: Path) -> None:
    path = tmp_path / "approval.yaml"
    path.write_text("rules:\n  - {tool: delete_file, action: deny}\nempty_write_is_delete: true\n")
    policy = ApprovalPolicy.load(path)
    assert policy.empty_write_is_delete
    policy.set_rule("allow", tool="read_file")
    policy.save()
    assert ApprovalPolicy.load(path).empty_write_is_delete
    path.write_text("rules: []\nempty_writes: true\n")
    with pytest.raises(Exception, match="empty_write_is_delete"):
        ApprovalPolicy.load(path)


# -- MCP tools: names and annotations --------------------------------------------------------------------


@pytest_asyncio.fixture
async def servers() -> AsyncIterator[dict[str, MCPManager]]:
    """Two managers of the same real server (tools ``echo`` with readOnlyHint, ``sleep`` without): one
    trusts its annotations, one does not."""
    entry = {"command": sys.executable, "args": [str(BAD_SERVER), "ok"]}
    plain = MCPManager({"mcpServers": {"files": entry}})
    trusting = MCPManager({"mcpServers": {"files": {**entry, "trustAnnotations": True}}})
    yield {"plain": plain, "trusting": trusting}
    await plain.aclose()
    await trusting.aclose()


async def call_mcp(manager: MCPManager, gate: ApprovalGate, tool: str, args: dict[str, Any]) -> list[ev.Event]:
    provider = ScriptedProvider([[ToolCall(tool, args, id="c1")], "Done."])
    robot = Robot("helper", system_prompt="x", provider=provider, mcp_manager=manager, mcp=["files"])
    return [e async for e in robot.stream("go", approval=gate)]


@pytest.mark.parametrize("rule", [{"server": "files", "tool": "echo"}, {"tool": "files__echo"},
                                  {"server": "files", "tool": "files__echo"}, {"server": "fil*", "tool": "ech?"}])
async def test_a_rule_matches_an_mcp_tool_by_either_name(servers: dict[str, MCPManager], rule: dict[str, str]) -> None:
    # echo claims readOnlyHint and its server is trusted: without the rule it would run unasked.
    gate = Asking(ApprovalPolicy.from_list([{**rule, "action": "deny"}]), answer=True)
    events = await call_mcp(servers["trusting"], gate, "files__echo", {"message": "hi"})
    assert not [e for e in events if isinstance(e, ev.ToolResult)]
    error = next(e for e in events if isinstance(e, ev.ToolError))
    assert "denies 'files__echo'" in error.error


async def test_a_bare_server_name_without_the_server_is_not_any_servers_tool(servers: dict[str, MCPManager]) -> None:
    gate = Asking(ApprovalPolicy.from_list([{"tool": "sleep", "action": "allow"}]), answer=False)
    await call_mcp(servers["plain"], gate, "files__sleep", {"seconds": 0})
    assert [r.tool for r in gate.asked] == ["files__sleep"]


@pytest.mark.parametrize("entry", ["sleep", "files__sleep", "sl*"])
async def test_auto_approve_matches_either_name(entry: str) -> None:
    manager = MCPManager({"mcpServers": {"files": {"command": sys.executable, "args": [str(BAD_SERVER), "ok"],
                                                   "autoApprove": [entry]}}})
    try:
        gate = Asking(ApprovalPolicy(), answer=False)
        events = await call_mcp(manager, gate, "files__sleep", {"seconds": 0})
        assert not gate.asked and [e for e in events if isinstance(e, ev.ToolResult)]
    finally:
        await manager.aclose()


async def test_an_untrusted_servers_read_only_claim_is_asked_about(servers: dict[str, MCPManager]) -> None:
    gate = Asking(ApprovalPolicy(), answer=False)
    events = await call_mcp(servers["plain"], gate, "files__echo", {"message": "hi"})
    assert [r.tool for r in gate.asked] == ["files__echo"]
    assert not [e for e in events if isinstance(e, ev.ToolResult)]
    # Trusted: the annotations count as before, the read-only tool runs unasked.
    gate = Asking(ApprovalPolicy(), answer=False)
    events = await call_mcp(servers["trusting"], gate, "files__echo", {"message": "hi"})
    assert not gate.asked and [e for e in events if isinstance(e, ev.ToolResult)]
    # A tool without hints is asked about either way.
    await call_mcp(servers["trusting"], gate, "files__sleep", {"seconds": 0})
    assert [r.tool for r in gate.asked] == ["files__sleep"]


# -- rules that match nothing ----------------------------------------------------------------------------


KNOWN = KnownTools(servers={"files": [("files__wipe", "wipe"), ("files__peek", "peek")], "remote": None},
                   local=["read_file", "delete_file"])


def problems(*rules: dict[str, str], known: KnownTools = KNOWN) -> list[str]:
    return rule_problems(ApprovalPolicy.from_list([{**r, "action": "deny"} for r in rules]), known)


def test_rules_that_match_a_tool_are_fine() -> None:
    assert problems({"server": "files", "tool": "wipe"}, {"tool": "files__wipe"}, {"tool": "delete_file"},
                    {"server": "local", "tool": "read_*"}, {"tool": "*"}, {"robot": "x", "server": "files"}) == []


def test_a_rule_that_matches_no_tool_says_what_was_meant() -> None:
    known = KnownTools(servers={"files": [("files__wipe", "wipe")]}, local=["delete_file"])
    assert problems({"tool": "wipe"}, known=known) == [
        "rule 1 {tool: wipe, action: deny} matches no tool: did you mean {server: files, tool: wipe}?"]
    (only,) = problems({"tool": "delete_files"}, known=known)
    assert only.startswith("rule 1 {tool: delete_files, action: deny} matches no tool: did you mean "
                           "{tool: delete_file}")
    (server,) = problems({"server": "file", "tool": "wipe"}, known=known)
    assert "names the server 'file', which is not configured: did you mean 'files'?" in server


def test_a_rule_for_a_server_that_is_not_running_is_unchecked_not_unmatched() -> None:
    (only,) = problems({"tool": "frobnicate"})
    assert "could not be checked for the server 'remote': not running" in only
    assert "matches no tool" not in only
    (named,) = problems({"server": "remote", "tool": "x"})
    assert "could not be checked" in named
