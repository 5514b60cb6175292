"""examples/evals/support.yaml runs offline (the support robot on the offline demo) and every case passes;
run again, every model answer comes from the cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_support_eval_example_runs_offline(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ROBOTLAB_HOME": str(tmp_path)}
    command = [sys.executable, "-m", "workspace", "eval", str(ROOT / "examples" / "evals" / "support.yaml")]
    # The time limit bounds a hang only.
    first = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    again = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert first.returncode == 0, first.stdout + first.stderr
    assert first.stdout.splitlines()[2].split() == ["support", "3/3", "(100%)"]
    assert "3/3 passed" in first.stdout and "0 from the cache, 6 asked" in first.stdout
    assert again.returncode == 0 and "6 from the cache, 0 asked" in again.stdout
    assert not (ROOT / "examples" / "evals" / "fixtures" / "shop" / "notes.md").read_text(
        encoding="utf-8").count("refunded")  # the robot worked on a copy; nothing was applied
