"""The review view on a 20,000-line file with 500 changed hunks: compute, time to interactive, scroll stalls.

Measures (offscreen, a 1280×800 view):

- ``compute``: the workspace side — decode, split, diff and build the 500 hunks (``ChangeSet.propose``
  of the whole new text). Target < 200 ms. Median of 5.
- ``interactive``: from binding the change set to the review model until the view has painted the
  first screen (rows built, scroll bars set, syntax colours of the visible lines lexed): unified with
  3 lines of context (the default), the whole file, and side by side. The first ("cold") open also
  imports pygments and builds its lexer; later opens are the median of 5.
- ``scroll``: the longest stall of the event loop while scrolling programmatically through the
  *whole* file (20,000+ rows) page by page, each step a synchronous repaint followed by one pass of
  the event loop (where idle-time lexing runs, at most ~6 ms per turn), plus wheel steps (3 lines)
  through the default view and 300 random jumps (dragging the scroll bar). Nothing is lexed ahead
  before the scroll starts, so every block of lines is lexed while scrolling: the worst case.
  Target: no stall over 50 ms.

Writes ``bench/results/ui_diff.json``. Run: ``.venv/bin/python bench/bench_ui_diff.py``.
"""

from __future__ import annotations

import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_diff import LINES, make_files  # noqa: E402
from scratch import scratch_dir  # noqa: E402

RUNS = 5
TARGET_COMPUTE_MS = 200
TARGET_STALL_MS = 50


def ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


def new_set(folder: Path, store: Any, after: bytes) -> tuple[Any, float]:
    from workspace.changes import ChangeSet

    changes = ChangeSet(folder, store=store)
    started = time.perf_counter()
    changes.propose("big_module.py", after)
    return changes, time.perf_counter() - started


def main() -> dict[str, Any]:
    from ui.app import get_app

    app = get_app()
    from ui import theme

    theme.apply_theme(app, "light")
    from ui.review.model import ChangeReviewModel
    from ui.review.view import DiffView
    from workspace.changes import CheckpointStore

    before, after, expected = make_files()
    tmp = scratch_dir("bench-ui-diff-")
    (tmp / "big_module.py").write_bytes(before)
    store = CheckpointStore(tmp / ".checkpoints")

    # -- compute (workspace side)
    compute = []
    changes = None
    for _ in range(RUNS):
        changes, took = new_set(tmp, store, after)
        compute.append(took)
    assert changes is not None
    hunks = len(changes.hunks())

    # -- time to interactive
    def open_view(*, whole: bool = False, split: bool = False) -> tuple[float, DiffView, Any]:
        fresh, _ = new_set(tmp, store, after)
        model = ChangeReviewModel()
        view = DiffView(model, split=split)
        view.resize(1280, 800)
        view.set_whole_file(whole)
        view.show()
        app.processEvents()
        started = time.perf_counter()
        model.bind(fresh)
        view.viewport().repaint()
        took = time.perf_counter() - started
        return took, view, model

    cold, view, _model = open_view()
    view.close()
    interactive: dict[str, list[float]] = {"unified": [], "whole_file": [], "side_by_side": []}
    for _ in range(RUNS):
        for key, kw in (("unified", {}), ("whole_file", {"whole": True}), ("side_by_side", {"split": True})):
            took, v, _m = open_view(**kw)
            interactive[key].append(took)
            v.close()
            v.deleteLater()
            app.processEvents()

    # -- scrolling (garbage collections during it are timed too: a full one is a stall of its own)
    import gc

    gc.collect()
    collections: list[float] = []

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            on_gc.started = time.perf_counter()  # type: ignore[attr-defined]
        else:
            collections.append(time.perf_counter() - on_gc.started)  # type: ignore[attr-defined]

    gc.callbacks.append(on_gc)

    def scroll(view: DiffView, positions: list[int]) -> dict[str, Any]:
        bar = view.verticalScrollBar()
        stalls: list[float] = []
        for value in positions:
            started = time.perf_counter()
            bar.setValue(value)
            view.viewport().repaint()
            stalls.append(time.perf_counter() - started)
            started = time.perf_counter()
            app.processEvents()  # idle-time lexing (bounded per turn) and anything else queued
            stalls.append(time.perf_counter() - started)
        stalls.sort()
        return {"steps": len(positions), "longest_ms": ms(stalls[-1]), "p99_ms": ms(stalls[int(len(stalls) * 0.99)]),
                "median_ms": ms(statistics.median(stalls))}

    results: dict[str, Any] = {}
    for key, kw in (("whole_file_pages", {"whole": True}), ("side_by_side_pages", {"whole": True, "split": True})):
        _t, v, _m = open_view(**kw)
        bar = v.verticalScrollBar()
        results[key] = scroll(v, list(range(0, bar.maximum() + bar.pageStep(), bar.pageStep())))
        results[key]["rows"] = len(v.rows)
        v.close()
    _t, v, _m = open_view()
    bar = v.verticalScrollBar()
    results["default_wheel_3_lines"] = scroll(v, list(range(0, bar.maximum() + 1, 3 * v.line_height)))
    results["default_wheel_3_lines"]["rows"] = len(v.rows)
    v.close()
    _t, v, _m = open_view(whole=True)
    bar = v.verticalScrollBar()
    rng = random.Random(3)
    results["whole_file_random_jumps"] = scroll(v, [rng.randint(0, bar.maximum()) for _ in range(300)])
    results["whole_file_random_jumps"]["rows"] = len(v.rows)
    longest_paint = v.longest_paint
    v.close()

    gc.callbacks.remove(on_gc)
    longest = max(r["longest_ms"] for r in results.values())
    out: dict[str, Any] = {
        "file_lines": LINES,
        "changed_places": expected,
        "hunks_found": hunks,
        "compute_ms_median": ms(statistics.median(compute)),
        "compute_target_ms": TARGET_COMPUTE_MS,
        "compute_meets_target": statistics.median(compute) * 1000 < TARGET_COMPUTE_MS,
        "interactive_cold_ms": ms(cold),
        "interactive_ms_median": {k: ms(statistics.median(v)) for k, v in interactive.items()},
        "scroll": results,
        "longest_stall_ms": longest,
        "longest_single_paint_ms": ms(longest_paint),
        "gc_during_scroll": {"collections": len(collections), "longest_ms": ms(max(collections, default=0.0))},
        "stall_target_ms": TARGET_STALL_MS,
        "scroll_meets_target": longest < TARGET_STALL_MS,
        "runs": RUNS,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "qt_platform": os.environ.get("QT_QPA_PLATFORM", ""),
    }
    print(f"Diff of a {LINES:,}-line file with {expected} changed places ({hunks} hunks)")
    print(f"  compute (ChangeSet.propose): median {out['compute_ms_median']} ms  (target < {TARGET_COMPUTE_MS} ms)")
    print(f"  interactive (bind → first paint): cold {out['interactive_cold_ms']} ms; median "
          + ", ".join(f"{k} {v} ms" for k, v in out["interactive_ms_median"].items()))
    for key, r in results.items():
        print(f"  scroll {key}: {r['steps']} steps over {r.get('rows', '?')} rows — longest {r['longest_ms']} ms, "
              f"p99 {r['p99_ms']} ms, median {r['median_ms']} ms")
    print(f"  garbage collections while scrolling: {len(collections)}, longest "
          f"{out['gc_during_scroll']['longest_ms']} ms")
    print(f"  longest stall {longest} ms (target < {TARGET_STALL_MS} ms): "
          f"{'OK' if out['scroll_meets_target'] else 'MISSED'}")
    dest = ROOT / "bench" / "results" / "ui_diff.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {dest.relative_to(ROOT)}")
    return out


if __name__ == "__main__":
    main()
