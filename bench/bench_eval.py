"""An eval of 500 scripted cases at concurrency 1, 8 and 32 against the loopback server: cases per second and
how it scales, then the same 500 answered from the cache.

The loopback OpenAI-compatible server (tests/fakes/llm_server.py) runs in its own process (it does not share
our GIL) and waits ``LATENCY`` seconds before each answer, a model's time to first token (default 50 ms): the
figure is how well the runner keeps requests in flight (``llm.max_concurrent_requests`` raised to 64: a
server on this machine otherwise takes one request at a time) while each case loads its robot, runs the agent loop on
a fresh change set and checks its assertions. Each case: one model call, a ``contains`` and a ``max_seconds``
assertion. Targets: concurrency 8 runs at least 4 x the cases per second of concurrency 1, and 32 no slower
than 8 (on 2 cores the runner's own CPU, not the model, is then the limit; the CPU milliseconds a case costs
this process are printed too, a figure a busy machine disturbs less); a cached re-run of all 500 asks the
server nothing (the exit status says only this one). Writes bench/results/eval.json.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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

    # A server on this machine gets one request at a time unless llm.max_concurrent_requests says more (some
    # local servers cut a stream when another request arrives); the loopback server takes any number.
    config = load_config(None, overrides={"llm": {"max_concurrent_requests": 64}, "review": {"mode": "review"}})
    spec = load_eval_file(path)
    started, cpu = time.perf_counter(), time.process_time()
    report = await run_eval(spec, base=path.parent, concurrency=concurrency, cache=cache,  # type: ignore[arg-type]
                            config=config)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    failed = [r.failures for r in report.results if not r.passed]
    assert not failed, failed[:3]
    return seconds, report.cache_misses, cpu


def main() -> int:
    home = Path(tempfile.mkdtemp(prefix="robotlab-bench-eval-"))
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
        for concurrency in (1, 8, 32):
            seconds, _, cpu = asyncio.run(one_run(path, concurrency, None))
            figures[f"cases_per_s_c{concurrency}"] = round(CASES / seconds, 1)
            figures[f"cpu_ms_per_case_c{concurrency}"] = round(1000 * cpu / CASES, 1)
            print(f"concurrency {concurrency:>2}: {CASES} cases in {seconds:6.2f} s = {CASES / seconds:6.1f} cases/s "
                  f"({1000 * cpu / CASES:.1f} ms of this process's CPU a case)")
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
    scale32 = figures["cases_per_s_c32"] / figures["cases_per_s_c8"]
    figures.update(scale_8_over_1=round(scale8, 2), scale_32_over_8=round(scale32, 2), latency_s=LATENCY, cases=CASES)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    figures["load_average"] = round(load, 2)
    scaled = scale8 >= 4 and scale32 >= 0.9
    print(f"scaling: 8 vs 1 = {scale8:.2f} x (target >= 4), 32 vs 8 = {scale32:.2f} x (target >= 0.9, no slower): "
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
