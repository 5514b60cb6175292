"""Too many tools: the tool schemas a model is sent, with and without ``search_tools``.

The shipped assistant robot with a real 26-tool MCP server (``tests/fakes/mcp_many_tools_server.py``) and an
8,192-token window, run by a scripted model: the tokens of the tool schemas of each model call, and of the
whole request, with ``tool_share=1`` (every schema; the request does not fit) and the default 0.25 (the
model searches, then calls the tool it found).

    .venv/bin/python bench/bench_tool_search.py
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from scratch import scratch_dir

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


async def run(share: float) -> None:
    from workspace import Robot, RunFailedError, ScriptedProvider, ToolCall
    from workspace.context import TokenCounter
    from workspace.mcp.manager import MCPManager

    server = ROOT / "tests" / "fakes" / "mcp_many_tools_server.py"
    manager = MCPManager({"mcpServers": {"many": {"command": sys.executable, "args": [str(server)]}}})
    try:
        await manager.tools_for(["many"])
        provider = ScriptedProvider([[ToolCall("search_tools", {"query": "book a taxi"})],
                                     [ToolCall("many__taxi_service", {"option_0": "airport"})], "Booked."],
                                    model_id=f"bench-{share}")
        robot = Robot("assistant", template="assistant", provider=provider, context_window=8192,
                      mcp_manager=manager, mcp=["many"], knowledge_store=False, tool_share=share)
        counter = TokenCounter()
        try:
            await robot.arun("Book me a taxi to the airport")
            outcome = "answered"
        except RunFailedError as exc:
            outcome = f"failed: {str(exc)[:90]}…"
        print(f"tool_share={share}: {outcome}")
        all_tools = counter.tools(list(await robot.resolve_tools()))
        print(f"  every schema: {all_tools:,} tokens ({len(robot.mcp_tools)} MCP tools + built-ins)")
        for i, call in enumerate(provider.history):
            print(f"  model call {i + 1}: {len(call.tools)} tools, {counter.tools(call.tools):,} tokens of schemas")
    finally:
        await manager.aclose()


def main() -> None:
    os.environ.setdefault("ROBOTLAB_HOME", str(scratch_dir()))
    asyncio.run(run(1.0))
    asyncio.run(run(0.25))


if __name__ == "__main__":
    main()
