"""No text is cut in the cards and docks at 100 %, 150 % and 200 %: the window
is opened on screens of common sizes with QT_SCALE_FACTOR, brought to its main states by the offline
demo, and every label and button checked (their text fits, or ends in "…" by design) — and every
control has an accessible name there too. At 150 % and 200 % the logical screen is small (1280×720,
960×540): the window, its docks and the message box still fit it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
STATES = ["review", "approval", "error", "network"]


def _probe(tmp_path: Path, width: int, height: int, scale: float) -> dict[str, Any]:
    screen = tmp_path / "screen.json"
    screen.write_text(json.dumps({"screens": [{"name": "probe", "x": 0, "y": 0, "width": width, "height": height,
                                               "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]}))
    env = dict(os.environ, QT_QPA_PLATFORM=f"offscreen:configfile={screen}", QT_SCALE_FACTOR=f"{scale:g}")
    args = [arg for state in STATES for arg in ("--state", state)]
    done = subprocess.run([sys.executable, "-m", "tests.ui.window_probe", "--fill", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(("width", "height", "scale"), [
    (1280, 720, 1.0), (1920, 1080, 1.5), (2560, 1440, 2.0), (1920, 1080, 2.0)])
def test_nothing_is_cut_at_common_scale_factors(tmp_path: Path, width: int, height: int, scale: float) -> None:
    out = _probe(tmp_path, width, height, scale)
    x, y, w, h = out["screen"]
    cx, cy, cw, ch = out["composer"]
    assert cx >= x and cy >= y and cx + cw <= x + w and cy + ch <= y + h  # the message box is on the screen
    for state in STATES:
        assert out["states"][state] == {"clipped": [], "unnamed": []}, (scale, state)
