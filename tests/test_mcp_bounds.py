"""What an MCP server sends is bounded: its tool list and its tool results (real server processes).

- Naming N tools looks each name up in one set that grows (it copied the names so far for every tool:
  quadratic, 20,000 tools took seconds on the event loop, on every status).
- A server listing more than ``MAX_TOOLS`` tools keeps its first ``MAX_TOOLS``, asks for no page past them,
  and its status says how many were left out, naming the server and the limit; it stays usable.
- A tool result past ``MAX_RESULT_CHARS`` is cut with a note the model and people see ("cut: N MiB more"),
  ``raw["cut"]`` has the figures, and the text is held once (``data`` is the raw block's string).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Container, Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.mcp_servers import BAD_SERVER

from workspace.mcp import catalogue, naming
from workspace.mcp.catalogue import MAX_TOOLS
from workspace.mcp.manager import MCPManager
from workspace.mcp.results import MAX_RESULT_CHARS, to_output
from workspace.mcp.status import ServerState

pytestmark = pytest.mark.timeout(60)

FAULT_SERVER = Path(__file__).resolve().parent / "faults" / "mcp_fault_server.py"


class _Counted(Container[str]):
    """A ``taken`` that counts every name looked at (``in``, or one by one when copied)."""

    looked = 0

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __contains__(self, name: object) -> bool:
        _Counted.looked += 1
        return name in self.inner

    def __iter__(self) -> Iterator[str]:
        for name in self.inner:
            _Counted.looked += 1
            yield name


def test_naming_many_tools_looks_at_each_name_a_bounded_number_of_times(monkeypatch: pytest.MonkeyPatch) -> None:
    real = naming.tool_name

    def counting(server: str, tool: str, *, taken: Any = frozenset()) -> str:
        return real(server, tool, taken=_Counted(taken))

    monkeypatch.setattr(naming, "tool_name", counting)
    per_tool = {}
    for count in (1_000, 2_000):
        _Counted.looked = 0
        originals = [f"t{i}" for i in range(count)] + ["t.0"]  # a look-alike of t_0: hashed, still unique
        names = catalogue.tool_names("big", originals)
        assert len(set(names.values())) == len(originals)
        per_tool[count] = _Counted.looked / len(originals)
    # One look-up a tool (two for a look-alike), whatever the count: it was half the names so far (500, 1000).
    assert per_tool[2_000] < 3 and per_tool[1_000] < 3, per_tool


@pytest.fixture
async def many(tmp_path: Path) -> AsyncIterator[MCPManager]:
    manager = MCPManager({"mcpServers": {"big": {"command": sys.executable, "args": [str(BAD_SERVER), "many", "2500"]},
                                         "fault": {"command": sys.executable, "args": [str(FAULT_SERVER), "ok"]}}},
                         state_file=tmp_path / "mcp-tools.json")
    yield manager
    await manager.aclose()


async def test_a_server_listing_too_many_tools_offers_its_first_ones_and_says_so(many: MCPManager) -> None:
    tools = await many.tools_for(["big"])
    assert len(tools) == MAX_TOOLS
    assert tools[0].name == "big__echo" and tools[-1].name == f"big__tool_{MAX_TOOLS - 5:05d}"  # 4 tools, then these
    status = many.status("big")
    assert status.state is ServerState.READY and len(status.tools) == MAX_TOOLS
    note = status.tools_note or ""
    assert "'big'" in note and "more than 1,500 tools" in note and f"first {MAX_TOOLS:,}" in note
    assert "fewer tools" in note  # names the fix
    assert status.to_dict()["tools_note"] == note
    # Pages of 500: three were read (1,500 tools, past the limit), the last two never asked for.
    pages = [line for line in status.stderr if line.startswith("tools/list page")]
    assert pages == ["tools/list page 1", "tools/list page 2", "tools/list page 3"]
    assert any(note in line for line in status.stderr)  # the output view says it too
    echoed = await many.call_tool("big", "echo", {"message": "still usable"})
    assert echoed.data == "echo: still usable"
    assert len(many.model_tool_names(["big"])["big"]) == MAX_TOOLS


async def test_a_huge_tool_result_is_cut_with_a_note_and_held_once(many: MCPManager) -> None:
    out = await many.call_tool("fault", "huge", {"mb": 20})
    assert not out.is_error
    text = out.data
    assert isinstance(text, str) and len(text) <= MAX_RESULT_CHARS + 500
    assert text.startswith("2024-05-01 12:00:00 INFO worker-7")
    assert "[cut: 12.0 MiB more of this result left out" in text and "kept up to 8.0 MiB" in text
    (block,) = out.raw["content"]
    assert block["text"] is text  # one copy: what the model gets is the raw block's string
    assert out.raw["cut"] == {"left_out_chars": 20 * 1024 * 1024 - (len(text.split("\n\n[cut:")[0])),
                              "limit_chars": MAX_RESULT_CHARS}
    small = await many.call_tool("fault", "huge", {"mb": 1})
    assert "cut" not in small.raw and "[cut:" not in small.data and len(small.data) == 1024 * 1024


def test_images_and_structured_content_past_the_limit_are_named_in_their_place() -> None:
    image = {"type": "image", "data": "A" * 2_000, "mimeType": "image/png"}
    out = to_output([image, {"type": "text", "text": "caption"}], {"rows": ["x" * 500] * 4}, False, limit=1_000)
    assert out.raw["structured_content"] is None  # 2,000 characters: left out, the text blocks are the data
    first, second = out.raw["content"]
    assert first == {"type": "text", "text": "[image content, image/png: 0.0 MiB, left out]"}
    assert second["text"].startswith("caption\n\n[cut:") and "its structured content" in second["text"]
    assert "image content" in out.data and out.raw["cut"]["left_out_chars"] > 4_000
    kept = to_output([image], {"rows": ["x"]}, False, limit=10_000)
    assert "cut" not in kept.raw and kept.data == {"rows": ["x"]} and kept.raw["content"] == [image]
    deep: Any = []
    for _ in range(100_000):  # counted without recursion
        deep = [deep]
    assert to_output([], {"x": deep}, False, limit=1_000).raw["structured_content"] is None


async def test_a_session_given_with_inject_mcp_is_cut_the_same_way(caplog: pytest.LogCaptureFixture) -> None:
    from types import SimpleNamespace

    from workspace.mcp.injected import session_tools

    class Session:
        async def list_tools(self) -> Any:
            return SimpleNamespace(tools=[SimpleNamespace(name=f"t{i}", input_schema=None) for i in range(1_200)])

        async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
            raise AssertionError("not called")

    with caplog.at_level("WARNING", logger="workspace.mcp"):
        tools = await session_tools({"given": Session()})
    assert len(tools) == MAX_TOOLS and tools[-1].name == f"given__t{MAX_TOOLS - 1}"
    assert "MCP server 'given' lists 1,200 tools" in caplog.text and "other 200 are left out" in caplog.text
