"""What a run looks up every time it starts, kept between runs while what it comes from is unchanged, and
looked up again when that changes: the script tools' folder listings (a folder's modification time), the
platform's config folder (the environment variables it is found from)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from workspace import paths, script_tools
from workspace.script_tools import discover_script_tools

FRONT = """#!/bin/sh
# ---
# description: {what}
# ---
echo {what}
"""


def script(path: Path, what: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FRONT.format(what=what))
    path.chmod(0o755)
    return path


def settle(folder: Path) -> None:
    """The folder as if it last changed a minute ago (a listing made right after a change is not kept)."""
    past = time.time() - 60
    os.utime(folder, (past, past))


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every folder listed by ``Path.iterdir``, in order."""
    listed: list[Path] = []
    real = Path.iterdir

    def iterdir(self: Path):  # type: ignore[no-untyped-def]
        listed.append(self)
        return real(self)

    monkeypatch.setattr(Path, "iterdir", iterdir)
    monkeypatch.setattr(script_tools, "_LISTINGS", {})
    return listed


def test_an_unchanged_tools_folder_is_not_listed_again(tmp_path: Path, listings: list[Path]) -> None:
    tools = tmp_path / "tools"
    script(tools / "greet", "Greet")
    settle(tools)
    first, _ = discover_script_tools(user_dir=tools)
    second, _ = discover_script_tools(user_dir=tools)
    assert [t.name for t in first] == [t.name for t in second] == ["greet"]
    assert listings == [tools]  # listed once: the second run took the kept listing
    assert second[0] is first[0]  # and the tool made once


def test_a_script_added_or_removed_is_seen_by_the_next_run(tmp_path: Path, listings: list[Path]) -> None:
    tools = tmp_path / "tools"
    script(tools / "greet", "Greet")
    settle(tools)
    assert [t.name for t in discover_script_tools(user_dir=tools)[0]] == ["greet"]
    script(tools / "wave", "Wave")  # the folder's modification time moves
    assert [t.name for t in discover_script_tools(user_dir=tools)[0]] == ["greet", "wave"]
    settle(tools)
    (tools / "greet").unlink()
    settle(tools)  # even a removal whose time looks old: the folder's time is not the one kept
    assert [t.name for t in discover_script_tools(user_dir=tools)[0]] == ["wave"]
    assert listings == [tools, tools, tools]


def test_a_script_edited_or_made_not_executable_is_seen_without_listing_again(
        tmp_path: Path, listings: list[Path]) -> None:
    tools = tmp_path / "tools"
    path = script(tools / "greet", "Greet")
    settle(tools)
    [tool] = discover_script_tools(user_dir=tools)[0]
    assert tool.description == "Greet"
    path.write_text(FRONT.format(what="Say hello politely"))  # edited in place: the folder's time stays
    [tool] = discover_script_tools(user_dir=tools)[0]
    assert tool.description == "Say hello politely"
    path.chmod(0o644)
    assert discover_script_tools(user_dir=tools)[0] == []
    assert listings == [tools]


def test_a_listing_made_right_after_a_change_is_not_kept(tmp_path: Path, listings: list[Path]) -> None:
    tools = tmp_path / "tools"
    script(tools / "greet", "Greet")  # changed just now: another change in the same clock tick would not show
    discover_script_tools(user_dir=tools)
    discover_script_tools(user_dir=tools)
    assert listings == [tools, tools]


def test_a_missing_tools_folder_gives_no_tools(tmp_path: Path, listings: list[Path]) -> None:
    assert discover_script_tools(user_dir=tmp_path / "nowhere") == ([], [])
    assert listings == []


def test_the_listings_kept_are_bounded(tmp_path: Path, listings: list[Path]) -> None:
    for i in range(script_tools._MAX_LISTINGS + 10):
        folder = tmp_path / f"tools{i}"
        folder.mkdir()
        settle(folder)
        discover_script_tools(user_dir=folder)
    assert len(script_tools._LISTINGS) <= script_tools._MAX_LISTINGS


def test_the_config_folder_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROBOTLAB_HOME", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "one"))
    first = paths.config_dir()
    assert paths.config_dir() == first and script_tools.user_tools_dir() == first / "tools"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "two"))
    second = paths.config_dir()
    assert script_tools.user_tools_dir() == second / "tools"
    monkeypatch.setenv("ROBOTLAB_HOME", str(tmp_path / "home"))
    third = paths.config_dir()
    assert script_tools.user_tools_dir() == tmp_path / "home" / "config" / "tools"
    if sys.platform.startswith("linux"):
        assert first == tmp_path / "one" / "robotlab" and second == tmp_path / "two" / "robotlab"
    else:  # pragma: no cover - platformdirs' own folders elsewhere
        assert first == second
    assert third == tmp_path / "home" / "config"
