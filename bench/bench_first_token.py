"""``robotlab run`` against a local OpenAI-compatible server: time from process start to the first token.

Each run starts ``python -m workspace run assistant "hi" --model openai/fake --api-base URL --json``
in a fresh process and measures, in this process, from just before starting it to the first
``text_delta`` line on its stdout. The server is the loopback fake (tests/fakes/llm_server.py) in a
process of its own, answering at once: what is measured is ours (imports, configuration, the robot,
the provider, the request). Medians of ``RUNS`` (10) runs, alternating:

* ``auto``: the provider the registry picks for an OpenAI-compatible server (the lean provider on the
  openai SDK); target < 1 s;
* ``litellm``: the same through litellm (``ROBOT_LAB_LLM__PROVIDER=litellm``), for comparison.

Writes bench/results/first_token.json.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = int(os.environ.get("RUNS", "10"))
SERVER = """
import sys
sys.path.insert(0, {root!r})
from tests.fakes.llm_server import FakeLLMServer
server = FakeLLMServer(default_text="Hello from the local model.").start()
print(server.base_url, flush=True)
sys.stdin.read()
"""


def first_token(base: str, provider: str, home: str) -> float:
    env = {**os.environ, "ROBOTLAB_HOME": home, "PYTHONUNBUFFERED": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: compiled once, then read from .pyc files
    if provider != "auto":
        env["ROBOT_LAB_LLM__PROVIDER"] = provider
    for name in [n for n in env if n.endswith("_API_KEY")]:
        env.pop(name)
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "workspace", "run", "assistant", "hi", "--model", "openai/fake",
                             "--api-base", base + "/v1", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            if b'"kind":"text_delta"' in line:
                return time.perf_counter() - started
            if b'"kind":"run_failed"' in line:
                raise SystemExit(f"the run failed: {line.decode()}")
        raise SystemExit("the run ended without a token")
    finally:
        proc.wait(timeout=60)


def main() -> None:
    import tempfile

    server = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT))], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    base = server.stdout.readline().strip()
    times: dict[str, list[float]] = {"auto": [], "litellm": []}
    try:
        with tempfile.TemporaryDirectory() as home:
            for provider in times:  # warm the disk cache and the .pyc files once
                first_token(base, provider, home)
            for _ in range(RUNS):
                for provider in times:
                    times[provider].append(first_token(base, provider, home))
    finally:
        server.terminate()
    lean, heavy = (statistics.median(times[k]) for k in ("auto", "litellm"))
    result = {"runs_each": RUNS, "lean_provider_median_s": round(lean, 3), "litellm_median_s": round(heavy, 3),
              "lean_min_s": round(min(times["auto"]), 3), "lean_max_s": round(max(times["auto"]), 3), "target_s": 1.0}
    print(f"process start -> first token of `robotlab run` on a local server, median of {RUNS}:")
    print(f"  lean provider (openai SDK): {lean:.3f} s  (min {min(times['auto']):.3f}, max {max(times['auto']):.3f}; "
          "target < 1 s)")
    print(f"  through litellm:            {heavy:.3f} s")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "first_token.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
