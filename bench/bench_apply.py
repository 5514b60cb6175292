"""Applying a 200-file change set: wall time and peak memory.

Each of the 200 files has 300 lines (~12 KB) and gets 3 changed places; every hunk is
accepted and the set is applied (checkpoint before and after, temp file + fsync +
``os.replace`` per file, read-back verification). Also measures proposing the 200
files, undoing the set and redoing it. Time is the median of 5 fresh runs; peak
memory is measured in a separate run under ``tracemalloc`` (which slows it down).

Writes ``bench/results/apply.json``. Run: ``.venv/bin/python bench/bench_apply.py``.

``--baseline DIR`` compares with another checkout (e.g. ``git worktree add /tmp/base main``):
the same runs alternate between DIR's ``workspace`` and this one's, each in a fresh process, and
the medians and the ratio (this / baseline) of apply, undo and redo are reported. The apply
writes relative to directory handles since the fault work (one folder descriptor per apply, each
component opened with ``O_NOFOLLOW``) and journals the set before writing; the ratio shows what
that costs.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from scratch import scratch_dir

ROOT = Path(__file__).resolve().parent.parent
#: The checkout whose ``workspace`` is measured (``--baseline`` runs this script against another one).
CODE = Path(os.environ.get("BENCH_APPLY_CODE", ROOT))
sys.path.insert(0, str(CODE))

FILES = 200
LINES = 300
RUNS = 5


def make_folder(base: Path) -> tuple[Path, dict[str, bytes]]:
    folder = base / "project"
    folder.mkdir()
    proposals: dict[str, bytes] = {}
    for n in range(FILES):
        rel = f"pkg{n % 10}/module_{n:03}.py"
        lines = [f"def function_{n}_{i}(x):  # line {i}\n" if i % 10 == 0 else f"    x = x + {i}\n"
                 for i in range(LINES)]
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(lines))
        for i in (21, 151, 281):
            lines[i] = lines[i].replace("x + ", "x * ")
        proposals[rel] = "".join(lines).encode()
    return folder, proposals


def one_run(*, trace: bool) -> dict[str, float]:
    from workspace.changes import ChangeSet, CheckpointStore

    base = scratch_dir("bench-apply-")
    try:
        folder, proposals = make_folder(base)
        store = CheckpointStore(base / "checkpoints")
        if trace:
            tracemalloc.start()
        t0 = time.perf_counter()
        changes = ChangeSet(folder, thread_id="bench", store=store)
        for rel, data in proposals.items():
            changes.propose(rel, data)
        t1 = time.perf_counter()
        changes.accept_all()
        result = changes.apply()
        t2 = time.perf_counter()
        peak = tracemalloc.get_traced_memory()[1] if trace else 0
        if trace:
            tracemalloc.stop()
        assert result.ok and len(result.applied) == FILES, result.error
        undo = changes.history.undo()
        t3 = time.perf_counter()
        redo = changes.history.redo()
        t4 = time.perf_counter()
        assert undo.ok and redo.ok
        for rel, data in proposals.items():
            assert (folder / rel).read_bytes() == data
        return {"propose_ms": (t1 - t0) * 1000, "apply_ms": (t2 - t1) * 1000, "undo_ms": (t3 - t2) * 1000,
                "redo_ms": (t4 - t3) * 1000, "peak_bytes": peak,
                "hunks": sum(len(fc.hunks) for fc in changes.files)}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> dict[str, Any]:
    os.environ.setdefault("ROBOTLAB_HOME", str(scratch_dir("bench-home-")))
    runs = [one_run(trace=False) for _ in range(RUNS)]
    traced = one_run(trace=True)

    def med(key: str) -> float:
        return round(statistics.median(r[key] for r in runs), 1)

    with tempfile.TemporaryDirectory() as tmp:
        total_bytes = sum(len(data) for data in make_folder(Path(tmp))[1].values())
    return {
        "files": FILES,
        "lines_per_file": LINES,
        "hunks": int(runs[0]["hunks"]),
        "bytes_per_version": total_bytes,
        "propose_ms_median": med("propose_ms"),
        "apply_ms_median": med("apply_ms"),
        "apply_ms_per_file": round(med("apply_ms") / FILES, 2),
        "undo_ms_median": med("undo_ms"),
        "redo_ms_median": med("redo_ms"),
        "apply_peak_memory_mib": round(traced["peak_bytes"] / (1024 * 1024), 2),
        "note": "apply = checkpoint before+after (fsync'd blobs) and the apply journal, then per file a temp "
                "file in the folder's descriptor + fsync + rename + read-back; peak memory measured with "
                "tracemalloc over propose + apply",
        "runs": RUNS,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }


def compare(baseline: Path) -> dict[str, Any]:
    """The same runs alternating between ``baseline``'s workspace and this one's (fresh processes)."""
    import subprocess

    def one(code: Path) -> dict[str, float]:
        env = {**os.environ, "BENCH_APPLY_CODE": str(code)}
        env.pop("ROBOTLAB_HOME", None)
        done = subprocess.run([sys.executable, __file__, "--one"], env=env, capture_output=True, text=True,
                              check=True)
        return dict(json.loads(done.stdout.splitlines()[-1]))

    before: list[dict[str, float]] = []
    after: list[dict[str, float]] = []
    for _ in range(RUNS):
        before.append(one(baseline))
        after.append(one(ROOT))
    out: dict[str, Any] = {"files": FILES, "runs": RUNS, "baseline": str(baseline)}
    for key in ("apply_ms", "undo_ms", "redo_ms", "propose_ms"):
        old = statistics.median(r[key] for r in before)
        new = statistics.median(r[key] for r in after)
        out[f"{key}_median_before"] = round(old, 1)
        out[f"{key}_median_after"] = round(new, 1)
        out[f"{key}_ratio"] = round(new / old, 2) if old else None
    return out


if __name__ == "__main__":
    if "--one" in sys.argv:
        os.environ["ROBOTLAB_HOME"] = str(scratch_dir("bench-home-"))
        print(json.dumps(one_run(trace=False)))
        sys.exit(0)
    if "--baseline" in sys.argv:
        res = compare(Path(sys.argv[sys.argv.index("--baseline") + 1]).resolve())
        width = max(len(k) for k in res)
        for key, value in res.items():
            print(f"{key:<{width}}  {value}")
        out = ROOT / "bench" / "results" / "apply-compare.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(res, indent=2) + "\n")
        print(f"wrote {out.relative_to(ROOT)}")
        sys.exit(0)
    res = main()
    width = max(len(k) for k in res)
    for key, value in res.items():
        print(f"{key:<{width}}  {value}")
    out = ROOT / "bench" / "results" / "apply.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
