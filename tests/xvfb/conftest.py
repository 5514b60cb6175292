"""The Xvfb layer: the real app on a virtual X server, driven by xdotool (marker ``xvfb``).

Skipped, saying why, when Xvfb or xdotool is missing or the X server does not start. Sizes:
``ROBOTLAB_XVFB_SIZES`` (default ``1280x720``, what scripts/test runs; ``1280x720,1920x1080`` for all).
Screenshots go to ``ROBOTLAB_XVFB_SHOTS`` (default: the test's temporary folder; docs/xvfb to update
the ones the README links).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.xvfb.xsession import XServer, missing_tools


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/xvfb/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.xvfb)


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    chosen = os.environ.get("ROBOTLAB_XVFB_SHOTS")
    return Path(chosen).resolve() if chosen else tmp_path / "shots"


@pytest.fixture
def xserver(request: pytest.FixtureRequest) -> Iterator[XServer]:
    reason = missing_tools()
    if reason:
        pytest.skip(reason)
    width, height = request.param
    server = XServer(width, height)
    try:
        server.start()
    except (OSError, RuntimeError, AssertionError) as exc:
        pytest.skip(f"Xvfb could not start here: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    folder = tmp_path / "garden-notes"
    folder.mkdir()
    (folder / "notes.txt").write_text("Plant tomatoes in May.\nWater the basil every morning.\n", encoding="utf-8")
    (folder / "README.md").write_text("# Garden notes\n\nWhat grows where, and when to water it.\n", encoding="utf-8")
    (folder / "plan.md").write_text("- [ ] build the raised bed\n- [x] buy seeds\n", encoding="utf-8")
    return folder
