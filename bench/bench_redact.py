"""Secret redaction: the cost of ``secrets.redact`` on what the store, exports and logs pass it.

A 2 KB text (a log line with context, a tool result) with 50 registered secrets of 12-48
characters and the secret-named variables of the environment. Cases: no secret in the text (the
usual case), one secret, two secrets; median of 7 runs of 2,000 calls each, per call; and the
baseline of the same process: ``str.replace`` of one 24-character value over the same text
(what a single-secret redaction cannot be faster than), as a ratio.

Run: ``.venv/bin/python bench/bench_redact.py``. Prints the figures and writes bench/results/redact.json.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import string
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CALLS = 2_000
RUNS = 7


def per_call(fn, text: str) -> float:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        for _ in range(CALLS):
            fn(text)
        samples.append((time.perf_counter() - start) / CALLS)
    return statistics.median(samples)


def main() -> None:
    from workspace import secrets

    rng = random.Random(7)
    values = ["".join(rng.choices(string.ascii_letters + string.digits, k=rng.randint(12, 48))) for _ in range(50)]
    for i, value in enumerate(values):
        secrets.register_secret(value, name=f"BENCH_SECRET_{i}")
    os.environ["BENCH_API_KEY"] = "sk-bench-" + "x" * 30
    words = "the tool read file ok returned lines of text from the folder and went on".split()  # noqa: SIM905
    base = " ".join(rng.choice(words) for _ in range(400))[:2048]
    one = base[:1000] + values[3] + base[1000:]
    two = base[:500] + values[7] + base[500:1500] + os.environ["BENCH_API_KEY"] + base[1500:]
    assert values[3] not in secrets.redact(one)
    figures = {
        "none_us": per_call(secrets.redact, base) * 1e6,
        "one_us": per_call(secrets.redact, one) * 1e6,
        "two_us": per_call(secrets.redact, two) * 1e6,
        "baseline_replace_us": per_call(lambda t: t.replace(values[3], "<X>"), one) * 1e6,
    }
    figures["ratio_none_vs_replace"] = figures["none_us"] / figures["baseline_replace_us"]
    print(f"redact, 2 KB text, 50 registered secrets (median of {RUNS} x {CALLS} calls):")
    print(f"  no secret in the text  {figures['none_us']:8.1f} µs per call")
    print(f"  one secret             {figures['one_us']:8.1f} µs per call")
    print(f"  two secrets            {figures['two_us']:8.1f} µs per call")
    print(f"  baseline str.replace   {figures['baseline_replace_us']:8.1f} µs per call "
          f"(ratio, no secret: {figures['ratio_none_vs_replace']:.1f}x)")
    out = ROOT / "bench" / "results" / "redact.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
