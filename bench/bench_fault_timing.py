"""How long the provider faults of the fault matrix take to be said: the absolute figures its tests leave out.

The tests (tests/faults/test_fault_providers.py) bound each case generously, as a guard against
hanging on a loaded machine (ten times the wait a case is set, or half of a wait it must not
make); the figures themselves are measured here, on the loopback server
(tests/fakes/llm_server.py), with the lean provider, and printed as medians of ``RUNS`` (5):

* connection refused (nothing listens): said at once, no retries (target < 0.5 s);
* a server that takes the connection and never answers, ``llm.max_wait`` 1.5 s (target about 1.5 s);
* a server that never sends the first token, ``llm.first_token_timeout`` 0.5 s (target about 0.5 s);
* HTTP 429 with Retry-After 3600 s, ``llm.max_wait`` 60 s: said at once (target < 0.5 s);
* Stop (``run.cancel()``) mid-stream: from the call to the run's end (target < 0.1 s).

Run: ``PYTHONPATH=. .venv/bin/python bench/bench_fault_timing.py`` (about half a minute).
Writes bench/results/fault_timing.json.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
RUNS = int(os.environ.get("RUNS", "5"))

from fakes.llm_server import FakeLLMServer, Reply  # noqa: E402

from workspace import events as ev  # noqa: E402
from workspace.config import load_config  # noqa: E402
from workspace.robot import Robot  # noqa: E402


def robot(address: str, **llm: Any) -> Robot:
    config = load_config(env={}, overrides={"llm": {"provider": "auto", "max_retries": 3, "max_wait": 10, **llm}})
    return Robot("r", system_prompt="You help.", model="openai/fake", api_base=address, config=config,
                 api_key="sk-bench")


def refused_address() -> str:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}/v1"


async def until_the_end(bot: Robot) -> tuple[float, ev.Event]:
    started = time.monotonic()
    events = [e async for e in bot.stream("hi")]
    return time.monotonic() - started, events[-1]


async def stop_mid_stream(server: FakeLLMServer) -> float:
    server.enqueue(Reply.say("word " * 400, chunk_delay=0.02))
    run = robot(server.base_url + "/v1").stream("hi")
    streaming = asyncio.Event()

    async def consume() -> None:
        async for event in run:
            if isinstance(event, ev.TextDelta):
                streaming.set()

    task = asyncio.ensure_future(consume())
    await streaming.wait()
    started = time.monotonic()
    run.cancel()
    await task
    return time.monotonic() - started


async def main() -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    silent_address = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
    async def refused(server: FakeLLMServer) -> float:
        return (await until_the_end(robot(refused_address(), max_wait=60)))[0]

    async def never_answers(server: FakeLLMServer) -> float:
        return (await until_the_end(robot(silent_address, max_wait=1.5, first_token_timeout=100)))[0]

    async def no_first_token(server: FakeLLMServer) -> float:
        server.enqueue(Reply.say("late", stall_after=0, stall_seconds=30))
        return (await until_the_end(robot(server.base_url + "/v1", first_token_timeout=0.5)))[0]

    async def retry_after_an_hour(server: FakeLLMServer) -> float:
        server.enqueue(Reply.error(429, times=3, retry_after=3600))
        return (await until_the_end(robot(server.base_url + "/v1", max_wait=60)))[0]

    cases: dict[str, tuple[Callable[[FakeLLMServer], Awaitable[float]], float]] = {
        "connection refused": (refused, 0.5),
        "never answers (max_wait 1.5 s)": (never_answers, 1.5),
        "no first token (first_token_timeout 0.5 s)": (no_first_token, 0.5),
        "429, Retry-After 3600 s (max_wait 60 s)": (retry_after_an_hour, 0.5),
        "Stop mid-stream": (stop_mid_stream, 0.1),
    }
    results: dict[str, dict[str, float]] = {}
    with FakeLLMServer(default_text="fine") as server:
        await until_the_end(robot(server.base_url + "/v1"))  # the provider's library loaded once
        for name, (case, target) in cases.items():
            times = []
            for _ in range(RUNS):
                server.clear()
                times.append(await case(server))
            results[name] = {"median_s": round(statistics.median(times), 3), "max_s": round(max(times), 3),
                             "target_s": target}
    silent.close()
    print(f"how long each provider fault takes to be said (lean provider, loopback), median of {RUNS}:")
    for name, found in results.items():
        print(f"  {name:<46} {found['median_s']:7.3f} s  (max {found['max_s']:.3f}; target {found['target_s']:g} s)")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "fault_timing.json").write_text(json.dumps({"runs_each": RUNS, "cases": results}, indent=2) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
