"""What the shipped robots' tool schemas cost before the first message.

For each robot (default: assistant and file-helper), with a 4,096-token window: the system prompt's
tokens, each built-in tool's schema cost (name, description and JSON schema, counted as the context
manager counts a request: :func:`workspace.context.tool_costs`, the safe estimate) and the share of the
window taken before the user says anything. MCP tools (the assistant's ``"*__*"``) are left out: they
depend on the servers configured.

    .venv/bin/python bench/bench_tool_costs.py [--window 4096] [ROBOT ...]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    from workspace.catalog import load_robot
    from workspace.config import load_config
    from workspace.context import TokenCounter, tool_costs
    from workspace.context.tokens import MESSAGE_OVERHEAD

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("robots", nargs="*", default=["assistant", "file-helper"])
    parser.add_argument("--window", type=int, default=4096)
    args = parser.parse_args(argv)
    counter = TokenCounter()
    config = load_config(env={})
    for name in args.robots:
        robot = load_robot(name, config=config)
        system = robot.render_system({"message": ""}) or ""
        system_tokens = counter.text(system) + MESSAGE_OVERHEAD
        manifest = asyncio.run(robot.resolve_tools(run_mcp="none"))
        costs = tool_costs(manifest.values(), counter)
        tools = sum(costs.values())
        total = system_tokens + tools
        print(f"{name}: system prompt {system_tokens} tokens, {len(costs)} tools {tools} tokens: "
              f"{total} of {args.window} ({total / args.window:.0%}; tools alone {tools / args.window:.0%})")
        for tool, cost in costs.items():
            print(f"  {tool:<16} ~{cost} tokens")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
