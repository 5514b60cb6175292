"""Approval by effect on the command line, in a subprocess against the loopback server: a denied delete is
refused whichever tool deletes (``robotlab run`` in review and auto mode, and ``--yes`` does not get round
a deny), and ``robotlab config show`` names the rules and autoApprove entries that match no tool."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.llm_server import FakeLLMServer, Reply
from fakes.mcp_servers import BAD_SERVER

ROOT = Path(__file__).resolve().parent.parent
TEXT = "one\ntwo\n"
DELETE_PATCH = "--- a/a.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n"

pytestmark = pytest.mark.timeout(180)


def robotlab(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROBOT_LAB_DEMO__DELAY": "0"}
    return subprocess.run([sys.executable, "-m", "workspace", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120, input=stdin)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text(TEXT)
    return root


def policy(home: Path, text: str) -> None:
    path = home / "config" / "approval.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize("apply", ["auto", "review"])
@pytest.mark.parametrize(("tool", "arguments"), [
    ("apply_patch", {"patch": DELETE_PATCH}),
    ("rename_file", {"path": "a.txt", "new_path": "b.txt"}),
    ("write_file", {"path": "a.txt", "content": ""}),
])
def test_run_refuses_every_way_of_deleting(robotlab_home: Path, folder: Path, apply: str, tool: str,
                                           arguments: dict[str, str]) -> None:
    policy(robotlab_home, "rules:\n  - {tool: delete_file, action: deny}\n  - {tool: '*', action: allow}\n"
                          "empty_write_is_delete: true\n")
    with FakeLLMServer() as server:
        server.enqueue(Reply.tool(tool, arguments))
        server.enqueue("I could not delete it.")
        result = robotlab("--folder", str(folder), "run", "file-helper", "delete a.txt", "--model", "openai/fake",
                          "--api-base", server.base_url + "/v1", "--apply", apply, "--json", "--yes", stdin="y\n")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    errors = [e for e in events if e.get("kind") == "tool_error"]
    assert errors and "delete_file" in errors[0]["error"] and "denies" in errors[0]["error"], events
    assert (folder / "a.txt").read_text() == TEXT and not (folder / "b.txt").exists()


def test_config_show_names_rules_that_match_no_tool(robotlab_home: Path) -> None:
    policy(robotlab_home, "rules:\n  - {tool: delete_files, action: deny}\n  - {tool: echo, action: deny}\n"
                          "  - {server: files, tool: echo, action: deny}\n"
                          "  - {tool: file-helper, action: ask}\n")  # a robot used as a tool
    config = robotlab_home / "config" / "config.yaml"
    config.write_text(f"mcpServers:\n  files:\n    command: {sys.executable}\n    args: ['{BAD_SERVER}', ok]\n"
                      "    autoApprove: [eco, sleep]\n", encoding="utf-8")
    shown = robotlab("config", "show")
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "# approval policy (" in out
    assert "rule 1 {tool: delete_files, action: deny} could not be checked for the server 'files'" in out
    assert "--check-tools" in out
    assert "matches no tool" not in out  # the server is not running: nothing is said to match nothing
    checked = robotlab("config", "show", "--check-tools")
    assert checked.returncode == 0, checked.stderr
    out = checked.stdout
    assert "rule 1 {tool: delete_files, action: deny} matches no tool: did you mean {tool: delete_file}" in out
    assert "rule 2 {tool: echo, action: deny} matches no tool: did you mean {server: files, tool: echo}" in out
    assert "rule 3" not in out and "rule 4" not in out
    assert "mcpServers.files.autoApprove entry 'eco' matches no tool of 'files': did you mean 'echo'" in out
    assert "entry 'sleep'" not in out


def test_mcp_list_says_an_untrusted_servers_read_only_is_a_claim(robotlab_home: Path) -> None:
    config = robotlab_home / "config" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    entry = f"    command: {sys.executable}\n    args: ['{BAD_SERVER}', ok]\n"
    config.write_text(f"mcpServers:\n  plain:\n{entry}  trusted:\n{entry}    trustAnnotations: true\n",
                      encoding="utf-8")
    listed = robotlab("mcp", "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert any(line.startswith("  plain__echo  (read-only as claimed, asked about)") for line in lines), lines
    assert any(line.startswith("  trusted__echo  (read-only)") for line in lines), lines
