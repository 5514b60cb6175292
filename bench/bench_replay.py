"""Replaying a 200-turn recorded thread from the record (workspace.replay).

A thread of 200 turns is recorded through real runs (a ScriptedProvider as the model; each turn one call of
a tool that counts its executions, then an answer), in a SQLite file. It is then replayed with the same
script: every call matches the record, so it is answered from it. Measured: the replay's wall time (median of
3, each a new replay thread in the same database), the time per turn, and the tool executions during the
replays, which must be 0 (the counting tool's own count, and the replay's ``executed``).

Prints the figures with their targets and writes bench/results/replay.json. Run:
``.venv/bin/python bench/bench_replay.py``.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TURNS = 200
REPEATS = 3
#: Targets: the whole replay of 200 turns, and the tool executions (none: everything comes from the record).
TARGET_SECONDS = 10.0
TARGET_EXECUTIONS = 0


class Counter:
    def __init__(self) -> None:
        self.runs = 0

    def tool(self) -> Any:
        def lookup(key: str) -> str:
            """Look a key up."""
            self.runs += 1
            return f"value of {key}: {self.runs}"

        return lookup


def script(provider: Any) -> None:
    from workspace.providers.testing import ToolCall

    for i in range(TURNS):
        provider.enqueue([f"Looking up {i}. ", ToolCall("lookup", {"key": f"k{i}"})],
                         f"The answer to question {i} is in the record.")


def robot(counter: Counter, provider: Any) -> Any:
    from workspace.robot import Robot

    return Robot("bench-replay", system_prompt="You look things up.", provider=provider, tools=[counter.tool()])


async def main() -> dict[str, Any]:
    from workspace.approval import ApprovalGate, ApprovalPolicy
    from workspace.persistence import Store
    from workspace.providers.testing import ScriptedProvider
    from workspace.replay import replay
    from workspace.session import Workspace

    counter = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "replay.db")
        provider = ScriptedProvider()
        script(provider)
        workspace = Workspace(store=store, approval=ApprovalGate(ApprovalPolicy.from_list(
            [{"tool": "*", "action": "allow"}])))
        session = workspace.new_thread("bench-replay", robot=robot(counter, provider))
        t0 = time.perf_counter()
        for i in range(TURNS):
            await session.send(f"Question {i}: what is k{i}?").wait()
        record_s = time.perf_counter() - t0
        recorded_runs = counter.runs
        counter.runs = 0
        times: list[float] = []
        executed: list[int] = []
        served: list[int] = []
        diverged = False
        for _ in range(REPEATS):
            provider = ScriptedProvider()
            script(provider)
            t0 = time.perf_counter()
            result = await replay(store, session.thread_id, robot(counter, provider), tolerance="exact")
            times.append(time.perf_counter() - t0)
            executed.append(result.executed)
            served.append(result.served)
            diverged = diverged or result.diverged
        store.close()
    median = statistics.median(times)
    return {
        "turns": TURNS, "record_s": round(record_s, 3), "recorded_tool_runs": recorded_runs,
        "replay_s_median": round(median, 3), "replay_s_all": [round(t, 3) for t in times],
        "per_turn_ms": round(median / TURNS * 1000, 2), "served_per_replay": served,
        "tool_executions": counter.runs, "executed_per_replay": executed, "diverged": diverged,
        "target_seconds": TARGET_SECONDS, "target_executions": TARGET_EXECUTIONS,
    }


if __name__ == "__main__":
    figures = asyncio.run(main())
    print(f"recorded {figures['turns']} turns in {figures['record_s']:.2f} s ({figures['recorded_tool_runs']} tool runs)")
    print(f"replay of {figures['turns']} turns from the record: {figures['replay_s_median']:.2f} s median of {REPEATS} "
          f"({figures['per_turn_ms']:.1f} ms a turn; target <= {TARGET_SECONDS:.0f} s)")
    print(f"tool executions during the replays: {figures['tool_executions']} (target {TARGET_EXECUTIONS}); "
          f"calls answered from the record per replay: {figures['served_per_replay']}; "
          f"diverged: {figures['diverged']}")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "replay.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    ok = (figures["tool_executions"] == TARGET_EXECUTIONS and not figures["diverged"]
          and figures["replay_s_median"] <= TARGET_SECONDS)
    sys.exit(0 if ok else 1)
