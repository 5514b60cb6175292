"""search_files over a folder of 300,000 files: how long its worker thread runs on after Stop, pressed while it
lists a folder of 100,000 files, and the memory a search of the whole tree holds (with this tree's code and,
``--old DIR``, another's).

The tree (made once, in a scratch folder): ``a_flat/`` with ``--flat`` files (100,000) and ``--folders`` folders of
1,000 files each beside it (200), every file one short line. Each measurement runs in a fresh Python process with
one tree's code (``PYTHONPATH``), alternating new and old, ``--rounds`` of each; medians are printed with the load
average:

* ``stop``: the tool's task cancelled (Stop) 0.3 s after it starts (the walk is in ``a_flat/`` then), and the time
  from the cancel to the end of the search's worker thread;
* ``walk``: a search of the whole tree whose file pattern matches nothing (no file is read: the walk and the
  search loop alone), its wall time and the peak of Python's allocations during it (under tracemalloc, which
  slows it: the tool's 20 s limit is lifted for it).

Run: ``PYTHONPATH=$PWD .venv/bin/python bench/bench_search_files_stop.py --old /tmp/search-main`` (e.g. ``git
archive`` of main's commit there).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from scratch import scratch_dir

ROOT = Path(__file__).resolve().parent.parent

CHILD = r'''
import asyncio, json, sys, threading, time, tracemalloc
from pathlib import Path
folder, case = Path(sys.argv[1]), sys.argv[2]
from workspace.changes import ChangeSet
from workspace.tools import files, registry
from workspace.tools.files import reading
from workspace.tools.base import ToolContext

ended = threading.Event()
search = files._search_files

def watched(*args, **kwargs):
    try:
        return search(*args, **kwargs)
    finally:
        ended.set()

files._search_files = watched
reading.MAX_SEARCH_SECONDS = 600.0  # (tracemalloc slows the walk: not cut at the tool's 20 s)
tool = registry.get("search_files")
context = ToolContext(robot="bench", run_id="r", call_id="c", folder=folder, changes=ChangeSet(folder),
                      emit=lambda _e: None)

async def stop():
    task = asyncio.create_task(tool.invoke({"query": "needle"}, context))
    await asyncio.sleep(0.3)
    cancelled = time.perf_counter()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    await asyncio.to_thread(ended.wait, 120)
    return {"after_stop": time.perf_counter() - cancelled}

async def walk():
    tracemalloc.start()
    started = time.perf_counter()
    out = await tool.invoke({"query": "needle", "pattern": "*.nothing"}, context)
    wall = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert not out.is_error and not out.data.get("truncated"), out.data
    return {"wall": wall, "peak": peak / 2**20}

print(json.dumps(asyncio.run(stop() if case == "stop" else walk())))
'''


def make(root: Path, flat: int, folders: int) -> None:
    line = b"nothing to see here\n"
    (root / "a_flat").mkdir(parents=True)
    for n in range(flat):
        (root / "a_flat" / f"f{n:06}.txt").write_bytes(line)
    for d in range(folders):
        sub = root / f"d{d:04}"
        sub.mkdir()
        for n in range(1000):
            (sub / f"f{n:04}.txt").write_bytes(line)


def run(code_root: Path, folder: Path, case: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(code_root)}
    done = subprocess.run([sys.executable, "-c", CHILD, str(folder), case], capture_output=True, text=True,
                          cwd=code_root, env=env, timeout=900, check=False)
    if done.returncode:
        raise SystemExit(f"the {case} case failed with {code_root}'s code:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flat", type=int, default=100_000)
    parser.add_argument("--folders", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--old", type=Path, help="another tree's root (its workspace), run alternately")
    args = parser.parse_args()
    trees = [("new", ROOT)] + ([("old", args.old)] if args.old else [])
    folder = scratch_dir("bench-search-files-") / "project"
    started = time.perf_counter()
    make(folder, args.flat, args.folders)
    total = args.flat + 1000 * args.folders
    print(f"{total:,} files ({args.flat:,} in one folder, {args.folders} folders of 1,000), made in "
          f"{time.perf_counter() - started:.0f} s")
    for case in ("stop", "walk"):
        seen: dict[str, list[dict[str, float]]] = {name: [] for name, _ in trees}
        loads: list[float] = []
        for _ in range(args.rounds):
            for name, root in trees:
                seen[name].append(run(root, folder, case))
                loads.append(os.getloadavg()[0])
        for name, _ in trees:
            rows = seen[name]
            if case == "stop":
                figures = f"worker thread ran {statistics.median(r['after_stop'] for r in rows) * 1000:8.1f} ms after Stop"
            else:
                figures = (f"whole tree walked in {statistics.median(r['wall'] for r in rows):6.2f} s, peak "
                           f"allocations {statistics.median(r['peak'] for r in rows):6.1f} MiB")
            print(f"{case:5s} {name}: {figures}  load {statistics.median(loads):.2f} (rounds {len(rows)})")


if __name__ == "__main__":
    main()
