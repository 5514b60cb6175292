"""A process whose start is cancelled ends: Python 3.11's asyncio waited for ever for a child killed before its
pipes were connected (the task that started it never finished, and ``asyncio.run`` hung closing: a
``robotlab run`` stopped by SIGTERM while its MCP server started never exited). The modules that start
processes install the fix (workspace.subprocess_fix); each case runs in a process of its own, so a regression
fails here instead of hanging the test run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SCENARIO = """
import asyncio, importlib, os, sys
importlib.import_module(sys.argv[1])

async def main():
    stuck = 0
    for _ in range(int(sys.argv[2])):
        start = asyncio.ensure_future(asyncio.create_subprocess_exec(
            "sleep", "30", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE))
        await asyncio.sleep(0)  # the child runs; its pipes are being connected
        for task in asyncio.all_tasks() - {asyncio.current_task()}:
            task.cancel()  # as asyncio.run does when it closes: the start and the pipes' connection
        done, _ = await asyncio.wait({start}, timeout=float(sys.argv[3]))
        stuck += not done
    print("stuck", stuck, flush=True)
    os._exit(0)  # (a stuck task would hang the loop's own close)

asyncio.run(main())
"""


@pytest.mark.skipif(sys.platform == "win32", reason="the child watcher is POSIX's")
@pytest.mark.parametrize("module", ["workspace.mcp.transport", "workspace.isolation.bubblewrap",
                                    "workspace.isolation.unsandboxed"])
def test_a_process_whose_start_is_cancelled_ends(module: str) -> None:
    done = subprocess.run([sys.executable, "-c", SCENARIO, module, "10", "30"], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stuck 0", (done.stdout, done.stderr)


def test_without_the_fix_the_start_hangs() -> None:
    """The scenario does reproduce the hang on this Python (else the test above proves nothing); newer Pythons
    carry the fix themselves."""
    if sys.version_info >= (3, 12):
        pytest.skip("fixed in Python itself")
    done = subprocess.run([sys.executable, "-c", SCENARIO, "asyncio", "2", "3"], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.stdout.strip() == "stuck 2", (done.stdout, done.stderr)
