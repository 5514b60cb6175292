"""Start-up of the PyInstaller bundle against ``python -m ui.main``, in fresh processes.

Each run starts ``--offscreen-smoke`` (show the main window, print "main window shown" 300 ms
later, close, exit) with a fresh ``ROBOTLAB_HOME`` and ``QT_QPA_PLATFORM=offscreen``, and
records two times: until "main window shown" is printed (start-up plus the fixed 300 ms) and
until the process has exited. Prints the medians of 5 runs of each and their ratio; writes
bench/results/startup_bundle.json.

    python bench/bench_startup_bundle.py [--bundle DIR] [--runs N] [--drop-caches]

The bundle is packaging/build/dist/robotlab (``make package``); when it is missing it is built
first (scripts/package.sh, about 1.5 minutes). ``--drop-caches`` empties the page cache before
each run (root only, where the kernel allows it) for a disk-cold start; without it, runs are
"cold" in the process sense (a new process, nothing preloaded) with the files in the page cache.
One unmeasured run of each goes first.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scratch import scratch_dir

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BUNDLE = ROOT / "packaging" / "build" / "dist" / "robotlab"
SMOKE_SLEEP = 0.3  # ui.app waits this long after show() before printing and closing


def drop_caches() -> bool:
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def run_once(cmd: list[str], *, cwd: Path, cold: bool) -> tuple[float, float]:
    """Seconds until "main window shown" and until exit."""
    home = str(scratch_dir("robotlab-bench-"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(ROBOTLAB_HOME=home, QT_QPA_PLATFORM="offscreen")
    if cold:
        drop_caches()
    try:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert proc.stdout is not None
        shown = None
        for line in proc.stdout:
            if "main window shown" in line and shown is None:
                shown = time.perf_counter() - start
        code = proc.wait(timeout=120)
        ended = time.perf_counter() - start
        if code != 0 or shown is None:
            raise SystemExit(f"{' '.join(cmd)}: exit status {code}, window shown: {shown is not None}")
        return shown, ended
    finally:
        shutil.rmtree(home, ignore_errors=True)


def measure(cmd: list[str], *, cwd: Path, runs: int, cold: bool) -> dict[str, float]:
    run_once(cmd, cwd=cwd, cold=False)  # unmeasured: first-time effects (font cache, pyc files)
    shown, ended = [], []
    for _ in range(runs):
        s, e = run_once(cmd, cwd=cwd, cold=cold)
        shown.append(s)
        ended.append(e)
    return {
        "window_shown_s": round(statistics.median(shown), 3),
        "window_shown_minus_smoke_delay_s": round(statistics.median(shown) - SMOKE_SLEEP, 3),
        "exit_s": round(statistics.median(ended), 3),
        "window_shown_runs_s": [round(x, 3) for x in shown],
    }


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=DEFAULT_BUNDLE, help="the bundle folder")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--drop-caches", action="store_true", help="empty the page cache before each run")
    args = parser.parse_args(argv)

    exe = args.bundle / ("robotlab.exe" if sys.platform == "win32" else "robotlab")
    if not exe.exists():
        if args.bundle != DEFAULT_BUNDLE:
            raise SystemExit(f"no bundle at {args.bundle}")
        print("No bundle yet: building it (scripts/package.sh, STEPS='icons bundle') ...", flush=True)
        subprocess.run(["bash", str(ROOT / "scripts" / "package.sh")], cwd=ROOT, check=True,
                       env={**os.environ, "STEPS": "icons bundle"}, stdout=subprocess.DEVNULL)
    cold = False
    if args.drop_caches:
        cold = drop_caches()
        if not cold:
            print("Could not drop the page cache (needs root and a kernel that allows it); runs are warm-cache.")

    bundle = measure([str(exe), "--offscreen-smoke"], cwd=Path(tempfile.gettempdir()), runs=args.runs, cold=cold)
    python = measure([sys.executable, "-m", "ui.main", "--offscreen-smoke"], cwd=ROOT, runs=args.runs, cold=cold)
    result = {
        "runs": args.runs,
        "page_cache_dropped": cold,
        "bundle": bundle,
        "python_m_ui_main": python,
        "ratio_window_shown": round(bundle["window_shown_s"] / python["window_shown_s"], 2),
        "ratio_window_shown_minus_smoke_delay": round(
            bundle["window_shown_minus_smoke_delay_s"] / python["window_shown_minus_smoke_delay_s"], 2),
        "ratio_exit": round(bundle["exit_s"] / python["exit_s"], 2),
        "bundle_size_mb": round(du(args.bundle) / 1e6, 1),
        "note": f"window_shown includes the {SMOKE_SLEEP * 1000:.0f} ms the smoke option waits after show()",
    }
    print(f"median of {args.runs}, {'page cache dropped' if cold else 'fresh processes, warm page cache'}:")
    print(f"{'':26s} {'window shown':>13s} {'(- 300 ms)':>11s} {'exited':>8s}")
    for name, row in (("bundle (PyInstaller)", bundle), ("python -m ui.main", python)):
        print(f"{name:26s} {row['window_shown_s']:11.3f} s {row['window_shown_minus_smoke_delay_s']:9.3f} s"
              f" {row['exit_s']:6.3f} s")
    print(f"{'bundle / python':26s} {result['ratio_window_shown']:11.2f}x "
          f"{result['ratio_window_shown_minus_smoke_delay']:9.2f}x {result['ratio_exit']:6.2f}x")
    print(f"bundle size: {result['bundle_size_mb']} MB unpacked")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "startup_bundle.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
