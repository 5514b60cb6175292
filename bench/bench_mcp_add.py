"""Time from "Add server" (the Settings page saving an entry) to its tools usable by a robot.

What the page does, timed step by step, against server-everything over stdio: write the entry to the
config file (:class:`workspace.mcp.edit.ServersFile`, atomic), the manager reloads the file, and the
server's tools are ready (start + handshake + tools/list) and one tool answers. Median of 10.
Prints the figures and writes ``bench/results/mcp_add.json``.
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
EVERYTHING = ROOT / "tests" / "servers" / "node_modules" / ".bin" / "mcp-server-everything"
RESULTS = Path(__file__).resolve().parent / "results" / "mcp_add.json"
RUNS = 10


async def once(home: Path, index: int) -> dict[str, float]:
    os.environ["ROBOTLAB_HOME"] = str(home)
    from workspace import paths
    from workspace.mcp.edit import ServersFile
    from workspace.mcp.manager import MCPManager

    path = paths.user_config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# notes\nmcpServers: {}\n", encoding="utf-8")
    manager = MCPManager(state_file=home / "state.json")
    await manager.reload()
    name = f"everything{index}"
    t0 = time.perf_counter()
    servers = ServersFile(path)
    servers.set(name, {"command": str(EVERYTHING)})
    servers.save()
    t1 = time.perf_counter()
    await manager.reload()
    t2 = time.perf_counter()
    tools = await manager.tools_for([name])
    t3 = time.perf_counter()
    echo = next(t for t in tools if t.name.endswith("__echo"))
    out = await echo.invoke({"message": "hi"})
    t4 = time.perf_counter()
    assert not out.is_error, out.data
    await manager.aclose()
    return {"save": t1 - t0, "reload": t2 - t1, "start_and_list": t3 - t2, "first_call": t4 - t3, "total": t4 - t0}


async def main() -> int:
    if not EVERYTHING.exists():
        print("server-everything is missing: run scripts/bootstrap.sh dev", file=sys.stderr)
        return 2
    samples: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(RUNS):
            samples.append(await once(Path(tmp), i))
    medians = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
    for key, value in medians.items():
        print(f"{key:>15}: {value * 1000:8.1f} ms (median of {RUNS})")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"runs": RUNS, "median_seconds": medians}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
