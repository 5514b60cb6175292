"""The fault matrix alone: run tests/faults and print its table (cases tried, survived, lost).

The suite (MCP faults with small Python servers, damaged and locked databases, kill -9 during a
recording, Ctrl-C to the window, and the secrets sweep) records each case; this script runs it
and prints the table it wrote to bench/results/fault_matrix.json, grouped by area.

Run: ``.venv/bin/python bench/fault_matrix.py`` (about a minute).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "fault_matrix.json"


def main() -> int:
    if RESULTS.exists():
        RESULTS.unlink()
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/faults"],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    if not RESULTS.exists():
        print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n")
        return proc.returncode or 1
    cases = json.loads(RESULTS.read_text(encoding="utf-8"))
    areas: dict[str, list[dict[str, object]]] = {}
    for case in cases:
        areas.setdefault(str(case["area"]), []).append(case)
    print(f"{'area':<22} {'case':<58} {'survived':>8} {'lost':>5}")
    for area, items in areas.items():
        for case in items:
            print(f"{area:<22} {str(case['name'])[:58]:<58} {'yes' if case['survived'] else 'NO':>8} "
                  f"{case['lost']:>5}")
    tried = len(cases)
    survived = sum(1 for c in cases if c["survived"])
    lost = sum(int(c["lost"]) for c in cases)
    print(f"\ncases tried {tried}, survived {survived}, lost {lost} "
          f"(pytest: {proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.returncode})")
    return 0 if survived == tried and lost == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
