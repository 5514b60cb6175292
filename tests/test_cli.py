"""The command line as a user runs it (a subprocess, the offline demo, no keys)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def robotlab(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
             input: str | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {}), "ROBOT_LAB_DEMO__DELAY": "0"}
    return subprocess.run([sys.executable, "-m", "ui.main", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, env=full_env, timeout=120, input=input)


def write_robot(home: Path, name: str, text: str) -> None:
    path = home / "config" / "robots" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_version_and_help() -> None:
    assert "robotlab-workspace" in robotlab("--version").stdout
    out = robotlab("--help").stdout
    assert "run" in out and "robots" in out


def test_paths_lists_locations(robotlab_home: Path) -> None:
    result = robotlab("paths", "--json")
    data = json.loads(result.stdout)
    assert data["database"].startswith(str(robotlab_home))


def test_run_offline_demo_streams_and_says_it_is_not_a_model(robotlab_home: Path) -> None:
    write_robot(robotlab_home, "echoer", "---\ndescription: test robot\ntools: []\n---\nYou help.")
    result = robotlab("run", "echoer", "hello there")
    assert result.returncode == 0, result.stderr
    assert "Offline demo (no language model)" in result.stdout
    assert "offline demo" in result.stdout.lower()


def test_run_json_lines(robotlab_home: Path) -> None:
    write_robot(robotlab_home, "echoer", "---\ntools: []\n---\nYou help.")
    result = robotlab("run", "echoer", "hi", "--json")
    kinds = [json.loads(line)["kind"] for line in result.stdout.splitlines()]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert kinds.count("run_finished") == 1


def test_run_with_memory_tools_in_the_demo(robotlab_home: Path) -> None:
    write_robot(robotlab_home, "mem", "---\ntools: [remember, recall]\n---\nYou remember.")
    result = robotlab("run", "mem", "remember that colour is blue", "--json")
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert any(e["kind"] == "tool_result" and e["name"] == "remember" for e in events)
    assert any(e["kind"] == "memory_changed" and e["value"] == "blue" for e in events)


def test_unknown_robot_names_the_fix(robotlab_home: Path) -> None:
    result = robotlab("run", "ghost", "hi")
    assert result.returncode == 2
    assert "Unknown robot 'ghost'. Available robots:" in result.stderr


def test_missing_key_names_the_variable(robotlab_home: Path) -> None:
    write_robot(robotlab_home, "echoer", "---\ntools: []\n---\nYou help.")
    result = robotlab("run", "echoer", "hi", "--model", "openai/gpt-4o-mini")
    assert result.returncode == 2
    assert "OPENAI_API_KEY" in result.stderr and "ollama" in result.stderr


def test_bad_config_names_file_and_key(robotlab_home: Path) -> None:
    cfg = robotlab_home / "config" / "config.yaml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text("agent:\n  max_turns: many\n", encoding="utf-8")
    result = robotlab("config", "show")
    assert result.returncode == 2
    assert "config.yaml" in result.stderr and "agent.max_turns" in result.stderr


def test_robots_list_includes_user_robots(robotlab_home: Path) -> None:
    write_robot(robotlab_home, "mine", "---\ndescription: my own robot\n---\nHi")
    result = robotlab("robots", "list")
    assert "mine" in result.stdout and "my own robot" in result.stdout and "user" in result.stdout
