"""A change of mcpServers (the Settings page, Reload config, the file edited on disk) reaches every
robot and the next run at once; a run in progress finishes on the servers it started with; a server
that edits its tools on the fly (tools/list_changed) offers them from the next model turn."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from workspace import events as ev
from workspace.approval import ApprovalGate, ApprovalPolicy
from workspace.config import load_config
from workspace.mcp import set_default_manager
from workspace.mcp.edit import ServersFile
from workspace.mcp.manager import MCPManager
from workspace.providers.testing import Pause, ScriptedProvider, ToolCall
from workspace.session import Workspace

pytestmark = pytest.mark.timeout(90)

DYNAMIC = Path(__file__).resolve().parent / "fakes" / "mcp_dynamic_server.py"


def entry(label: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(DYNAMIC)], "env": {"LABEL": label}}


@pytest_asyncio.fixture
async def setup(robotlab_home: Path) -> AsyncIterator[tuple[Workspace, MCPManager, ScriptedProvider, Path]]:
    from workspace import paths

    path = paths.user_config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# kept\nmcpServers:\n  one: " + json.dumps(entry("first")) + "\n", encoding="utf-8")
    provider = ScriptedProvider()
    policy = ApprovalPolicy.from_list([{"action": "allow"}])
    workspace = Workspace(config=load_config(), db_path=robotlab_home / "db.sqlite", provider=provider,
                          approval=ApprovalGate(policy))
    manager = MCPManager(workspace.config)
    previous = set_default_manager(manager)
    manager.add_reload_listener(workspace.set_config)
    try:
        yield workspace, manager, provider, path
    finally:
        await manager.aclose()
        set_default_manager(previous)
        workspace.close()


async def test_the_next_message_sees_a_server_added_to_the_file(setup: Any) -> None:
    workspace, manager, provider, path = setup
    session = workspace.new_thread("assistant")
    provider.enqueue("first answer")
    await session.send("hello").wait()
    assert "one__whoami" in provider.history[0].tool_names
    assert not any(n.startswith("two__") for n in provider.history[0].tool_names)

    manager.start_watching(interval=0.05)
    await asyncio.sleep(0.1)
    servers = ServersFile(path)  # what the Settings page does; a hand edit is the same to the watcher
    servers.set("two", entry("second"))
    servers.save()
    deadline = asyncio.get_running_loop().time() + 10
    while "two" not in manager.server_names():
        assert asyncio.get_running_loop().time() < deadline, "the watcher did not reload the file"
        await asyncio.sleep(0.05)
    assert "# kept" in path.read_text(encoding="utf-8")
    provider.enqueue("second answer")
    await session.send("again").wait()
    assert "two__whoami" in provider.history[1].tool_names
    # A new thread (another robot) sees it too.
    other = workspace.new_thread("assistant")
    provider.enqueue("third")
    await other.send("hi").wait()
    assert "two__whoami" in provider.history[2].tool_names


async def test_a_run_in_progress_finishes_on_the_servers_it_started_with(setup: Any) -> None:
    workspace, manager, provider, path = setup
    session = workspace.new_thread("assistant")
    gate = asyncio.Event()
    provider.enqueue([ToolCall("one__whoami", {}, id="w1")], [Pause(event=gate), ToolCall("one__whoami", {}, id="w2")],
                     "done")
    run = session.send("who are you, twice")
    events: list[ev.Event] = []

    async def consume() -> None:
        async for event in run:
            events.append(event)

    task = asyncio.create_task(consume())
    deadline = asyncio.get_running_loop().time() + 20
    while not any(isinstance(e, ev.ToolResult) and e.id == "w1" for e in events):
        assert asyncio.get_running_loop().time() < deadline, events
        await asyncio.sleep(0.02)
    servers = ServersFile(path)
    servers.set("one", entry("changed"))
    servers.save()
    await manager.reload()
    gate.set()
    await asyncio.wait_for(task, 30)
    results = {e.id: str(e.payload) for e in events if isinstance(e, ev.ToolResult)}
    assert "label=first" in results["w1"] and "label=first" in results["w2"]
    # The next run starts on the new settings; the old process is gone.
    provider.enqueue([ToolCall("one__whoami", {}, id="w3")], "done")
    events = [e async for e in session.send("and now?")]
    results = {e.id: str(e.payload) for e in events if isinstance(e, ev.ToolResult)}
    assert "label=changed" in results["w3"]
    deadline = asyncio.get_running_loop().time() + 10
    while manager._retired:
        assert asyncio.get_running_loop().time() < deadline, "the retired connection was not stopped"
        await asyncio.sleep(0.05)


async def test_a_server_that_edits_its_tools_on_the_fly(setup: Any) -> None:
    workspace, manager, provider, _ = setup
    session = workspace.new_thread("assistant")
    provider.enqueue([ToolCall("one__grow", {}, id="g1")], "grown")
    await session.send("grow").wait()
    assert "one__extra" not in provider.history[0].tool_names
    deadline = asyncio.get_running_loop().time() + 10
    while "extra" not in [t.original for t in manager.status("one").tools]:
        assert asyncio.get_running_loop().time() < deadline, "tools/list_changed was not followed"
        await asyncio.sleep(0.05)
    provider.enqueue([ToolCall("one__extra", {}, id="x1")], "used it")
    events = [e async for e in session.send("use the new tool")]
    assert "one__extra" in provider.history[2].tool_names
    assert any(isinstance(e, ev.ToolResult) and "extra here" in str(e.payload) for e in events)
