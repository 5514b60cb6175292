"""The fault matrix alone: run tests/faults and print its table (cases tried, survived, lost).

The suite records each case: provider faults on the loopback server (both providers, and
``robotlab run`` in a subprocess), MCP faults with small Python servers, bad inputs, path escapes
(the symlink swap race among them), forged names, kill -9 during an apply and during a recording,
Ctrl-C to the window, damaged and locked databases, the secrets sweep, file names the file system
cannot hold and git's quoted patch headers, runs stopped before their first word, and a full disk
while a run is recorded. This script runs it and
prints the cases it wrote to bench/results/fault_matrix.json, then the summary per area (cases
tried, survived, lost) — the fault matrix's table.

Run: ``.venv/bin/python bench/fault_matrix.py`` (two to three minutes).
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
    print(f"\n{'area':<26} {'tried':>5} {'survived':>8} {'lost':>5}")
    for area, items in areas.items():
        print(f"{area:<26} {len(items):>5} {sum(1 for c in items if c['survived']):>8} "
              f"{sum(int(c['lost']) for c in items):>5}")
    tried = len(cases)
    survived = sum(1 for c in cases if c["survived"])
    lost = sum(int(c["lost"]) for c in cases)
    print(f"{'total':<26} {tried:>5} {survived:>8} {lost:>5}")
    print(f"\n{tried} cases in {len(areas)} areas: {survived} survived, {tried - survived} failed, {lost} lost")
    print(f"\n(pytest: {proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.returncode})")
    return 0 if survived == tried and lost == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
