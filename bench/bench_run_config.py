"""What RobotLab's RunConfig layers cost a robot run, and what a RunConfig's merge costs.

A run of ``Robot.arun`` on a ScriptedProvider (no network: the loop, the run's preparation and, here, the
layers) is timed, interleaved in rounds, for a robot with no RunConfig and for one with a RunConfig at every
level (the robot's ``config=``, a run's ``config=`` with ``on_content``, and a network-and-task parent given as
the run option ``network_config``). Prints the medians per run and their ratio (target: the layered run at most
1.05 x the plain one, or at most 100 µs more), and the cost of one ``merge`` of two five-field configs
(target: under 20 µs), and of laying the options out before a run (target: under 50 µs). Run on a tree without ``workspace.run_config`` it times the plain run alone (a baseline).
"""

from __future__ import annotations

import asyncio
import importlib.util
import statistics
import time
from typing import Any

from workspace import Robot, ScriptedProvider

ROUNDS = 7
RUNS = 150


def robot(**options: Any) -> Robot:
    return Robot("bench", system_prompt="You help.", provider=ScriptedProvider(default="ok"), **options)


async def per_run(r: Robot, **options: Any) -> float:
    start = time.perf_counter()
    for _ in range(RUNS):
        r.reset()
        await r.arun("hello", **options)
    return (time.perf_counter() - start) / RUNS


async def main() -> None:
    layered = importlib.util.find_spec("workspace.run_config") is not None
    plain_robot = robot()
    plain: list[float] = []
    with_layers: list[float] = []
    if layered:
        from workspace.run_config import RunConfig

        pieces: list[str] = []
        layered_robot = robot(config=RunConfig(temperature=0.2, max_tokens=100, max_tool_rounds=5))
        run_options = {"config": RunConfig(top_p=0.9, on_content=pieces.append),
                       "network_config": RunConfig(max_tokens=50, doom_loop_threshold=4)}
    for _ in range(ROUNDS):
        plain.append(await per_run(plain_robot))
        if layered:
            with_layers.append(await per_run(layered_robot, **run_options))
    base = statistics.median(plain)
    print(f"plain run:   {base * 1e6:8.1f} µs per run (median of {ROUNDS} rounds of {RUNS})")
    if not layered:
        print("workspace.run_config is not in this tree: the plain run alone")
        return
    layers = statistics.median(with_layers)
    print(f"layered run: {layers * 1e6:8.1f} µs per run; {layers / base:.3f} x, {(layers - base) * 1e6:+.1f} µs "
          "(target: <= 1.05 x or <= +100 µs)")
    a = RunConfig(model="openai/x", temperature=0.2, max_tokens=10, top_p=0.5, max_tool_rounds=3)
    b = RunConfig(temperature=0.7, stop=["END"], max_tools=20, token_budget=100, cost_budget=1.0)
    count = 20000
    start = time.perf_counter()
    for _ in range(count):
        a.merge(b)
    print(f"merge:       {(time.perf_counter() - start) / count * 1e6:8.2f} µs (target: < 20 µs)")
    from workspace.robot_config import layer_options

    for label, r, options in (("no layers", plain_robot, {}), ("every layer", layered_robot, run_options)):
        start = time.perf_counter()
        for _ in range(count):
            layer_options(r, options)
        print(f"layer_options, {label}: {(time.perf_counter() - start) / count * 1e6:6.2f} µs per run "
              "(the CPU the layers add before a run; target: < 50 µs)")


if __name__ == "__main__":
    asyncio.run(main())
