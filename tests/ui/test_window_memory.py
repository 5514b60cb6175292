"""The window's size and layout: the first window fits the screen (the
message box shows at 1280×720), geometry, docks, splitter and the inspector's tabs come back after a
restart, a smaller screen is fitted; dock shortcuts show and focus their dock and never hide it; the
keyboard shortcut sheet lists every command's keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QRect, QSize
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from ui.window.geometry import first_size, fit

ROOT = Path(__file__).resolve().parents[2]


def _screen(tmp_path: Path, width: int, height: int) -> str:
    path = tmp_path / f"screen-{width}x{height}.json"
    path.write_text(json.dumps({"screens": [{"name": "probe", "x": 0, "y": 0, "width": width, "height": height,
                                             "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]}))
    return f"offscreen:configfile={path}"


def _probe(platform: str, *args: str) -> dict[str, Any]:
    env = dict(os.environ, QT_QPA_PLATFORM=platform)
    done = subprocess.run([sys.executable, "-m", "tests.ui.window_probe", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _inside(rect: list[int], area: list[int]) -> bool:
    x, y, w, h = rect
    ax, ay, aw, ah = area
    return x >= ax and y >= ay and x + w <= ax + aw and y + h <= ay + ah


def test_first_size_and_fit() -> None:
    assert first_size(QRect(0, 0, 1280, 720)).height() <= 720 * 0.92
    assert first_size(QRect(0, 0, 3840, 2160)) == QSize(1400, 900)
    assert fit(QRect(500, 300, 1400, 900), QRect(0, 0, 1024, 600)) == QRect(0, 0, 1024, 600)
    assert fit(QRect(-50, 10, 800, 500), QRect(0, 0, 1920, 1080)) == QRect(0, 10, 800, 500)


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1920, 1080)])
def test_the_first_window_fits_the_screen_with_the_message_box_on_it(tmp_path: Path, width: int,
                                                                      height: int) -> None:
    out = _probe(_screen(tmp_path, width, height))
    assert not out["restored"]
    assert _inside(out["frame"], out["screen"])
    assert _inside(out["composer"], out["screen"])


def test_every_inspector_tab_shows_whole_at_1280x720(tmp_path: Path) -> None:
    """Six tabs (Tool calls, Changes, Memory, Trace, MCP servers, Network), all in sight with their whole
    names and no scroll arrows in the first window at 1280×720 (five once showed)."""
    out = _probe(_screen(tmp_path, 1280, 720), "--state", "review")  # "Changes · 1": a change to review
    tabs = out["tab_bar"]
    assert "Changes · 1" in tabs["names"], tabs
    assert tabs is not None and len(tabs["names"]) == 6, tabs
    assert not tabs["arrows"] and sum(tabs["widths"]) <= tabs["width"], tabs
    assert all(w > t for w, t in zip(tabs["widths"], tabs["text_widths"], strict=True)), tabs
    assert out["splitter"][1] >= 500, (out["splitter"], tabs, out["size"])  # the conversation keeps its room


def test_every_inspector_tab_shows_whole_at_1024x640(tmp_path: Path) -> None:
    """At 1024 wide the six names need about 420 px across and the docks have about 310: the tabs scrolled behind
    arrows, most of them out of sight. Now they go down the dock area's side, each name whole and readable along it,
    no arrows; the panes keep their room beside the conversation."""
    out = _probe(_screen(tmp_path, 1024, 640), "--fill", "--state", "review")
    tabs = out["tab_bar"]
    assert tabs is not None and len(tabs["names"]) == 6 and "Changes · 1" in tabs["names"], tabs
    assert tabs["vertical"] and not tabs["arrows"], tabs
    assert sum(tabs["lengths"]) <= tabs["length"], tabs
    assert all(n > t for n, t in zip(tabs["lengths"], tabs["text_widths"], strict=True)), tabs
    assert out["splitter"][1] >= 400, (out["splitter"], tabs, out["size"])  # the conversation keeps its room


def test_geometry_docks_splitter_and_tabs_come_back_and_a_smaller_screen_is_fitted(tmp_path: Path) -> None:
    big = _screen(tmp_path, 1920, 1080)
    first = _probe(big, "--resize", "1500x850", "--splitter", "300", "--raise-dock", "memory", "--tool-tab", "2",
                   "--hide", "trace")
    assert first["docks"]["trace"]
    again = _probe(big)
    assert again["restored"]
    assert again["size"] == [1500, 850]
    assert again["splitter"][0] == 300
    assert again["raised"] == "memory"
    assert again["tool_tab"] == 2
    assert not again["docks"]["trace"] and again["docks"]["tools"]
    small = _probe(_screen(tmp_path, 1024, 600))
    assert small["restored"]
    assert _inside(small["frame"], small["screen"])
    assert _inside(small["composer"], small["screen"])


def test_a_window_closed_on_a_small_screen_opens_at_its_usual_size_on_a_big_one(tmp_path: Path) -> None:
    """A profile last closed at 1024×640 (the window as big as that screen) opened at 1024×640 on a 1920×1080 screen:
    its size is kept only on a screen of the size it was closed on; on another, the window opens as at first start
    there (centred, its usual size), with its docks' layout. A window closed off the screen opens inside it."""
    small, big = _screen(tmp_path, 1024, 640), _screen(tmp_path, 1920, 1080)
    first = _probe(small, "--fill")
    assert first["size"][0] >= 1000 and not first["restored"]
    again = _probe(big, "--raise-dock", "memory")
    assert again["restored"]
    assert again["size"] == [first_size(QRect(0, 0, 1920, 1080)).width(), first_size(QRect(0, 0, 1920, 1080)).height()]
    x, y, w, h = again["frame"]
    assert abs((x + w / 2) - 960) <= 20 and abs((y + h / 2) - 540) <= 20, again["frame"]  # centred
    # The docks were as narrow as 1024 wide made them: widened for the inspector's tabs across, none behind arrows.
    assert not again["tab_bar"]["vertical"] and not again["tab_bar"]["arrows"], again["tab_bar"]
    same = _probe(big, "--resize", "1100x700", "--move", "3000,2000")  # (the same screen: its size is kept)
    assert same["size"] == again["size"] and same["raised"] == "memory"
    back = _probe(big)
    assert back["size"] == [1100, 700]
    assert _inside(back["frame"], back["screen"]), back["frame"]  # closed off the screen, opened on it


async def test_a_dock_shortcut_shows_and_focuses_its_dock_and_never_hides_it(desktop: Any) -> None:
    import asyncio

    from tests.fakes.app_window import wait_until

    w = desktop.window
    await wait_until(lambda: w.docks.changes_pane is not None, what="the docks")
    w.activateWindow()
    memory = w.docks["memory"]
    go = w.commands.by_name["go.memory"]
    assert go.shortcut().toString() == "Ctrl+Shift+M"
    assert not w.docks["memory"].toggleViewAction().shortcut().toString()  # the toggle has no keys
    memory.hide()
    go.trigger()
    await asyncio.sleep(0.05)
    assert memory.isVisible() and w.docks.in_front(memory)
    assert memory.isAncestorOf(QApplication.focusWidget())
    go.trigger()  # again, with the keyboard in it: back to the message box, the dock stays
    await asyncio.sleep(0.05)
    assert memory.isVisible() and w.docks.in_front(memory)
    assert QApplication.focusWidget() is w.composer.edit
    w.commands.by_name["go.tools"].trigger()
    await asyncio.sleep(0.05)
    assert w.docks.in_front(w.docks["tools"]) and not w.docks.in_front(memory)
    assert w.docks["tools"].isAncestorOf(QApplication.focusWidget())
    # and with real key presses
    w.composer.focus()
    QTest.keyClick(w.composer.edit, "M", w.commands.by_name["go.memory"].shortcut()[0].keyboardModifiers())
    await asyncio.sleep(0.05)
    assert w.docks.in_front(memory) and memory.isAncestorOf(QApplication.focusWidget())


def test_the_shortcut_sheet_lists_every_command_with_keys(desktop: Any) -> None:
    w = desktop.window
    w.commands.by_name["shortcuts"].trigger()
    dialog = w.commands._shortcuts
    shown = dict(dialog.commands())
    for name, action in w.commands.by_name.items():
        keys = action.shortcut().toString()
        if keys and action.text():
            assert any(keys == k for k in shown.values()), (name, keys)
    assert shown["Go to Memory"] == "Ctrl+Shift+M"
    assert shown["Send"] == "Ctrl+Enter"  # the message box's keys too
    dialog.filter.setText("approve")
    assert all("approve" in c.lower() for c, _ in dialog.commands())
    dialog.close()
