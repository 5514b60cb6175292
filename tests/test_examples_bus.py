"""The bus (in a program and in a network file), spawn and delegation example programs in examples/ run offline and print what they promise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

EXPECTED = {
    "message_bus.py": ["Bob   [#1]: Why did the robot go on holiday?", "Alice: MEH - the recharge pun is old.",
                       "Alice: FUNNY - dark, short and about robots.", "Attempts: 3 / 5", "Accepted: True",
                       "Alice's outbox: 3 messages, the first replied"],
    "spawn.py": ["dispatcher -> spawn historian: You are a historian.", "dispatcher -> spawn poet:",
                 "dispatcher -> reuse historian", "dispatcher <- historian: Romulus Augustulus, deposed in 476.",
                 "Specialists spawned: historian, poet", "Robots on the bus: 3", "Unanswered: 0"],
    "delegation.py": ["summarizer (delegated by manager): Revenue grew 18%",
                      "analyst (delegated by manager): Net promoter score",
                      "both launched; done yet? summary=False analysis=False",
                      "Delegation to 'slowpoke' timed out after 0.01s; the work goes on", "later: Eventually: 42."],
    "bus_network.py": ["writer → editor: Please check this draft: v2.0: startup is twice as fast",
                       "editor → writer: Say how much faster with numbers", "task write done", "task announce done",
                       "announcement: Version 2.0 is out"],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_example_runs_offline(name: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ROBOTLAB_HOME": str(tmp_path)}
    # The time limit bounds a hang only.
    done = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout
    for expected in EXPECTED[name]:
        assert expected in lines, f"{name} did not print {expected!r}:\n{lines}"
    assert "Traceback" not in done.stderr


def test_the_example_in_docs_robotlab_runs(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "robotlab.md").read_text(encoding="utf-8")
    code = page.split("```python\n", 1)[1].split("\n```", 1)[0]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ROBOTLAB_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["bob answered alice:1: 4", "6 alice"]
