"""A 20 MB MCP resource: how long it takes to read, and the longest the event loop (the window's) stalls
meanwhile (what a person would see as a freeze).

Against tests/fakes/mcp_dynamic_server.py over stdio (``big://text``, ``BIG_RESOURCE_MB`` megabytes):
``MCPManager.read_resource_text`` (the SDK's read, then the text for the model cut with a note, off the
event loop) while a ticker measures the gaps between its 10 ms sleeps. Median of 5. Prints the figures
and writes ``bench/results/mcp_big_resource.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DYNAMIC = ROOT / "tests" / "fakes" / "mcp_dynamic_server.py"
RESULTS = Path(__file__).resolve().parent / "results" / "mcp_big_resource.json"
RUNS = 5
MB = 20


async def once(manager: object) -> dict[str, float]:
    worst = 0.0
    done = False

    async def tick() -> None:
        nonlocal worst
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            worst = max(worst, now - last - 0.01)
            last = now

    ticker = asyncio.get_running_loop().create_task(tick())
    t0 = time.perf_counter()
    read = await manager.read_resource_text("dynamic", "big://text")  # type: ignore[attr-defined]
    took = time.perf_counter() - t0
    done = True
    await ticker
    assert read.truncated and read.size == MB * 1024 * 1024
    return {"read_seconds": took, "longest_loop_stall_seconds": worst}


async def main() -> None:
    from workspace.mcp.manager import MCPManager

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ROBOTLAB_HOME"] = tmp
        manager = MCPManager({"mcpServers": {"dynamic": {"command": sys.executable, "args": [str(DYNAMIC)],
                                                         "env": {"BIG_RESOURCE_MB": str(MB)}}}},
                             state_file=Path(tmp) / "state.json")
        try:
            await manager.start("dynamic")
            rounds = [await once(manager) for _ in range(RUNS)]
        finally:
            await manager.aclose()
    medians = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    for key, value in medians.items():
        print(f"{key:<30} {value * 1000:8.0f} ms (median of {RUNS}, {MB} MB)")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"runs": RUNS, "megabytes": MB, "median_seconds": medians}, indent=2) + "\n",
                       encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
