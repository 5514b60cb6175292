"""An eval file of the offline demo's support robot (no key) in a temporary folder, for the evals view's tests."""

from __future__ import annotations

import shutil
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "evals"

TWO_CASES = """\
# two cases of the support robot on the offline demo
robot: support.md
cases:
  - name: the-list
    message: "list the files"
    folder: fixtures/shop
    expect:
      - regex: 'orders\\.csv'
  - name: fruit
    message: "list the files"
    folder: fixtures/shop
    expect:
      - contains: "banana"
"""


def eval_folder(tmp_path: Path, text: str = TWO_CASES) -> Path:
    """``tmp_path/evals`` with the robot, its fixtures and ``two.yaml`` (``text``); returns the folder."""
    folder = tmp_path / "evals"
    folder.mkdir()
    shutil.copy(EXAMPLES / "support.md", folder / "support.md")
    shutil.copytree(EXAMPLES / "fixtures", folder / "fixtures")
    (folder / "two.yaml").write_text(text, encoding="utf-8")
    return folder
