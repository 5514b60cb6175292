"""bench/scale_report.py judges what its benches leave: a bench that crashes, writes nothing, leaves an old file or
lacks a figure is a missed target naming why, never skipped; the figures are judged against their targets.

Real processes (small Python scripts standing in for benches), real files; no figure of this machine is asserted."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("scale_report", ROOT / "bench" / "scale_report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "scale_report", module)  # (its dataclasses look their module up there)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "RESULTS", tmp_path / "results")
    (tmp_path / "results").mkdir()
    return module


def _bench(report: ModuleType, tmp_path: Path, code: str, *, timeout: float = 60) -> Any:
    script = tmp_path / "bench_fake.py"
    script.write_text(code)

    def judge(data: dict[str, Any], load: float) -> list[Any]:
        return [report.under("fake", "the stall", data["stall_ms"], 16.0)]

    return report.Bench("fake", [str(script)], "fake.json", judge, timeout=timeout)


def _writes(results: Path, figures: dict[str, float]) -> str:
    return f"import json, pathlib\npathlib.Path({str(results / 'fake.json')!r}).write_text({json.dumps(figures)!r})\n"


def test_a_bench_that_crashes_is_a_missed_row_with_its_error(report: ModuleType, tmp_path: Path) -> None:
    bench = _bench(report, tmp_path, "raise RuntimeError('the thread was not built')\n")
    rows, info = report.run_bench(bench)
    assert [(r.met, r.figure) for r in rows] == [(False, "(the bench)")]
    assert "no fake.json written" in rows[0].note and "RuntimeError: the thread was not built" in rows[0].note
    assert info["exit_status"] == 1


def test_a_bench_that_writes_nothing_or_leaves_an_old_file_is_missed(report: ModuleType, tmp_path: Path) -> None:
    results = tmp_path / "results"
    rows, _ = report.run_bench(_bench(report, tmp_path, "print('done')\n"))
    assert not rows[0].met and "no fake.json written" in rows[0].note

    (results / "fake.json").write_text(json.dumps({"stall_ms": 3.0}))
    old = time.time() - 3600
    os.utime(results / "fake.json", (old, old))
    rows, _ = report.run_bench(_bench(report, tmp_path, "print('done')\n"))
    assert not rows[0].met and "not written by this run" in rows[0].note


def test_a_figure_missing_from_the_json_is_missed(report: ModuleType, tmp_path: Path) -> None:
    rows, _ = report.run_bench(_bench(report, tmp_path, _writes(tmp_path / "results", {"paint_ms": 3.0})))
    assert not rows[0].met and "a figure missing from fake.json" in rows[0].note and "stall_ms" in rows[0].note


def test_a_bench_that_hangs_is_stopped_and_missed(report: ModuleType, tmp_path: Path) -> None:
    rows, _ = report.run_bench(_bench(report, tmp_path, "import time\ntime.sleep(60)\n", timeout=1))
    assert not rows[0].met and "timed out" in rows[0].note


def test_figures_are_judged_against_their_targets_and_say_whether_2x_would_pass(report: ModuleType,
                                                                                tmp_path: Path) -> None:
    rows, _ = report.run_bench(_bench(report, tmp_path, _writes(tmp_path / "results", {"stall_ms": 10.0})))
    assert [(r.met, r.doubled) for r in rows] == [(True, "2x: caught")]
    rows, _ = report.run_bench(_bench(report, tmp_path, _writes(tmp_path / "results", {"stall_ms": 4.0})))
    assert [(r.met, r.doubled) for r in rows] == [(True, "2x: passes")]
    rows, _ = report.run_bench(_bench(report, tmp_path, _writes(tmp_path / "results", {"stall_ms": 20.0})))
    assert [r.met for r in rows] == [False]
    flat = report.flat("fake", "paint", [10.0, 11.0, 16.0])
    assert flat.met is False and "1.60 x" in flat.value
    assert report.flat("fake", "paint", [10.0, 11.0, 14.0]).met
    assert report.stalls("fake", "steps", [3.0, 20.0], 0.5).met is False  # quiet: a frame
    assert report.stalls("fake", "steps", [3.0, 20.0], 2.5).met  # busy: 50 ms


def test_the_exit_status_is_1_when_a_target_is_missed_and_the_report_is_written(report: ModuleType, tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    good = _bench(report, tmp_path, _writes(tmp_path / "results", {"stall_ms": 10.0}))
    monkeypatch.setattr(report, "BENCHES", [good])
    assert report.main([]) == 0
    written = json.loads((tmp_path / "results" / "scale_report.json").read_text())
    assert written["met"] is True and written["rows"][0]["figure"] == "the stall"
    crashing = _bench(report, tmp_path, "import sys\nsys.exit(3)\n")
    crashing.name = "crashing"
    monkeypatch.setattr(report, "BENCHES", [good, crashing])
    assert report.main([]) == 1
    written = json.loads((tmp_path / "results" / "scale_report.json").read_text())
    assert written["met"] is False and "exit status 3" in written["rows"][-1]["note"]
    assert report.main(["nonexistent"]) == 2
