"""Many robots at once: wall time of 3 candidates against one, and memory per extra candidate.

Each candidate does what a comparison's candidate does on a folder: a streamed model call that proposes a file
(``write_file``, into the candidate's own change set), then a streamed answer. The loopback OpenAI-compatible
server (tests/fakes/llm_server.py, in its own process so it does not share our GIL) answers requests in
parallel and plays a model's pace: ``STALL`` seconds before the first token, then ``CHUNKS`` chunks
``CHUNK_DELAY`` apart. ``llm.max_concurrent_requests`` is 4 for it (a server on this machine takes one request
at a time unless configured: candidates of a local server queue, as any parallel runs do).

Interleaved rounds (``ROUNDS``, after a warm-up) of one candidate alone (``Robot.stream`` on its own change
set, consumed by :func:`workspace.session.compare.run_candidates`) and of three at once
(:func:`workspace.acompare`); prints the medians and the ratio against the target (3 candidates <= 1.2 x one),
met or missed; and three with one request at a time (the default for a local server: they queue). Memory: the peak of Python allocations (tracemalloc) of one comparison of 1, 2, 3 and 4
candidates; per extra candidate, the slope. Writes bench/results/compare.json.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from scratch import scratch_dir

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ROUNDS = int(os.environ.get("ROUNDS", "12"))
TARGET = 1.2
SERVER = """
import sys
sys.path.insert(0, {root!r})
from tests.fakes.llm_server import FakeLLMServer, Reply
BASE = "".join(f"line {{n}}\\n" for n in range(1, 41))
def reply_fn(body):
    model = body["model"]
    pace = dict(stall_before={stall}, chunk_delay={delay}, chunk_size=8)
    if body["messages"][-1].get("role") == "tool":
        return Reply.say("Done: " + "the file now does what was asked. " * 8, **pace)
    return Reply.tool("write_file", {{"path": "app.py", "content": BASE.replace("line 7", model + " seven")}}, **pace)
server = FakeLLMServer(reply_fn=reply_fn).start()
print(server.base_url, flush=True)
sys.stdin.read()
"""
STALL = float(os.environ.get("STALL", "0.15"))
CHUNK_DELAY = float(os.environ.get("CHUNK_DELAY", "0.004"))


def robots(count: int, base: str, *, limit: int = 4) -> list[Any]:
    from workspace import Robot, load_config

    config = load_config(env={}, overrides={"llm": {"max_retries": 1, "max_concurrent_requests": limit}})
    return [Robot("coder", system_prompt="You edit files.", model=f"openai/model-{i}", tools=["write_file"],
                  api_base=base + "/v1", config=config) for i in range(count)]


def fresh_folder() -> Path:
    folder = scratch_dir("bench-compare-")
    (folder / "app.py").write_text("".join(f"line {n}\n" for n in range(1, 41)))
    return folder


async def one(base: str) -> float:
    from workspace.changes import ChangeSet
    from workspace.session.compare import CandidateResult, run_candidates

    folder = fresh_folder()
    robot = robots(1, base)[0]
    changes = ChangeSet(folder, mode="review")
    start = time.perf_counter()
    result = CandidateResult(index=0, label="one", robot=robot.name, model=robot.model, changes=changes)
    [done] = await run_candidates([(result, robot.stream("Edit app.py", folder=folder, changes=changes))])
    elapsed = time.perf_counter() - start
    assert done.status == "finished" and changes.pending_files, done.error
    return elapsed


async def several(base: str, count: int, *, limit: int = 4) -> float:
    from workspace import acompare

    folder = fresh_folder()
    start = time.perf_counter()
    comparison = await acompare("Edit app.py", robots(count, base, limit=limit), folder=folder)
    elapsed = time.perf_counter() - start
    assert all(c.status == "finished" and c.changes is not None and c.changes.pending_files
               for c in comparison.candidates), [c.error for c in comparison.candidates]
    return elapsed


async def peak(base: str, count: int) -> int:
    """Peak Python allocations (bytes) while ``count`` candidates run (1: one candidate alone)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    if count == 1:
        await one(base)
    else:
        await several(base, count)
    _, high = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return high


async def main() -> None:
    proc = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT), stall=STALL, delay=CHUNK_DELAY)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    base = proc.stdout.readline().strip()
    try:
        for _ in range(2):  # warm-up: imports, the openai SDK, the tool registry
            await one(base)
            await several(base, 3)
        singles: list[float] = []
        triples: list[float] = []
        for _ in range(ROUNDS):
            singles.append(await one(base))
            triples.append(await several(base, 3))
        queued = [await several(base, 3, limit=1) for _ in range(3)]
        peaks = {n: statistics.median([await peak(base, n) for _ in range(3)]) for n in (1, 2, 3, 4)}
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)
    one_m, three_m = statistics.median(singles) * 1000, statistics.median(triples) * 1000
    ratio = three_m / one_m
    per_extra = (peaks[4] - peaks[1]) / 3
    print(f"model pace: {STALL * 1000:.0f} ms to the first token, {CHUNK_DELAY * 1000:.0f} ms between chunks; "
          f"two streamed calls and one proposed file per candidate; {ROUNDS} rounds")
    print(f"one candidate:           median {one_m:8.1f} ms  (min {min(singles) * 1000:.1f})")
    print(f"three candidates at once: median {three_m:8.1f} ms  (min {min(triples) * 1000:.1f})")
    print(f"ratio 3 / 1: {ratio:.3f} (target <= {TARGET}): {'met' if ratio <= TARGET else 'MISSED'}")
    queued_m = statistics.median(queued) * 1000
    print(f"three candidates, one request at a time (a local server's default): median {queued_m:8.1f} ms "
          f"({queued_m / one_m:.2f} x one: they queue)")
    print("peak Python allocations: " + ", ".join(f"{n} candidate{'s' if n > 1 else ''} {peaks[n] / 1024:.0f} KiB"
                                                  for n in peaks)
          + f"; per extra candidate {per_extra / 1024:.0f} KiB")
    result = {"rounds": ROUNDS, "stall_s": STALL, "chunk_delay_s": CHUNK_DELAY, "one_ms": round(one_m, 1),
              "three_ms": round(three_m, 1), "three_queued_ms": round(queued_m, 1), "ratio": round(ratio, 3), "target": TARGET, "met": ratio <= TARGET,
              "peak_bytes": peaks, "per_extra_candidate_bytes": round(per_extra)}
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
