"""What the ``run_command`` tool adds to the sandbox's own cost (workspace/tools/commands.py).

1. Per call: the same command (`true`) on a folder with 20 proposed files, through
   ``BubblewrapSandbox.run`` given the same pending layer, and through the tool (``Tool.invoke`` with a
   run's context: the layer worked out from the change set, the output stream, the result), median of 20
   each, interleaved.
2. A command printing 6 MB (60,000 lines of 100 characters) through the tool: how many ``tool_output``
   events it made (coalesced: at most one every 50 ms), the characters they carried (capped per call),
   the size of the model's result, and the longest stall of the event loop (a 5 ms ticker) meanwhile.
3. Stop: a command that starts two background `sleep`s, its tool call cancelled once it printed: the
   time from the cancel to the call's end and to the last of its processes gone (median of 5).

Prints the figures. No timing asserts.
Run: PYTHONPATH=. .venv/bin/python bench/bench_run_command.py
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from workspace.changes import ChangeSet
from workspace.isolation import SandboxUnavailable, sandbox_for_platform
from workspace.tools import ToolContext, registry
from workspace.tools.commands import pending_layer


async def main() -> None:
    try:
        box = sandbox_for_platform()
    except SandboxUnavailable as exc:
        print(f"no sandbox here: {exc}")
        return
    tool = registry.get("run_command")
    assert tool is not None
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "project"
        folder.mkdir()
        for i in range(20):
            (folder / f"f{i}.txt").write_text(f"line {i}\n")
        changes = ChangeSet(folder)
        for i in range(20):
            changes.propose(f"f{i}.txt", f"proposed {i}\n".encode())
        events: list[Any] = []

        def context() -> ToolContext:
            return ToolContext(call_id="c", folder=folder, changes=changes,
                               emit=events.append)

        direct, through = [], []
        for _ in range(20):
            start = time.perf_counter()
            await box.run("true", folder, pending=pending_layer(changes))
            direct.append(time.perf_counter() - start)
            start = time.perf_counter()
            await tool.invoke({"command": "true"}, context())
            through.append(time.perf_counter() - start)
        d, t = statistics.median(direct), statistics.median(through)
        print(f"per call, median of 20: sandbox alone {d * 1000:.1f} ms, through the tool {t * 1000:.1f} ms "
              f"(+{(t - d) * 1000:.1f} ms: the tool's own work)")

        events.clear()
        stall = 0.0
        stop = False

        async def ticker() -> None:
            nonlocal stall
            last = time.perf_counter()
            while not stop:
                await asyncio.sleep(0.005)
                now = time.perf_counter()
                stall = max(stall, now - last - 0.005)
                last = now

        tick = asyncio.ensure_future(ticker())
        start = time.perf_counter()
        out = await tool.invoke({"command": "yes 0123456789012345678901234567890123456789012345678901234567890123"
                                            "45678901234567890123456789012345 | head -n 60000"}, context())
        took = time.perf_counter() - start
        stop = True
        await tick
        if out.is_error:
            print(f"the 6 MB command failed: {out.data}")
            return
        chunks = [e for e in events if e.kind == "tool_output"]
        carried = sum(len(e.text) for e in chunks)
        print(f"6 MB of output through the tool: {took:.2f} s, {len(chunks)} tool_output events carrying "
              f"{carried:,} characters, the model's output {len(out.data['output']):,} characters, "
              f"longest event-loop stall {stall * 1000:.1f} ms")


        stops, gone = [], []
        for _ in range(5):
            marker = f"{200 + len(stops)}.{time.time_ns() % 10**6}"
            events.clear()
            call = asyncio.ensure_future(tool.invoke(
                {"command": f"sleep {marker} & sleep {marker} & echo started; wait"}, context()))
            while not any(e.kind == "tool_output" for e in events):
                await asyncio.sleep(0.01)
            while len(_processes_with(marker)) < 2:
                await asyncio.sleep(0.01)
            start = time.perf_counter()
            call.cancel()
            await asyncio.gather(call, return_exceptions=True)
            stops.append(time.perf_counter() - start)
            while _processes_with(marker):
                await asyncio.sleep(0.001)
            gone.append(time.perf_counter() - start)
        print(f"stop, median of 5: the call ended {statistics.median(stops) * 1000:.0f} ms after the cancel, its "
              f"processes were gone after {statistics.median(gone) * 1000:.0f} ms (max {max(gone) * 1000:.0f} ms)")


def _processes_with(marker: str) -> list[str]:
    import os

    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    if marker.encode() in fh.read():
                        found.append(pid)
            except OSError:
                continue
    return found


if __name__ == "__main__":
    asyncio.run(main())
