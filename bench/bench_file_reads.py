"""What a huge file in a folder costs when the app lists robots or loads the configuration.

Cases (each in a fresh Python process, the modules imported before measuring):
- ``robots``: ``list_robots`` of a folder whose ``.robotlab/robots/huge.md`` is a 300 MiB sparse file
  beside one good robot (the window lists robots through it);
- ``config``: ``load_config`` of a folder whose ``.robotlab/config.yaml`` is 20 MiB of YAML (a list
  under an unknown key).

For each: wall time, the measuring thread's CPU time (``time.thread_time``: the thread the window would
use), the process's peak RSS, and the load average. ``--root DIR`` runs the code of another checkout
(for example ``git archive main`` unpacked in /tmp), so old and new code run alternately, round by
round, with this same file; the medians of ``--rounds`` rounds are printed.

Run: ``.venv/bin/python bench/bench_file_reads.py [--root /tmp/old-checkout] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r'''
import json, os, resource, sys, time
from pathlib import Path
case, folder = sys.argv[1], Path(sys.argv[2])
from workspace.catalog import list_robots
from workspace.config import load_config
from workspace.errors import ConfigurationError
list_robots(None)
started, cpu = time.perf_counter(), time.thread_time()
outcome = "ok"
if case == "robots":
    problems = []
    names = [r.name for r in list_robots(folder, problems=problems) if r.source == "project"]
    outcome = f"listed {names}, {len(problems)} problem(s)"
else:
    try:
        load_config(folder, env={})
    except ConfigurationError as exc:
        outcome = "refused: " + str(exc)[-60:]
wall, cpu = time.perf_counter() - started, time.thread_time() - cpu
print(json.dumps({"wall": wall, "cpu": cpu, "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "outcome": outcome}))
'''


def make_folders(base: Path) -> dict[str, Path]:
    robots = base / "robots"
    (robots / ".robotlab" / "robots").mkdir(parents=True)
    (robots / ".robotlab" / "robots" / "good.md").write_text("---\nname: good\n---\nHi\n", encoding="utf-8")
    with open(robots / ".robotlab" / "robots" / "huge.md", "wb") as fh:
        fh.truncate(300 * 1024 * 1024)
    config = base / "config"
    (config / ".robotlab").mkdir(parents=True)
    line = "  - " + "x" * 60 + "\n"
    with open(config / ".robotlab" / "config.yaml", "w", encoding="utf-8") as fh:
        fh.write("llm:\n  temperature: 0.2\nnotes:\n" + line * (20 * 1024 * 1024 // len(line)))
    return {"robots": robots, "config": config}


def run(root: Path, case: str, folder: Path, home: Path) -> dict[str, float | str]:
    env = {**os.environ, "PYTHONPATH": str(root), "ROBOTLAB_HOME": str(home)}
    done = subprocess.run([sys.executable, "-c", CHILD, case, str(folder)], capture_output=True, text=True,
                          env=env, cwd=root, timeout=600, check=True)
    result: dict[str, float | str] = json.loads(done.stdout.strip().splitlines()[-1])
    result["load"] = os.getloadavg()[0]
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", type=Path, help="another checkout to compare with (run alternately)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    trees = {"this": ROOT, **({"other": args.root.resolve()} if args.root else {})}
    with tempfile.TemporaryDirectory(prefix="bench-file-reads-") as tmp:
        folders = make_folders(Path(tmp))
        home = Path(tmp) / "home"
        home.mkdir()
        for case, folder in folders.items():
            seen: dict[str, list[dict[str, float | str]]] = {name: [] for name in trees}
            for _ in range(args.rounds):
                for name, root in trees.items():
                    seen[name].append(run(root, case, folder, home))
            for name, results in seen.items():
                def median(key: str, results: list[dict[str, float | str]] = results) -> float:
                    return statistics.median(float(r[key]) for r in results)

                print(f"{case:7} {name:5} ({trees[name]}): wall {median('wall'):.3f} s, thread CPU "
                      f"{median('cpu'):.3f} s, peak RSS {median('rss'):.0f} MiB, load "
                      f"{min(float(r['load']) for r in results):.2f}-{max(float(r['load']) for r in results):.2f}"
                      f"; {results[-1]['outcome']}")


if __name__ == "__main__":
    main()
