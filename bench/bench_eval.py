"""An eval of 500 scripted cases at concurrency 1, 8 and 32 against the loopback server, each case's run recorded
as a thread of a SQLite store as ``robotlab eval`` does: cases per second and how it scales, then the same 500
answered from the cache.

The loopback OpenAI-compatible server (tests/fakes/llm_server.py) runs in its own process (it does not share
our GIL) and waits ``LATENCY`` seconds before each answer, a model's time to first token (default 50 ms): the
figure is how well the runner keeps requests in flight (``llm.max_concurrent_requests`` raised to 64: a
server on this machine otherwise takes one request at a time) while each case loads its robot, runs the agent loop on
a fresh change set and checks its assertions. Each case: one model call, a ``contains`` and a ``max_seconds``
assertion.

Target: near-linear until a limit. The loopback server answers any number of requests at once (a thread each,
a deep listen backlog), so the limit is this process's CPU: a case costs ``cpu`` ms of it, so at most
``1000 / cpu`` cases/s whatever the concurrency. Concurrency K should run ``min(K x rate at 1, 1000 / cpu)``
cases/s; the bench prints each figure, its ratio to concurrency 1 and its share of that ideal (target: 0.8 or
more), and the CPU milliseconds a case costs this process (a figure a busy machine disturbs less). On a 2-core
machine shared with the server, 32 reaches the CPU limit and runs no faster than 8, but no slower either (it
was slower before the loopback server's listen backlog was raised: see ``request_queue_size`` in
tests/fakes/llm_server.py). A cached re-run of all 500 asks the server nothing (the exit status says only this
one). Writes bench/results/eval.json.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from scratch import scratch_dir

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CASES = int(os.environ.get("CASES", "500"))
LATENCY = float(os.environ.get("LATENCY", "0.05"))
SERVER = """
import sys
sys.path.insert(0, {root!r})
from tests.fakes.llm_server import FakeLLMServer, Reply
def reply_fn(body):
    said = body["messages"][-1]["content"]
    return Reply.say("Case noted: " + str(said) + ". A refund is on its way.", stall_before={latency})
server = FakeLLMServer(reply_fn=reply_fn).start()
print(server.base_url, flush=True)
sys.stdin.read()
"""
ROBOT = "---\nname: bench\ndescription: Answers.\ntools: [read_file]\n---\nYou answer briefly.\n"


def listen_overflows() -> int | None:
    """SYNs the kernel dropped because a listen queue was full, machine-wide (Linux; None elsewhere): a server
    whose backlog is too short for a burst of new connections makes each of them wait a 1 s retransmit."""
    try:
        head, values = Path("/proc/net/netstat").read_text().splitlines()[:2]
        return int(values.split()[head.split().index("ListenOverflows")])
    except (OSError, ValueError, IndexError):
        return None


def eval_file(folder: Path, base: str) -> Path:
    (folder / "bench.md").write_text(ROBOT, encoding="utf-8")
    lines = [f"robot: bench.md\nmodels: [{{model: openai/fake, api_base: '{base}/v1'}}]\ncases:"]
    for i in range(CASES):
        lines.append(f"  - name: case-{i}\n    message: \"order {i}\"\n    expect:\n      - contains: \"order {i}\"\n"
                     "      - max_seconds: 60")
    path = folder / "bench.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


async def one_run(path: Path, concurrency: int, cache: object | None) -> tuple[float, int, float]:
    from workspace.config import load_config
    from workspace.evals import load_eval_file, run_eval
    from workspace.persistence import Store

    # A server on this machine gets one request at a time unless llm.max_concurrent_requests says more (some
    # local servers cut a stream when another request arrives); the loopback server takes any number.
    config = load_config(None, overrides={"llm": {"max_concurrent_requests": 64}, "review": {"mode": "review"}})
    spec = load_eval_file(path)
    store = Store.open(path.parent / "threads.db")  # each case's run a thread, as `robotlab eval` records them
    started, cpu = time.perf_counter(), time.process_time()
    report = await run_eval(spec, base=path.parent, concurrency=concurrency, cache=cache,  # type: ignore[arg-type]
                            config=config, store=store, eval_file=path)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    store.close()
    failed = [r.failures for r in report.results if not r.passed]
    assert not failed, failed[:3]
    return seconds, report.cache_misses, cpu


def main() -> int:
    home = scratch_dir("robotlab-bench-eval-")
    os.environ["ROBOTLAB_HOME"] = str(home)
    server = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT), latency=LATENCY)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        base = server.stdout.readline().strip()
        path = eval_file(home, base)
        from workspace.evals import AnswerCache

        asyncio.run(one_run(path, 8, None))  # warm-up: imports, the SDK's client, the template engine
        figures: dict[str, float] = {}
        shares: list[float] = []
        for concurrency in (1, 8, 32):
            dropped = listen_overflows()
            seconds, _, cpu = asyncio.run(one_run(path, concurrency, None))
            after = listen_overflows()
            dropped = after - dropped if after is not None and dropped is not None else None
            rate, cpu_ms = CASES / seconds, 1000 * cpu / CASES
            figures[f"cases_per_s_c{concurrency}"] = round(rate, 1)
            figures[f"cpu_ms_per_case_c{concurrency}"] = round(cpu_ms, 1)
            ideal = min(concurrency * figures["cases_per_s_c1"], 1000 / figures["cpu_ms_per_case_c1"])
            shares.append(rate / ideal)
            figures[f"share_of_ideal_c{concurrency}"] = round(rate / ideal, 2)
            print(f"concurrency {concurrency:>2}: {CASES} cases in {seconds:6.2f} s = {rate:6.1f} cases/s, "
                  f"{rate / figures['cases_per_s_c1']:5.2f} x concurrency 1; ideal {ideal:6.1f} (min({concurrency} x "
                  f"rate at 1, CPU limit {1000 / figures['cpu_ms_per_case_c1']:.0f})): {rate / ideal:.2f} of it "
                  f"({cpu_ms:.1f} ms of this process's CPU a case; {dropped if dropped is not None else '?'} SYNs "
                  "dropped by full listen queues, target 0)")
        cache = AnswerCache(home / "cache.db")
        asyncio.run(one_run(path, 8, cache))
        seconds, asked, cpu = asyncio.run(one_run(path, 8, cache))
        cache.close()
        figures["cached_cases_per_s_c8"] = round(CASES / seconds, 1)
        figures["cached_rerun_requests"] = asked
        figures["cpu_ms_per_case_cached"] = round(1000 * cpu / CASES, 1)
        print(f"cached re-run (8): {CASES} cases in {seconds:6.2f} s = {CASES / seconds:6.1f} cases/s "
              f"({1000 * cpu / CASES:.1f} ms CPU a case), {asked} requests to the server")
    finally:
        server.terminate()
        server.wait(timeout=10)
    scale8 = figures["cases_per_s_c8"] / figures["cases_per_s_c1"]
    scale32 = figures["cases_per_s_c32"] / figures["cases_per_s_c1"]
    figures.update(scale_8_over_1=round(scale8, 2), scale_32_over_1=round(scale32, 2), latency_s=LATENCY, cases=CASES)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    figures["load_average"] = round(load, 2)
    scaled = min(shares) >= 0.8 and figures["cases_per_s_c32"] >= 0.9 * figures["cases_per_s_c8"]
    print(f"scaling: 8 vs 1 = {scale8:.2f} x, 32 vs 1 = {scale32:.2f} x; target: near-linear until the limit (each "
          f"at least 0.8 of min(K x rate at 1, CPU limit); lowest {min(shares):.2f}) and 32 no slower than 8: "
          f"{'MET' if scaled else 'MISSED'} (load average {load:.1f} on {os.cpu_count()} cores: the figures need "
          "an idle machine)")
    ok = figures["cached_rerun_requests"] == 0
    print(f"cached re-run: {asked} requests to the server (target 0): {'MET' if ok else 'MISSED'}")
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "eval.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
