"""MCP client benchmarks against server-everything over stdio.

1. Connect + list_tools: start the server, MCP handshake, tools/list — through our
   :class:`~workspace.mcp.client.Connection` and through the bare SDK — median of 20.
2. Per-call overhead: 500 ``echo`` calls through the SDK's ``ClientSession.call_tool`` and
   through our client path (``MCPManager.call_tool``: the connection's fast path plus turning
   the result into a ToolOutput) on the same session, interleaved call by call; also the full
   ``Tool.invoke`` (schema validation first) that the agent loop uses. Target: ours / SDK <= 1.10.

Prints the figures and writes ``bench/results/mcp.json``. Needs ``tests/servers`` installed
(``make test`` does it).
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parent.parent
EVERYTHING = ROOT / "tests" / "servers" / "node_modules" / ".bin" / "mcp-server-everything"
RESULTS = Path(__file__).resolve().parent / "results" / "mcp.json"
CONNECTS = 20
CALLS = 500


def _devnull() -> TextIO:
    return open(os.devnull, "w")  # the server's stderr (its banner) is not part of the figures


async def sdk_connect_once() -> float:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    with _devnull() as devnull:
        began = time.perf_counter()
        async with stdio_client(StdioServerParameters(command=str(EVERYTHING)), errlog=devnull) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            elapsed = time.perf_counter() - began
    return elapsed


async def bench_connect() -> dict[str, Any]:
    from workspace.mcp.client import Connection
    from workspace.mcp.config import parse_server

    spec = parse_server("everything", {"command": str(EVERYTHING)})
    ours: list[float] = []
    stops: list[asyncio.Task[None]] = []
    await sdk_connect_once()  # warm the OS caches and the imports
    for _ in range(CONNECTS):
        conn = Connection(spec)
        began = time.perf_counter()
        await conn.ensure_ready()
        ours.append(time.perf_counter() - began)
        assert len(conn.tools) >= 10
        # The SDK gives a server 2 s to exit after stdin closes; stop in the background.
        stops.append(asyncio.get_running_loop().create_task(conn.stop()))
    sdk: list[float] = []
    for _ in range(CONNECTS):
        sdk.append(await sdk_connect_once())
    await asyncio.gather(*stops)
    return {
        "runs": CONNECTS,
        "ours_median_ms": statistics.median(ours) * 1000,
        "sdk_median_ms": statistics.median(sdk) * 1000,
        "ours_min_ms": min(ours) * 1000,
        "sdk_min_ms": min(sdk) * 1000,
    }


async def bench_calls() -> dict[str, Any]:
    from workspace.mcp.manager import MCPManager

    manager = MCPManager({"mcpServers": {"everything": {"command": str(EVERYTHING)}}})
    try:
        tools = {t.name: t for t in await manager.tools_for(["everything"])}
        echo = tools["everything__echo"]
        session = manager.connection("everything").session
        assert session is not None
        args = {"message": "benchmark"}

        async def sdk_call() -> None:
            result = await session.call_tool("echo", args)
            assert not result.is_error

        async def our_call() -> None:
            out = await manager.call_tool("everything", "echo", args)
            assert not out.is_error

        async def tool_invoke() -> None:
            out = await echo.invoke(args)
            assert not out.is_error

        timings: dict[str, list[float]] = {"sdk": [], "ours": [], "tool": []}
        paths = {"sdk": sdk_call, "ours": our_call, "tool": tool_invoke}
        for fn in paths.values():  # warm-up
            for _ in range(20):
                await fn()
        # Interleaved call by call (in rotating order) so drift and noise hit every path alike.
        order = list(paths.items())
        for i in range(CALLS):
            for name, fn in order[i % 3:] + order[: i % 3]:
                began = time.perf_counter()
                await fn()
                timings[name].append(time.perf_counter() - began)
        medians = {name: statistics.median(values) * 1e6 for name, values in timings.items()}
        return {
            "calls": CALLS,
            "sdk_call_tool_median_us": medians["sdk"],
            "ours_median_us": medians["ours"],
            "tool_invoke_median_us": medians["tool"],
            "ratio_ours_to_sdk": medians["ours"] / medians["sdk"],
            "ratio_tool_invoke_to_sdk": medians["tool"] / medians["sdk"],
            "target_ratio": 1.10,
        }
    finally:
        await manager.aclose()


async def main() -> int:
    if not EVERYTHING.exists():
        print("server-everything is missing: run `make test` (or `cd tests/servers && npm install`)", file=sys.stderr)
        return 1
    connect = await bench_connect()
    calls = await bench_calls()
    print(f"connect + list_tools (server-everything, stdio), median of {connect['runs']}:")
    print(f"  ours {connect['ours_median_ms']:.1f} ms    bare SDK {connect['sdk_median_ms']:.1f} ms")
    print(f"per call (echo), median of {calls['calls']}:")
    print(f"  SDK ClientSession.call_tool   {calls['sdk_call_tool_median_us']:.0f} µs")
    print(f"  ours (MCPManager.call_tool)   {calls['ours_median_us']:.0f} µs   "
          f"ratio {calls['ratio_ours_to_sdk']:.3f} (target <= 1.10)")
    print(f"  Tool.invoke (agent loop path) {calls['tool_invoke_median_us']:.0f} µs   "
          f"ratio {calls['ratio_tool_invoke_to_sdk']:.3f}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "benchmark": "mcp",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "connect_list_tools": connect,
        "per_call": calls,
    }, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0 if calls["ratio_ours_to_sdk"] <= 1.10 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
