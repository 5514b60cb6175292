"""What an unresponsive MCP server costs a run: ``robotlab run helper "hi"`` (the offline demo, so
the model costs nothing) with a robot whose servers are one that works and, in the second case,
one that never answers (its connect timeout is the default 30 s).

1. ``robotlab run`` in a fresh process, wall time (median of 3): working server only; with the
   silent one too.
2. Two messages in one thread of one process (as in the window): the time of each ``send`` until
   its run ended, with the silent server.

Run: ``.venv/bin/python bench/bench_mcp_startup.py`` (the code of this checkout), or with
``BENCH_CODE=/path/to/another/checkout`` to measure that code with the same servers. Prints the
figures and writes bench/results/mcp_startup.json.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from scratch import scratch_dir

ROOT = Path(__file__).resolve().parent.parent
CODE = Path(os.environ.get("BENCH_CODE") or ROOT)
SERVER = ROOT / "tests" / "faults" / "mcp_fault_server.py"

TWO_SENDS = textwrap.dedent("""
    import asyncio, json, time
    from workspace.session import Workspace

    async def main():
        workspace = Workspace()
        session = workspace.new_thread("helper")
        times = []
        for text in ("hi", "again"):
            t0 = time.perf_counter()
            await session.send(text).wait()
            times.append(time.perf_counter() - t0)
        print("RESULT " + json.dumps(times), flush=True)
        workspace.close()
        import os
        os._exit(0)  # do not wait for the silent server's shutdown: not part of the figures

    asyncio.run(main())
""")


def _home(silent: bool) -> Path:
    home = scratch_dir("bench-mcp-startup-")
    servers = {"fine": {"command": sys.executable, "args": [str(SERVER), "ok"]}}
    if silent:
        servers["silent"] = {"command": sys.executable, "args": [str(SERVER), "silent"]}
    (home / "config" / "robots").mkdir(parents=True)
    (home / "config" / "config.yaml").write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    (home / "config" / "robots" / "helper.md").write_text("---\nname: helper\nmcp: all\n---\nYou help.\n",
                                                        encoding="utf-8")
    return home


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "ROBOTLAB_HOME": str(home), "PYTHONPATH": str(CODE), "ROBOT_LAB_DEMO__DELAY": "0"}


def cli_run(silent: bool, repeats: int = 3) -> float:
    samples = []
    for _ in range(repeats):
        home = _home(silent)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "workspace", "run", "helper", "hi"], env=_env(home), cwd=CODE,
                       capture_output=True, text=True, check=True, timeout=300)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def two_sends() -> list[float]:
    home = _home(True)
    script = home / "two_sends.py"
    script.write_text(TWO_SENDS, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], env=_env(home), cwd=CODE, capture_output=True, text=True,
                          timeout=300)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            values: list[float] = json.loads(line[len("RESULT "):])
            return values
    raise SystemExit(f"two sends failed:\n{proc.stdout}\n{proc.stderr}")


def main() -> None:
    result = {
        "code": str(CODE),
        "cli_run_fine_only_s": round(cli_run(False), 2),
        "cli_run_with_silent_s": round(cli_run(True), 2),
        "window_first_send_s": 0.0,
        "window_second_send_s": 0.0,
    }
    first, second = two_sends()
    result["window_first_send_s"], result["window_second_send_s"] = round(first, 2), round(second, 2)
    print(f"MCP start-up ({CODE}):")
    print(f"  robotlab run helper hi, a working server:                 {result['cli_run_fine_only_s']:6.2f} s")
    print(f"  robotlab run helper hi, a working and a silent server:    {result['cli_run_with_silent_s']:6.2f} s")
    print(f"  one process, two messages with the silent server: first {first:.2f} s, second {second:.2f} s")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "mcp_startup.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
