"""Every dialog of the window fits the screen (fit and finish): the full-size review, Settings and its
MCP servers page, the robot editor, the shortcut sheet and About open inside the screen's available area
at 1024×640, 1280×720 and 1920×1080, with every button on the screen (or in a page that scrolls)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DIALOGS = {"review", "settings", "mcp_settings", "robot_editor", "shortcuts", "about"}


def _probe(tmp_path: Path, width: int, height: int) -> dict[str, Any]:
    screen = tmp_path / f"screen-{width}x{height}.json"
    screen.write_text(json.dumps({"screens": [{"name": "probe", "x": 0, "y": 0, "width": width, "height": height,
                                               "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]}))
    env = dict(os.environ, QT_QPA_PLATFORM=f"offscreen:configfile={screen}", ROBOTLAB_HOME=str(tmp_path / "home"))
    done = subprocess.run([sys.executable, "-m", "tests.ui.window_probe", "--dialogs"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _inside(rect: list[int], area: list[int]) -> bool:
    x, y, w, h = rect
    ax, ay, aw, ah = area
    return x >= ax and y >= ay and x + w <= ax + aw and y + h <= ay + ah


@pytest.mark.parametrize(("width", "height"), [(1024, 640), (1280, 720), (1920, 1080)])
def test_every_dialog_and_its_buttons_fit_the_screen(tmp_path: Path, width: int, height: int) -> None:
    out = _probe(tmp_path, width, height)
    screen = out["screen"]
    assert set(out["dialogs"]) == DIALOGS
    for name, dialog in out["dialogs"].items():
        assert _inside(dialog["frame"], screen), (name, dialog["frame"], screen)
        off = [b["text"] for b in dialog["buttons"] if not b["scrolled"] and not _inside(b["rect"], screen)]
        assert not off, (name, off)
    review = {b["text"].replace("&", "") for b in out["dialogs"]["review"]["buttons"]}
    assert {"Apply", "Accept all", "Reject all", "Accept file", "Reject file"} <= review
    assert _inside(out["dialogs"]["review"]["diff_view"], screen)  # the hunks' buttons are painted at its right
    settings = {b["text"].replace("&", "") for b in out["dialogs"]["settings"]["buttons"]}
    assert {"Save", "Cancel"} <= settings
    about = {b["text"].replace("&", "") for b in out["dialogs"]["about"]["buttons"]}
    assert "Close" in about
