"""MCP faults met in a recorded thread (real server processes, a real SQLite file): a server that
crashes at start or in the middle of a call, never answers, writes garbage on stdout, answers
10 MB (cut to the limit of one MCP result, with a note), or starts slowly. Each is a clear error or
notice, the run goes on, nothing is lost (every event of the run is in the database), and nothing
hangs (no run waits for a server's 30 s connect timeout)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from faultkit import fault_server

from workspace import events as ev
from workspace.mcp.status import ServerState
from workspace.providers.testing import Pause, ScriptedProvider, ToolCall
from workspace.session import RecordedRun, Workspace

pytestmark = pytest.mark.timeout(60)


def configure(servers: dict[str, Any], *, wait: float = 0.5, robot_mcp: list[str] | None = None) -> None:
    from workspace import paths

    for entry in servers.values():
        entry.setdefault("autoApprove", ["*"])
    config = paths.user_config_file()
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"agent": {"mcp_startup_wait": wait}, "mcpServers": servers}), encoding="utf-8")
    robots = paths.user_robots_dir()
    robots.mkdir(parents=True, exist_ok=True)
    names = robot_mcp if robot_mcp is not None else list(servers)
    (robots / "helper.md").write_text(f"---\nname: helper\nmcp: {json.dumps(names)}\n---\nYou help.\n",
                                      encoding="utf-8")


@pytest.fixture
async def manager() -> AsyncIterator[Any]:
    from workspace.mcp import set_default_manager
    from workspace.mcp.manager import MCPManager

    fresh = MCPManager()
    previous = set_default_manager(fresh)
    yield fresh
    await fresh.aclose()
    set_default_manager(previous)


async def record(provider: ScriptedProvider, tmp_path: Path, text: str = "go") -> tuple[Workspace, RecordedRun]:
    workspace = Workspace(provider=provider, db_path=tmp_path / "threads.db")
    session = workspace.new_thread("helper")
    run = session.send(text)
    await run.wait()
    return workspace, run


def nothing_lost(workspace: Workspace, run: RecordedRun) -> int:
    """How many of the run's events are missing from the database (text deltas count as text)."""
    stored = workspace.store.turn_events(run.turn_id)
    wanted = [type(e).__name__ for e in run.events if not isinstance(e, ev.TextDelta)]
    have = [type(e).__name__ for e in stored if not isinstance(e, ev.TextDelta)]
    streamed = "".join(e.text for e in run.events if isinstance(e, ev.TextDelta))
    stored_text = "".join(e.text for e in stored if isinstance(e, ev.TextDelta))
    missing = len(wanted) - sum(1 for a, b in zip(wanted, have, strict=False) if a == b)
    return missing + (0 if stored_text == streamed else 1)


def notices(run: RecordedRun) -> list[ev.McpServers]:
    return [e for e in run.events if isinstance(e, ev.McpServers)]


async def test_a_server_that_crashes_at_start(manager: Any, tmp_path: Path, matrix: Any) -> None:
    matrix.case("MCP faults", "crash at start")
    configure({"index": fault_server("crash")}, wait=20)  # the run waits until it failed (well before 20 s)
    workspace, run = await record(ScriptedProvider(["I can answer without the index."]), tmp_path)
    assert isinstance(run.terminal, ev.RunFinished)
    (notice,) = notices(run)
    assert "cannot open the index" in notice.failed["index"]  # its stderr says why
    assert "MCP server 'index' is not available, the run goes on without it" in notice.message
    matrix.lost(nothing_lost(workspace, run), "events")
    assert matrix.cases[-1].lost == 0
    await workspace.aclose()


async def test_a_server_that_crashes_in_the_middle_of_a_call(manager: Any, tmp_path: Path, matrix: Any) -> None:
    matrix.case("MCP faults", "crash mid-call")
    configure({"faulty": fault_server("ok")})
    provider = ScriptedProvider([[ToolCall("faulty__crash", {}, id="c1")],
                                 [ToolCall("faulty__echo", {"message": "again"}, id="c2")], "Done."])
    workspace, run = await record(provider, tmp_path)
    errors = [e for e in run.events if isinstance(e, ev.ToolError)]
    results = [e for e in run.events if isinstance(e, ev.ToolResult)]
    assert len(errors) == 1 and "exited" in json.dumps(errors[0].error)
    assert "about to crash" in json.dumps(errors[0].error)  # the server's last words
    assert results[0].payload == {"data": "echo: again"}  # started again for the next call
    assert isinstance(run.terminal, ev.RunFinished)
    matrix.lost(nothing_lost(workspace, run), "events")
    assert matrix.cases[-1].lost == 0
    await workspace.aclose()


async def test_a_server_that_never_answers_does_not_hold_up_any_run(manager: Any, tmp_path: Path,
                                                                     matrix: Any) -> None:
    matrix.case("MCP faults", "never answers (30 s connect timeout)")
    configure({"silent": fault_server("silent", connectTimeout=30), "fine": fault_server("ok")}, wait=0.5)
    provider = ScriptedProvider([[ToolCall("fine__echo", {"message": "hi"}, id="c1")], "First.", "Second."])
    workspace = Workspace(provider=provider, db_path=tmp_path / "threads.db")
    session = workspace.new_thread("helper")
    first = session.send("one")
    await first.wait()
    second = session.send("two")
    await second.wait()
    for run in (first, second):
        assert isinstance(run.terminal, ev.RunFinished)
        notice = notices(run)[0]  # (on a busy machine "fine" may still be starting too, then join)
        assert "silent" in notice.starting and "still starting" in notice.message
    # Both runs ended, with the fine server's tools, while the silent one was still within its 30 s.
    assert [e.payload for e in first.events if isinstance(e, ev.ToolResult)] == [{"data": "echo: hi"}]
    assert manager.status("silent").state is ServerState.STARTING
    matrix.lost(nothing_lost(workspace, first) + nothing_lost(workspace, second), "events")
    assert matrix.cases[-1].lost == 0
    await workspace.aclose()


async def test_garbage_on_stdout(manager: Any, tmp_path: Path, matrix: Any) -> None:
    matrix.case("MCP faults", "garbage on stdout (at start and mid-call)")
    configure({"noisy": fault_server("garbage", connectTimeout=1), "faulty": fault_server("ok")}, wait=20)
    provider = ScriptedProvider([[ToolCall("faulty__garble", {}, id="c1")],
                                 [ToolCall("faulty__echo", {"message": "still there?"}, id="c2")], "Done."])
    workspace, run = await record(provider, tmp_path)
    (notice,) = notices(run)
    assert "not JSON-RPC" in notice.failed["noisy"] or "garbage server" in notice.failed["noisy"]
    (error,) = [e for e in run.events if isinstance(e, ev.ToolError)]
    assert "not JSON-RPC" in json.dumps(error.error)
    assert [e.payload for e in run.events if isinstance(e, ev.ToolResult)] == [{"data": "echo: still there?"}]
    assert isinstance(run.terminal, ev.RunFinished)
    matrix.lost(nothing_lost(workspace, run), "events")
    assert matrix.cases[-1].lost == 0
    await workspace.aclose()


async def test_a_huge_result_is_cut_with_a_note_and_stored_once(manager: Any, tmp_path: Path, matrix: Any) -> None:
    from workspace.mcp.results import MAX_RESULT_CHARS

    matrix.case("MCP faults", "huge result (10 MB)")
    configure({"big": fault_server("ok")})
    provider = ScriptedProvider([[ToolCall("big__huge", {"mb": 10}, id="c1")], "It is a long log."])
    workspace, run = await record(provider, tmp_path)
    (result,) = [e for e in run.events if isinstance(e, ev.ToolResult)]
    text = result.payload["data"]
    assert MAX_RESULT_CHARS - 200 < len(text) <= MAX_RESULT_CHARS + 500  # kept up to the limit, at a line end
    assert "[cut: 2.0 MiB more of this result left out" in text  # the model and the transcript are told
    assert result.raw["cut"]["limit_chars"] == MAX_RESULT_CHARS
    assert "cut: 2.0 MiB more" in str(provider.history[1].messages[-1])  # what the model was sent says so
    assert isinstance(run.terminal, ev.RunFinished)
    matrix.lost(nothing_lost(workspace, run), "events")
    stored = next(e for e in workspace.store.turn_events(run.turn_id) if isinstance(e, ev.ToolResult))
    assert stored.payload["data"] == text
    await workspace.aclose()
    size = sum(p.stat().st_size for p in tmp_path.glob("threads.db*"))
    assert size < 2_000_000  # stored once, compressed (it was 32 MB: payload, raw blocks, run result)
    assert matrix.cases[-1].lost == 0


async def test_a_slow_server_joins_the_run_when_it_is_up(manager: Any, tmp_path: Path, matrix: Any) -> None:
    matrix.case("MCP faults", "slow start (3 s; the run waits 0.5 s)")
    configure({"slowpoke": fault_server("slow", "3")}, wait=0.5)
    up = asyncio.Event()
    manager.add_listener(lambda status: up.set() if status.name == "slowpoke" and status.is_ready else None)
    provider = ScriptedProvider([
        ["Looking. ", Pause(event=up), ToolCall("slowpoke__echo", {"message": "a"}, id="c1")],
        [ToolCall("slowpoke__echo", {"message": "b"}, id="c2")],
        "Done.",
    ])
    workspace, run = await record(provider, tmp_path)
    first, joined = notices(run)
    assert first.starting == ["slowpoke"] and "still starting" in first.message
    assert joined.joined == ["slowpoke"] and "slowpoke__echo" in joined.message
    assert "slowpoke__echo" not in provider.history[0].tool_names  # the first turn had to go on without it
    assert "slowpoke__echo" in provider.history[1].tool_names  # the next turn offers it
    assert [e.payload for e in run.events if isinstance(e, ev.ToolResult)] == [{"data": "echo: a"},
                                                                                {"data": "echo: b"}]
    matrix.lost(nothing_lost(workspace, run), "events")
    assert matrix.cases[-1].lost == 0
    await workspace.aclose()


async def test_a_call_to_a_server_still_starting_waits_for_it(manager: Any, tmp_path: Path, matrix: Any) -> None:
    matrix.case("MCP faults", "a call to a server still starting")
    configure({"slowpoke": fault_server("slow", "2")}, wait=0)
    provider = ScriptedProvider([[ToolCall("slowpoke__echo", {"message": "wait for me"}, id="c1")], "Done."])
    workspace, run = await record(provider, tmp_path)
    assert [e.payload for e in run.events if isinstance(e, ev.ToolResult)] == [{"data": "echo: wait for me"}]
    assert [n.joined for n in notices(run)] == [[], ["slowpoke"]]
    matrix.lost(nothing_lost(workspace, run), "events")
    assert matrix.cases[-1].lost == 0
    await workspace.aclose()
