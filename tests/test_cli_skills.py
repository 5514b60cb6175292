"""``robotlab skills list`` and ``robotlab skills match``: the catalog from the command line, as a person runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def robotlab(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "workspace", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)


def write_skill(root: Path, name: str, front: str) -> None:
    path = root / "skills" / name / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(f"---\n{front}---\nInstructions.\n", encoding="utf-8")


def test_skills_list_shows_the_users_and_the_folders_skills_and_names_a_broken_one(robotlab_home: Path,
                                                                                    tmp_path: Path) -> None:
    write_skill(robotlab_home / "config" / "templates", "code_reviewer",
                "name: code_reviewer\ndescription: Reviews code for bugs\n")
    write_skill(robotlab_home / "config" / "templates", "broken", "name: broken\n")
    folder = tmp_path / "project"
    write_skill(folder / ".robotlab" / "templates", "sql_helper", "name: sql_helper\ndescription: Writes SQL\n")
    done = robotlab("--folder", str(folder), "skills", "list")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["code_reviewer  Reviews code for bugs", "sql_helper     Writes SQL"]
    assert "robotlab: not listed: SKILL.md at" in done.stderr and "missing 'description'" in done.stderr
    listed = json.loads(robotlab("skills", "list", "--json").stdout)
    assert [s["name"] for s in listed] == ["code_reviewer"]


def test_skills_list_without_skills_says_where_to_put_them(robotlab_home: Path) -> None:
    done = robotlab("skills")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("No agent skills found. A skill is a folder with a SKILL.md")
    assert str(robotlab_home / "config" / "templates" / "skills") in done.stdout


def test_skills_match_shows_the_scores_and_what_is_selected(robotlab_home: Path) -> None:
    templates = robotlab_home / "config" / "templates"
    write_skill(templates, "code_reviewer", "name: code_reviewer\ndescription: Reviews code for bugs\n")
    write_skill(templates, "poet", "name: poet\ndescription: Writes short poems\n")
    done = robotlab("skills", "match", "please review my code")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("code_reviewer") and lines[0].endswith("selected")
    assert lines[1] == "poet           0.00"
    data = json.loads(robotlab("skills", "match", "the weather", "--json").stdout)
    assert data == {"selected": [], "scores": {"code_reviewer": 0.0, "poet": 0.0}}
    assert robotlab("skills", "match", "the weather").stdout.splitlines()[-1] == "No skill selected for this message."
