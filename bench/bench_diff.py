"""Diff of a 20,000-line file with 500 changed places: how long the change-review model takes.

Measures (median of 5 runs each):

- ``diff``: the line diff alone (``workspace.diffing.diff_lines``);
- ``file_change``: what a proposal costs: decode, split, diff and build the 500 hunks
  (``FileChange``; the review model is ready to show after this) — target < 200 ms;
- ``inline_all``: intra-line spans of every hunk (the view computes them lazily, per
  visible hunk; this is the worst case of computing all of them);
- ``merge_half``: the merged bytes with every other hunk accepted (what ``apply`` writes);
- ``unified``: the whole proposal as a unified diff text.

Also compares with ``difflib.SequenceMatcher`` (autojunk off), the obvious alternative.
Writes ``bench/results/diff.json``. Run: ``.venv/bin/python bench/bench_diff.py``.
"""

from __future__ import annotations

import difflib
import json
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workspace.changes import FileChange  # noqa: E402
from workspace.diffing import diff_lines  # noqa: E402

LINES = 20_000
HUNKS = 500
RUNS = 5


def make_files(seed: int = 20240501) -> tuple[bytes, bytes, int]:
    """A code-like file (blank lines, braces and returns repeat a lot) and a version with HUNKS changes."""
    rng = random.Random(seed)
    lines = []
    for i in range(LINES):
        r = rng.random()
        if r < 0.10:
            lines.append("\n")
        elif r < 0.15:
            lines.append("    }\n")
        elif r < 0.20:
            lines.append("        return None\n")
        else:
            lines.append(f"    value_{i} = compute({i}, {rng.randint(0, 999)})  # step {i % 97}\n")
    new = list(lines)
    # HUNKS places at least 8 lines apart, so each is its own hunk.
    places = sorted(rng.sample(range(0, LINES // 8), HUNKS), reverse=True)
    for p in (x * 8 + 2 for x in places):
        kind = rng.random()
        if kind < 0.5:
            new[p] = new[p].replace("compute", "calculate") if "compute" in new[p] else f"    changed_{p}()\n"
        elif kind < 0.75:
            new.insert(p, f"    # inserted before line {p + 1}\n")
        else:
            del new[p]
    return "".join(lines).encode(), "".join(new).encode(), HUNKS


def median_ms(fn: Callable[[], Any], runs: int = RUNS) -> tuple[float, Any]:
    times = []
    value = None
    for _ in range(runs):
        start = time.perf_counter()
        value = fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), value


def main() -> dict[str, Any]:
    before, after, expected = make_files()
    old_lines = before.decode().splitlines(keepends=True)
    new_lines = after.decode().splitlines(keepends=True)

    diff_ms, ops = median_ms(lambda: diff_lines(old_lines, new_lines))
    changed = sum(1 for op in ops if op[0] != "equal")

    file_ms, fc = median_ms(lambda: FileChange(id="f1", path="big.py", before=before, after=after))
    hunks = len(fc.hunks)

    def inline_all() -> int:
        for h in fc.hunks:
            h._inline = None
        return sum(len(h.inline()) for h in fc.hunks)

    inline_ms, pairs = median_ms(inline_all)

    for k, h in enumerate(fc.hunks):
        h.status = "accepted" if k % 2 == 0 else "rejected"
    merge_ms, merged = median_ms(lambda: fc.merge())
    unified_ms, text = median_ms(lambda: fc.unified_diff())

    def seqmatcher() -> int:
        sm = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
        return sum(1 for op in sm.get_opcodes() if op[0] != "equal")

    sm_ms, sm_changed = median_ms(seqmatcher, runs=1)

    results = {
        "file_lines": LINES,
        "changed_places": expected,
        "hunks_found": hunks,
        "diff_ms_median": round(diff_ms, 2),
        "file_change_ms_median": round(file_ms, 2),
        "target_ms": 200,
        "meets_target": file_ms < 200,
        "inline_all_hunks_ms_median": round(inline_ms, 2),
        "inline_per_hunk_ms": round(inline_ms / hunks, 3),
        "inline_pairs": pairs,
        "merge_half_accepted_ms_median": round(merge_ms, 2),
        "merged_bytes": len(merged.data or b""),
        "unified_diff_ms_median": round(unified_ms, 2),
        "unified_diff_chars": len(text),
        "difflib_autojunk_off_ms": round(sm_ms, 1),
        "difflib_changed_places": sm_changed,
        "speedup_vs_difflib": round(sm_ms / diff_ms, 1) if diff_ms else None,
        "runs": RUNS,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    assert changed == hunks, (changed, hunks)
    return results


if __name__ == "__main__":
    res = main()
    width = max(len(k) for k in res)
    for key, value in res.items():
        print(f"{key:<{width}}  {value}")
    out = ROOT / "bench" / "results" / "diff.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
