"""`python -c "import workspace"` time against a bare interpreter start, in fresh processes.

Prints the median of 15 runs of each and the difference (target: under 150 ms in total,
litellm not imported). Writes bench/results/import.json.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

RUNS = 15
ROOT = Path(__file__).resolve().parent.parent


def measure(code: str) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    bare = measure("pass")
    core = measure("import workspace")
    robot = measure("import workspace.robot")
    leaked = subprocess.run(
        [sys.executable, "-c", "import sys, workspace, workspace.robot; print('litellm' in sys.modules)"],
        capture_output=True, text=True, cwd=ROOT, check=True,
    ).stdout.strip()
    result = {
        "python_start_ms": round(bare * 1000, 1),
        "import_workspace_ms": round(core * 1000, 1),
        "import_workspace_robot_ms": round(robot * 1000, 1),
        "workspace_over_bare_ms": round((core - bare) * 1000, 1),
        "litellm_imported": leaked == "True",
        "target_ms": 150,
    }
    print(f"python -c pass:                   {result['python_start_ms']:7.1f} ms (median of {RUNS})")
    print(f"python -c 'import workspace':     {result['import_workspace_ms']:7.1f} ms")
    print(f"python -c 'import workspace.robot': {result['import_workspace_robot_ms']:5.1f} ms")
    print(f"cost of the import itself:        {result['workspace_over_bare_ms']:7.1f} ms")
    print(f"litellm imported: {result['litellm_imported']}  (target: import workspace under 150 ms)")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "import.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
