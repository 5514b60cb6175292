"""A stdio MCP server's stdout is read a line at a time in time proportional to what it writes (the SDK's
reader copied and split all it held of a line at every chunk: a 100 MiB result cost about 87 s of CPU before
it was cut), and a line past the limit (``workspace.mcp.stdio.MAX_LINE_BYTES``, 64 MiB) fails the server,
saying so and naming the fix, instead of being read whole. Real server processes (tests/faults)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from workspace.mcp import stdio
from workspace.mcp.manager import MCPManager
from workspace.mcp.status import ServerState
from workspace.mcp.stdio import LineTooLong, _Lines

FAULT_SERVER = Path(__file__).resolve().parent / "faults" / "mcp_fault_server.py"
pytestmark = pytest.mark.timeout(120)


def test_lines_come_whole_however_the_chunks_fall() -> None:
    lines = _Lines(limit=10)
    assert lines.feed(b"") == []
    assert lines.feed(b'{"a"') == []
    assert lines.feed(b":1}\n{}\n\n{") == [b'{"a":1}', b"{}", b""]
    assert lines.feed(b'"b"') == []
    assert lines.feed(b":2}\r\n") == [b'{"b":2}\r']  # (the JSON parser takes the \r as white space)
    assert lines.feed(b"0123456789\n") == [b"0123456789"]  # exactly the limit: read
    with pytest.raises(LineTooLong, match="longer than"):
        _Lines(limit=10).feed(b"0123456789A\n")
    opened = _Lines(limit=10)
    opened.feed(b"01234")
    with pytest.raises(LineTooLong):  # refused before its end comes: nothing past the limit is kept
        opened.feed(b"56789A")


def test_a_long_line_in_small_chunks_is_joined_once() -> None:
    """The pieces of a line are kept apart and joined when it ends (the SDK joined them at every chunk)."""
    lines = _Lines(limit=2**20)
    chunk = b"x" * 1024
    for _ in range(511):
        assert lines.feed(chunk) == []
        assert len(lines._parts[-1]) == 1024  # a piece of its own, not a copy of all so far
    (line,) = lines.feed(chunk + b"\n")
    assert line == b"x" * 512 * 1024


@pytest.fixture
async def fault(tmp_path: Path) -> AsyncIterator[MCPManager]:
    manager = MCPManager({"mcpServers": {"fault": {"command": sys.executable, "args": [str(FAULT_SERVER), "ok"]}}},
                         state_file=tmp_path / "mcp-tools.json")
    yield manager
    await manager.aclose()


async def test_a_message_past_the_limit_fails_the_server_saying_so(fault: MCPManager,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stdio, "MAX_LINE_BYTES", 1024 * 1024)
    small = await fault.call_tool("fault", "huge", {"mb": 0.5})
    assert not small.is_error and len(small.data) == 512 * 1024
    failed = await fault.call_tool("fault", "huge", {"mb": 3})
    assert failed.is_error and "longer than 1 MiB" in str(failed.data), failed.data
    status = fault.status("fault")
    assert status.state is ServerState.FAILED
    assert "longer than 1 MiB" in (status.reason or "") and "ask the tool for less" in (status.reason or "")


def test_the_sdk_has_every_part_the_reader_is_built_of() -> None:
    """The reader reuses private parts of the SDK's ``mcp.client.stdio``: a release renaming one fails here, naming
    it (and :func:`stdio.client_for` falls back to the SDK's own reader meanwhile, below)."""
    assert stdio.sdk_parts_missing() == []


def test_an_sdk_without_those_parts_gets_its_own_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp.client import stdio as sdk

    made: list[object] = []
    monkeypatch.setattr(sdk, "stdio_client", lambda server, errlog: made.append(server) or "the SDK's own")
    assert stdio.client_for("params", sys.stderr) != "the SDK's own"  # (ours: not entered here)
    monkeypatch.delattr(sdk, "_parse_line")
    assert stdio.sdk_parts_missing() == ["_parse_line"]
    assert stdio.client_for("params", sys.stderr) == "the SDK's own" and made == ["params"]
