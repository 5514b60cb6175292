"""Framework overhead of a network run: 50 tasks, 10 wide and 5 deep, with a provider that answers
at once (so every millisecond measured is ours: scheduling, events, messages, memory, results).

Each of the 5 steps has 10 tasks; every task of a step depends on all 10 tasks of the step before
(the densest fan-out/fan-in of that shape, 400 dependency edges), so each task's message joins 10
upstream answers. Every task has its own robot. A plain single-robot run with the same provider is
measured too, so the per-task figure can be split into the agent loop's share and the network's.

Prints the medians of RUNS runs (default 9, after a warm-up) and writes bench/results/network.json.
Target: under 5 ms per task in total.
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workspace import events as ev  # noqa: E402
from workspace.network import Network  # noqa: E402
from workspace.providers.testing import FunctionProvider  # noqa: E402
from workspace.robot import Robot  # noqa: E402

WIDTH, DEPTH = 10, 5
RUNS = int(os.environ.get("RUNS", "9"))
TARGET_MS = 5.0


def provider() -> FunctionProvider:
    return FunctionProvider(lambda messages, info: "done")


def build() -> Network:
    net = Network("bench", concurrency="auto")
    answer = provider()
    previous: list[str] = []
    for level in range(DEPTH):
        names = [f"t{level}_{i}" for i in range(WIDTH)]
        for name in names:
            robot = Robot(name, system_prompt="You answer at once.", provider=answer, tools="none", mcp="none")
            net.task(name, robot, depends_on=previous or "none")
        previous = names
    return net


async def one_network() -> tuple[float, int]:
    net = build()
    start = time.perf_counter()
    count = 0
    async for event in net.stream("go"):
        count += 1
        if isinstance(event, ev.TERMINAL):
            assert isinstance(event, ev.RunFinished), event
    return time.perf_counter() - start, count


async def one_robot_run() -> float:
    robot = Robot("solo", system_prompt="You answer at once.", provider=provider(), tools="none", mcp="none")
    start = time.perf_counter()
    async for _ in robot.stream("go"):
        pass
    return time.perf_counter() - start


async def main() -> dict[str, object]:
    tasks = WIDTH * DEPTH
    await one_network()  # warm-up (imports, caches)
    totals: list[float] = []
    events = 0
    for _ in range(RUNS):
        elapsed, events = await one_network()
        totals.append(elapsed)
    for _ in range(20):
        await one_robot_run()
    solo = [await one_robot_run() for _ in range(200)]
    total = statistics.median(totals)
    per_task_ms = total / tasks * 1000
    solo_ms = statistics.median(solo) * 1000
    result: dict[str, object] = {
        "tasks": tasks,
        "shape": f"{WIDTH} wide x {DEPTH} deep, each task depends on the whole previous step",
        "runs": RUNS,
        "events_per_run": events,
        "median_total_ms": round(total * 1000, 2),
        "per_task_ms": round(per_task_ms, 3),
        "single_robot_run_ms": round(solo_ms, 3),
        "network_share_per_task_ms": round(per_task_ms - solo_ms, 3),
        "min_total_ms": round(min(totals) * 1000, 2),
        "max_total_ms": round(max(totals) * 1000, 2),
        "target_per_task_ms": TARGET_MS,
        "meets_target": per_task_ms < TARGET_MS,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    print(f"network of {tasks} tasks ({result['shape']}), {events} events per run, median of {RUNS} runs")
    print(f"  total            {total * 1000:8.2f} ms   (min {min(totals) * 1000:.2f}, max {max(totals) * 1000:.2f})")
    print(f"  per task         {per_task_ms:8.3f} ms   target < {TARGET_MS:g} ms: "
          f"{'met' if per_task_ms < TARGET_MS else 'NOT met'}")
    print(f"  one robot run    {solo_ms:8.3f} ms   (the agent loop alone, same provider)")
    print(f"  network's share  {per_task_ms - solo_ms:8.3f} ms per task")
    out = ROOT / "bench" / "results" / "network.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)}")
    return result


if __name__ == "__main__":
    asyncio.run(main())
