"""The MCP client against real servers: server-everything (stdio, streamable HTTP, SSE),
server-filesystem on a temp dir, and the Python time server from PyPI.

The stdio server-everything connection is shared by the tests of this module (one
module-scoped event loop owns it); the other servers start per test.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from fakes.mcp_servers import EVERYTHING, FILESYSTEM, TIME_SERVER, free_port, http_everything, require_servers

from workspace.errors import ConfigurationError
from workspace.mcp.manager import MCPManager
from workspace.mcp.status import ServerState, ServerStatus
from workspace.robot import Robot

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(60)]


@pytest.fixture(scope="module")
def streamable_url() -> Iterator[str]:
    yield from http_everything("streamableHttp")


@pytest.fixture(scope="module")
def sse_url() -> Iterator[str]:
    yield from http_everything("sse")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def everything(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[MCPManager]:
    require_servers()
    state = tmp_path_factory.mktemp("mcp-state") / "mcp-tools.json"
    manager = MCPManager(
        {"mcpServers": {"everything": {"command": str(EVERYTHING), "autoApprove": ["echo"], "timeout": 30,
                                       "x-note": "unknown keys are fine"}}},
        state_file=state,
    )
    yield manager
    await manager.aclose()


# -- server-everything over stdio (shared) ------------------------------------------------------------
async def test_tools_are_discovered_with_names_schemas_and_annotations(everything: MCPManager) -> None:
    tools = {t.name: t for t in await everything.tools_for(["everything"])}
    assert {"everything__echo", "everything__get-sum", "everything__trigger-long-running-operation"} <= set(tools)
    echo = tools["everything__echo"]
    assert echo.mcp == "everything" and echo.is_mcp
    assert echo.description == "Echoes back the input string"
    assert echo.parameters is not None and echo.parameters["required"] == ["message"]
    assert echo.annotations["readOnlyHint"] is True and echo.annotations["destructiveHint"] is False
    assert echo.annotations["autoApprove"] is True and everything.is_auto_approved("everything", "echo")
    assert "autoApprove" not in tools["everything__get-sum"].annotations
    status = everything.status("everything")
    assert status.state is ServerState.READY and status.transport == "stdio"
    assert status.server_info and "everything" in status.server_info
    assert {t.name for t in status.tools} == set(tools)
    assert status.connect_seconds is not None and status.starts == 1


async def test_calls_with_arguments_structured_content_and_images(everything: MCPManager) -> None:
    tools = {t.name: t for t in await everything.tools_for(["everything"])}
    out = await tools["everything__echo"].invoke({"message": "hello"})
    assert not out.is_error and out.data == "Echo: hello"
    assert out.raw == {"content": [{"type": "text", "text": "Echo: hello"}], "structured_content": None,
                       "is_error": False}
    total = await tools["everything__get-sum"].invoke({"a": 2, "b": 40})
    assert "42" in str(total.data)
    weather = await tools["everything__get-structured-content"].invoke({"location": "New York"})
    assert isinstance(weather.data, dict) and "temperature" in weather.data
    assert weather.raw["structured_content"] == weather.data
    image = await tools["everything__get-tiny-image"].invoke({})
    assert "[image: image/png" in image.data
    assert any(b["type"] == "image" and b["data"] for b in image.raw["content"])


async def test_errors_are_tool_errors(everything: MCPManager) -> None:
    unknown = await everything.call_tool("everything", "no-such-tool", {})
    assert unknown.is_error and "no-such-tool" in unknown.data
    tools = {t.name: t for t in await everything.tools_for(["everything"])}
    invalid = await tools["everything__get-sum"].invoke({"a": "two"})
    assert invalid.is_error and "Invalid arguments" in invalid.data  # checked against the schema first
    server_side = await everything.call_tool("everything", "get-sum", {"a": "two", "b": 1})
    assert server_side.is_error and server_side.raw["is_error"] is True
    assert everything.status("everything").state is ServerState.READY


async def test_a_long_running_call_is_cancelled_and_the_connection_stays_usable(everything: MCPManager) -> None:
    tools = {t.name: t for t in await everything.tools_for(["everything"])}
    starts = everything.status("everything").starts
    call = asyncio.ensure_future(
        tools["everything__trigger-long-running-operation"].invoke({"duration": 30, "steps": 30}))
    await asyncio.sleep(0.5)
    assert not call.done()
    began = time.monotonic()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert time.monotonic() - began < 30 / 2  # at once: long before the 30 s operation would end
    after = await tools["everything__echo"].invoke({"message": "still here"})
    assert after.data == "Echo: still here"
    status = everything.status("everything")
    assert status.state is ServerState.READY and status.starts == starts


async def test_prompts_resources_and_a_prompt_as_a_robot_template(everything: MCPManager) -> None:
    prompts = {p["name"] for p in await everything.list_prompts("everything")}
    assert {"simple-prompt", "args-prompt"} <= prompts
    template = await everything.prompt_template("everything", "args-prompt", {"city": "Paris"})
    assert template.render() == "What's weather in Paris?"
    robot = Robot("weather", template=template, mcp="none")
    assert robot.render_system() == "What's weather in Paris?"
    resources = await everything.list_resources("everything")
    assert resources and all("uri" in r for r in resources)
    read = await everything.read_resource("everything", resources[0]["uri"])
    assert read["contents"] and read["contents"][0]["uri"] == resources[0]["uri"]


async def test_status_listeners_see_a_restart(everything: MCPManager) -> None:
    seen: list[ServerStatus] = []
    remove = everything.add_listener(seen.append)
    try:
        status = await everything.restart("everything")
    finally:
        remove()
    assert status.state is ServerState.READY and status.starts >= 2
    states = [s.state for s in seen if s.name == "everything"]
    assert ServerState.STARTING in states and states[-1] is ServerState.READY
    assert any(s.state is ServerState.STOPPED for s in seen)


async def test_tools_can_be_switched_off_and_it_is_remembered(everything: MCPManager) -> None:
    everything.set_tool_enabled("everything", "everything__get-env", False)
    try:
        names = {t.name for t in await everything.tools_for(["everything"])}
        assert "everything__get-env" not in names and "everything__echo" in names
        info = {t.original: t for t in everything.status("everything").tools}
        assert info["get-env"].enabled is False and info["echo"].enabled is True
        again = MCPManager({"mcpServers": {"everything": {"command": str(EVERYTHING)}}},
                           state_file=everything._switches.path())
        assert not again.is_tool_enabled("everything", "get-env")
    finally:
        everything.set_tool_enabled("everything", "get-env", True)
    assert "everything__get-env" in {t.name for t in await everything.tools_for(["everything"])}


async def test_unknown_servers_are_a_configuration_error(everything: MCPManager) -> None:
    with pytest.raises(ConfigurationError, match=r"Unknown MCP server 'nope'.*everything"):
        await everything.tools_for(["nope"])


# -- other transports and servers (their own event loop per test) ----------------------------------------
@pytest.mark.asyncio(loop_scope="function")
async def test_streamable_http(streamable_url: str) -> None:
    manager = MCPManager({"mcpServers": {"web": {"url": f"{streamable_url}/mcp", "type": "streamableHttp",
                                                 "headers": {"X-Api-Key": "not-a-real-secret"}}}})
    try:
        tools = {t.name: t for t in await manager.tools_for(["web"])}
        assert manager.status("web").transport == "http"
        assert "not-a-real-secret" not in json.dumps(manager.status("web").to_dict())
        out = await tools["web__echo"].invoke({"message": "over http"})
        assert out.data == "Echo: over http"
        error = await manager.call_tool("web", "no-such-tool", {})
        assert error.is_error
        call = asyncio.ensure_future(tools["web__trigger-long-running-operation"].invoke({"duration": 30,
                                                                                         "steps": 30}))
        await asyncio.sleep(0.5)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert (await tools["web__get-sum"].invoke({"a": 1, "b": 2})).data == "The sum of 1 and 2 is 3."
    finally:
        await manager.aclose()


@pytest.mark.asyncio(loop_scope="function")
async def test_http_errors_name_the_url(streamable_url: str) -> None:
    manager = MCPManager({"mcpServers": {
        "wrong-path": {"url": f"{streamable_url}/nope"},
        "closed": {"url": f"http://127.0.0.1:{free_port()}/mcp", "connectTimeout": 5},
    }})
    try:
        wrong = await manager.start("wrong-path")
        assert wrong.state is ServerState.FAILED and "404" in (wrong.reason or "")
        assert "mcpServers.wrong-path.url" in (wrong.reason or "")
        closed = await manager.start("closed")
        assert closed.state is ServerState.FAILED and "cannot connect" in (closed.reason or "")
    finally:
        await manager.aclose()


@pytest.mark.asyncio(loop_scope="function")
async def test_sse(sse_url: str) -> None:
    manager = MCPManager({"mcpServers": {"legacy": {"url": f"{sse_url}/sse"}}})
    try:
        tools = {t.name: t for t in await manager.tools_for(["legacy"])}
        assert manager.status("legacy").transport == "sse"
        assert (await tools["legacy__echo"].invoke({"message": "sse"})).data == "Echo: sse"
    finally:
        await manager.aclose()


@pytest.mark.asyncio(loop_scope="function")
async def test_filesystem_server_on_a_temp_dir(tmp_path: Path) -> None:
    require_servers()
    (tmp_path / "notes.txt").write_text("first line\nsecond line\n")
    manager = MCPManager({"mcpServers": {"fs": {"command": str(FILESYSTEM), "args": [str(tmp_path)]}}})
    try:
        tools = {t.name: t for t in await manager.tools_for(["fs"])}
        listing = await tools["fs__list_directory"].invoke({"path": str(tmp_path)})
        assert "notes.txt" in json.dumps(listing.data)
        read = await tools["fs__read_text_file"].invoke({"path": str(tmp_path / "notes.txt")})
        assert "second line" in str(read.data)
        wrote = await tools["fs__write_file"].invoke({"path": str(tmp_path / "new.txt"), "content": "made by MCP"})
        assert not wrote.is_error and (tmp_path / "new.txt").read_text() == "made by MCP"
        outside = await tools["fs__read_text_file"].invoke({"path": "/etc/hostname"})
        assert outside.is_error and "denied" in outside.data.lower()
        assert tools["fs__write_file"].annotations.get("readOnlyHint") is False
    finally:
        await manager.aclose()


@pytest.mark.asyncio(loop_scope="function")
async def test_python_time_server_from_pypi() -> None:
    if not TIME_SERVER.exists():
        pytest.fail("mcp-server-time is missing from the venv: install the dev extra (make test does)")
    manager = MCPManager()
    try:
        # An inline server (as a robot's `mcp:` list may give it), in RobotLab's transport form.
        tools = {t.name: t for t in await manager.tools_for(
            [{"name": "time", "transport": {"type": "stdio", "command": str(TIME_SERVER)}}])}
        now = await tools["time__get_current_time"].invoke({"timezone": "UTC"})
        assert not now.is_error and now.data["timezone"] == "UTC"
        converted = await tools["time__convert_time"].invoke(
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})
        assert "21:00" in json.dumps(converted.data)
    finally:
        await manager.aclose()
