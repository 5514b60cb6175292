"""examples/skills.py and examples/person_in_network.py run offline and print what they promise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

EXPECTED = {
    "skills.py": [
        "skills: careful -> friendly -> citations -> analyst",
        "system prompt: You check every number twice. | You are warm and brief. | You name the source of every "
        "figure. | You are Acme's financial analyst. | Answer in one sentence.",
        "learnt, seen by a later run: - Acme's fiscal year starts in April",
        "answer: In euros: 1.2 M EUR.",
        "knowledge: The CFO wants figures in euros (confidence 0.2, used 1x)",
        "proposed: knowledge 'The CEO likes pie charts'",
        "the robot was told: Not recorded: the person reviewing memory rejected it: we do not store guesses",
        "stored for careful: []",
    ],
    "person_in_network.py": [
        "person asked: v1.0: startup is twice as fast.",
        "person chooses from: ['approved', 'rejected']",
        "approval: approved",
        "publisher: Announced: v1.0 is out.",
        "approval when time ran out: approved (nobody answered)",
        "verifiers agree: True; reconciler skipped",
        "verifiers agree: False; reconciler done",
    ],
}


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_the_example_runs_offline(example: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ROBOTLAB_HOME": str(tmp_path)}
    # The time limit bounds a hang only.
    done = subprocess.run([sys.executable, str(ROOT / "examples" / example)], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines == EXPECTED[example], f"examples/{example} printed:\n{done.stdout}"
    assert "Traceback" not in done.stderr
    if example == "skills.py":  # the shared skill, met a second time, is skipped with RobotLab's warning
        assert "Robot 'analyst': skill cycle detected at 'careful', skipping" in done.stderr
