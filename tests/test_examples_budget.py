"""examples/token_budget.py (RobotLab's token-tracking example) runs offline and prints what it promises: each
run's usage and what is left of the robot's budget, the call that passes it and then the refusal before any
call, and a network's parallel tasks on one shared budget passing it by one call only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

EXPECTED = [
    "Capital of France? 4 in + 13 out; the budget has 103 of 120 left",
    "And its river? 21 in + 13 out; the budget has 69 of 120 left",
    "And its population? 38 in + 13 out; the budget has 18 of 120 left",
    # The fourth run's call passes the budget; the fifth run is refused without a model call.
    "stopped: Token budget exceeded: 170 tokens used, budget is 120 (model calls so far: 4)\n"
    "stopped: Token budget exceeded: 170 tokens used, budget is 120 (model calls so far: 4)",
    "a task: Error: BudgetExceeded: Token budget exceeded: 34 tokens used, budget is 20\n"
    "a task: Error: BudgetExceeded: Token budget exceeded: 34 tokens used, budget is 20\n"
    "a task: The capital of France is Paris, a city on the Seine.",
    "the network's tasks used 34 tokens of 20",
]


def test_the_token_budget_example_runs_offline(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ROBOTLAB_HOME": str(tmp_path)}
    # The time limit bounds a hang only.
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "token_budget.py")], capture_output=True,
                          text=True, cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    for expected in EXPECTED:
        assert expected in done.stdout, f"examples/token_budget.py did not print {expected!r}:\n{done.stdout}"
    assert "Traceback" not in done.stderr
