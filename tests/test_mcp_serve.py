"""``robotlab mcp serve`` driven by the SDK's own client (stdio and streamable HTTP), and the
``robotlab mcp list`` / ``call`` commands against a real server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from fakes.mcp_servers import EVERYTHING, free_port, require_servers, stop_process, wait_for_port
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from workspace.cli import main as cli_main
from workspace.surface import workspace_tools
from workspace.tools import registry

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.timeout(60)

ROBOT = """---
description: Says hello back
---
You are a friendly robot.
"""


@pytest.fixture
def home_with_robot(robotlab_home: Path) -> Path:
    robots = robotlab_home / "config" / "robots"
    robots.mkdir(parents=True, exist_ok=True)
    (robots / "greeter.md").write_text(ROBOT, encoding="utf-8")
    return robotlab_home


@asynccontextmanager
async def stdio_session(args: list[str], home: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "workspace", "mcp", "serve", *args],
                                   env={"ROBOTLAB_HOME": str(home), "PYTHONPATH": str(ROOT)}, cwd=str(ROOT))
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def test_serve_over_stdio_exposes_builtins_and_robots(home_with_robot: Path, tmp_path: Path) -> None:
    (tmp_path / "readme.txt").write_text("hello from the folder")
    async with stdio_session(["--folder", str(tmp_path)], home_with_robot) as session:
        init_tools = (await session.list_tools()).tools
        listed = {t.name: t for t in init_tools}
        assert {"remember", "recall", "ask_greeter"} <= set(listed)
        # One definition, two callers: the schema the agent loop uses is the one served.
        remember = registry.get("remember")
        assert remember is not None and listed["remember"].input_schema == remember.parameters
        assert listed["recall"].annotations is not None and listed["recall"].annotations.read_only_hint is True
        ask = listed["ask_greeter"]
        assert "Says hello back" in (ask.description or "") and ask.input_schema["required"] == ["message"]

        stored = await session.call_tool("remember", {"key": "colour", "value": "teal"})
        assert not stored.is_error
        recalled = await session.call_tool("recall", {"key": "colour"})
        assert recalled.structured_content == {"key": "colour", "found": True, "value": "teal"}

        answer = await session.call_tool("ask_greeter", {"message": "hello there"})
        assert not answer.is_error and answer.content and answer.content[0].text.strip()

        invalid = await session.call_tool("recall", {})
        assert invalid.is_error and "Invalid arguments" in invalid.content[0].text
        unknown = await session.call_tool("no_such_tool", {})
        assert unknown.is_error and "Unknown tool" in unknown.content[0].text

        if "read_file" in listed:  # the built-in file tools work in --folder
            read = await session.call_tool("read_file", {"path": "readme.txt"})
            assert "hello from the folder" in json.dumps([c.model_dump() for c in read.content])


async def test_serve_tools_filter_and_no_robots(home_with_robot: Path) -> None:
    async with stdio_session(["--no-robots", "--tools", "rec*"], home_with_robot) as session:
        assert [t.name for t in (await session.list_tools()).tools] == ["recall"]
    # Every built-in but the file-writing tools (they need a run's change set, which serve has none of).
    from workspace.surface import writes_files

    assert {t.name for t in workspace_tools(robots=False)} == {
        t.name for t in registry.builtin_tools() if not writes_files(t)}


async def test_serve_over_streamable_http(home_with_robot: Path) -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "workspace", "mcp", "serve", "--http", str(port)],
        env={**os.environ, "ROBOTLAB_HOME": str(home_with_robot)}, cwd=str(ROOT),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(port, process)
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write), \
                ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "robotlab-workspace"
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"remember", "recall", "ask_greeter"} <= names
            await session.call_tool("remember", {"key": "n", "value": 7})
            result = await session.call_tool("recall", {"key": "n"})
            assert result.structured_content == {"key": "n", "found": True, "value": 7}
    finally:
        stop_process(process)


def _configure_everything(home: Path) -> None:
    require_servers()
    config = home / "config" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        "mcpServers:\n"
        f"  everything: {{command: {json.dumps(str(EVERYTHING))}, autoApprove: [echo]}}\n"
        "  missing: {command: robotlab-no-such-server}\n"
        "  remote: {url: 'https://example.invalid/mcp', headers: {Authorization: 'Bearer ${NOT_SET_TOKEN}'},"
        " disabled: true}\n"
    )


def test_cli_list_and_call(robotlab_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _configure_everything(robotlab_home)
    assert cli_main(["mcp", "list", "--json"]) == 1  # "missing" failed
    servers = {s["name"]: s for s in json.loads(capsys.readouterr().out)}
    assert servers["everything"]["state"] == "ready"
    echo = next(t for t in servers["everything"]["tools"] if t["name"] == "everything__echo")
    assert echo["auto_approve"] is True and echo["annotations"]["readOnlyHint"] is True
    assert any(p["name"] == "simple-prompt" for p in servers["everything"]["prompts"])
    assert servers["missing"]["state"] == "failed" and "not found" in servers["missing"]["reason"]
    assert servers["remote"]["disabled"] is True and "Bearer" not in json.dumps(servers["remote"])

    assert cli_main(["mcp", "list", "everything"]) == 0
    text = capsys.readouterr().out
    assert "everything  [ready]" in text and "everything__echo  (read-only; auto-approve)" in text

    assert cli_main(["mcp", "call", "everything", "echo", '{"message": "from the cli"}']) == 0
    assert capsys.readouterr().out.strip() == "Echo: from the cli"
    assert cli_main(["mcp", "call", "everything", "everything__get-sum", '{"a": 1, "b": 2}', "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["is_error"] is False
    assert cli_main(["mcp", "call", "everything", "nope", "{}"]) == 2
    assert "has no tool 'nope'" in capsys.readouterr().err
    assert cli_main(["mcp", "call", "everything", "echo", "{not json"]) == 2
    assert "not valid JSON" in capsys.readouterr().err

    assert cli_main(["mcp", "disable", "everything", "get-env"]) == 0
    capsys.readouterr()
    assert cli_main(["mcp", "list", "everything", "--json"]) == 0
    tools = {t["original"]: t for t in json.loads(capsys.readouterr().out)[0]["tools"]}
    assert tools["get-env"]["enabled"] is False


async def test_serve_offers_robots_as_prompts_and_finished_threads_as_resources(home_with_robot: Path) -> None:
    from workspace import paths
    from workspace.providers.testing import ScriptedProvider
    from workspace.session import Workspace

    db = paths.database_path()  # the one `robotlab mcp serve` reads (same ROBOTLAB_HOME)
    db.parent.mkdir(parents=True, exist_ok=True)
    with Workspace(db_path=db, provider=ScriptedProvider(["Hello, served world."])) as workspace:
        session = workspace.new_thread("greeter", title="A greeting")
        await session.send("say hello").wait()
        thread_id = session.thread_id
    async with stdio_session([], home_with_robot) as session_:
        prompts = {p.name: p for p in (await session_.list_prompts()).prompts}
        assert "greeter" in prompts and prompts["greeter"].description == "Says hello back"
        got = await session_.get_prompt("greeter", {"message": "hi there"})
        texts = [m.content.text for m in got.messages]  # type: ignore[union-attr]
        assert "You are a friendly robot." in texts[0] and texts[-1] == "hi there"
        listed = (await session_.list_resources()).resources
        uris = [str(r.uri) for r in listed]
        assert f"robotlab://threads/{thread_id}" in uris
        read = await session_.read_resource(f"robotlab://threads/{thread_id[:8]}")
        text = read.contents[0].text  # type: ignore[union-attr]
        assert "Hello, served world." in text and "say hello" in text
        results = await session_.read_resource(f"robotlab://threads/{thread_id}/results.json")
        assert "Hello, served world." in results.contents[0].text  # type: ignore[union-attr]
        templates = (await session_.list_resource_templates()).resource_templates
        assert any(t.uri_template == "robotlab://threads/{id}" for t in templates)
        from mcp.shared.exceptions import MCPError

        with pytest.raises(MCPError, match="No resource"):
            await session_.read_resource("robotlab://threads/nonexistent")
        with pytest.raises(MCPError, match="Unknown prompt"):
            await session_.get_prompt("nobody", {})


async def test_a_claude_desktop_config_pointing_at_serve_is_imported_and_called(
    home_with_robot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    claude = tmp_path / "claude_desktop_config.json"
    claude.write_text(json.dumps({"mcpServers": {"robotlab": {
        "command": sys.executable, "args": ["-m", "workspace", "mcp", "serve"],
        "env": {"ROBOTLAB_HOME": str(home_with_robot), "PYTHONPATH": str(ROOT)}}}}), encoding="utf-8")
    assert cli_main(["mcp", "import", str(claude), "--write"]) == 0
    capsys.readouterr()
    code = await asyncio.to_thread(cli_main, ["mcp", "call", "robotlab", "remember", '{"key": "k", "value": "v"}'])
    assert code == 0
    out = capsys.readouterr().out
    assert "k" in out
