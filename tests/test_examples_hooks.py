"""examples/hooks.py runs offline and prints what it promises: hooks at three levels, a cached answer, a
dry run, the doom-loop warning and the circuit breaker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

EXPECTED = [
    "audit: forecaster calls weather({'city': 'Lisbon'})",
    "audit: forecaster answered 'Weather in Lisbon?' with 1 tool call(s)",
    "reply: Sunny, 21 °C in Lisbon.",
    "cache: hit for 'Weather in Lisbon?'",
    "reply: Sunny, 21 °C in Lisbon. (model calls so far: 2)",
    "dry run: the model saw '(dry run: weather was not called)'",
    "stopped: Circuit breaker triggered: 5 tool calls exceeded max_tool_rounds (4)",
    "warned: Tool 'weather' has been called 3+ times consecutively",
]


def test_the_hooks_example_runs_offline(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ROBOTLAB_HOME": str(tmp_path)}
    # The time limit bounds a hang only.
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "hooks.py")], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    for expected in EXPECTED:
        assert expected in done.stdout, f"examples/hooks.py did not print {expected!r}:\n{done.stdout}"
    assert done.stdout.count("audit: stuck calls weather") == 4  # the fifth call is refused, not run
    assert "Traceback" not in done.stderr
