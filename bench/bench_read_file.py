"""read_file of a big file: the time and the peak memory of reading 11 lines deep in it, and of a read
without a range.

A file of ``SIZE_MB`` MB (default 1024: 1 GiB) of numbered 100-byte lines is written once in a temp
folder; then, each in a fresh Python process (so its peak RSS is its own), read_file is called through
the tool (arguments checked, a change set as in a run) for:

1. lines 5,000,000-5,000,010 (or the middle of a smaller file);
2. no range (the first 2000 lines and a note);
3. ``--whole``: the same as 1 with streaming off (the file read whole, as before it streamed; only for
   sizes that fit in memory, e.g. 256).

Prints the median wall time of ``REPEATS`` (3) runs, the peak RSS of the process (``ru_maxrss``) and
the Python allocations' peak (``tracemalloc``), and writes bench/results/read_file.json.

Run: ``PYTHONPATH=$PWD .venv/bin/python bench/bench_read_file.py [SIZE_MB] [--whole]``.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPEATS = 3

CHILD = r"""
import asyncio, json, resource, sys, time, tracemalloc
from pathlib import Path
from workspace.changes import ChangeSet
from workspace.tools import registry
from workspace.tools.base import ToolContext
from workspace.tools.files import reading

folder, args, whole = Path(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3] == "1"
if whole:
    reading.STREAM_BYTES = 1 << 62
context = ToolContext(robot="r", run_id="run", call_id="c", folder=folder, changes=ChangeSet(folder),
                      emit=lambda event: None)
tool = registry.get("read_file")
asyncio.run(tool.invoke({"path": "empty.txt"}, context))  # imports before measuring
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tracemalloc.start()
started = time.perf_counter()
out = asyncio.run(tool.invoke({"path": "big.log", **args}, context))
seconds = time.perf_counter() - started
peak = tracemalloc.get_traced_memory()[1]
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
assert not out.is_error, out.data
print(json.dumps({"seconds": seconds, "tracemalloc_mb": peak / 2**20, "rss_mb": rss / 1024,
                  "rss_added_mb": (rss - base) / 1024, "lines": out.data["content"].count("\n"),
                  "total_lines": out.data["total_lines"], "first": out.data["content"][:8]}))
"""


def write_file(path: Path, size_mb: int) -> int:
    pad = "." * 90
    lines = size_mb * 2**20 // 100
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for start in range(1, lines + 1, 100_000):
            fh.write("".join(f"{n:08d} {pad}\n" for n in range(start, min(start + 100_000, lines + 1))))
    return lines


def measure(folder: Path, args: dict[str, int], *, whole: bool) -> dict[str, float]:
    runs = []
    for _ in range(REPEATS):
        done = subprocess.run([sys.executable, "-c", CHILD, str(folder), json.dumps(args), "1" if whole else "0"],
                              cwd=ROOT, capture_output=True, text=True, check=True,
                              env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    figures = {key: statistics.median(run[key] for run in runs)
               for key in ("seconds", "tracemalloc_mb", "rss_mb", "rss_added_mb")}
    figures.update(lines=runs[0]["lines"], total_lines=runs[0]["total_lines"])
    return figures


def main() -> None:
    size_mb = int(next((a for a in sys.argv[1:] if a.isdigit()), "1024"))
    whole = "--whole" in sys.argv
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        lines = write_file(folder / "big.log", size_mb)
        (folder / "empty.txt").write_bytes(b"")
        print(f"wrote a {size_mb} MB file of {lines:,} lines in {time.perf_counter() - started:.1f} s")
        deep = min(5_000_000, lines // 2)
        cases = {f"lines {deep:,}-{deep + 10:,}": {"start_line": deep, "end_line": deep + 10}, "no range": {}}
        results: dict[str, dict[str, float]] = {}
        for name, args in cases.items():
            results[name] = measure(folder, args, whole=False)
        if whole:
            results[f"lines {deep:,}-{deep + 10:,}, read whole (before)"] = measure(
                folder, cases[f"lines {deep:,}-{deep + 10:,}"], whole=True)
    print(f"{'case':<46} {'median s':>9} {'tracemalloc MB':>15} {'peak RSS MB':>12} {'RSS added MB':>13}")
    for name, r in results.items():
        print(f"{name:<46} {r['seconds']:>9.2f} {r['tracemalloc_mb']:>15.1f} {r['rss_mb']:>12.0f} "
              f"{r['rss_added_mb']:>13.0f}")
    out = ROOT / "bench" / "results" / "read_file.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"size_mb": size_mb, "results": results}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
