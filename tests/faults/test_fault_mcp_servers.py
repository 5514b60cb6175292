"""MCP faults at the server manager, against real (deliberately bad) server processes: a missing
command, a server that exits at start or mid-call, garbage on stdout, a server that never answers,
call time limits, cancellation of an in-flight call (the server must receive
``notifications/cancelled``), a server stopped mid-call, and the configuration file broken while
it is watched. (The same faults met in a recorded thread: test_fault_mcp.py.)"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fakes.mcp_servers import BAD_SERVER

from workspace.mcp.manager import MCPManager
from workspace.mcp.status import ServerState

pytestmark = pytest.mark.timeout(30)


def server(mode: str, **extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(BAD_SERVER), mode], **extra}


@pytest.fixture
async def manager(tmp_path: Path) -> AsyncIterator[MCPManager]:
    starts = tmp_path / "starts.txt"
    env = {"FAKE_MCP_STARTS": str(starts)}
    mgr = MCPManager({"mcpServers": {
        "ok": server("ok", env=env, timeout=20),
        "slow": server("ok", env=env, timeout=1),
        "silent": server("silent", connectTimeout=1),
        "garbage": server("garbage", connectTimeout=1),
        "exits": server("exit"),
        "missing": {"command": "robotlab-no-such-mcp-server", "args": ["--stdio"]},
        "npx-missing": {"command": "/nonexistent/bin/npx", "args": ["-y", "some-server"]},
    }})
    yield mgr
    await mgr.aclose()


def starts_of(manager: MCPManager, tmp_path: Path) -> int:
    path = tmp_path / "starts.txt"
    return len(path.read_text().splitlines()) if path.exists() else 0


async def wait_until(predicate: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


async def test_a_missing_command_names_the_command_and_the_fix(manager: MCPManager, matrix: Any) -> None:
    matrix.case("MCP faults", "a missing command (and a missing npx)")
    status = await manager.start("missing")
    assert status.state is ServerState.FAILED
    assert "command 'robotlab-no-such-mcp-server' not found on PATH" in (status.reason or "")
    assert "mcpServers.missing.command" in (status.reason or "")
    path = await manager.start("npx-missing")
    assert "/nonexistent/bin/npx" in (path.reason or "") and "no such file" in (path.reason or "")
    # A robot's run does not fail because one server is missing: its tools are left out.
    assert await manager.tools_for(["missing"]) == []
    out = await manager.call_tool("missing", "anything", {})
    assert out.is_error and "robotlab-no-such-mcp-server" in out.data


async def test_a_server_that_exits_at_start_shows_its_stderr(manager: MCPManager, matrix: Any) -> None:
    matrix.case("MCP faults", "exits at start: its stderr is shown")
    status = await manager.start("exits")
    assert status.state is ServerState.FAILED
    assert "exited before completing the MCP handshake" in (status.reason or "")
    assert "missing API_TOKEN" in (status.reason or "")
    assert any("missing API_TOKEN" in line for line in status.stderr)


async def test_a_server_that_exits_mid_call_is_a_tool_error_then_restarts(manager: MCPManager,
                                                                          tmp_path: Path, matrix: Any) -> None:
    matrix.case("MCP faults", "exits mid-call: a tool error, then restarts")
    tools = {t.name: t for t in await manager.tools_for(["ok"])}
    assert (await tools["ok__echo"].invoke({"message": "one"})).data == "echo: one"
    crashed = await tools["ok__crash"].invoke({})
    assert crashed.is_error
    assert "stopped during 'crash'" in crashed.data and "may have crashed" in crashed.data
    assert "about to crash" in crashed.data  # the server's last words, from its stderr
    assert manager.status("ok").state is ServerState.FAILED
    again = await tools["ok__echo"].invoke({"message": "two"})
    assert not again.is_error and again.data == "echo: two"
    assert manager.status("ok").state is ServerState.READY
    assert manager.status("ok").starts == 2 and starts_of(manager, tmp_path) == 2


async def test_garbage_on_stdout(manager: MCPManager, matrix: Any) -> None:
    matrix.case("MCP faults", "garbage on stdout (manager: at start, mid-call)")
    status = await manager.start("garbage")
    assert status.state is ServerState.FAILED
    assert "not JSON-RPC" in (status.reason or "") and "Welcome to the garbage server" in (status.reason or "")
    # A working server that prints to stdout in the middle of a call: an error at once, not a hang.
    began = time.monotonic()
    out = await manager.call_tool("ok", "garble", {})
    assert out.is_error and "not JSON-RPC to stdout" in out.data and "oops, this is a debug print" in out.data
    assert time.monotonic() - began < 20 / 2  # at once: well before the call's time limit (20 s) would end it
    assert (await manager.call_tool("ok", "echo", {"message": "clean"})).data == "echo: clean"


async def test_a_server_that_never_answers_times_out(manager: MCPManager, matrix: Any) -> None:
    matrix.case("MCP faults", "never answers the handshake (1 s), not retried on each use")
    began = time.monotonic()
    status = await manager.start("silent")
    assert status.state is ServerState.FAILED
    assert "no answer to the MCP handshake within 1 s" in (status.reason or "")
    assert "mcpServers.silent.connectTimeout" in (status.reason or "")
    assert time.monotonic() - began < 10 * 1  # an anti-hang bound: ten times the handshake's time limit
    # A failed start is not retried on every use (each run would wait again)...
    assert await manager.tools_for(["silent"]) == []
    assert manager.status("silent").starts == 1
    # ...but restart() tries again at once.
    assert (await manager.restart("silent")).starts == 2


async def test_a_call_over_its_time_limit_is_cancelled_on_the_server(manager: MCPManager, matrix: Any) -> None:
    matrix.case("MCP faults", "a call over its time limit is cancelled on the server")
    out = await manager.call_tool("slow", "sleep", {"seconds": 30})
    assert out.is_error and "did not answer 'sleep' within 1 s" in out.data and "mcpServers.slow.timeout" in out.data
    await wait_until(lambda: any("cancelled request" in line for line in manager.status("slow").stderr))
    assert (await manager.call_tool("slow", "echo", {"message": "after"})).data == "echo: after"


async def test_cancelling_a_call_sends_notifications_cancelled(manager: MCPManager, matrix: Any) -> None:
    matrix.case("MCP faults", "a cancelled call sends notifications/cancelled")
    tools = {t.name: t for t in await manager.tools_for(["ok"])}
    call = asyncio.ensure_future(tools["ok__sleep"].invoke({"seconds": 30}))
    await asyncio.sleep(0.3)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await wait_until(lambda: any("cancelled request" in line for line in manager.status("ok").stderr))
    assert (await tools["ok__echo"].invoke({"message": "usable"})).data == "echo: usable"
    assert manager.status("ok").starts == 1


async def test_stopping_a_server_ends_its_in_flight_calls(manager: MCPManager, matrix: Any) -> None:
    matrix.case("MCP faults", "stopping a server ends its in-flight calls")
    await manager.start("ok")
    call = asyncio.ensure_future(manager.call_tool("ok", "sleep", {"seconds": 30}))
    await asyncio.sleep(0.3)
    status = await manager.stop("ok")
    out = await asyncio.wait_for(call, 5)
    assert out.is_error and "stopped" in out.data
    assert status.state is ServerState.STOPPED


async def test_the_configuration_file_is_watched_and_reloaded(robotlab_home: Path, matrix: Any) -> None:
    matrix.case("MCP faults", "the configuration file broken while watched")
    from workspace import paths
    from workspace.config import load_config

    config = paths.user_config_file()
    config.parent.mkdir(parents=True, exist_ok=True)

    def write(servers: str) -> None:
        config.write_text(f"# mine\nmcpServers:\n{servers}")

    entry = f"{{command: {json.dumps(sys.executable)}, args: [{json.dumps(str(BAD_SERVER))}, ok]"
    write(f"  t: {entry}}}\n")
    manager = MCPManager(load_config())
    manager.start_watching(interval=0.05)
    try:
        assert (await manager.start("t")).starts == 1
        await asyncio.sleep(0.1)
        write(f"  t: {entry}, env: {{MODE: two}}}}\n  u: {entry}}}\n")  # t's settings changed; u is new
        await wait_until(lambda: manager.status("t").starts == 2 and manager.status("t").is_ready)
        assert manager.status("u").state is ServerState.STOPPED  # configured, not started until used
        config.write_text("mcpServers: [this is: not valid\n")
        await wait_until(lambda: manager.config_error is not None)
        assert str(config) in (manager.config_error or "") and manager.status("t").is_ready
        write(f"  u: {entry}}}\n")  # t removed
        await wait_until(lambda: "t" not in manager.server_names())
        assert manager.config_error is None
    finally:
        await manager.aclose()
