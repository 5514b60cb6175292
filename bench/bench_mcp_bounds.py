"""What an MCP server's many tools and huge results cost, with this tree's code and with another's.

Cases (each in a fresh Python process, so its peak RSS is its own; the app's modules imported first):

- ``names N``: ``catalogue.tool_names`` of N tool names (what every ``status()`` and every run's tool list
  does for a server): wall and CPU time of the thread that runs it (the event loop's, in the app);
- ``server N``: ``MCPManager.tools_for`` of a real stdio server listing N tools (tests/fakes/mcp_bad_server.py
  ``many N``, pages of 500), then one ``status()``: the time, the tools offered, the peak RSS;
- ``result MB``: one call of a real server's tool answering MB MiB of text (tests/faults/mcp_fault_server.py
  ``huge``): the time, the characters the ToolOutput keeps (distinct strings), the peak RSS. The whole
  message is read and parsed before the client sees it; past ``workspace.mcp.stdio.MAX_LINE_BYTES`` (64 MiB)
  the call fails, saying so (``failed``), after reading only that much.

``--old DIR`` runs every case with DIR's ``workspace`` too (e.g. ``git archive`` of main's commit in /tmp),
alternating new and old runs, ``--rounds`` of each; medians are printed with the load average of the minute.

Run: ``PYTHONPATH=$PWD .venv/bin/python bench/bench_mcp_bounds.py --old /tmp/mcpcap-main``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BAD_SERVER = ROOT / "tests" / "fakes" / "mcp_bad_server.py"
FAULT_SERVER = ROOT / "tests" / "faults" / "mcp_fault_server.py"

CHILD = r'''
import asyncio, gc, json, os, resource, sys, tempfile, time
case, arg, bad, fault = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
from workspace.mcp import catalogue
from workspace.mcp.manager import MCPManager

def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024

out = {}
if case == "names":
    originals = [f"t{i}" for i in range(arg)]
    wall, cpu = time.perf_counter(), time.thread_time()
    names = catalogue.tool_names("raw", originals)
    out.update(wall=time.perf_counter() - wall, cpu=time.thread_time() - cpu, tools=len(names))
else:
    async def main():
        servers = {"big": {"command": sys.executable, "args": [bad, "many", str(arg)], "timeout": 300,
                           "connectTimeout": 300},
                   "fault": {"command": sys.executable, "args": [fault, "ok"], "timeout": 300}}
        manager = MCPManager({"mcpServers": servers}, state_file=__import__("pathlib").Path(tempfile.mkdtemp()) / "s.json")
        try:
            if case == "server":
                wall, cpu = time.perf_counter(), time.thread_time()
                tools = await manager.tools_for(["big"])
                status = manager.status("big")
                out.update(wall=time.perf_counter() - wall, cpu=time.thread_time() - cpu, tools=len(tools),
                           status_tools=len(status.tools))
            else:
                await manager.tools_for(["fault"])
                wall, cpu = time.perf_counter(), time.thread_time()
                try:
                    result = await manager.call_tool("fault", "huge", {"mb": arg})
                except Exception as exc:  # a line past the transport's limit fails the server, saying so
                    out.update(wall=time.perf_counter() - wall, cpu=time.thread_time() - cpu,
                               failed=str(exc)[:110], peak_mib=peak())
                    print(json.dumps(out)); return
                out.update(wall=time.perf_counter() - wall, cpu=time.thread_time() - cpu)
                if result.is_error:  # a line past the transport's limit: the call's error says so
                    out.update(failed=str(result.data)[:110])
                seen, kept = set(), 0
                stack = [result.data, result.raw]
                while stack:
                    item = stack.pop()
                    if isinstance(item, str):
                        if id(item) not in seen:
                            seen.add(id(item)); kept += len(item)
                    elif isinstance(item, dict):
                        stack.extend(item.values())
                    elif isinstance(item, list):
                        stack.extend(item)
                out.update(kept_chars=kept)
        finally:
            await manager.aclose()
    asyncio.run(main())
if "peak_mib" not in out:  # (printed already by a call that raised)
    out.update(peak_mib=peak())
    print(json.dumps(out))
'''


def run(code_dir: Path, case: str, arg: int, timeout: float) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(code_dir)}
    try:
        proc = subprocess.run([sys.executable, "-c", CHILD, case, str(arg), str(BAD_SERVER), str(FAULT_SERVER)],
                              env=env, capture_output=True, text=True, timeout=timeout, cwd=str(code_dir))
    except subprocess.TimeoutExpired:
        return {"timeout": timeout}
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def summary(rows: list[dict[str, object]]) -> str:
    if any("timeout" in r or "error" in r for r in rows):
        return json.dumps(rows[0])
    parts = []
    for key in ("wall", "cpu"):
        parts.append(f"{key} {statistics.median(float(r[key]) for r in rows):.3f}s")  # type: ignore[arg-type]
    for key in ("tools", "status_tools", "kept_chars", "peak_mib"):
        if key in rows[0]:
            parts.append(f"{key} {statistics.median(int(r[key]) for r in rows):,}")  # type: ignore[arg-type]
    if "failed" in rows[0]:
        parts.append(f"failed: {rows[0]['failed']}")
    return ", ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", type=Path, help="a tree whose workspace/ to compare with (main's, in /tmp)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=200.0)
    parser.add_argument("--cases", default="names:10000,names:20000,server:20000,server:100000,result:20,result:100")
    args = parser.parse_args()
    trees = [("new", ROOT)] + ([("old", args.old)] if args.old else [])
    for spec in args.cases.split(","):
        case, arg = spec.split(":")
        rows: dict[str, list[dict[str, object]]] = {name: [] for name, _ in trees}
        for _ in range(args.rounds):
            for name, tree in trees:  # new and old alternate, in the same minutes
                rows[name].append(run(tree, case, int(arg), args.timeout))
        load = os.getloadavg()[0]
        for name, _ in trees:
            print(f"{case} {arg:>7} {name}: {summary(rows[name])}  (load {load:.2f}, {args.rounds} rounds)", flush=True)


if __name__ == "__main__":
    main()
