"""What the ``run_command`` tool adds to the sandbox's own cost (workspace/tools/commands.py).

1. Per call: the same command (`true`) through ``BubblewrapSandbox.run`` and through the tool
   (``Tool.invoke`` with a run's context: the pending layer from a change set with 20 proposed files,
   the output stream, proposing the changes back), median of 20 each, interleaved.
2. A command printing 6 MB (60,000 lines of 100 characters) through the tool: how many ``tool_output``
   events it made (coalesced: at most one every 50 ms), the characters they carried (capped per call),
   the size of the model's result, and the longest stall of the event loop (a 5 ms ticker) meanwhile.

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
                               emit=lambda cls, **fields: events.append(cls(run_id="r", robot="b", **fields)))

        direct, through = [], []
        for _ in range(20):
            start = time.perf_counter()
            await box.run("true", folder)
            direct.append(time.perf_counter() - start)
            start = time.perf_counter()
            await tool.invoke({"command": "true"}, context())
            through.append(time.perf_counter() - start)
        d, t = statistics.median(direct), statistics.median(through)
        print(f"per call, median of 20: sandbox alone {d * 1000:.1f} ms, through the tool {t * 1000:.1f} ms "
              f"(+{(t - d) * 1000:.1f} ms: pending layer of 20 files, stream, proposing back)")

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


if __name__ == "__main__":
    asyncio.run(main())
